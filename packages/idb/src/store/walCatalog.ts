import type { WindowResult } from '@tidemark/engine'
import { encodeCheckpoint } from '../checkpoint/checkpointEnvelope.ts'
import { type ArchiveKey, type ArchivePort, type ArchiveWrite, ARCHIVE_ROTATED_KEY, noArchiveError } from '../history/archivePort.ts'
import { LateLaneRecords, type LateLaneWrite } from '../history/lateLaneRecords.ts'
import type { ArchiveQuery, Checkpoint, CorruptRecord, LateLaneRecord, PersistenceStats, RecoveredLog } from '../persistence/persistence.ts'
import { isCorrupt, isLsn, readLateLaneRecord, readTail, type StoredRecord } from './walRecovery.ts'

/** What `open()` read from the stores, for `WalCatalog.recovered`. */
export interface StoredLog {
  /** The newest valid checkpoint. */
  readonly checkpoint: Checkpoint | null
  /** Log records after it, in lsn order. */
  readonly wal: readonly StoredRecord[]
  /** Late-lane records, by key ascending. */
  readonly lateLane: readonly StoredRecord[]
  /** Keys of the archive's records (none read without an archive). */
  readonly archiveKeys: readonly unknown[]
  readonly meta: ReadonlyMap<string, string>
}

/** What one checkpoint writes, all in one transaction. */
export interface CheckpointWrite {
  readonly upToLsn: number
  /** The checkpoint envelope. */
  readonly bytes: Uint8Array<ArrayBuffer>
  readonly lane: LateLaneWrite | null
  readonly archive: ArchiveWrite | null
}

/**
 * What one persistence handle knows about what it stores, whatever the storage: the last lsn
 * handed out and the size of every stored log record (so `stats()` is O(1) and truncation needs
 * no read), the late lane's records and the archive's. It plans each checkpoint's writes and
 * puts `open()`'s result together; the persistence only moves bytes. Callers record a write
 * only after it committed: nothing here counts an unwritten record.
 */
export class WalCatalog {
  readonly #owner: string
  readonly #lateLane = new LateLaneRecords()
  readonly #archive: ArchivePort | null
  #lastLsn = 0
  #checkpointLsn = 0
  /** Stored record sizes by lsn. */
  readonly #sizes = new Map<number, number>()
  #walBytes = 0
  #checkpoints = 0
  #corruptRecords = 0

  /** `owner` names the persistence in errors; `archive` is its archive, taken here. */
  constructor(owner: string, archive: ArchivePort | null) {
    archive?.attach(owner)
    this.#owner = owner
    this.#archive = archive
  }

  /** Whether there is an archive, whose keys `open()` must then read. */
  get archiving(): boolean {
    return this.#archive !== null
  }

  /** Highest lsn handed out or seen on disk. */
  get lastLsn(): number {
    return this.#lastLsn
  }

  /** The lsn for the next append; reserved at call time so concurrent appends stay ordered. */
  nextLsn(): number {
    this.#lastLsn += 1
    return this.#lastLsn
  }

