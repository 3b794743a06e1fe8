/**
 * The room store's upkeep beside its writes: how many bytes it stores, whether it answers, and,
 * on PGlite, which runs neither autovacuum nor a checkpointer, the vacuum and checkpoints a
 * PostgreSQL server would run itself.
 */
import type { StoreOperation } from '../metrics/relayMetrics.ts'
import { describeError, type RelayLog } from '../relayLog.ts'
import type { SqlClient } from './sqlClient.ts'

const STORED_BYTES = `select (
  (select coalesce(sum(octet_length(bytes)), 0) from tidemark_relay_snapshots) +
  (select coalesce(sum(octet_length(bytes)), 0) from tidemark_relay_updates))::float8 as n`

/** Stored bytes are read from the database at most this often; counted from this relay's writes in between. */
const STORED_BYTES_READ_EVERY_MS = 60_000
/** How long `check` waits for the store's answer. */
const HEALTH_TIMEOUT_MS = 2000
/** PGlite runs no autovacuum: its tables are vacuumed after this many compactions. */
const VACUUM_EVERY_COMPACTIONS = 100
/** PGlite runs no checkpointer: it is checkpointed after this many bytes written (its log then stays near `max_wal_size`, see pgliteClient.ts). */
const CHECKPOINT_EVERY_BYTES = 16 << 20

/** Runs one store operation, timing it and counting its failure. */
export type TimedOperation = <T>(op: StoreOperation, work: () => Promise<T>) => Promise<T>

/**
 * The count of stored bytes, the health check, and PGlite's vacuum and checkpoints.
 *
 * @example
 * const upkeep = new StoreUpkeep(sql, timed, log)
 * upkeep.wrote(rowBytes)          // counted, and checkpointed past 16 MiB on PGlite
 * await upkeep.compacted()        // vacuumed every 100 compactions on PGlite
 * await upkeep.storedBytes()      // read at most once a minute
 */
export class StoreUpkeep {
  readonly #sql: SqlClient
  readonly #timed: TimedOperation
  readonly #log: RelayLog
  #compactionsSinceVacuum = 0
  /** Bytes written to PGlite since its last checkpoint. */
  #sinceCheckpoint = 0
  /** Stored bytes as counted from the last read of the database plus this relay's changes since. */
  #stored: number | undefined
  #storedReadAt = 0
  #storedRead: Promise<number> | undefined

  constructor(sql: SqlClient, timed: TimedOperation, log: RelayLog) {
    this.#sql = sql
    this.#timed = timed
    this.#log = log
  }

  /** `bytes` were written (update rows, or a snapshot): counted, and on PGlite checkpointed every `CHECKPOINT_EVERY_BYTES`. */
  wrote(bytes: number): void {
    if (this.#stored !== undefined) this.#stored += bytes
    if (this.#sql.kind !== 'pglite') return
    this.#sinceCheckpoint += bytes
    if (this.#sinceCheckpoint < CHECKPOINT_EVERY_BYTES) return
    this.#sinceCheckpoint = 0
    this.checkpoint().catch((error: unknown) => this.#log('warn', `checkpointing the store failed: ${describeError(error)}`))
  }

  /** `bytes` stored bytes were deleted or moved aside. */
  removed(bytes: number): void {
    if (this.#stored !== undefined) this.#stored -= bytes
  }

  /** A compaction ended: on PGlite, every `VACUUM_EVERY_COMPACTIONS`-th vacuums the tables, or deleted rows' space would never be reused. */
  async compacted(): Promise<void> {
    if (this.#sql.kind !== 'pglite' || ++this.#compactionsSinceVacuum < VACUUM_EVERY_COMPACTIONS) return
    this.#compactionsSinceVacuum = 0
    await this.#sql.query('vacuum tidemark_relay_updates')
    await this.#sql.query('vacuum tidemark_relay_snapshots')
  }

  /** Checkpoints the store. */
  checkpoint(): Promise<unknown> {
    return this.#timed('checkpoint', () => this.#sql.query('checkpoint'))
  }

  /**
   * Before the store closes: on PGlite, a checkpoint (what its log holds past the last one is
   * replayed at the next open: less of it, a faster start). A failure is logged, not thrown.
   */
  async beforeClose(): Promise<void> {
    if (this.#sql.kind !== 'pglite') return
    await this.checkpoint().catch((error: unknown) => this.#log('warn', `checkpointing the store before closing failed: ${describeError(error)}`))
  }

  /**
   * Bytes of snapshots and updates stored: read from the database at most once a minute (other
   * relays may share it), counted from this relay's writes and compactions in between. A read
   * that fails while a count stands is logged and the count answered.
   */
  async storedBytes(): Promise<number> {
    if (this.#stored !== undefined && Date.now() - this.#storedReadAt < STORED_BYTES_READ_EVERY_MS) return this.#stored
    if (this.#storedRead === undefined) {
      const read = this.#sql
        .query<{ n: number }>(STORED_BYTES)
        .then((result) => {
          this.#stored = Number(result.rows[0]?.n ?? 0)
          this.#storedReadAt = Date.now()
          return this.#stored
        })
        .finally(() => {
          this.#storedRead = undefined
        })
      this.#storedRead = read
      // Read behind a standing count, which callers get meanwhile: its failure is told here, once.
      if (this.#stored !== undefined) read.catch((error: unknown) => this.#log('warn', `reading the store's size failed (the count since the last read stands): ${describeError(error)}`))
    }
    return this.#stored ?? this.#storedRead
  }

  /** Resolves when the store answers a query within 2 s. */
  async check(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the store did not answer within ${HEALTH_TIMEOUT_MS} ms`)), HEALTH_TIMEOUT_MS)
    })
    try {
      await Promise.race([this.#sql.query('select 1'), late])
    } finally {
      clearTimeout(timer)
    }
  }
}
