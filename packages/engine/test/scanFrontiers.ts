import type { EngineCheckpoint } from '../src/recovery/engineCheckpoint.ts'
import type { ClockEntry } from '../src/replica/replicaPort.ts'
import type { FrontierHolders } from '../src/time/frontiers.ts'
import { SourceClock } from '../src/time/sourceClock.ts'
import type { WatermarkStrategy } from '../src/time/watermarkStrategy.ts'

/**
 * Test reference: `Frontiers` as it was before it followed changed clocks in heaps, one pass over
 * every source per `advance` (and per `holders`, `nextIdleAt`, `settledAt`). Kept as it was, so
 * `frontiersIncremental.property.test.ts` can hold the incremental frontiers to its answers.
 *
 * The engine's event-time frontiers (docs/semantics.md, Time): the watermark `W`, the
 * watermark with idle sources still counted (to tell `derived` from `fallback`),
 * and the proof frontier `P`. They move only in `advance()`, between batches. A finished source
 * counts in none of them (when every known source finished, `P` is Infinity: all input is in),
 * but when every other source is idle, `W` goes as far as the furthest finished one reached.
 *
 * @example
 * const frontiers = new ScanFrontiers(boundedOutOfOrderness(5_000), 30_000)
 * frontiers.source('d1', now).remember({ seq: 1, id: 'd1-1', ts: 60_000 }, now)
 * frontiers.advance(now)
 * frontiers.watermark // 55000
 */
export class ScanFrontiers {
  readonly sources = new Map<string, SourceClock>()
  readonly #strategy: WatermarkStrategy
  readonly #idleTimeout: number
  /** The engine watermark; never goes backwards. */
  watermark = Number.NEGATIVE_INFINITY
  /** The watermark had no source been excluded as idle; never above `watermark`'s reasoning. */
  strictWatermark = Number.NEGATIVE_INFINITY
  /** Proof frontier: nothing unseen from a known source can fall below it. */
  proof = Number.NEGATIVE_INFINITY
  /** Sources currently excluded as idle. */
  idleSources = 0
  /** Sources finished, as counted at the last `advance`. */
  finishedSources = 0
  /** Largest event time seen from any source. */
  maxTs = Number.NEGATIVE_INFINITY
  /**
   * A bound on `proof` from peers' clocks this engine could not keep (`untrack`): the lowest
   * proof any of them gave, Infinity while there is none. Their sources still count as unseen,
   * so `P` never passes what they proved when they were dropped.
   */
  untrackedProof = Number.POSITIVE_INFINITY
  /** Processing time of the last `advance` (which judged idleness); -Infinity before the first. */
  #judgedAt = Number.NEGATIVE_INFINITY
  /** Bumped by `advance` and `restore`: `holders()` is found again only after one of them. */
  #moves = 0
  #holders: FrontierHolders = { proof: null, watermark: null }
  #holdersAt = -1

  constructor(strategy: WatermarkStrategy, idleTimeout: number) {
    this.#strategy = strategy
    this.#idleTimeout = idleTimeout
  }

  /** The clock of `name`, created on first sight. */
  source(name: string, now: number): SourceClock {
    let clock = this.sources.get(name)
    if (clock === undefined) {
      // Sources are never forgotten, so the count is a fresh slot.
      clock = new SourceClock(name, now, this.sources.size)
      this.sources.set(name, clock)
    }
    return clock
  }

  /** Manual strategy: moves W forward (never back). Returns true when it moved. */
  advanceTo(t: number): boolean {
    if (!(t > this.watermark)) return false
    this.watermark = t
    if (t > this.strictWatermark) this.strictWatermark = t
    return true
  }

