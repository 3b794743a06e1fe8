import type { PersistenceStats } from '../store/persistence.ts'

/**
 * What one persistence handle knows about its log: the last lsn handed out and the
 * size of every stored record, so `stats()` is O(1) and truncation needs no read.
 * Callers record a write only after it committed: nothing here counts an unwritten record.
 */
export class WalCatalog {
  #lastLsn = 0
  #checkpointLsn = 0
  /** Stored record sizes by lsn. */
  readonly #sizes = new Map<number, number>()
  #walBytes = 0
  #checkpoints = 0
  #corruptRecords = 0

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
    // Keys come from storage, where a foreign writer may have put anything.
    if (typeof lsn === 'number' && lsn > this.#lastLsn) this.#lastLsn = lsn
  }

  /** Refuses a checkpoint behind the newest one: recovery would pick the newer one and skip this. */
  requireCheckpointAt(upToLsn: number): void {
    if (upToLsn < this.#checkpointLsn) {
      throw new RangeError(`checkpoint upToLsn ${upToLsn} is behind the stored checkpoint at ${this.#checkpointLsn}`)
    }
  }

  /** Notes the newest checkpoint found on disk. */
  observeCheckpoint(upToLsn: number): void {
    this.observeLsn(upToLsn)
    if (upToLsn > this.#checkpointLsn) this.#checkpointLsn = upToLsn
  }

  recordStored(lsn: number, bytes: number): void {
    this.observeLsn(lsn)
    this.#walBytes += bytes - (this.#sizes.get(lsn) ?? 0)
    this.#sizes.set(lsn, bytes)
  }

  recordCheckpoint(upToLsn: number): void {
    this.observeCheckpoint(upToLsn)
    this.#checkpoints += 1
    for (const [lsn, bytes] of this.#sizes) {
      if (lsn > upToLsn) continue
      this.#sizes.delete(lsn)
      this.#walBytes -= bytes
    }
  }

  recordCorrupt(count: number): void {
    this.#corruptRecords += count
  }

  /** Forgets everything but the lsn counter, for a fresh `open()`. */
  reset(): void {
    this.#sizes.clear()
    this.#walBytes = 0
    this.#checkpoints = 0
    this.#corruptRecords = 0
  }

  /** The log's figures, with those of the late-lane and archive stores beside it (no archive: zeros). */
  stats(
    lateLane: { readonly records: number; readonly entries: number },
    archive: { readonly records: number; readonly changes: number; readonly rotated: number; readonly corrupt: number } | null,
  ): PersistenceStats {
    return {
      walRecords: this.#sizes.size,
      walBytes: this.#walBytes,
      checkpoints: this.#checkpoints,
      corruptRecords: this.#corruptRecords + (archive?.corrupt ?? 0),
      lateLaneEntries: lateLane.entries,
      lateLaneRecords: lateLane.records,
      archivedChanges: archive?.changes ?? 0,
      archiveRecords: archive?.records ?? 0,
      archiveRotated: archive?.rotated ?? 0,
    }
  }
}
