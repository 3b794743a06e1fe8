/**
 * Opens the store a relay's `store` option names: a PGlite data directory (made when missing),
 * a PostgreSQL database, or the SQL client given.
 */
import { mkdir } from 'node:fs/promises'
import { describeError, type RelayLog } from '../relayLog.ts'
import type { RelayStoreOption } from '../relayOptions.ts'
import { openPglite } from './pgliteClient.ts'
import { openPostgres } from './postgresClient.ts'
import type { SqlClient } from './sqlClient.ts'

/**
 * The store's SQL client; rejects with `the store could not be opened: <why>`.
 *
 * @example
 * const sql = await openStore({ dataDir: '.tidemark-relay' }, log)
 */
export async function openStore(store: RelayStoreOption, log: RelayLog): Promise<SqlClient> {
  try {
    if ('sql' in store) return store.sql
    if ('databaseUrl' in store) return await openPostgres(store.databaseUrl, (error) => log('warn', `PostgreSQL connection: ${describeError(error)}`))
    await mkdir(store.dataDir, { recursive: true })
    return await openPglite(store.dataDir)
  } catch (error) {
    throw new Error(`the store could not be opened: ${describeError(error)}`, { cause: error })
  }
}
