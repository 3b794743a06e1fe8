import { ClockHeap } from './clockHeap.ts'
import type { SourceClock } from './sourceClock.ts'

/**
 * The lowest `maxTs` of the unfinished sources heard from last (the latest `lastSeen`): where `W`
 * goes once every source still counting is idle (docs/semantics.md, idle sources), followed as
 * clocks change rather than found by a pass over every source. While every source is idle, each
 * change (most often a source finished, one at a time) then costs a few heap moves: finishing
 * many idle sources one by one costs O(n log n), not a pass each.
 *
 * Two heaps: every unfinished source by `lastSeen` (the latest on top), and the sources heard at
 * the latest `lastSeen` by `maxTs`. The second is found again from the top of the first only when
 * the latest `lastSeen` moved (a source heard, or the last of those heard at it finished), from
 * the clocks tied there. Every `lastSeen` is a finite time here (as in `FrontierHeaps`).
 *
 * @example
 * const lastHeard = new LastHeard()
 * lastHeard.build(frontiers.sources.values())
 * lastHeard.floor() // the lowest maxTs of the unfinished sources heard at the latest lastSeen
 */
export class LastHeard {
  /** Unfinished sources by `lastSeen` negated: those heard from last on top. */
  readonly #recency = new ClockHeap()
  /** The unfinished sources whose `lastSeen` is `#at`, by `maxTs`. */
  readonly #latest = new ClockHeap()
  /** The `lastSeen` of the sources in `#latest`; NaN while they are to be found. */
  #at = Number.NaN

  /** Holds exactly the unfinished clocks of `clocks`. */
  build(clocks: Iterable<SourceClock>): void {
    const held: SourceClock[] = []
    const recency: number[] = []
    for (const clock of clocks) {
      if (clock.finished) continue
      held.push(clock)
      recency.push(-clock.lastSeen)
    }
    this.#recency.build(held, recency)
    this.#latest.build([], [])
    this.#at = Number.NaN
  }

  /** Places a clock that changed: heard, moved by a peer's copy, or finished (then let go). */
  take(clock: SourceClock): void {
    if (clock.finished) {
      this.#recency.delete(clock)
      this.#latest.delete(clock)
      return
    }
    this.#recency.set(clock, -clock.lastSeen)
    if (clock.lastSeen === this.#at) this.#latest.set(clock, clock.maxTs)
    else this.#latest.delete(clock)
  }

  /** The lowest `maxTs` of the unfinished sources heard from last (the first known among equal ones); -Infinity when there is none. */
  floor(): number {
    const top = this.#recency.top()
    if (top === undefined) return Number.NEGATIVE_INFINITY
    if (!(top.lastSeen === this.#at)) {
      const tied: SourceClock[] = []
      this.#recency.topTies(tied)
      this.#latest.build(
        tied,
        tied.map((clock) => clock.maxTs),
      )
      this.#at = top.lastSeen
    }
    return this.#latest.topKey(Number.NEGATIVE_INFINITY)
  }
}
