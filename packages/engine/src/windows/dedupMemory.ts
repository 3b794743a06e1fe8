import type { Frontiers } from '../time/frontiers.ts'
import type { SourceClock } from '../time/sourceClock.ts'
import type { BatchFrontiers, WindowIndex } from './windowIndex.ts'

/**
 * How many entries the source clocks hold in dedup memory, and when to release the ones
 * behind the lateness horizon: whenever the count doubled (plus 4096) since the last release,
 * so releasing costs amortized O(1) per event.
 */
export class DedupMemory {
  entries = 0
  atLastPurge = 0
  /** The horizon of the last release: every entry then left was at or above it (-Infinity: none yet). */
  #purgedBelow = Number.NEGATIVE_INFINITY
  /** An entry below `#purgedBelow` was remembered since the last release (an event beyond lateness, kept for the late lane). */
  #rememberedBelow = false

  /** True when the count grew enough since the last release to scan the clocks again. */
  get due(): boolean {
    return this.entries > 2 * this.atLastPurge + 4096
  }

  /**
   * Counts `count` entries a clock remembered for an event at `ts`.
   *
   * @example
   * const before = clock.dedupEntries()
   * clock.record(event)
   * dedup.remembered(clock.dedupEntries() - before, event.ts)
   */
  remembered(count: number, ts: number): void {
    if (count > 0 && ts < this.#purgedBelow) this.#rememberedBelow = true
    this.entries += count
  }

  /** Releases dedup memory behind the lateness horizon of every spec (see `release`). */
  purge(indexes: readonly WindowIndex[], frontiers: Frontiers, batch: BatchFrontiers): void {
    let horizon = Number.POSITIVE_INFINITY
    for (const index of indexes) horizon = Math.min(horizon, index.horizon(batch))
    // No horizon yet (-Infinity); at +Infinity (a watermark advanced to the end of time) every entry goes.
    if (!(horizon > Number.NEGATIVE_INFINITY)) return
    this.release(horizon, frontiers.sources.values())
  }

  /**
   * Releases the entries of `clocks` below `horizon`; returns how many. With the memory full,
   * every event that needs an entry asks for a release: one that can free nothing (the horizon
   * did not move, and nothing below it was remembered since) skips the pass over every clock, or
   * a full memory would cost a pass over all of it per refused event.
   *
   * @example
   * dedup.release(finality, frontiers.sources.values()) // the ordered stream, below finality
   */
  release(horizon: number, clocks: Iterable<SourceClock>): number {
    let released = 0
    if (horizon > this.#purgedBelow || this.#rememberedBelow) {
      for (const clock of clocks) released += clock.forgetBefore(horizon)
      this.entries -= released
      this.#purgedBelow = horizon
      this.#rememberedBelow = false
    }
    this.atLastPurge = this.entries
    return released
  }

  /**
   * Takes the count of a checkpoint's clocks (counted from them) and its last purge's count:
   * the clocks are new, so the next purge scans them whatever its horizon.
   *
   * @example
   * dedup.restore(entries, checkpoint.dedup.atLastPurge)
   */
  restore(entries: number, atLastPurge: number): void {
    this.entries = entries
    this.atLastPurge = atLastPurge
    this.#purgedBelow = Number.NEGATIVE_INFINITY
    this.#rememberedBelow = false
  }
}
