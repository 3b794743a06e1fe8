import type { StreamEvent } from '../event.ts'

/** A batch read back from the write-ahead log, in append order. */
export interface WalBatch {
  /** Monotone position of the batch in this log, starting at 1. */
  readonly lsn: number
  readonly events: readonly StreamEvent[]
}

/** Engine state at a point of the log: opaque bytes the engine encodes and decodes itself. */
export interface Checkpoint {
  /** Every batch with `lsn <= upToLsn` is contained in `state`. */
  readonly upToLsn: number
  readonly state: Uint8Array
}

/** A stored record that failed its checksum or could not be decoded. */
export interface CorruptRecord {
  readonly store: string
  readonly key: string
  readonly reason: string
  /** Events known to be lost with it, when the header could still be read. */
  readonly lostEvents?: number
}

/** What `open()` found: the newest valid checkpoint and every valid batch after it. */
export interface RecoveredLog {
  readonly checkpoint: Checkpoint | null
  readonly tail: readonly WalBatch[]
  readonly corrupt: readonly CorruptRecord[]
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
 * Where an engine logs accepted batches before applying them (DESIGN §5).
 * `append` resolves only after the batch is committed; a full quota rejects with `QuotaError`.
 */
export interface Persistence {
  /** Checkpoint cadence the engine should follow; absent means the engine's default. */
  readonly checkpointEvery?: CheckpointPolicy
  /** Reads what survived; call once before `append`, and again only after `close()`. */
  open(): Promise<RecoveredLog>
  /** Appends one batch as one record; resolves with its lsn after commit. */
  append(events: readonly StreamEvent[]): Promise<number>
  /** Stores a checkpoint, then drops log records with `lsn <= checkpoint.upToLsn`. */
  checkpoint(checkpoint: Checkpoint): Promise<void>
  stats(): PersistenceStats
  close(): Promise<void>
}
