/**
 * The embedded store: PGlite (PostgreSQL compiled to WebAssembly) in a data directory.
 */
import { PGlite } from '@electric-sql/pglite'
import type { SqlClient, SqlQueryable, SqlResult } from './sqlClient.ts'

/**
 * Opens (creating it when new) a PGlite data directory.
 *
 * @example
 * const sql = await openPglite('.tidemark-relay')
 */
export async function openPglite(dataDir: string): Promise<SqlClient> {
  const db = await PGlite.create(dataDir)
  const run = async <T>(target: Pick<PGlite, 'query'>, text: string, params?: readonly unknown[]): Promise<SqlResult<T>> => {
    const result = await target.query<T>(text, params === undefined ? undefined : [...params])
    return { rows: result.rows, affected: result.affectedRows ?? 0 }
  }
  return {
    kind: 'pglite',
    query: (text, params) => run(db, text, params),
    transaction: (work) =>
      db.transaction(async (tx) => {
        const scoped: SqlQueryable = { query: (text, params) => run(tx, text, params) }
        return work(scoped)
      }),
    close: () => db.close(),
  }
}