  /**
   * Recomputes W and P from the source clocks at processing time `now`.
   * One pass over sources per batch, never per event.
   */
  advance(now: number): void {
    this.#moves++
    let proof = Number.POSITIVE_INFINITY
    let active = Number.POSITIVE_INFINITY
    let all = Number.POSITIVE_INFINITY
    let finished = Number.NEGATIVE_INFINITY
    let idle = 0
    let finishedSources = 0
    // A clock that gave no time turns no source idle: every source counts as active again.
    this.#judgedAt = Number.isNaN(now) ? Number.NEGATIVE_INFINITY : now
    for (const clock of this.sources.values()) {
      if (clock.maxTs > this.maxTs) this.maxTs = clock.maxTs
      // A finished source holds nothing back: nothing unseen can come from it.
      if (clock.finished) {
        finishedSources++
        if (clock.maxTs > finished) finished = clock.maxTs
        continue
      }
      const p = clock.proof()
      if (p < proof) proof = p
      if (clock.maxTs < all) all = clock.maxTs
      if (this.#idleAt(clock, now)) idle++
      else if (clock.maxTs < active) active = clock.maxTs
    }
    this.idleSources = idle
    this.finishedSources = finishedSources
    // Every source still counting is idle (or there is none): W may go as far as a finished source reached, as it would had that one not finished.
    if (active === Number.POSITIVE_INFINITY) active = finished
    if (this.untrackedProof < proof) proof = this.untrackedProof
    this.proof = this.sources.size === 0 ? Number.NEGATIVE_INFINITY : proof
    if (this.#strategy.kind !== 'bounded') return
    const lag = this.#strategy.outOfOrderness
    if (active !== Number.POSITIVE_INFINITY && active !== Number.NEGATIVE_INFINITY && active - lag > this.watermark) this.watermark = active - lag
    if (all !== Number.POSITIVE_INFINITY && all - lag > this.strictWatermark) this.strictWatermark = all - lag
  }

  /**
   * The sources that hold the frontiers where they are, as the last `advance` judged them: for
   * `P`, the known source with the lowest proof (null when `P` is Infinity or there is no source,
   * or when a peer's clock left out past `maxSources` holds it lower); for `W`, under a bounded
   * watermark, the source not idle and not finished with the lowest largest event time (null
   * otherwise: a manual watermark, or every source idle or finished). Ties go to the source
   * known first. Found again only after the frontiers moved: stats may call it per frame.
   *
   * @example
   * frontiers.holders() // { proof: 'd07', watermark: 'd03' }
   */
  holders(): FrontierHolders {
    if (this.#holdersAt === this.#moves) return this.#holders
    let proof: SourceClock | null = null
    let watermark: SourceClock | null = null
    for (const clock of this.sources.values()) {
      if (clock.finished) continue
      if (proof === null || clock.proof() < proof.proof()) proof = clock
      if (!this.#idleAt(clock, this.#judgedAt) && (watermark === null || clock.maxTs < watermark.maxTs)) watermark = clock
    }
    this.#holders = {
      proof: proof === null || this.untrackedProof < proof.proof() ? null : proof.name,
      watermark: this.#strategy.kind === 'bounded' && watermark !== null ? watermark.name : null,
    }
    this.#holdersAt = this.#moves
    return this.#holders
  }

  /**
   * Leaves out a peer's clock of a source this engine has no room for (`limits.maxSources`):
   * the source is not tracked, so from now on `P` stays at or below what that clock proved (a
   * finished one proves everything). Never undone: a later copy of the clock, which may prove
   * more, finds no room either. Returns the bound.
   *
   * @example
   * frontiers.untrack({ source: 'd9', writer: 'r2', maxTs: 70_000, prefix: 4, prefixTs: 70_000, provable: true, version: 4 })
   * frontiers.untrackedProof // 70000
   */
  untrack(entry: ClockEntry): number {
    const proof = entry.finished === true ? Number.POSITIVE_INFINITY : entry.provable ? entry.prefixTs : Number.NEGATIVE_INFINITY
    if (proof < this.untrackedProof) this.untrackedProof = proof
    return this.untrackedProof
  }

  /**
   * The processing time at which the next source not idle at the last `advance` turns idle: 1 ms
   * after its `idleTimeout` runs out (a source is idle once `now - lastSeen` exceeds it), the
   * earliest over sources; +Infinity when none can (no `idleTimeout`, or every source idle
   * already). One pass over sources: call it per operation, not per event.
   */
  nextIdleAt(): number {
    const timeout = this.#idleTimeout
    if (timeout === Number.POSITIVE_INFINITY) return timeout
    let next = Number.POSITIVE_INFINITY
    for (const clock of this.sources.values()) {
      // Idle already at the last judgement: it stays idle until it sends again. A finished source never turns idle.
      if (clock.finished || this.#idleAt(clock, this.#judgedAt)) continue
      const at = clock.lastSeen + timeout + 1
      if (at < next) next = at
    }
    return next
  }

  /**
   * True when `advance(now)` would change nothing: no source turns idle since the last `advance`
   * (nor active again, on a clock that went back), judged by the rule `advance` applies, so also
   * on fractional clocks and timeouts. False for a `now` that is not a time.
   */
  settledAt(now: number): boolean {
    if (!(now >= this.#judgedAt)) return false
    if (this.#idleTimeout === Number.POSITIVE_INFINITY) return true
    for (const clock of this.sources.values()) {
      if (!clock.finished && !this.#idleAt(clock, this.#judgedAt) && this.#idleAt(clock, now)) return false
    }
    return true
  }

  /** The idleness rule: silent for longer than `idleTimeout` at processing time `now`. */
  #idleAt(clock: SourceClock, now: number): boolean {
    return now - clock.lastSeen > this.#idleTimeout
  }

  /** The frontiers and every source clock, for a checkpoint. */
  snapshot(): Pick<EngineCheckpoint, 'frontiers' | 'sources'> {
    return {
      frontiers: {
        watermark: this.watermark,
        strictWatermark: this.strictWatermark,
        maxTs: this.maxTs,
        proof: this.proof,
        idleSources: this.idleSources,
        // Only when some clock was left out: checkpoints of engines that never did stay as they were.
        ...(this.untrackedProof === Number.POSITIVE_INFINITY ? {} : { untrackedProof: this.untrackedProof }),
        // As judged at the last advance, which a restored engine cannot judge again (it was at another processing time).
        heldBy: this.holders(),
      },
      sources: [...this.sources.values()].map((clock) => clock.snapshot()),
    }
  }

  /** Loads frontiers and source clocks from a checkpoint (`snapshot()`), into fresh frontiers. */
  restore(checkpoint: Pick<EngineCheckpoint, 'frontiers' | 'sources'>): void {
    const f = checkpoint.frontiers
    this.watermark = f.watermark
    this.strictWatermark = f.strictWatermark
    this.maxTs = f.maxTs
    this.proof = f.proof
    this.idleSources = f.idleSources
    this.untrackedProof = typeof f.untrackedProof === 'number' ? f.untrackedProof : Number.POSITIVE_INFINITY
    this.#moves++
    for (const s of checkpoint.sources) {
      this.sources.set(s.name, SourceClock.restore(s, this.sources.size))
      if (s.finished === true) this.finishedSources++
    }
    // Kept as the checkpoint's engine judged them; one from before they were kept (or naming no source here): found from the clocks at the next stats().
    const held = f.heldBy
    if (held !== undefined && [held.proof, held.watermark].every((name) => name === null || this.sources.has(name as string))) {
      this.#holders = { proof: held.proof, watermark: held.watermark }
      this.#holdersAt = this.#moves
    }
  }

  /** Largest of W and P: a window whose end is at or below it fires. */
  firingFrontier(): number {
    return Math.max(this.proof, this.watermark)
  }
}