  /** Makes later lsns greater than one seen on disk, even in a record that failed to decode. */
  observeLsn(lsn: number): void {
    // Keys come from storage, where a foreign writer may have put anything: a fraction or a
    // number past 2^53 would make every later lsn one no record can be written under.
    if (isLsn(lsn) && lsn > this.#lastLsn) this.#lastLsn = lsn
  }

  /** Whether the log record at `lsn` is one this handle stored or recovered, not yet truncated. */
  holds(lsn: number): boolean {
    return this.#sizes.has(lsn)
  }

  recordStored(lsn: number, bytes: number): void {
    this.observeLsn(lsn)
    this.#walBytes += bytes - (this.#sizes.get(lsn) ?? 0)
    this.#sizes.set(lsn, bytes)
  }

  /** Forgets everything but the lsn counter, for a fresh `open()`. */
  reset(): void {
    this.#sizes.clear()
    this.#walBytes = 0
    this.#checkpoints = 0
    this.#corruptRecords = 0
  }

  /**
   * `open()`'s result from what the stores held: decodes the tail and the late lane, loads the
   * archive's keys; `corrupt` holds the damaged checkpoints met on the way, and gets the rest.
   */
  recovered(stored: StoredLog, corrupt: CorruptRecord[]): RecoveredLog {
    const { checkpoint, meta } = stored
    // The lane store was written with the newest checkpoint: recovered from an older one, or
    // from none, the lane numbers entries anew, so the store must be written whole.
    const fallback = corrupt.length > 0
    if (checkpoint !== null) this.#observeCheckpoint(checkpoint.upToLsn)
    for (const { key, value } of stored.wal) this.recordStored(key, byteLength(value))
    const tail = readTail(stored.wal, corrupt)
    const logCorrupt = corrupt.length
    const lateLane: LateLaneRecord[] = []
    for (const { key, value } of stored.lateLane) {
      const read = readLateLaneRecord(key, value)
      if (isCorrupt(read)) corrupt.push(read)
      else lateLane.push(read)
    }
    this.#lateLane.load(lateLane, fallback || corrupt.length > logCorrupt)
    if (this.#archive !== null) corrupt.push(...this.#archive.load(stored.archiveKeys, meta.get(ARCHIVE_ROTATED_KEY)))
    this.#corruptRecords += corrupt.length
    return { checkpoint, tail, corrupt, meta, lateLane }
  }

  /**
   * The writes of a checkpoint: its envelope, the late lane it carries and the archive changes
   * staged so far, taken now, with the state. Refuses a checkpoint behind the newest one:
   * recovery would pick the newer one and skip this.
   */
  planCheckpoint(checkpoint: Checkpoint): CheckpointWrite {
    const { upToLsn } = checkpoint
    if (upToLsn < this.#checkpointLsn) throw new RangeError(`checkpoint upToLsn ${upToLsn} is behind the stored checkpoint at ${this.#checkpointLsn}`)
    const bytes = encodeCheckpoint(checkpoint)
    const lane = checkpoint.lateLane === undefined ? null : this.#lateLane.plan(checkpoint.lateLane)
    return { upToLsn, bytes, lane, archive: this.#archive?.plan() ?? null }
  }

  /** The checkpoint's writes committed; log records up to it are gone. */
  checkpointed(write: CheckpointWrite): void {
    if (write.lane !== null) this.#lateLane.applied(write.lane)
    write.archive?.applied()
    this.#observeCheckpoint(write.upToLsn)
    this.#checkpoints += 1
    for (const [lsn, bytes] of this.#sizes) {
      if (lsn > write.upToLsn) continue
      this.#sizes.delete(lsn)
      this.#walBytes -= bytes
    }
  }

  /** `persistence.archive(query)`: reads the archive's records through `get` (which checks the persistence is open); rejects without an archive. */
  async readArchive(query: ArchiveQuery | undefined, get: (keys: readonly ArchiveKey[]) => Promise<readonly unknown[]>): Promise<WindowResult[]> {
    if (this.#archive === null) throw noArchiveError(this.#owner)
    return this.#archive.read(query, get)
  }

  /** The log's figures, with those of the late-lane and archive stores beside it (no archive: zeros). */
  stats(): PersistenceStats {
    const archive = this.#archive
    return {
      walRecords: this.#sizes.size,
      walBytes: this.#walBytes,
      checkpoints: this.#checkpoints,
      corruptRecords: this.#corruptRecords + (archive?.corrupt ?? 0),
      lateLaneEntries: this.#lateLane.entries,
      lateLaneRecords: this.#lateLane.records,
      archivedChanges: archive?.changes ?? 0,
      archiveRecords: archive?.records ?? 0,
      archiveRotated: archive?.rotated ?? 0,
    }
  }

  /** Notes the newest checkpoint found on disk or written. */
  #observeCheckpoint(upToLsn: number): void {
    this.observeLsn(upToLsn)
    if (upToLsn > this.#checkpointLsn) this.#checkpointLsn = upToLsn
  }
}

function byteLength(value: unknown): number {
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) return value.byteLength
  return 0
}
