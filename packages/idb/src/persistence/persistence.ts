import type { LateEvent, ResultQuery, WalOp, WindowResult } from '@tidemark/engine'

/**
 * The kinds of logged operation: `ingest`, `advance`, `tick`, `merge`, `refuse`, `finish`.
 *
 * @example
 * const kind: WalOpKind = 'ingest'
 */
export type WalOpKind = WalOp['kind']

/**
 * An operation read back from the write-ahead log, in append order: an ingest batch (its
 * valid events, the processing time and the invalid inputs by reason), a watermark advance,
 * a tick, a merge of peers' cells and clocks, a batch or peers' state refused (counts only), or
 * a source finished.
 */
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
  /**
   * The engine's late lane at this point, kept in the `lateLane` store rather than in
   * `state`. The persistence stores the entries it does not hold yet and drops the ones
   * the lane trimmed, in the checkpoint's transaction; `open()` returns them.
   */
  readonly lateLane?: LateLaneSnapshot
}

/** The late lane as the engine holds it: a bounded ring, oldest entry first. */
export interface LateLaneSnapshot {
  readonly entries: readonly LateEvent[]
  /** Entries ever put on the lane; `entries[i]` is entry number `total - entries.length + i` (from 0). */
  readonly total: number
}

/** Consecutive late-lane entries as stored: `entries[i]` is entry number `from + i`. */
export interface LateLaneRecord {
  readonly from: number
  readonly entries: readonly LateEvent[]
}

/**
 * A change that the final-window archive keeps: a window's final result (`final`), or the
 * retraction of a final result (`retract`: a peer's late session fragment merged it into
 * another, a finality violation).
 */
export interface ArchivedChange {
  readonly type: 'final' | 'retract'
  readonly result: WindowResult
}

/** Filter for `persistence.archive(query)`, as for `engine.results(query)`: `from`/`to` bound window starts, `[from, to)`. */
export type ArchiveQuery = ResultQuery

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
  /** Every late-lane record stored, by `from`; entries past the checkpoint's lane are the caller's to ignore. */
  readonly lateLane: readonly LateLaneRecord[]
}

/**
 * Counters of a persistence's log and of what it stores beside it (`persistence.stats()`).
 *
 * @example
 * const { walRecords, archiveRotated } = persistence.stats()
 */
export interface PersistenceStats {
  /** Log records currently stored (valid or not), found by `open()` or appended since. */
  readonly walRecords: number
  /** Encoded bytes of those records. */
  readonly walBytes: number
  /** Checkpoints committed through this handle since it was opened. */
  readonly checkpoints: number
  /** Corrupt log records and checkpoints reported by `open()`, and corrupt archive records found by `archive()`. */
  readonly corruptRecords: number
  /** Late-lane entries and records stored (the lane's bound, plus at most one record's worth). */
  readonly lateLaneEntries: number
  readonly lateLaneRecords: number
  /** Final-window archive: changes kept, records, and changes dropped by rotation since the database was created (0 without an archive). */
  readonly archivedChanges: number
  readonly archiveRecords: number
  readonly archiveRotated: number
}

/** When the engine should take a checkpoint: after `events` logged events or `ms` of processing time, whichever comes first. */
export interface CheckpointPolicy {
  readonly events: number
  readonly ms: number
}

/**
 * Where an engine logs its journal (docs/durability.md): `openEngine` appends every operation and
 * checkpoints the engine state. `append` resolves only after the record is committed; a
 * full quota rejects with `QuotaError`. Beside the log it keeps the late lane (written with
 * each checkpoint) and, when given one, the final-window archive (staged by `archiveFinal`,
 * written with the next checkpoint): both are derived from the log, so a crash before that
 * checkpoint loses nothing, replay derives them again.
 */
export interface Persistence {
  /** Checkpoint cadence the engine should follow; absent means the engine's default. */
  readonly checkpointEvery?: CheckpointPolicy
  /** Highest lsn found by `open()` or handed out by `append` (at call time, before commit). */
  readonly lastLsn: number
  /**
   * Reads what survived; call once before `append`, and again only after `close()`.
   *
   * @example
   * const { checkpoint, tail, corrupt } = await persistence.open()
   */
  open(): Promise<RecoveredLog>
  /**
   * Appends one operation as one record; resolves with its lsn after commit. Encodes
   * `op` before it returns, so the caller may reuse it at once, and numbers records in
   * call order.
   *
   * @example
   * const lsn = await persistence.append({ kind: 'advance', to: 60_000 })
   */
  append(op: WalOp): Promise<number>
  /**
   * Stores a checkpoint, then drops log records with `lsn <= checkpoint.upToLsn`; in the
   * same transaction, stores the late lane it carries and the archive changes staged so far.
   *
   * @example
   * // `state` is opaque to the persistence: openEngine stores its engine's encoded checkpoint here.
   * await persistence.checkpoint({ upToLsn: persistence.lastLsn, state: new Uint8Array([1, 2, 3]) })
   * // after close(), open() returns it: checkpoint.state is Uint8Array [1, 2, 3], the tail is empty
   */
  checkpoint(checkpoint: Checkpoint): Promise<void>
  /**
   * Stages final results (and retractions of final results) for the archive: `archive()`
   * returns them at once; the next checkpoint stores them. Present only when the persistence
   * has an archive (its `archive: finalArchive()` option): `openEngine` watches for final
   * windows only then.
   *
   * @example
   * // openEngine does this for the engine it opens; by hand:
   * engine.subscribe((changes) => {
   *   for (const change of changes) if (change.type === 'final') persistence.archiveFinal?.({ type: 'final', result: change.result })
   * })
   */
  readonly archiveFinal?: (change: ArchivedChange) => void
  /**
   * The latest final result of every archived window matching `query`, in the order of
   * `engine.results()`: windows that left live state (retention) included, within the
   * archive's bound (`finalArchive({ limit })`). Needs `open()`; rejects with an Error
   * when the persistence has no archive.
   *
   * @example
   * const lastWeek = await persistence.archive({ window: 'tumbling:60000', key: 'temp', from: Date.now() - 7 * 86_400_000 })
   */
  archive(query?: ArchiveQuery): Promise<readonly WindowResult[]>
  /**
   * Stores a small value beside the log (read back by the next `open()`); resolves after commit.
   *
   * @example
   * await persistence.putMeta('replicaId', engine.replica.replicaId)
   */
  putMeta(key: string, value: string): Promise<void>
  /**
   * Counters of the log and what is stored beside it.
   *
   * @example
   * const { walRecords, walBytes, corruptRecords } = persistence.stats()
   */
  stats(): PersistenceStats
  /**
   * Waits for appends already made, then releases the storage.
   *
   * @example
   * await persistence.close()
   */
  close(): Promise<void>
}
