/**
 * Triggers, accumulation and pane info against a small model written from docs/semantics.md
 * (Triggers and accumulation; Allowed lateness, corrections and finality; Retention; Changes)
 * and the engine README, independent of the test kit's reference model.
 *
 * The input is what the test kit's plans rarely reach: clock steps and ticks with no batch in
 * between (also a clock that goes backwards), forced watermark moves, every early and late
 * trigger with delays and periods near the clock steps, both accumulation modes, tumbling and
 * sliding specs, batches in order, late, beyond lateness and with exact duplicates. Every change
 * (type, window, key, start, end, values, status, revision, final, basis, pane, `previous`), every
 * receipt and `results()` are compared after each operation; the changes of a tick must come in
 * deadline order, then arming order. Beside the model, Beam's pane invariants are checked on the
 * engine's own stream: pane indexes step by one, `onTimeIndex` counts the on-time and late panes,
 * no early pane after the on-time one, and discarding panes add up to the accumulating engine's
 * windows on the same input.
 *
 * Half the plans give events per-source seqs (now and then with a gap), so the proof frontier
 * fires windows too and results carry `proven`; idle timeouts let a tick move W (`fallback`); a
 * checkpoint restored into a fresh engine now and then carries on (timers, pane counters and
 * discarding state must survive it). `nextTickAt()`, `stats().timers` and `history()` are checked too.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  type Accumulation,
  afterProcessingTime,
  alignedProcessingTime,
  boundedOutOfOrderness,
  createEngine,
  type EngineOptions,
  everyElement,
  manual,
  never,
  type StreamEvent,
  sliding,
  type Trigger,
  tumbling,
  type WindowChange,
  type WindowResult,
  type WindowSpec,
} from '../src/index.ts'
import type { TidemarkEngine } from '../src/core/engine.ts'
import type { Basis } from '../src/windows/windowResult.ts'
import { assertFreshSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/triggerPanes.property.test.ts'

// ---------------------------------------------------------------------------------------------
// Plans

type Op =
  | { readonly kind: 'ingest'; readonly events: readonly StreamEvent[] }
  | { readonly kind: 'clock'; readonly to: number }
  | { readonly kind: 'tick' }
  | { readonly kind: 'advanceWatermark'; readonly to: number }
  | { readonly kind: 'restore' }

interface Config {
  readonly windows: readonly WindowSpec[]
  readonly lag: number | null
  readonly allowedLateness: number
  readonly retention: number
  readonly early: Trigger
  readonly late: Trigger
  readonly accumulation: Accumulation
  /** Events carry per-source seqs (gap-free unless `skip`), so the proof frontier can fire windows too. */
  readonly seq: boolean
  /** Processing-time ms after which a silent source stops holding W (bounded strategy). */
  readonly idleTimeout: number
}

interface Plan {
  readonly config: Config
  readonly ops: readonly Op[]
}

const SPECS: readonly WindowSpec[] = [tumbling(10), tumbling(7), sliding(12, 4), sliding(10, 5)]

const earlyTrigger: fc.Arbitrary<Trigger> = fc.oneof(
  fc.constant(everyElement()),
  fc.constantFrom(0, 5, 13).map(afterProcessingTime),
  fc.constantFrom([10, 0], [7, 3], [5, 4]).map(([period, offset]) => alignedProcessingTime(period as number, offset as number)),
  fc.constant(never()),
)
const lateTrigger: fc.Arbitrary<Trigger> = fc.oneof(fc.constant(everyElement()), fc.constantFrom(0, 5, 13).map(afterProcessingTime), fc.constant(never()))

const config: fc.Arbitrary<Config> = fc.record({
  windows: fc.subarray([...SPECS], { minLength: 1, maxLength: 2 }),
  lag: fc.constantFrom(null, null, 0, 4),
  allowedLateness: fc.constantFrom(0, 6, 25),
  retention: fc.constantFrom(0, 8, Number.POSITIVE_INFINITY),
  early: earlyTrigger,
  late: lateTrigger,
  accumulation: fc.constantFrom<Accumulation>('accumulating', 'discarding'),
  seq: fc.boolean(),
  idleTimeout: fc.constantFrom(Number.POSITIVE_INFINITY, 15),
})

