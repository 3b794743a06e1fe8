/**
 * PostgreSQL through `pg`: a small pool, so a slow statement does not block the others.
 */
import pg from 'pg'
import type { SqlClient, SqlQueryable, SqlResult } from './sqlClient.ts'

/**
 * Connects to PostgreSQL (`postgres://user:password@host:port/database`) and checks it answers.
 * `onError` receives errors of idle pooled connections (a restarted server), which would
 * otherwise end the process.
 *
 * @example
 * const sql = await openPostgres(process.env.DATABASE_URL, (error) => console.error(error))
 */
export async function openPostgres(url: string, onError: (error: Error) => void): Promise<SqlClient> {
  const pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 5000 })
  pool.on('error', onError)
  const run = async <T>(target: Pick<pg.Pool | pg.PoolClient, 'query'>, text: string, params?: readonly unknown[]): Promise<SqlResult<T>> => {
    const result = await target.query(text, params === undefined ? undefined : [...params])
    return { rows: result.rows as T[], affected: result.rowCount ?? 0 }
  }
  try {
    await pool.query('select 1')
  } catch (error) {
    await pool.end().catch(() => undefined)
    throw error
  }
  return {
    kind: 'postgres',
    query: (text, params) => run(pool, text, params),
    async transaction(work) {
      const client = await pool.connect()
      // An error of a checked-out client is reported through the query that hits it.
      const ignore = (): void => undefined
      client.on('error', ignore)
      let failure: Error | undefined
      try {
        await client.query('begin')
        const scoped: SqlQueryable = { query: (text, params) => run(client, text, params) }
        const result = await work(scoped)
        await client.query('commit')
        return result
      } catch (error) {
        failure = error instanceof Error ? error : new Error(String(error))
        await client.query('rollback').catch(() => undefined)
        throw error
      } finally {
        client.off('error', ignore)
        // A connection whose transaction failed is discarded rather than reused.
        client.release(failure)
      }
    },
    close: () => pool.end(),
  }
}
