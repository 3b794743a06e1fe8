/**
 * A reference model of the engine's semantics (docs/semantics.md), written to
 * be read, not to be fast: every window is recomputed from the list of events it
 * admitted, every frontier from the list of events each source delivered.
 *
 * It shares no code with `src/` beyond types, the window spec constructors and the
 * two documented validation bounds. Where the contract is silent it follows the
 * decisions written down in packages/engine/README.md:
 * - frontiers `W` and `P` move between batches only;
 * - a window that gets its first event already past the firing frontier fires at
 *   once (its first emission is a correction, revision 1), with the basis the
 *   frontiers before the batch had for its end;
 * - a correction's basis is how completeness is known now, or, when it is not
 *   known now, the basis the window fired with, as long as its end has not grown
 *   since (a session that grew past that end is not known complete); a result
 *   still 'unknown' when it becomes final says how it is known then (W >= end);
 * - sessions: with a session spec, a batch is placed in event order (ts, source,
 *   seq, id), since which session an event joins depends on what came before it;
 *   an event touching a final session, or before the end of a final session that
 *   left live state, is refused; a merge keeps the fired state, the highest
 *   revision and the basis of the earliest session;
 * - `advanceWatermark(t)` forces W forward under any strategy;
 * - the first delivery of a `(source, seq)` or `(source, id)` wins; a later copy is a
 *   duplicate, and also a `conflicting_duplicate` anomaly when its ts provably differs (see
 *   `#conflicts`);
 * - an event stamped more than `maxFutureSkew` ahead of the batch's `now` is refused as
 *   `future_ts` before anything else looks at it;
 * - a finished source (`finishSource`) counts in neither W nor P (P is +Infinity when every
 *   known source finished, and finishing an unknown source makes it known); a copy of an event
 *   it sent is still a duplicate, any other event of it is refused as `finished_source`;
 * - panes (docs/semantics.md, Triggers and accumulation): each window keeps what it showed
 *   last, and emits a pane when its trigger says so: early panes before it fires, the on-time
 *   pane, late panes after; processing-time triggers are armed by the first change after a pane
 *   and fire on a tick, in deadline order; late data not shown yet gets its pane when the window
 *   turns final. Discarding panes carry the events since the window's last pane, or the whole
 *   window when a session merged or moved.
 */
import type {
  AnomalyReason,
  Basis,
  LateEvent,
  PaneInfo,
  PaneTiming,
  ResultStatus,
  StreamEvent,
  Trigger,
  WindowChange,
  WindowResult,
  WindowSpec,
} from '@tidemark/engine'
import { modelAcceptsInputs } from './modelAggregates.ts'
import type { ModelConfig, ModelReceipt } from './modelConfig.ts'
import { ModelSources } from './modelSources.ts'
import { eventOrder, triggerDeadline } from './modelTime.ts'
import { type ModelAnomaly, partitionInputs } from './modelValidation.ts'
import { compareResults, resultId } from './resultIdentity.ts'
import { carryOn, endOf, fixedWindows, type ModelWindow, newModelWindow, paneResult, startOf, totalsOf } from './modelWindow.ts'

type Placement = 'refused' | 'on_time' | 'late'

const EVERY: Trigger = { kind: 'every_element' }

/**
 * The oracle the property tests compare the engine with (the file's header says how it reads
 * the contract): the same ops must give the same receipts, changes, results, late lane and stats.
 *
 * @example
 * const plan = fc.sample(streamPlan({ kinds: ['tumbling'] }), 1)[0]
 * const model = new ReferenceModel(plan.config)
 * const receipt = model.ingest(events, 0)
 * expect(engine.results()).toEqual(model.results())
 */
export type { ModelConfig, ModelReceipt }

