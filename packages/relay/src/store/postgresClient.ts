/**
 * PostgreSQL through `pg`: a small pool, so a slow statement does not block the others. Every
 * statement is bounded: the server cancels one running past `STATEMENT_TIMEOUT_MS`, and the
 * client gives up on one unanswered after `QUERY_TIMEOUT_MS` (a network that silently stalls
 * answers nothing, and `pg` alone would wait forever: writes, unloads, shutdown and /metrics
 * with it). TCP keepalive notices a peer that went away.
 */
import pg from 'pg'
import type { SqlClient, SqlQueryable, SqlResult } from './sqlClient.ts'

/** The server cancels a statement running longer than this (ms). */
export const STATEMENT_TIMEOUT_MS = 30_000

/** A statement unanswered this long fails, and its connection is discarded (ms). */
export const QUERY_TIMEOUT_MS = 35_000

/**
 * How long `openPostgres` waits: for a connection, for a statement's answer.
 *
 * @example
 * const timeouts: PostgresTimeouts = { connectMs: 5000, queryMs: 35_000 }
 */
export interface PostgresTimeouts {
  readonly connectMs: number
  readonly queryMs: number
}

/**
 * Connects to PostgreSQL (`postgres://user:password@host:port/database`) and checks it answers.
 * `onError` receives errors of idle pooled connections (a restarted server), which would
 * otherwise end the process.
 *
 * @example
 * const sql = await openPostgres(process.env.DATABASE_URL ?? 'postgres://127.0.0.1/tidemark', (error) => console.error(error))
 */
export async function openPostgres(url: string, onError: (error: Error) => void, timeouts: PostgresTimeouts = { connectMs: 5000, queryMs: QUERY_TIMEOUT_MS }): Promise<SqlClient> {
  const pool = new pg.Pool({
    connectionString: url,
    max: 4,
    connectionTimeoutMillis: timeouts.connectMs,
    query_timeout: timeouts.queryMs,
    statement_timeout: Math.min(STATEMENT_TIMEOUT_MS, timeouts.queryMs),
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  })
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

/**
 * A name of the database `sql` writes to that relays on the same database read alike and relays
 * on another read differently: the server cluster's system identifier and the database's name.
 * Null when the server does not tell them.
 *
 * @example
 * await sharedDatabaseName(sql) // '7391823440125863012/tidemark'
 */
export async function sharedDatabaseName(sql: SqlQueryable): Promise<string | null> {
  try {
    const result = await sql.query<{ name: string | null }>("select (select system_identifier::text from pg_control_system()) || '/' || current_database() as name")
    const name = result.rows[0]?.name
    return typeof name === 'string' && name.length > 0 ? name : null
  } catch {
    return null
  }
}
