import { ClockHeap } from './clockHeap.ts'
import { LastHeard } from './lastHeard.ts'
import type { SourceClock } from './sourceClock.ts'

/**
 * The idleness rule (docs/semantics.md, idle sources): a source is idle at processing time `now`
 * once it was silent for longer than `idleTimeout`. Never at a `now` that is not a time.
 *
 * @example
 * idleAt(clock, clock.lastSeen + 30_001, 30_000) // true
 */
export function idleAt(clock: SourceClock, now: number, idleTimeout: number): boolean {
  return now - clock.lastSeen > idleTimeout
}

/**
 * The source clocks that hold the engine's frontiers, kept in order as the clocks change rather
 * than found by a pass over every source: `Frontiers` hands over each clock that changed since it
 * last looked (`take`), and the processing time idleness is judged at (`judge`), and reads the
 * lowest `maxTs` of the active sources (W), of the unfinished ones (strict W), the lowest proof
 * (P), the furthest a finished source reached, the active source silent the longest (the
 * next to turn idle), and, once every source is idle, the lowest `maxTs` of those heard from
 * last (`LastHeard`, followed only from then on). Each clock costs a few heap moves when it
 * changes; a batch that changes few of many sources costs what those few cost.
 *
 * Idleness is judged as a scan at `judgedAt` judges it: the active clocks are those not idle
 * then. Moving `judgedAt` forward turns idle exactly the active clocks silent the longest (a
 * later `now` or an earlier `lastSeen` only makes a source more idle), so `judge` takes them from
 * the top of the silence order. A move back, or to a `now` that is not finite, is `Frontiers`'
 * to rebuild from.
 *
 * @example
 * const heaps = new FrontierHeaps(30_000)
 * heaps.rebuild(frontiers.sources.values(), now, now)
 * heaps.judge(now + 40_000)
 * heaps.idleSources // every source silent since before now + 10_000
 */
export class FrontierHeaps {
  readonly #idleTimeout: number
  /** Unfinished sources not idle, by `maxTs`: the watermark. */
  readonly #active = new ClockHeap()
  /** Unfinished sources, by `maxTs`: the strict watermark. */
  readonly #counting = new ClockHeap()
  /** Unfinished sources, by proof: the proof frontier. */
  readonly #proofs = new ClockHeap()
  /** Finished sources, by `maxTs` negated: the furthest one on top. */
  readonly #finished = new ClockHeap()
  /** Active sources, by `lastSeen` (always a finite time here): the next to turn idle on top. */
  readonly #silence = new ClockHeap()
  /** Where `W` goes once every source still counting is idle: followed from the first time that is asked (`lastHeardFloor`) until `rebuild`. */
  readonly #lastHeard = new LastHeard()
  #lastHeardFollowed = false
  /** Of the clocks taken since `highest()` was last read, the one with the largest `maxTs` (the first known among equal ones). */
  #highest: SourceClock | null = null
  /**
   * The processing time idleness was last judged at (`rebuild`, `judge`), which `take` judges a
   * clock at: kept here rather than handed to every `take`, where a number passed to a call the
   * optimizer does not inline is boxed, a heap number per changed clock.
   */
  #judgedAt = Number.NEGATIVE_INFINITY

  constructor(idleTimeout: number) {
    this.#idleTimeout = idleTimeout
  }

  /** Unfinished sources judged idle. */
  get idleSources(): number {
    return this.#counting.size - this.#active.size
  }

  get finishedSources(): number {
    return this.#finished.size
  }

  /** Lowest `maxTs` of the active sources; +Infinity when there is none. */
  activeFloor(): number {
    return this.#active.topKey(Number.POSITIVE_INFINITY)
  }

  /** Lowest `maxTs` of the unfinished sources; +Infinity when there is none. */
  countingFloor(): number {
    return this.#counting.topKey(Number.POSITIVE_INFINITY)
  }

  /** Lowest proof of the unfinished sources; +Infinity when there is none. */
  proofFloor(): number {
    return this.#proofs.topKey(Number.POSITIVE_INFINITY)
  }

  /** Largest `maxTs` a finished source reached; -Infinity when none finished. */
  finishedReach(): number {
    return this.#finished.top()?.maxTs ?? Number.NEGATIVE_INFINITY
  }

