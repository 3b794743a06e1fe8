import type { JournalOp } from '../engineCheckpoint.ts'

/**
 * One operation of the engine's journal, as the log stores it: an ingest batch (its valid
 * events, the processing time and the invalid inputs by reason), a watermark advance, a
 * tick, or a merge of peers' cells and clocks. A record of the older format 1 reads back
 * as an ingest with `now: NaN` (that format did not record processing time).
 */
export type WalOp = JournalOp

export type WalOpKind = WalOp['kind']

/** An operation read back from the write-ahead log, in append order. */
export interface WalRecord {
  /** Monotone position of the record in this log, starting at 1. */
  readonly lsn: number
  readonly op: WalOp
}

/** Engine state at a point of the log: opaque bytes the engine encodes and decodes itself. */
export interface Checkpoint {
  /** Every record with `lsn <= upToLsn` is contained in `state`. */
  readonly upToLsn: number
  readonly state: Uint8Array
}

/** A stored record that failed its checksum or could not be decoded. */
export interface CorruptRecord {
  readonly store: string
  readonly key: string
  readonly reason: string
  /** Kind of the lost log operation, when the header could still be read. */
  readonly kind?: WalOpKind
  /** Events known to be lost with it (ingest records), when the header could still be read. */
  readonly lostEvents?: number
}

/** What `open()` found: the newest valid checkpoint, every valid record after it, and the metadata. */
export interface RecoveredLog {
  readonly checkpoint: Checkpoint | null
  readonly tail: readonly WalRecord[]
  readonly corrupt: readonly CorruptRecord[]
  /** Small values stored beside the log with `putMeta` (the replica id). */
  readonly meta: ReadonlyMap<string, string>
}

export interface PersistenceStats {
  /** Log records currently stored (valid or not), found by `open()` or appended since. */
  readonly walRecords: number
  /** Encoded bytes of those records. */
  readonly walBytes: number
  /** Checkpoints committed through this handle since it was opened. */
  readonly checkpoints: number
  /** Corrupt log records and checkpoints reported by `open()`. */
  readonly corruptRecords: number
}

/** When the engine should take a checkpoint: after `events` logged events or `ms` of processing time, whichever comes first. */
export interface CheckpointPolicy {
  readonly events: number
  readonly ms: number
}

/**
 * Where an engine logs its journal (DESIGN §5): `openEngine` appends every operation and
 * checkpoints the engine state. `append` resolves only after the record is committed; a
 * full quota rejects with `QuotaError`.
 */
export interface Persistence {
  /** Checkpoint cadence the engine should follow; absent means the engine's default. */
  readonly checkpointEvery?: CheckpointPolicy
  /** Highest lsn found by `open()` or handed out by `append` (at call time, before commit). */
  readonly lastLsn: number
  /** Reads what survived; call once before `append`, and again only after `close()`. */
  open(): Promise<RecoveredLog>
  /**
   * Appends one operation as one record; resolves with its lsn after commit. Encodes
   * `op` before it returns, so the caller may reuse it at once, and numbers records in
   * call order.
   */
  append(op: WalOp): Promise<number>
  /** Stores a checkpoint, then drops log records with `lsn <= checkpoint.upToLsn`. */
  checkpoint(checkpoint: Checkpoint): Promise<void>
  /** Stores a small value beside the log (read back by the next `open()`); resolves after commit. */
  putMeta(key: string, value: string): Promise<void>
  stats(): PersistenceStats
  /** Waits for appends already made, then releases the storage. */
  close(): Promise<void>
}
