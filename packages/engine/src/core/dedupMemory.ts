import type { Frontiers } from '../time/frontiers.ts'
import type { BatchFrontiers, WindowIndex } from '../windows/windowIndex.ts'

/**
 * How many entries the source clocks hold in dedup memory, and when to release the ones
 * behind the lateness horizon: whenever the count doubled (plus 4096) since the last release,
 * so releasing costs amortized O(1) per event.
 */
export class DedupMemory {
  entries = 0
  atLastPurge = 0

  /** True when the count grew enough since the last release to scan the clocks again. */
  get due(): boolean {
    return this.entries > 2 * this.atLastPurge + 4096
  }

  /** Releases dedup memory behind the lateness horizon of every spec. */
  purge(indexes: readonly WindowIndex[], frontiers: Frontiers, batch: BatchFrontiers): void {
    let horizon = Number.POSITIVE_INFINITY
    for (const index of indexes) horizon = Math.min(horizon, index.horizon(batch))
    // No horizon yet (-Infinity); at +Infinity (a watermark advanced to the end of time) every entry goes.
    if (!(horizon > Number.NEGATIVE_INFINITY)) return
    for (const clock of frontiers.sources.values()) this.entries -= clock.forgetBefore(horizon)
    this.atLastPurge = this.entries
  }
}
