import type { EventStamp, SourceClock } from './sourceClock.ts'
import type { Basis } from '../windows/windowResult.ts'

/** Where a source's `seq` stopped proving order. */
interface ProofBreak {
  /** Every seq up to here was in the monotone gap-free prefix before the break. */
  readonly provenThrough: number
  /** True when `ts` went backwards along `seq`; false when an event without `seq` broke it. */
  readonly regressed: boolean
}

/**
 * The `basis` of ordered events (see `OrderedEvent`), read from the shared source clocks.
 *
 * A `SourceClock` keeps one sticky `provable` flag; this records how far the monotone prefix
 * reached when the flag flips, so events inside it stay `proven` afterwards.
 */
export class OrderProof {
  readonly #breaks = new Map<string, ProofBreak>()

  /** `clock.record(event)` (the caller sets `lastSeen`), noting where the source's proof breaks. */
  record(clock: SourceClock, event: EventStamp): void {
    const { seq, ts } = event
    const wasProvable = clock.provable
    const provenThrough = wasProvable && seq !== undefined ? monotoneRunEnd(clock, seq, ts) : clock.prefix
    clock.record(event)
    if (wasProvable && !clock.provable) this.#breaks.set(clock.name, { provenThrough, regressed: seq !== undefined })
  }

  /**
   * Basis of an event of `clock`'s source with `seq`, given the clock as it stands now;
   * `tie` when another event of the same emission run has the same `ts`.
   */
  basis(clock: SourceClock, seq: number | undefined, tie: boolean): Basis {
    if (seq === undefined) return tie ? 'fallback' : 'derived'
    if (clock.provable) {
      if (seq <= clock.prefix) return 'proven'
      return tie ? 'fallback' : 'unknown'
    }
    const broken = this.#breaks.get(clock.name)
    if (broken !== undefined && seq <= broken.provenThrough) return 'proven'
    if (tie || broken === undefined || broken.regressed) return 'fallback'
    // Broken by events without seq: this source's seq is no evidence either way.
    return seq <= clock.prefix ? 'derived' : 'unknown'
  }
}

/**
 * The last seq that stays in a monotone prefix once `seq` (with `ts`) is remembered: when it
 * fills a gap, the clock drains the seqs waiting above it in one call, and the break may lie
 * anywhere in that run. Reads the clock (`prefixTs` is the last prefix ts while it is
 * provable, as ts never decreased along it); walks only the run the clock is about to drain.
 */
function monotoneRunEnd(clock: SourceClock, seq: number, ts: number): number {
  if (seq !== clock.prefix + 1) return clock.prefix
  if (clock.ahead.size === 0) return ts >= clock.prefixTs ? seq : clock.prefix
  let last = clock.prefixTs
  let next: number | undefined = ts
  let s = seq
  while (next !== undefined && next >= last) {
    last = next
    s++
    next = clock.ahead.get(s)
  }
  return s - 1
}