const eventDraft = fc.record({
  /** Event time around the stream's cursor: mostly a little ahead, sometimes late, sometimes far behind. */
  offset: fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: -3, max: 6 }) },
    { weight: 2, arbitrary: fc.integer({ min: -20, max: -4 }) },
    { weight: 1, arbitrary: fc.integer({ min: -60, max: -21 }) },
  ),
  source: fc.constantFrom('s1', 's2'),
  key: fc.constantFrom('a', 'b'),
  value: fc.integer({ min: -9, max: 9 }),
  /** Re-send an earlier event (an exact copy) instead: its position from the end of those sent. */
  copy: fc.option(fc.nat(12), { freq: 5, nil: undefined }),
  /** With seqs: leave a gap before this event (proof stops there). */
  skip: fc.integer({ min: 0, max: 30 }).map((n) => n === 0),
})

const opDraft = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('ingest' as const), events: fc.array(eventDraft, { minLength: 1, maxLength: 4 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('clock' as const), dt: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 9 }) }, { weight: 1, arbitrary: fc.integer({ min: -6, max: -1 }) }) }) },
  { weight: 4, arbitrary: fc.constant({ kind: 'tick' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advanceWatermark' as const), ahead: fc.integer({ min: -5, max: 15 }) }) },
  /** A checkpoint restored into a fresh engine, which goes on instead (timers, pane counters, discarding state). */
  { weight: 1, arbitrary: fc.constant({ kind: 'restore' as const }) },
)

type OpDraft = typeof opDraft extends fc.Arbitrary<infer T> ? T : never

function buildPlan(config: Config, drafts: readonly OpDraft[]): Plan {
  const ops: Op[] = []
  const sent: StreamEvent[] = []
  let cursor = 20
  let now = 1_000
  let n = 0
  const seqs = new Map<string, number>()
  for (const d of drafts) {
    if (d.kind === 'ingest') {
      const events: StreamEvent[] = []
      for (const e of d.events) {
        const original = e.copy === undefined ? undefined : sent[sent.length - 1 - e.copy]
        if (original !== undefined) {
          events.push({ ...original })
          continue
        }
        const ts = Math.max(0, cursor + e.offset)
        cursor = Math.max(cursor, ts)
        const seq = (seqs.get(e.source) ?? 0) + (e.skip ? 2 : 1)
        seqs.set(e.source, seq)
        const event: StreamEvent = { id: `e${n++}`, source: e.source, ts, key: e.key, value: e.value, ...(config.seq ? { seq } : {}) }
        sent.push(event)
        events.push(event)
      }
      ops.push({ kind: 'ingest', events })
    } else if (d.kind === 'clock') {
      now += d.dt
      ops.push({ kind: 'clock', to: now })
    } else if (d.kind === 'tick' || d.kind === 'restore') ops.push({ kind: d.kind })
    else ops.push({ kind: 'advanceWatermark', to: cursor + d.ahead })
  }
  // The end of the stream: processing time runs on (every timer fires), then event time ends.
  ops.push({ kind: 'clock', to: now + 100 }, { kind: 'tick' }, { kind: 'advanceWatermark', to: cursor + 1_000 })
  return { config, ops }
}

const plans: fc.Arbitrary<Plan> = fc.tuple(config, fc.array(opDraft, { minLength: 1, maxLength: 40 })).map(([c, d]) => buildPlan(c, d))

// ---------------------------------------------------------------------------------------------
// The model

interface Values {
  count: number
  sum: number
  min: number
  max: number
}

interface ModelWindow {
  readonly spec: WindowSpec
  readonly key: string
  readonly start: number
  readonly end: number
  /** Every value the window admitted, and those since its last pane (discarding). */
  readonly all: number[]
  pending: number[]
  fired: boolean
  final: boolean
  /** The revision of the last fired result; 0 for a window born past the frontier (its empty on-time result never shown). */
  revision: number
  panes: number
  onTimePanes: number
  /** Changed since its last pane. */
  dirty: boolean
  /** The processing-time trigger's deadline (NaN: none armed) and when it was armed (op number). */
  timerAt: number
  armedAt: number
  shown: WindowResult | null
  /** How it was known complete when it fired (a window born past the frontier: by the frontiers before its batch). */
  firedBasis: Basis
  /** Its on-time and late panes, oldest first (what `history` lists). */
  readonly history: WindowResult[]
}

/** A change with, for a tick, the timer that fired it: deadline and arming op. */
interface Emitted {
  readonly change: WindowChange
  readonly order?: readonly [number, number]
}

function valuesOf(values: readonly number[]): Values {
  if (values.length === 0) return { count: 0, sum: 0, min: 0, max: 0 }
  return { count: values.length, sum: values.reduce((a, b) => a + b, 0), min: Math.min(...values), max: Math.max(...values) }
}

function windowsOf(spec: WindowSpec, ts: number): { start: number; end: number }[] {
  if (spec.kind !== 'tumbling' && spec.kind !== 'sliding') throw new Error('fixed specs only')
  const slide = spec.kind === 'sliding' ? spec.slide : spec.size
  const last = Math.floor(ts / slide) * slide
  const out: { start: number; end: number }[] = []
  for (let start = last - spec.size + slide; start <= last; start += slide) out.push({ start, end: start + spec.size })
  return out
}

/** When a trigger armed at `now` fires: `ms` later, or the next boundary `offset + k × period` after `now`. */
function deadline(trigger: Trigger, now: number): number {
  if (trigger.kind === 'after_processing_time') return now + trigger.delayMs
  if (trigger.kind === 'aligned_processing_time') {
    return Math.floor((now - trigger.offsetMs) / trigger.periodMs) * trigger.periodMs + trigger.offsetMs + trigger.periodMs
  }
  return Number.NaN
}

function compareResults(a: WindowResult, b: WindowResult): number {
  return a.window < b.window ? -1 : a.window > b.window ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : a.start - b.start
}

class Model {
  readonly #c: Config
  #windows: ModelWindow[] = []
  #w = Number.NEGATIVE_INFINITY
  /** The proof frontier: sources without seq, or whose ts went back along seq, prove nothing. */
  #p = Number.NEGATIVE_INFINITY
  readonly #bySeq = new Map<string, Map<number, number> | null>()
  readonly #maxTs = new Map<string, number>()
  readonly #lastSeen = new Map<string, number>()
  /** W with idle sources still counted: tells `derived` from `fallback`. */
  #strict = Number.NEGATIVE_INFINITY
  /** The processing time idleness was last judged at. */
  #judged = Number.NEGATIVE_INFINITY
  readonly #seen = new Set<string>()
  #out: Emitted[] = []
  #op = 0

  constructor(c: Config) {
    this.#c = c
  }

  ingest(events: readonly StreamEvent[], now: number) {
    this.#op++
    const w0 = this.#w
    const firing0 = Math.max(w0, this.#p)
    const basis0 = (end: number): Basis => this.#basis(end)
    const L = this.#c.allowedLateness
    const touched = new Set<ModelWindow>()
    let accepted = 0
    let late = 0
    let notCounted = 0
    for (const e of events) {
      const id = JSON.stringify([e.source, e.id])
      if (this.#seen.has(id)) {
        // A duplicate, or (once forgotten behind the lateness horizon) beyond lateness: never counted twice.
        notCounted++
        continue
      }
      this.#seen.add(id)
      this.#maxTs.set(e.source, Math.max(this.#maxTs.get(e.source) ?? Number.NEGATIVE_INFINITY, e.ts))
      this.#lastSeen.set(e.source, now)
      if (!this.#bySeq.has(e.source)) this.#bySeq.set(e.source, new Map())
      const bySeq = this.#bySeq.get(e.source)
      if (e.seq === undefined) this.#bySeq.set(e.source, null)
      else if (bySeq !== null && bySeq !== undefined) {
        let prefix = 0
        while (bySeq.has(prefix + 1)) prefix++
        // Above a gap, earlier than the prefix's end: the source proves nothing from then on.
        if (e.seq > prefix + 1 && e.ts < (bySeq.get(prefix) ?? Number.NEGATIVE_INFINITY)) this.#bySeq.set(e.source, null)
        else bySeq.set(e.seq, e.ts)
      }
      let admitted = false
      let admittedLate = false
      for (const spec of this.#c.windows) {
        for (const { start, end } of windowsOf(spec, e.ts)) {
          // Judged against the frontier before the batch: final windows refuse it.
          if (end + L <= w0) continue
          let w = this.#windows.find((x) => x.spec === spec && x.key === e.key && x.start === start)
          if (w === undefined) {
            const bornLate = end <= firing0
            w = {
              spec,
              key: e.key ?? '',
              start,
              end,
              all: [],
              pending: [],
              fired: bornLate,
              final: false,
              revision: 0,
              panes: 0,
              onTimePanes: 0,
              dirty: false,
              timerAt: Number.NaN,
              armedAt: 0,
              shown: null,
              firedBasis: bornLate ? basis0(end) : 'unknown',
              history: [],
            }
            this.#windows.push(w)
          }
          w.all.push(e.value)
          w.pending.push(e.value)
          touched.add(w)
          admitted = true
          if (w.fired) admittedLate = true
        }
      }
      if (admitted) {
        accepted++
        if (admittedLate) late++
      } else notCounted++
    }
    this.#frontiers(now)
    for (const w of touched) {
      w.dirty = true
      const trigger = w.fired ? this.#c.late : this.#c.early
      if (trigger.kind === 'every_element') continue
      if (trigger.kind !== 'never' && Number.isNaN(w.timerAt)) {
        w.timerAt = deadline(trigger, now)
        w.armedAt = this.#op
      }
    }
    // Late panes of every element: one per window per batch.
    for (const w of touched) if (w.fired && this.#c.late.kind === 'every_element') this.#latePane(w)
    this.#fire()
    for (const w of touched) if (!w.fired && this.#c.early.kind === 'every_element') this.#pane(w, 'early')
    this.#finality()
    return { accepted, late, notCounted }
  }

  /** W from the active sources (and the strict W from all), P from the seqs. */
  #frontiers(now: number) {
    this.#judged = now
    this.#p = this.#proof()
    if (this.#c.lag === null || this.#maxTs.size === 0) return
    const active = [...this.#maxTs].filter(([source]) => !(now - (this.#lastSeen.get(source) as number) > this.#c.idleTimeout)).map(([, ts]) => ts)
    if (active.length > 0) this.#w = Math.max(this.#w, Math.min(...active) - this.#c.lag)
    else {
      // Every source idle: W goes where the sources heard from last held it before they turned idle.
      const last = Math.max(...this.#lastSeen.values())
      const heardLast = [...this.#maxTs].filter(([source]) => this.#lastSeen.get(source) === last).map(([, ts]) => ts)
      this.#w = Math.max(this.#w, Math.min(...heardLast) - this.#c.lag)
    }
    this.#strict = Math.max(this.#strict, Math.min(...this.#maxTs.values()) - this.#c.lag)
  }

  #basis(end: number): Basis {
    return this.#p >= end ? 'proven' : this.#strict >= end ? 'derived' : this.#w >= end ? 'fallback' : 'unknown'
  }

  /** Min over known sources of the largest ts of their gap-free seq prefix, while ts never went back along it. */
  #proof(): number {
    let p = Number.POSITIVE_INFINITY
    for (const bySeq of this.#bySeq.values()) {
      let best = Number.NEGATIVE_INFINITY
      if (bySeq !== null) {
        for (let seq = 1; bySeq.has(seq); seq++) {
          const ts = bySeq.get(seq) as number
          if (ts < best) return Number.NEGATIVE_INFINITY
          best = ts
        }
        // A seq that arrived above a gap with a ts below the prefix's end made it null (ingest); the
        // rest of what lies beyond a gap is checked once the gap fills.
      }
      p = Math.min(p, best)
    }
    return this.#bySeq.size === 0 ? Number.NEGATIVE_INFINITY : p
  }

  advanceWatermark(t: number) {
    this.#op++
    if (t > this.#w) this.#w = t
    this.#strict = Math.max(this.#strict, t)
    this.#fire()
    this.#finality()
  }

  tick(now: number) {
    this.#op++
    // Silent sources may have turned idle: W moves, windows fire (cancelling early timers).
    this.#frontiers(now)
    this.#fire()
    const due = this.#windows
      .filter((w) => w.timerAt <= now)
      .sort((a, b) => a.timerAt - b.timerAt || a.armedAt - b.armedAt)
    for (const w of due) {
      const order = [w.timerAt, w.armedAt] as const
      if (!w.fired) this.#pane(w, 'early', order)
      else if (!w.final) this.#latePane(w, order)
    }
    this.#finality()
  }

  /** Windows the watermark passed fire on time (final already if it passed end + lateness too). */
  #fire() {
    for (const w of this.#windows) {
      if (w.fired || w.end > Math.max(this.#w, this.#p)) continue
      w.fired = true
      w.firedBasis = this.#basis(w.end)
      w.final = w.end + this.#c.allowedLateness <= this.#w
      w.revision = 0
      this.#pane(w, 'on_time')
    }
  }

  #finality() {
    const L = this.#c.allowedLateness
    for (const w of this.#windows) {
      if (!w.fired || w.final || w.end + L > this.#w) continue
      // Late data not shown yet: one last late pane, final.
      if (w.dirty) this.#latePane(w)
      w.final = true
      w.timerAt = Number.NaN
      if (w.shown !== null) {
        w.shown = { ...w.shown, final: true }
        this.#out.push({ change: { type: 'final', result: w.shown, pane: w.shown.pane } })
      }
    }
    this.#windows = this.#windows.filter((w) => !(w.final && w.end + L + this.#c.retention <= this.#w))
  }

  #latePane(w: ModelWindow, order?: readonly [number, number]) {
    w.revision++
    this.#pane(w, 'late', order)
  }

  #pane(w: ModelWindow, timing: 'early' | 'on_time' | 'late', order?: readonly [number, number]) {
    const pane = { timing, index: w.panes, onTimeIndex: timing === 'early' ? -1 : w.onTimePanes }
    w.panes++
    if (timing !== 'early') w.onTimePanes++
    const discarding = this.#c.accumulation === 'discarding'
    const v = valuesOf(discarding ? w.pending : w.all)
    const status = timing === 'early' ? 'provisional' : timing === 'on_time' ? 'on_time' : 'corrected'
    const result: WindowResult = {
      window: w.spec.id,
      key: w.key,
      start: w.start,
      end: w.end,
      ...v,
      mean: v.count === 0 ? 0 : v.sum / v.count,
      status,
      revision: timing === 'early' ? 0 : w.revision,
      final: timing !== 'early' && w.end + this.#c.allowedLateness <= this.#w,
      basis: timing === 'early' ? 'unknown' : this.#basis(w.end) !== 'unknown' ? this.#basis(w.end) : w.firedBasis,
      pane,
    }
    const type = timing === 'early' ? 'provisional' : timing === 'on_time' ? 'on_time' : 'correction'
    // Accumulating: a correction carries what it replaces (absent for a window born late). Discarding: never.
    const previous = !discarding && timing === 'late' && w.shown !== null ? w.shown : undefined
    const change: WindowChange = previous === undefined ? { type, result, pane } : { type, result, pane, previous }
    this.#out.push(order === undefined ? { change } : { change, order })
    w.shown = result
    if (timing !== 'early') w.history.push(result)
    w.pending = []
    w.dirty = false
    w.timerAt = Number.NaN
  }

  /** A restored engine has not judged idleness yet: a source silent past its timeout is due at once. */
  restored(): void {
    this.#judged = Number.NEGATIVE_INFINITY
  }

  watermark(): number {
    return this.#w
  }

  results(): WindowResult[] {
    return this.#windows.flatMap((w) => (w.shown === null ? [] : [w.shown])).sort(compareResults)
  }

  /** The earliest armed timer, or the first whole millisecond after the first silent source's idleTimeout runs out (not yet idle when last judged). */
  nextTickAt(): number {
    const idle = [...this.#lastSeen.values()].map((seen) => Math.floor(seen + this.#c.idleTimeout) + 1).filter((at) => at > this.#judged)
    return Math.min(Number.POSITIVE_INFINITY, ...idle, ...this.#windows.filter((w) => !Number.isNaN(w.timerAt)).map((w) => w.timerAt))
  }

  /** Each live window's on-time and late panes, by identity. */
  histories(): Map<string, WindowResult[]> {
    return new Map(this.#windows.filter((w) => w.history.length > 0).map((w) => [JSON.stringify([w.spec.id, w.key, w.start]), w.history.slice(-64)]))
  }

  timers(): number {
    return this.#windows.filter((w) => !Number.isNaN(w.timerAt)).length
  }

  emitted(): Emitted[] {
    const out = this.#out
    this.#out = []
    return out
  }
}

// ---------------------------------------------------------------------------------------------
// Running and checking

function optionsFor(c: Config, accumulation: Accumulation, clock: { now: number }): EngineOptions {
  return {
    windows: [...c.windows],
    watermark: c.lag === null ? manual() : boundedOutOfOrderness(c.lag),
    allowedLateness: c.allowedLateness,
    retention: c.retention,
    idleTimeout: c.idleTimeout,
    trigger: { early: c.early, late: c.late },
    accumulation,
    now: () => clock.now,
    replicaId: 'r',
  }
}

/** An engine on the options, its changes fed to `sink`; `restore` swaps in a copy made from its checkpoint. */
class Restartable {
  engine: TidemarkEngine
  constructor(
    private readonly options: EngineOptions,
    private readonly sink: (changes: readonly WindowChange[]) => void,
  ) {
    this.engine = createEngine(options) as TidemarkEngine
    this.engine.subscribe(sink)
  }

  restore(): void {
    const copy = new (this.engine.constructor as typeof TidemarkEngine)(this.options)
    copy.restore(this.engine.checkpoint())
    this.engine.close()
    copy.subscribe(this.sink)
    this.engine = copy
  }
}

function run(r: Restartable, clock: { now: number }, op: Op) {
  const { engine } = r
  switch (op.kind) {
    case 'ingest':
      return engine.ingest(op.events)
    case 'clock':
      clock.now = op.to
      return null
    case 'tick':
      engine.tick()
      return null
    case 'advanceWatermark':
      engine.advanceWatermark(op.to)
      return null
    case 'restore':
      r.restore()
      return null
  }
}

const idOf = (r: WindowResult) => JSON.stringify([r.window, r.key, r.start])
const text = (c: WindowChange) => JSON.stringify(c)

/** Beam's pane invariants on one engine's own stream of changes, window by window. */
class PaneLaws {
  readonly #panes = new Map<string, { index: number; onTime: number; timing: string; final: boolean; finalChange: boolean; bornLate: boolean; shown: WindowResult }>()
  /** Per window, what its panes added up to (discarding), or the last pane (accumulating). */
  readonly #sums = new Map<string, Values>()

  constructor(private readonly discarding: boolean) {}

  apply(change: WindowChange): void {
    const id = idOf(change.result)
    const last = this.#panes.get(id)
    const { pane } = change
    expect(change.pane).toBe(change.result.pane)
    if (change.type === 'final') {
      // Not a pane: the last pane again, final.
      expect(last, `final of a window that showed nothing: ${id}`).toBeDefined()
      expect(pane).toEqual(last?.shown.pane)
      expect(change.result).toEqual({ ...last?.shown, final: true })
      // Once per window; a window that fired final shows only its on-time pane, while a last late
      // pane made at finality (final: true) is followed by the final change.
      expect(last?.finalChange, `second final change: ${id}`).toBe(false)
      expect(last?.final === true && last.timing === 'on_time', `final change after an on-time pane that fired final: ${id}`).toBe(false)
      if (last !== undefined) last.finalChange = true
      return
    }
    expect((last?.final ?? false) || (last?.finalChange ?? false), `a pane after final: ${id}`).toBe(false)
    const index = last === undefined ? 0 : last.index + 1
    const onTime = last === undefined ? 0 : last.onTime
    expect(pane.index, `pane index of ${id}`).toBe(index)
    expect(change.result.status).toBe(pane.timing === 'early' ? 'provisional' : pane.timing === 'on_time' ? 'on_time' : 'corrected')
    expect(change.type).toBe(pane.timing === 'early' ? 'provisional' : pane.timing === 'on_time' ? 'on_time' : 'correction')
    if (pane.timing === 'early') {
      expect(pane.onTimeIndex).toBe(-1)
      // No early pane once the window fired.
      expect(last === undefined || last.timing === 'early', `early pane after firing: ${id}`).toBe(true)
    } else {
      expect(pane.onTimeIndex, `onTimeIndex of ${id}`).toBe(onTime)
      if (pane.timing === 'on_time') expect(last === undefined || last.timing === 'early', `second on-time pane: ${id}`).toBe(true)
      else expect(last === undefined || last.timing !== 'early', `late pane before the on-time pane: ${id}`).toBe(true)
      // The on-time pane is revision 0; each late pane one more (a window born late starts at 1).
      const bornLate = pane.timing === 'late' && (last === undefined || last.timing === 'early' ? true : last.bornLate)
      expect(change.result.revision, `revision of ${id}`).toBe(pane.timing === 'on_time' ? 0 : pane.onTimeIndex + (bornLate ? 1 : 0))
    }
    if (this.discarding) expect(change.previous).toBeUndefined()
    const bornLate = pane.timing === 'late' && (last === undefined || last.timing === 'early' || last.bornLate)
    this.#panes.set(id, { index, onTime: pane.timing === 'early' ? 0 : onTime + 1, timing: pane.timing, final: change.result.final, finalChange: false, bornLate, shown: change.result })
    const r = change.result
    const before = this.#sums.get(id)
    if (!this.discarding || before === undefined) this.#sums.set(id, { count: r.count, sum: r.sum, min: r.min, max: r.max })
    else if (r.count > 0) {
      this.#sums.set(
        id,
        before.count === 0
          ? { count: r.count, sum: r.sum, min: r.min, max: r.max }
          : { count: before.count + r.count, sum: before.sum + r.sum, min: Math.min(before.min, r.min), max: Math.max(before.max, r.max) },
      )
    }
  }

  /** The windows' values as a consumer holds them: the panes added up (discarding), or the last pane. */
  totals(): Map<string, Values> {
    return this.#sums
  }
}

function check(plan: Plan): void {
  const { config: c } = plan
  const clock = { now: 1_000 }
  let got: WindowChange[] = []
  let otherGot: WindowChange[] = []
  const restartable = new Restartable(optionsFor(c, c.accumulation, clock), (changes) => got.push(...changes))
  const model = new Model(c)
  const laws = new PaneLaws(c.accumulation === 'discarding')
  // The same input in the other mode: discarding panes must add up to its windows.
  const otherClock = { now: 1_000 }
  const other = new Restartable(optionsFor(c, c.accumulation === 'discarding' ? 'accumulating' : 'discarding', otherClock), (changes) => otherGot.push(...changes))
  const otherLaws = new PaneLaws(c.accumulation !== 'discarding')
  plan.ops.forEach((op, step) => {
    const at = `op ${step} (${op.kind})`
    const receipt = run(restartable, clock, op)
    const engine = restartable.engine
    run(other, otherClock, op)
    if (op.kind === 'ingest') {
      const want = model.ingest(op.events, clock.now)
      expect(receipt, at).not.toBeNull()
      if (receipt !== null) {
        expect({ accepted: receipt.accepted, late: receipt.late, notCounted: receipt.duplicates + receipt.beyondLateness, rejected: receipt.rejected }, `receipt of ${at}`).toEqual({ ...want, rejected: 0 })
      }
    } else if (op.kind === 'tick') model.tick(clock.now)
    else if (op.kind === 'advanceWatermark') model.advanceWatermark(op.to)
    else if (op.kind === 'restore') model.restored()
    const want = model.emitted()
    expect(engine.watermark(), `watermark after ${at}`).toBe(model.watermark())
    // The changes of one operation, as a multiset; and each window's own changes in order.
    expect(got.map(text).sort(), `changes of ${at}`).toEqual(want.map((e) => text(e.change)).sort())
    const perWindow = (changes: readonly WindowChange[]) => {
      const m = new Map<string, string[]>()
      for (const ch of changes) m.set(idOf(ch.result), [...(m.get(idOf(ch.result)) ?? []), text(ch)])
      return m
    }
    expect(perWindow(got), `order per window in ${at}`).toEqual(perWindow(want.map((e) => e.change)))
    if (op.kind === 'tick') {
      // Timers due at one tick fire in deadline order, then in the order they were armed.
      const orderOf = new Map(want.map((e) => [text(e.change), e.order] as const))
      const orders = got.flatMap((ch) => {
        const order = orderOf.get(text(ch))
        return order === undefined ? [] : [order]
      })
      for (let i = 1; i < orders.length; i++) {
        const [a, b] = [orders[i - 1] as readonly number[], orders[i] as readonly number[]]
        expect((a[0] as number) < (b[0] as number) || (a[0] === b[0] && (a[1] as number) <= (b[1] as number)), `tick order in ${at}: ${JSON.stringify(orders)}`).toBe(true)
      }
    }
    for (const ch of got) laws.apply(ch)
    for (const ch of otherGot) otherLaws.apply(ch)
    expect(engine.results(), `results after ${at}`).toEqual(model.results())
    expect(engine.stats().timers, `timers after ${at}`).toBe(model.timers())
    expect(engine.nextTickAt(), `nextTickAt after ${at}`).toBe(model.nextTickAt())
    for (const [id, panes] of model.histories()) {
      const [window, key, start] = JSON.parse(id) as [string, string, number]
      expect(engine.history(window, key, start), `history of ${id} after ${at}`).toEqual(panes)
    }
    // Discarding panes add up to the accumulating windows, pane for pane.
    const [whole, parts] = c.accumulation === 'discarding' ? [otherLaws, laws] : [laws, otherLaws]
    expect(parts.totals(), `discarding panes vs accumulating after ${at}`).toEqual(whole.totals())
    got = []
    otherGot = []
  })
  // Event time ended: every window that took data fired, turned final and (retention 0 or 8) left.
  const left = restartable.engine.results()
  if (c.retention !== Number.POSITIVE_INFINITY) expect(left).toEqual([])
  else for (const r of left) expect(r.final).toBe(true)
  expect(restartable.engine.stats().timers).toBe(0)
}

describe('triggers, accumulation and panes against a model of the docs', () => {
  it(
    'every change, receipt and result, and the pane laws, over random batches, clock steps, ticks and watermark moves',
    () => assertFreshSeeded(fc.property(plans, check), FILE, 400),
    PROPERTY_TIMEOUT,
  )
})
