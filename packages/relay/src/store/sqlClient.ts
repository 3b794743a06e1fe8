/**
 * The little SQL the room store needs, over PGlite (embedded) or PostgreSQL (`pg`): the same
 * statements run on both.
 */

/**
 * A query's rows and how many rows it changed.
 *
 * @example
 * const { rows } = await sql.query<{ n: number }>('select 1 as n')
 */
export interface SqlResult<T> {
  readonly rows: T[]
  readonly affected: number
}

/**
 * Something that runs parameterized statements (`$1`, `$2`…).
 *
 * @example
 * await sql.query('delete from tidemark_relay_updates where room = $1', ['fleet-a/d07'])
 */
export interface SqlQueryable {
  /** Runs one statement with its parameters; rejects with the database's error. */
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<SqlResult<T>>
}

/**
 * A database connection (or pool) for the room store.
 *
 * @example
 * const sql = await openPglite('.tidemark-relay')
 * await sql.transaction(async (tx) => { await tx.query('select 1') })
 * await sql.close()
 */
export interface SqlClient extends SqlQueryable {
  /** `pglite` has no autovacuum: the store vacuums it itself. */
  readonly kind: 'pglite' | 'postgres'
  /** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(work: (tx: SqlQueryable) => Promise<T>): Promise<T>
  /** Closes the connection (the pool, the PGlite instance); nothing runs on it afterwards. */
  close(): Promise<void>
}
