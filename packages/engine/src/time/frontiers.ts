import { ClockChanges } from './clockChanges.ts'
import { FrontierHeaps } from './frontierHeaps.ts'
import { type ClockEntry, SourceClock } from './sourceClock.ts'
import type { FrontiersSnapshot } from './frontiersSnapshot.ts'
import type { WatermarkStrategy } from './watermarkStrategy.ts'

/**
 * A change of one clock costs about this many clocks of a pass over every source (a few moves
 * in heaps of many): frontiers follow the changed clocks only while they are few enough.
 */
const FOLLOW_COST = 16
/** Passes in a row that found few clocks changed before the heaps are built again. */
const CALM_ADVANCES = 4

/**
 * The engine's event-time frontiers (docs/semantics.md, Time): the watermark `W`, the
 * watermark with idle sources still counted (to tell `derived` from `fallback`),
 * and the proof frontier `P`. They move only in `advance()`, between batches. A finished source
 * counts in none of them (when every known source finished, `P` is Infinity: all input is in),
 * but when every other source is idle, `W` goes as far as the furthest finished one reached, or
 * as far as the last sources to turn idle held it, whichever is further.
 *
 * A batch that changes few of many clocks costs what those few cost: each changed clock is
 * listed once in `changes` (`SourceClock.changed`; placement lists the clocks it records
 * events in), and heaps ordered by what the frontiers read (`FrontierHeaps`) take them in.
 * When many clocks changed, or processing time went back or is not a time, one pass over the
 * sources finds the frontiers instead, with the same answers.
 *
 * @example
 * const frontiers = new Frontiers(boundedOutOfOrderness(5_000), 30_000)
 * frontiers.source('d1', now).remember({ seq: 1, id: 'd1-1', ts: 60_000 }, now)
 * frontiers.advance(now)
 * frontiers.watermark // 55000
 */
export class Frontiers {
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
  /**
   * The version a clock starts at: 0, unless a recovery that lost log records raised it
   * (`TidemarkEngine.raiseVersionFloor`), so that a source this replica takes up afterwards
   * outranks what it may have written of it before. A peer's clock takes the peer's version.
   */
  versionFloor = 0
  /** Processing time of the last `advance` (which judged idleness); -Infinity before the first. */
  #judgedAt = Number.NEGATIVE_INFINITY
  /** Bumped by `advance` and `restore`: `holders()` is found again only after one of them. */
  #moves = 0
  #holders: FrontierHolders = { proof: null, watermark: null }
  #holdersAt = -1
  /** Clocks changed since the frontiers last looked: who changes a clock lists it (`SourceClock.changed`, `ClockChanges.note`). */
  readonly changes = new ClockChanges<SourceClock>()
  readonly #heaps: FrontierHeaps
  /** True while `#heaps` hold every clock as it stands, but for those listed in `changes`. */
  #followed = false
  /** Passes in a row that found few clocks changed (the heaps are built again after `CALM_ADVANCES`). */
  #calm = 0
  readonly #followCost: number
  /**
   * By slot, each clock's `version` at the last pass: a clock whose version moved since changed
   * (an event, a finish, a peer's copy), which is how a pass counts the clocks a batch changed.
   */
  readonly #passedVersions: number[] = []

  /**
   * Frontiers under `strategy`, a source turning idle after `idleTimeout` ms of silence.
   * `followCost` is what one changed clock costs against a pass over every source (the heaps
   * follow changes while `changed × followCost` stays within the number of sources): tests pass 0
   * to follow every change however few the sources, and Infinity to pass over every source at
   * every `advance`.
   *
   * @example
   * const frontiers = new Frontiers(boundedOutOfOrderness(5_000), 30_000)
   */
  constructor(strategy: WatermarkStrategy, idleTimeout: number, followCost = FOLLOW_COST) {
    this.#strategy = strategy
    this.#idleTimeout = idleTimeout
    this.#heaps = new FrontierHeaps(idleTimeout)
    this.#followCost = followCost
  }

  /** The clock of `name`, created on first sight (at version `versionFloor`). */
  source(name: string, now: number): SourceClock {
    let clock = this.sources.get(name)
    if (clock === undefined) {
      // Sources are never forgotten, so the count is a fresh slot.
      clock = new SourceClock(name, now, this.sources.size, this.changes)
      clock.version = this.versionFloor
      this.sources.set(name, clock)
      clock.changed()
    }
    return clock
  }

