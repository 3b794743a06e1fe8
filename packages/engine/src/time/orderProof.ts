import type { EventStamp, SourceClock } from './sourceClock.ts'
import type { Basis } from './basis.ts'

/** How a source's `seq` stopped proving order, as far as its events delivered so far show. */
interface ProofBreak {
  /** The seq of the prefix where the first event without `seq` arrived (Infinity: none came). */
  seqlessFrom: number
  /** The first seq of the gap-free prefix whose `ts` is below its predecessor's (0: none yet). */
  regressedAt: number
  /** A seq above a gap came with a `ts` below the prefix's last: `ts` goes backwards somewhere above the prefix, whatever fills the gap. */
  regressedAbove: boolean
}

/**
 * The `basis` of ordered events (see `OrderedEvent`), read from the shared source clocks.
 *
 * A `SourceClock` keeps one sticky `provable` flag, which turns false as soon as the seqs
 * delivered prove that `ts` goes backwards somewhere (a seq above a gap below the prefix's last
 * `ts`): right for the proof frontier, too early to say where. This records where: the first
 * regression along the gap-free prefix, found as the prefix grows (so seqs below it stay `proven`
 * whatever order they arrived in), and where the first event without `seq` arrived (arrival
 * order decides that, docs/semantics.md). A source's break is recorded off the in-order path
 * only, with O(1) amortized work per event: each seq of a run that fills a gap is looked at once.
 */
export class OrderProof {
  readonly #breaks = new Map<string, ProofBreak>()

  /** `clock.record(event)` (the caller sets `lastSeen`), noting where the source's proof breaks. */
  record(clock: SourceClock, event: EventStamp): void {
    const { seq, ts } = event
    // In order on a provable clock, ts not going back: nothing to note (the path of most events).
    if (!(clock.provable && seq === clock.prefix + 1 && clock.ahead.size === 0 && ts >= clock.prefixTs)) this.#note(clock, seq, ts)
    clock.record(event)
  }

  /**
   * Basis of an event of `clock`'s source with `seq`, given the clock as it stands now;
   * `tie` when another event of the same emission run has the same `ts`.
   */
  basis(clock: SourceClock, seq: number | undefined, tie: boolean): Basis {
    if (seq === undefined) return tie ? 'fallback' : 'derived'
    const broken = clock.provable ? undefined : this.#breaks.get(clock.name)
    if (broken === undefined) {
      if (seq <= clock.prefix) return clock.provable ? 'proven' : 'fallback'
      return tie || !clock.provable ? 'fallback' : 'unknown'
    }
    // Gap-free, monotone up to here, and delivered before any event without seq.
    const monotoneThrough = broken.regressedAt === 0 ? clock.prefix : broken.regressedAt - 1
    if (seq <= monotoneThrough && seq <= broken.seqlessFrom) return 'proven'
    if (tie) return 'fallback'
    // ts went backwards along seq at or before it.
    if ((broken.regressedAt !== 0 && seq >= broken.regressedAt) || (broken.regressedAbove && seq > clock.prefix)) return 'fallback'
    // Broken by events without seq: this source's seq is no evidence either way.
    return seq <= clock.prefix ? 'derived' : 'unknown'
  }

  /** Notes what an event about to be recorded tells of the break; reads the clock before `record` changes it. */
  #note(clock: SourceClock, seq: number | undefined, ts: number): void {
    let broken = this.#breaks.get(clock.name)
    if (broken === undefined) {
      broken = { seqlessFrom: Number.POSITIVE_INFINITY, regressedAt: 0, regressedAbove: false }
      this.#breaks.set(clock.name, broken)
    }
    if (seq === undefined) {
      if (clock.prefix < broken.seqlessFrom) broken.seqlessFrom = clock.prefix
      return
    }
    // Once ts went backwards along the prefix, later events cannot move where.
    if (broken.regressedAt !== 0) return
    // Until then ts never decreased along the prefix, so `prefixTs` is the ts of its last seq.
    if (seq !== clock.prefix + 1) {
      if (ts < clock.prefixTs) broken.regressedAbove = true
      return
    }
    const at = firstRegression(clock, seq, ts)
    if (at !== 0) broken.regressedAt = at
  }
}

/**
 * The first seq at which `ts` goes backwards along the prefix once `seq` (with `ts`) joins it, or
 * 0: when it fills a gap, the clock drains the seqs waiting above it in one call, and the
 * regression may lie anywhere in that run. Walks only the run the clock is about to drain.
 */
function firstRegression(clock: SourceClock, seq: number, ts: number): number {
  let last = clock.prefixTs
  let next: number | undefined = ts
  let s = seq
  while (next !== undefined) {
    if (next < last) return s
    last = next
    s++
    next = clock.ahead.size === 0 ? undefined : clock.ahead.get(s)
  }
  return 0
}