export class ReferenceModel {
  readonly config: ModelConfig
  readonly #early: Trigger
  readonly #lateTrigger: Trigger
  readonly #discarding: boolean
  readonly #skew: number
  readonly #sources = new ModelSources()
  #windows: ModelWindow[] = []
  readonly #late: LateEvent[] = []
  /** Per session spec and key, the largest end of a final session that left live state. */
  readonly #sealed = new Map<string, number>()
  #watermark = Number.NEGATIVE_INFINITY
  /** The watermark with idle sources still counted: tells `derived` from `fallback`. */
  #strictWatermark = Number.NEGATIVE_INFINITY
  #proof = Number.NEGATIVE_INFINITY
  #timerSeq = 0
  #changes: WindowChange[] = []
  readonly #totals = {
    ingested: 0,
    applied: 0,
    duplicates: 0,
    lateAdmitted: 0,
    beyondLateness: 0,
    corrections: 0,
  }
  readonly #anomalies: Partial<Record<AnomalyReason, number>> = {}

  constructor(config: ModelConfig) {
    this.config = config
    this.#early = config.trigger?.early ?? EVERY
    this.#lateTrigger = config.trigger?.late ?? EVERY
    this.#discarding = config.accumulation === 'discarding'
    this.#skew = config.maxFutureSkew ?? 86_400_000
  }

  ingest(events: readonly unknown[], now: number): ModelReceipt {
    const watermark = this.#watermark
    const firing = Math.max(this.#watermark, this.#proof)
    const touched = new Set<ModelWindow>()
    const anomalies: ModelAnomaly[] = []
    let accepted = 0
    let late = 0
    let duplicates = 0
    let conflicting = 0
    let beyond = 0
    const { invalid, valid } = partitionInputs(events)
    for (const anomaly of invalid) {
      anomalies.push(anomaly)
      this.#count(anomaly.reason)
    }
    const placed = this.config.windows.some((w) => w.kind === 'session') ? [...valid].sort((a, b) => eventOrder(a.event, b.event)) : valid
    for (const { event, index } of placed) {
      if (event.ts > now + this.#skew) {
        anomalies.push({ reason: 'future_ts', index, id: event.id })
        this.#count('future_ts')
        this.#sources.noteFuture(event)
        continue
      }
      if (this.config.aggregates !== undefined && !modelAcceptsInputs(this.config.aggregates, event)) {
        anomalies.push({ reason: 'invalid_aggregate_input', index, id: event.id })
        this.#count('invalid_aggregate_input')
        continue
      }
      const taken = this.#sources.take(event)
      if (taken === 'finished') {
        anomalies.push({ reason: 'finished_source', index, id: event.id })
        this.#count('finished_source')
        continue
      }
      if (taken !== 'first') {
        duplicates++
        if (taken === 'conflicting') {
          anomalies.push({ reason: 'conflicting_duplicate', index, id: event.id })
          this.#count('conflicting_duplicate')
          conflicting++
        }
        continue
      }
      const placements: Placement[] = []
      for (const spec of this.config.windows) {
        const outcomes = this.#place(spec, event, watermark, firing, touched)
        if (outcomes.includes('refused')) this.#late.push({ event: { ...event }, window: spec.id, reason: 'beyond_lateness' })
        placements.push(...outcomes)
      }
      this.#sources.delivered(event, now)
      if (placements.some((p) => p !== 'refused')) {
        accepted++
        if (placements.includes('late')) late++
      } else {
        beyond++
      }
    }
    // The engine reports as it goes: in input order, or with sessions invalid inputs first and then event order.
    if (placed === valid) anomalies.sort((a, b) => a.index - b.index)
    const totals = this.#totals
    totals.ingested += events.length
    totals.applied += accepted
    totals.duplicates += duplicates
    totals.lateAdmitted += late
    totals.beyondLateness += beyond
    this.#advance(now)
    this.#settle(touched, now, false)
    return { accepted, late, duplicates, beyondLateness: beyond, rejected: anomalies.length - conflicting, anomalies }
  }

  #count(reason: AnomalyReason): void {
    this.#anomalies[reason] = (this.#anomalies[reason] ?? 0) + 1
  }

  tick(now: number): void {
    this.#advance(now)
    this.#settle(new Set(), now, true)
  }

  /**
   * `finishSource(source)` at processing time `now`: from here on the source holds neither W nor
   * P back and its events not sent before are refused. W moves only as the other sources move it;
   * finishing a finished source changes nothing (not even the idleness judged at `now`).
   */
  finish(source: string, now: number): void {
    if (!this.#sources.finish(source)) return
    this.#advance(now)
    this.#settle(new Set(), now, false)
  }

  advanceWatermark(t: number): void {
    if (!(t > this.#watermark)) return
    this.#watermark = t
    this.#strictWatermark = Math.max(this.#strictWatermark, t)
    this.#settle(new Set(), Number.NaN, false)
  }

  watermark(): number {
    return this.#watermark
  }

  proofFrontier(): number {
    return this.#proof
  }

  /** The changes emitted since the last call (the engine's notifications since then, together). */
  changes(): WindowChange[] {
    const changes = this.#changes
    this.#changes = []
    return changes
  }

  /** The part of `EngineStats` the model can state; anomaly counts only for reasons that occurred. */
  stats() {
    return {
      ingested: this.#totals.ingested,
      applied: this.#totals.applied,
      duplicates: this.#totals.duplicates,
      lateAdmitted: this.#totals.lateAdmitted,
      beyondLateness: this.#totals.beyondLateness,
      corrections: this.#totals.corrections,
      proofFrontier: this.#proof,
      watermark: this.#watermark,
      sources: this.#sources.count,
      openWindows: this.#windows.length,
      pending: this.#windows.filter((w) => !w.fired).reduce((n, w) => n + w.events.length, 0),
      lateLane: this.#late.length,
      timers: this.#windows.filter((w) => !Number.isNaN(w.timerAt)).length,
      futureSources: this.#sources.futureSources(),
      anomalies: {
        ...this.#anomalies,
        duplicate: this.#totals.duplicates,
        beyond_lateness: this.#totals.beyondLateness,
      } as Partial<Record<AnomalyReason, number>>,
    }
  }

  lateEvents(): readonly LateEvent[] {
    return this.#late
  }

  /**
   * Per live window that showed something, the whole window as of its last pane, keyed like
   * `DiscardingFold.totals` (what a consumer adding up discarding panes holds).
   */
  shownWholes(): Map<string, { count: number; sum: number; min: number; max: number }> {
    const out = new Map<string, { count: number; sum: number; min: number; max: number }>()
    for (const w of this.#windows) {
      if (w.shown === null) continue
      out.set(resultId(w.shown), w.shownWhole ?? { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY })
    }
    return out
  }

  /** What each live window showed last, in the engine's result order. */
  results(): WindowResult[] {
    return this.#windows.flatMap((w) => (w.shown === null ? [] : [w.shown])).sort(compareResults)
  }

  #place(spec: WindowSpec, event: StreamEvent, watermark: number, firing: number, touched: Set<ModelWindow>): Placement[] {
    const key = event.key ?? ''
    const lateness = this.config.allowedLateness
    if (spec.kind === 'session') return [this.#placeInSession(spec.gap, spec, event, watermark, firing, touched)]
    return fixedWindows(spec, event.ts).map(({ start, end }): Placement => {
      if (end + lateness <= watermark) return 'refused'
      let w = this.#windows.find((x) => x.spec === spec && x.key === key && x.fixedStart === start && x.fixedEnd === end)
      if (w === undefined) {
        w = this.#newWindow(spec, key, start, end, end <= firing)
        this.#windows.push(w)
      }
      const e = { ts: event.ts, value: event.value, event }
      w.events.push(e)
      w.pending.push(e)
      touched.add(w)
      return w.fired ? 'late' : 'on_time'
    })
  }

  #placeInSession(
    gap: number,
    spec: WindowSpec,
    event: StreamEvent,
    watermark: number,
    firing: number,
    touched: Set<ModelWindow>,
  ): Placement {
    const key = event.key ?? ''
    const { value } = event
    // Placed by the floor of its time, as in every window kind.
    const ts = Math.floor(event.ts)
    if (ts < (this.#sealed.get(JSON.stringify([spec.id, key])) ?? Number.NEGATIVE_INFINITY)) return 'refused'
    // Lateness is judged on the event's own proto-window [ts, ts + gap), as in Beam.
    if (ts + gap + this.config.allowedLateness <= watermark) return 'refused'
    const overlapping = this.#windows
      .filter((s) => s.spec === spec && s.key === key && endOf(s) > ts && startOf(s) < ts + gap)
      .sort((a, b) => startOf(a) - startOf(b))
    if (overlapping.some((s) => s.final)) return 'refused'
    const end = Math.max(ts + gap, ...overlapping.map(endOf))
    const merged = this.#newWindow(spec, key, Number.NaN, Number.NaN, overlapping.some((s) => s.fired) || end <= firing, end)
    const e = { ts, value, event }
    merged.events.push(...overlapping.flatMap((s) => s.events), e)
    merged.revision = Math.max(-1, ...overlapping.map((s) => s.revision))
    const earliest = overlapping[0]
    if (earliest !== undefined) {
      // The earliest session carries on: what it showed (unless its start moved), its panes and its trigger.
      const moved = Math.min(ts, startOf(earliest)) !== startOf(earliest)
      carryOn(merged, earliest, moved)
      merged.pending = [...earliest.pending, e]
      merged.whole = earliest.whole || moved || overlapping.length > 1
      if (moved && earliest.shown !== null) this.#retract(earliest.shown)
      for (const absorbed of overlapping.slice(1)) if (absorbed.shown !== null) this.#retract(absorbed.shown)
    } else merged.pending.push(e)
    this.#windows = this.#windows.filter((w) => !overlapping.includes(w))
    for (const s of overlapping) touched.delete(s)
    this.#windows.push(merged)
    touched.add(merged)
    return merged.fired ? 'late' : 'on_time'
  }

  #retract(shown: WindowResult): void {
    this.#changes.push({ type: 'retract', result: shown, pane: shown.pane })
  }

  /** A window born fired records the basis the frontiers before the batch had for its end. */
  #newWindow(spec: WindowSpec, key: string, fixedStart: number, fixedEnd: number, fired: boolean, end = fixedEnd): ModelWindow {
    return newModelWindow(spec, key, fixedStart, fixedEnd, fired ? { basis: this.#basisOf(end), end } : null)
  }

  /** Recomputes W (bounded strategy) and P from every delivery so far, at processing time `now`. */
  #advance(now: number): void {
    const { proof, activeMaxTs, allMaxTs } = this.#sources.frontiers(now, this.config.idleTimeout)
    this.#proof = proof
    if (this.config.watermark.kind !== 'bounded') return
    const lag = this.config.watermark.outOfOrderness
    if (!Number.isNaN(activeMaxTs)) this.#watermark = Math.max(this.#watermark, activeMaxTs - lag)
    if (!Number.isNaN(allMaxTs)) this.#strictWatermark = Math.max(this.#strictWatermark, allMaxTs - lag)
  }

  #basisOf(end: number): Basis {
    if (this.#proof >= end) return 'proven'
    if (this.#strictWatermark >= end) return 'derived'
    if (this.#watermark >= end) return 'fallback'
    return 'unknown'
  }

  /** After frontiers moved: panes of the touched windows (or their timers), firings, due timers (on a tick), finality, expiry. */
  #settle(touched: Set<ModelWindow>, now: number, tick: boolean): void {
    const lateness = this.config.allowedLateness
    const watermark = this.#watermark
    const firing = Math.max(this.#watermark, this.#proof)
    const early: ModelWindow[] = []
    for (const w of touched) {
      w.dirty = true
      if (!w.fired) {
        if (this.#early.kind === 'every_element') early.push(w)
        else this.#arm(w, this.#early, now)
      } else if (this.#lateTrigger.kind === 'every_element') this.#latePane(w)
      else this.#arm(w, this.#lateTrigger, now)
    }
    for (const w of this.#windows) {
      if (w.fired || endOf(w) > firing) continue
      w.fired = true
      w.revision = 0
      w.firedBasis = this.#basisOf(endOf(w))
      w.basisEnd = endOf(w)
      // A window that fires already final shows only its on-time pane, with final: true.
      w.final = endOf(w) + lateness <= watermark
      this.#pane(w, 'on_time', 0, w.final, w.firedBasis, false)
    }
    for (const w of early) if (!w.fired) this.#pane(w, 'provisional', 0, false, 'unknown', false)
    if (tick) {
      const due = this.#windows.filter((w) => w.timerAt <= now).sort((a, b) => a.timerAt - b.timerAt || a.timerSeq - b.timerSeq)
      for (const w of due) {
        if (!w.dirty) w.timerAt = Number.NaN
        else if (!w.fired) this.#pane(w, 'provisional', 0, false, 'unknown', false)
        else if (!w.final) this.#latePane(w)
        else w.timerAt = Number.NaN
      }
    }
    for (const w of this.#windows) {
      if (w.final || !w.fired || endOf(w) + lateness > watermark) continue
      if (w.dirty) this.#latePane(w)
      w.final = true
      const shown = w.shown
      if (shown !== null) {
        // Final means W >= end: a result that did not know how it was complete now does.
        const result: WindowResult = { ...shown, final: true, basis: shown.basis === 'unknown' ? this.#basisOf(endOf(w)) : shown.basis }
        this.#changes.push({ type: 'final', result, pane: result.pane })
        w.shown = result
      }
    }
    const expired = (w: ModelWindow) => w.final && endOf(w) + lateness + this.config.retention <= watermark
    for (const w of this.#windows.filter(expired)) {
      if (w.spec.kind !== 'session') continue
      const id = JSON.stringify([w.spec.id, w.key])
      this.#sealed.set(id, Math.max(this.#sealed.get(id) ?? Number.NEGATIVE_INFINITY, endOf(w)))
    }
    this.#windows = this.#windows.filter((w) => !expired(w))
  }

  #arm(w: ModelWindow, trigger: Trigger, now: number): void {
    if (!Number.isNaN(w.timerAt)) return
    const at = triggerDeadline(trigger, now)
    if (!Number.isFinite(at)) return
    w.timerAt = at
    w.timerSeq = ++this.#timerSeq
  }

  /** A correction: revision + 1, the basis known now or, if none, the one it fired with while its end has not grown. */
  #latePane(w: ModelWindow): void {
    w.revision = Math.max(w.revision + 1, 1)
    const known = this.#basisOf(endOf(w))
    const basis = known !== 'unknown' ? known : endOf(w) <= w.basisEnd ? w.firedBasis : 'unknown'
    this.#pane(w, 'corrected', w.revision, endOf(w) + this.config.allowedLateness <= this.#watermark, basis, true)
    this.#totals.corrections++
  }

  #pane(w: ModelWindow, status: ResultStatus, revision: number, final: boolean, basis: Basis, correction: boolean): void {
    const timing: PaneTiming = status === 'provisional' ? 'early' : status === 'on_time' ? 'on_time' : 'late'
    const pane: PaneInfo = { timing, index: w.panes, onTimeIndex: timing === 'early' ? -1 : w.onTimePanes }
    w.panes++
    if (timing !== 'early') w.onTimePanes++
    const part = this.#discarding && !w.whole ? w.pending : w.events
    const previous = this.#discarding ? (w.whole ? w.shown : null) : correction ? w.shown : null
    const result = paneResult(w, part, { status, revision, final, basis, pane }, this.config.aggregates)
    const type = status === 'corrected' ? 'correction' : status
    this.#changes.push(previous === null ? { type, result, pane } : { type, result, pane, previous })
    w.shown = result
    w.shownWhole = totalsOf(w.events)
    w.pending = []
    w.whole = false
    w.dirty = false
    w.timerAt = Number.NaN
  }
}