  /**
   * Raises `versionFloor` to `floor` (never lowers it) and every clock `writer` writes to it.
   * Returns the highest version of those clocks, or the floor when that is higher.
   * (`TidemarkEngine.raiseVersionFloor` says why and when.)
   */
  raiseVersionFloor(floor: number, writer: string): number {
    if (floor > this.versionFloor) this.versionFloor = floor
    const raised = this.versionFloor
    let highest = raised
    for (const clock of this.sources.values()) {
      if (clock.writer !== writer) continue
      if (clock.version < raised) clock.version = raised
      else if (clock.version > highest) highest = clock.version
    }
    return highest
  }

  /** Manual strategy: moves W forward (never back). Returns true when it moved. */
  advanceTo(t: number): boolean {
    if (!(t > this.watermark)) return false
    this.watermark = t
    if (t > this.strictWatermark) this.strictWatermark = t
    return true
  }

  /**
   * Recomputes W and P from the source clocks at processing time `now`: from the clocks that
   * changed since the last call and those turning idle, or, when many changed or `now` went back
   * or is not a time, in one pass over sources. Per batch, never per event.
   *
   * @example
   * const frontiers = new Frontiers(boundedOutOfOrderness(5_000), 30_000)
   * frontiers.source('d1', now).remember({ seq: 1, id: 'd1-1', ts: 60_000 }, now)
   * frontiers.advance(now)
   * frontiers.watermark // 55000
   */
  advance(now: number): void {
    this.#moves++
    if (this.#follows(now)) this.#advanceFollowed(now)
    else this.#advanceScanned(now)
  }

  /**
   * True when the heaps can move the frontiers to `now` (a finite time, not before the last
   * judgement, with few clocks changed), the changed clocks taken in; false when a pass is due.
   * Built again after a few passes in a row found few clocks changed since the pass before.
   */
  #follows(now: number): boolean {
    if (!(Number.isFinite(now) && now >= this.#judgedAt)) return this.#unfollow()
    if (this.#followed) return this.#takeChanges()
    if (this.#calm < CALM_ADVANCES) return false
    this.#heaps.rebuild(this.sources.values(), this.#judgedAt, now)
    this.changes.clear()
    this.changes.listing = true
    this.#followed = true
    return true
  }

  /** Takes the changed clocks into the heaps while they follow and the changes are few; true when the heaps hold every clock. */
  #takeChanges(): boolean {
    if (!this.#followed) return false
    const changes = this.changes
    if (changes.size * this.#followCost > this.sources.size) return this.#unfollow()
    for (let i = 0; i < changes.size; i++) {
      const clock = changes.clocks[i] as SourceClock
      // Heard while the processing-time clock gave no finite time: the pass gives it the next one.
      if (!Number.isFinite(clock.lastSeen)) return this.#unfollow()
      // Judged where the heaps last judged idleness: at `#judgedAt` (the last `rebuild` or `judge`).
      this.#heaps.take(clock)
    }
    changes.clear()
    return true
  }

  /** Leaves the heaps behind (built again once changes are few): a pass finds the frontiers. Returns false. */
  #unfollow(): false {
    this.#followed = false
    this.#calm = 0
    this.changes.listing = false
    this.changes.clear()
    return false
  }

  /** `advance(now)` from the heaps, which hold every clock as it stands. */
  #advanceFollowed(now: number): void {
    const heaps = this.#heaps
    this.#judgedAt = now
    heaps.judge(now)
    const highest = heaps.highest()
    if (highest !== null && highest.maxTs > this.maxTs) this.maxTs = highest.maxTs
    this.idleSources = heaps.idleSources
    this.finishedSources = heaps.finishedSources
    let active = heaps.activeFloor()
    // Every source still counting is idle: where the last of them to fall silent held W, from heaps that follow it from then on.
    if (active === Number.POSITIVE_INFINITY) active = Math.max(heaps.finishedReach(), heaps.lastHeardFloor(this.sources))
    this.#settle(heaps.proofFloor(), active, heaps.countingFloor())
  }

  /** `advance(now)` in one pass over sources. */
  #advanceScanned(now: number): void {
    let proof = Number.POSITIVE_INFINITY
    let active = Number.POSITIVE_INFINITY
    let all = Number.POSITIVE_INFINITY
    let finished = Number.NEGATIVE_INFINITY
    let idle = 0
    let finishedSources = 0
    /**
     * Clocks changed since the last pass, which `changes` does not list during passes: by their
     * versions, not by who was heard at `now` (which also counts those heard before at the same
     * time: a fake clock, or many operations within a millisecond, would keep the heaps away).
     */
    let changed = 0
    const passed = this.#passedVersions
    // A clock that gave no time turns no source idle: every source counts as active again.
    this.#judgedAt = Number.isNaN(now) ? Number.NEGATIVE_INFINITY : now
    const time = Number.isFinite(now)
    for (const clock of this.sources.values()) {
      if (clock.maxTs > this.maxTs) this.maxTs = clock.maxTs
      // Heard while the clock gave no finite time: heard at its next (a pass follows every such reading), so it turns idle in time.
      if (time && !Number.isFinite(clock.lastSeen)) clock.lastSeen = now
      if (passed[clock.slot] !== clock.version) {
        passed[clock.slot] = clock.version
        changed++
      }
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
    this.#calm = changed * this.#followCost <= this.sources.size ? this.#calm + 1 : 0
    // Every source still counting is idle (or there is none): W may go as far as the last of them
    // to fall silent held it, and as far as a finished source reached, as it would had that one not finished.
    if (active === Number.POSITIVE_INFINITY) active = Math.max(finished, this.#lastHeardFloor())
    this.#settle(proof, active, all)
  }

  /**
   * The lowest `maxTs` of the unfinished sources heard from last (-Infinity when there is none):
   * once every one is idle, where they held `W` just before the last of them turned idle. A
   * judgement every millisecond would have moved `W` there; one that finds them all idle at once
   * (a tick on an interval, the next batch) moves it there too, so `W` does not depend on when
   * idleness is judged. A pass of its own, for a pass over sources: every source idle is rare, and
   * the pass over every source at every batch stays as it is (heaps that follow the clocks keep
   * it in `FrontierHeaps.lastHeardFloor`).
   */
  #lastHeardFloor(): number {
    let heard = Number.NEGATIVE_INFINITY
    let floor = Number.NEGATIVE_INFINITY
    for (const clock of this.sources.values()) {
      if (clock.finished) continue
      if (clock.lastSeen > heard) {
        heard = clock.lastSeen
        floor = clock.maxTs
      } else if (clock.lastSeen === heard && clock.maxTs < floor) floor = clock.maxTs
    }
    return floor
  }

  /** Sets P from the lowest proof of the unfinished sources, and W and strict W from the lowest `maxTs` of the active and of the unfinished ones. */
  #settle(proof: number, active: number, all: number): void {
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
    if (this.#takeChanges()) {
      proof = this.#heaps.proofHolder()
      watermark = this.#heaps.watermarkHolder()
    } else {
      for (const clock of this.sources.values()) {
        if (clock.finished) continue
        if (proof === null || clock.proof() < proof.proof()) proof = clock
        if (!this.#idleAt(clock, this.#judgedAt) && (watermark === null || clock.maxTs < watermark.maxTs)) watermark = clock
      }
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
   * The processing time at which the next source not idle at the last `advance` turns idle: the
   * first whole millisecond after its `idleTimeout` runs out (a source is idle once `now - lastSeen`
   * exceeds it; a clock read every millisecond sees it then, also on fractional times), the earliest over sources; +Infinity when none can (no `idleTimeout`, or every source idle
   * already, or heard only while the clock read no finite time: not known before its next finite reading). Read from the heaps while they follow the clocks (the active source silent the
   * longest), else in one pass over sources: call it per operation, not per event.
   *
   * @example
   * frontiers.nextIdleAt() // 40001: d1, silent since 10000, turns idle then (idleTimeout 30000)
   */
  nextIdleAt(): number {
    const timeout = this.#idleTimeout
    if (timeout === Number.POSITIVE_INFINITY) return timeout
    // The active source silent the longest: the first to turn idle.
    let quietest = Number.POSITIVE_INFINITY
    if (this.#takeChanges()) quietest = this.#heaps.quietest()?.lastSeen ?? Number.POSITIVE_INFINITY
    else
      for (const clock of this.sources.values()) {
        // Idle already at the last judgement: it stays idle until it sends again. A finished source never turns idle.
        // One heard at no finite time (NaN, an infinity) counts as heard at the next finite reading, not known yet.
        if (!clock.finished && Number.isFinite(clock.lastSeen) && !this.#idleAt(clock, this.#judgedAt) && clock.lastSeen < quietest) quietest = clock.lastSeen
      }
    // As the rule judges it in doubles: `lastSeen + timeout` may round to a whole millisecond at which
    // the source is idle already (0.7 + 0.3 is 1, and 1 - 0.7 > 0.3).
    const at = Math.floor(quietest + timeout)
    return at - quietest > timeout ? at : at + 1
  }

  /**
   * True when `advance(now)` would change nothing: no source turns idle since the last `advance`
   * (nor active again, on a clock that went back), judged by the rule `advance` applies, so also
   * on fractional clocks and timeouts, and no clock heard at no time is given `now`. False for a
   * `now` that is not a time.
   */
  settledAt(now: number): boolean {
    if (!(now >= this.#judgedAt)) return false
    if (this.#idleTimeout === Number.POSITIVE_INFINITY) return true
    // The active source silent the longest turns idle first, at any finite `now`.
    if (Number.isFinite(now) && this.#takeChanges()) {
      const quietest = this.#heaps.quietest()
      return quietest === null || !this.#idleAt(quietest, now)
    }
    for (const clock of this.sources.values()) {
      // A clock heard at no time is heard at `now` by the pass: a change (a tick's log record replays it).
      if (!Number.isFinite(clock.lastSeen) || (!clock.finished && !this.#idleAt(clock, this.#judgedAt) && this.#idleAt(clock, now))) return false
    }
    return true
  }

  /** The idleness rule: silent for longer than `idleTimeout` at processing time `now`. */
  #idleAt(clock: SourceClock, now: number): boolean {
    // As `idleAt` (frontierHeaps.ts) judges it; written out on the path of the pass over every source.
    return now - clock.lastSeen > this.#idleTimeout
  }

  /** The frontiers and every source clock, for a checkpoint. */
  snapshot(): FrontiersSnapshot {
    return {
      frontiers: {
        watermark: this.watermark,
        strictWatermark: this.strictWatermark,
        maxTs: this.maxTs,
        proof: this.proof,
        idleSources: this.idleSources,
        // Only when some clock was left out: checkpoints of engines that never did stay as they were.
        ...(this.untrackedProof === Number.POSITIVE_INFINITY ? {} : { untrackedProof: this.untrackedProof }),
        // Only when raised: a source taken up after a restore starts there as it would have here.
        ...(this.versionFloor === 0 ? {} : { versionFloor: this.versionFloor }),
        // As judged at the last advance, which a restored engine cannot judge again (it was at another processing time).
        heldBy: this.holders(),
      },
      sources: [...this.sources.values()].map((clock) => clock.snapshot()),
    }
  }

  /** Loads frontiers and source clocks from a checkpoint (`snapshot()`), into fresh frontiers. */
  restore(checkpoint: FrontiersSnapshot): void {
    const f = checkpoint.frontiers
    this.watermark = f.watermark
    this.strictWatermark = f.strictWatermark
    this.maxTs = f.maxTs
    this.proof = f.proof
    this.idleSources = f.idleSources
    this.untrackedProof = typeof f.untrackedProof === 'number' ? f.untrackedProof : Number.POSITIVE_INFINITY
    this.versionFloor = f.versionFloor ?? 0
    this.#moves++
    // Followed again once advances are calm: the heaps are built from the restored clocks.
    this.#unfollow()
    for (const s of checkpoint.sources) {
      this.sources.set(s.name, SourceClock.restore(s, this.sources.size, this.changes))
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

/** The sources holding `P` and `W` where they are (`Frontiers.holders`), by name. */
export interface FrontierHolders {
  readonly proof: string | null
  readonly watermark: string | null
}