  /**
   * The lowest `maxTs` of the unfinished sources heard from last (-Infinity when there is none):
   * where `W` goes once every one is idle (`Frontiers` asks only then). The first call after
   * `rebuild` reads every clock of `sources`; from then on the clocks taken are followed, so each
   * later call and change costs a few heap moves.
   */
  lastHeardFloor(sources: ReadonlyMap<string, SourceClock>): number {
    if (!this.#lastHeardFollowed) {
      this.#lastHeard.build(sources.values())
      this.#lastHeardFollowed = true
    }
    return this.#lastHeard.floor()
  }

  /** The active source with the lowest `maxTs` (holding W), the first known among equal ones. */
  watermarkHolder(): SourceClock | null {
    return this.#active.top() ?? null
  }

  /** The unfinished source with the lowest proof (holding P), the first known among equal ones. */
  proofHolder(): SourceClock | null {
    return this.#proofs.top() ?? null
  }

  /** The active source silent the longest: the next to turn idle (none when every one is idle, or never can be). */
  quietest(): SourceClock | null {
    return this.#silence.top() ?? null
  }

  /** The clock with the largest `maxTs` among those taken since the last call (null: none), then forgets it. */
  highest(): SourceClock | null {
    const highest = this.#highest
    this.#highest = null
    return highest
  }

  /**
   * Places every clock of `clocks` (in the order the sources were first seen), idleness judged at
   * `judgedAt`; a clock heard while processing time was not a finite time counts as heard at `now`
   * (the finite time the frontiers advance to), as a pass over the sources counts it.
   */
  rebuild(clocks: Iterable<SourceClock>, judgedAt: number, now: number): void {
    const active: SourceClock[] = []
    const activeTs: number[] = []
    const counting: SourceClock[] = []
    const countingTs: number[] = []
    const proofs: number[] = []
    const finished: SourceClock[] = []
    const finishedTs: number[] = []
    const silence: SourceClock[] = []
    const lastSeen: number[] = []
    this.#highest = null
    this.#judgedAt = judgedAt
    // Every source idle is rare: the sources heard from last are followed once it happens.
    this.#lastHeardFollowed = false
    for (const clock of clocks) {
      if (!Number.isFinite(clock.lastSeen)) clock.lastSeen = now
      if (this.#highest === null || clock.maxTs > this.#highest.maxTs) this.#highest = clock
      if (clock.finished) {
        finished.push(clock)
        finishedTs.push(-clock.maxTs)
        continue
      }
      counting.push(clock)
      countingTs.push(clock.maxTs)
      proofs.push(clock.proof())
      if (idleAt(clock, judgedAt, this.#idleTimeout)) continue
      active.push(clock)
      activeTs.push(clock.maxTs)
      silence.push(clock)
      lastSeen.push(clock.lastSeen)
    }
    this.#active.build(active, activeTs)
    this.#counting.build(counting, countingTs)
    this.#proofs.build(counting, proofs)
    this.#finished.build(finished, finishedTs)
    this.#silence.build(silence, lastSeen)
  }

  /** Places a clock that changed (a new one, an event, a peer's copy, a finish), idleness judged where it was last judged (`rebuild`, `judge`). */
  take(clock: SourceClock): void {
    const highest = this.#highest
    if (highest === null || clock.maxTs > highest.maxTs || (clock.maxTs === highest.maxTs && clock.slot < highest.slot)) this.#highest = clock
    if (this.#lastHeardFollowed) this.#lastHeard.take(clock)
    if (clock.finished) {
      this.#counting.delete(clock)
      this.#proofs.delete(clock)
      this.#active.delete(clock)
      this.#silence.delete(clock)
      this.#finished.set(clock, -clock.maxTs)
      return
    }
    // A peer's copy can take a finish back (a conflict's keeper adopting the loser's clock).
    this.#finished.delete(clock)
    this.#counting.set(clock, clock.maxTs)
    this.#proofs.set(clock, clock.proof())
    if (idleAt(clock, this.#judgedAt, this.#idleTimeout)) {
      this.#active.delete(clock)
      this.#silence.delete(clock)
      return
    }
    // Its `lastSeen` is a finite time: `Frontiers` leaves a clock heard at no time to a pass.
    this.#active.set(clock, clock.maxTs)
    this.#silence.set(clock, clock.lastSeen)
  }

  /**
   * Judges idleness at `now`, a finite time at or after the last judgement: the active sources
   * silent for longer than `idleTimeout` since then leave the active ones.
   */
  judge(now: number): void {
    this.#judgedAt = now
    const silence = this.#silence
    for (let clock = silence.top(); clock !== undefined && idleAt(clock, now, this.#idleTimeout); clock = silence.top()) {
      silence.delete(clock)
      this.#active.delete(clock)
    }
  }
}
