/**
 * Random device streams for the property tests: several sources with their own
 * clocks, disorder, exact duplicates re-sent in the same or later batches,
 * reconnect backlogs (a source silent, then a burst of old events), clocks that go
 * backwards, seq-less sources, hostile names, a few invalid inputs, sources finished
 * by their writer (whose later events keep coming and must be refused), and batch
 * boundaries anywhere. A plan is plain data, so fast-check prints it as a repro.
 */
import { seededRandom } from '@tidemark/seeded-random'
import fc from 'fast-check'
import {
  type AggregateDefinitions,
  type AnyAggregate,
  afterProcessingTime,
  alignedProcessingTime,
  boundedOutOfOrderness,
  cumulating,
  distinct,
  type Engine,
  everyElement,
  histogram,
  type IngestReceipt,
  latest,
  manual,
  never,
  quantiles,
  session,
  sliding,
  type StreamEvent,
  type Trigger,
  tumbling,
  type WindowSpec,
} from '@tidemark/engine'
import type { ModelConfig } from './referenceModel.ts'

export type PlanOp =
  | { readonly kind: 'ingest'; readonly events: readonly StreamEvent[] }
  | { readonly kind: 'clock'; readonly to: number }
  | { readonly kind: 'tick' }
  | { readonly kind: 'advanceWatermark'; readonly to: number }
  /** `finishSource(source)`: a source that sent events, one that has not yet, or one that never does. */
  | { readonly kind: 'finish'; readonly source: string }

/**
 * Runs one op of a plan: ingests a batch (returning its receipt), moves the processing-time
 * clock the engine reads, ticks, advances a manual watermark, or finishes a source (its
 * durability promise is left to the caller: plans never block the log).
 *
 * @example
 * const clock = { now: 0 }
 * const engine = createEngine({ ...plan.config, now: () => clock.now })
 * for (const op of plan.ops) runPlanOp(engine, clock, op)
 */
export function runPlanOp(
  engine: Pick<Engine, 'ingest' | 'tick' | 'advanceWatermark' | 'finishSource'>,
  clock: { now: number },
  op: PlanOp,
): IngestReceipt | null {
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
    case 'finish':
      void engine.finishSource(op.source)
      return null
  }
}

export interface StreamPlan {
  readonly config: ModelConfig
  readonly ops: readonly PlanOp[]
}

export type WindowKind = WindowSpec['kind']

const WINDOW_CHOICES: readonly WindowSpec[] = [
  tumbling(10),
  tumbling(25),
  sliding(20, 5),
  sliding(30, 10),
  cumulating(20, 5),
  cumulating(30, 10),
  session(6),
  session(15),
]

/** Early triggers, the default most often; processing-time ones fire on the plans' ticks (clock steps of 0–30 ms). */
export const EARLY_TRIGGERS: fc.Arbitrary<Trigger> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(everyElement()) },
  { weight: 1, arbitrary: fc.constantFrom(0, 15, 60).map(afterProcessingTime) },
  { weight: 1, arbitrary: fc.constantFrom([20, 0], [25, 10]).map(([period, offset]) => alignedProcessingTime(period as number, offset as number)) },
  { weight: 1, arbitrary: fc.constant(never()) },
)

export const LATE_TRIGGERS: fc.Arbitrary<Trigger> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(everyElement()) },
  { weight: 1, arbitrary: fc.constantFrom(0, 15, 60).map(afterProcessingTime) },
  { weight: 1, arbitrary: fc.constant(never()) },
)

/**
 * Aggregates the plans draw from, all exact under merge (so the model, which feeds one state
 * every event, must agree bit for bit): a sketch that collapses at 16 buckets, one whose input
 * refuses the value 13 (`invalid_aggregate_input`), distinct counts that leave the exact set
 * after one identity, the latest value, a histogram.
 */
export const AGGREGATE_MENU: AggregateDefinitions = {
  p: quantiles({ at: [0, 0.25, 0.5, 0.9, 1], relativeAccuracy: 0.05, maxBuckets: 16 }),
  p50: quantiles({ at: [0.5], of: (event) => (event.value === 13 ? Number.NaN : event.value) }),
  devices: distinct({ of: (event) => event.source, precision: 4 }),
  values: distinct({ precision: 8 }),
  last: latest(),
  spread: histogram({ bounds: [-10, 0, 10] }),
}

/** No aggregates half the time; otherwise some of the menu's. */
export const PLAN_AGGREGATES: fc.Arbitrary<AggregateDefinitions | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.subarray(Object.keys(AGGREGATE_MENU), { minLength: 1 }).map((names): AggregateDefinitions => Object.fromEntries(names.map((name) => [name, AGGREGATE_MENU[name] as AnyAggregate]))),
)

/** Skews that refuse some of the plans' events (their times run a little ahead of the clock), and none. */
export const FUTURE_SKEWS: fc.Arbitrary<number | undefined> = fc.constantFrom(undefined, undefined, 0, 20, Number.POSITIVE_INFINITY)

/** Some shorter than a session gap: a final session that left live state must still refuse its late events. */
const RETENTIONS = [Number.POSITIVE_INFINITY, 0, 5, 15, 100]

const SOURCE_NAMES = ['d1', 'd2', 'd3', '__proto__', 'constructor', 'hasOwnProperty'] as const

/**
 * Chance (percent) after each batch that a source is finished: none in a third of the plans.
 * Drawn from a stream of its own, so a plan differs from the same plan at 0 only by its finishes.
 */
const FINISH_PERCENTS = [0, 12, 30] as const
const KEYS = [undefined, 'temp', '__proto__', 'constructor'] as const

const step = fc.record({
  /** Event-time step from the previous event of the source; sometimes backwards. */
  dt: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 12 }) }, { weight: 1, arbitrary: fc.integer({ min: -15, max: -1 }) }),
  key: fc.nat(KEYS.length - 1),
  value: fc.integer({ min: -50, max: 50 }),
  /** Delivery delay, in slots. */
  delay: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.nat(6) }),
  /** Extra exact copies, each delivered this many slots after the original (0: possibly the same batch). */
  copies: fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(fc.nat(8), { maxLength: 2 }) }),
  /** In a `mixed` source, this event carries no seq. */
  noSeq: fc.boolean(),
})

const source = fc.record({
  name: fc.constantFrom(...SOURCE_NAMES),
  seqMode: fc.constantFrom('seq', 'seq', 'none', 'mixed'),
  start: fc.integer({ min: -20, max: 40 }),
  steps: fc.array(step, { maxLength: 12 }),
  /** From this event on, the source is offline for `silence` slots, then sends everything at once. */
  backlog: fc.option(fc.record({ from: fc.nat(11), silence: fc.integer({ min: 3, max: 25 }) }), { nil: undefined }),
})

type SourceDraft = typeof source extends fc.Arbitrary<infer T> ? T : never

export interface PlanOptions {
  readonly kinds?: readonly WindowKind[]
  readonly watermark?: 'bounded' | 'manual' | 'any'
  /** Invalid inputs sprinkled in; off for plans that compare engines with each other. */
  readonly invalid?: boolean
  /** Random triggers and accumulation (default), or always the defaults. */
  readonly panes?: 'any' | 'default'
  /** Random `maxFutureSkew` (default), or none set. */
  readonly skew?: boolean
  /** Random aggregates (default: none half the time, else some of `AGGREGATE_MENU`), or none. */
  readonly aggregates?: boolean
  /** Sources finished now and then (default), or never. */
  readonly finish?: boolean
}

/**
 * A fast-check arbitrary of engine configurations (window specs of the given kinds, watermark
 * strategy, lateness, retention, triggers, accumulation, skew, aggregates) with a list of ops to
 * run on them: batches of events (late, duplicated, out of order, now and then invalid), clock
 * moves, ticks, manual watermark advances and finished sources.
 *
 * @example
 * assertSeeded(fc.property(streamPlan({ kinds: ['tumbling', 'session'] }), (plan) => { ... }), FILE, 'engine equals the model', 150)
 */
export function streamPlan(options: PlanOptions = {}): fc.Arbitrary<StreamPlan> {
  const kinds = options.kinds ?? ['tumbling', 'sliding', 'session']
  const choices = WINDOW_CHOICES.filter((w) => kinds.includes(w.kind))
  const bounded = fc.constantFrom(0, 5, 20).map(boundedOutOfOrderness)
  const watermark =
    options.watermark === 'manual'
      ? fc.constant(manual())
      : options.watermark === 'bounded'
        ? bounded
        : fc.oneof({ weight: 3, arbitrary: bounded }, { weight: 1, arbitrary: fc.constant(manual()) })
  const anyPanes = (options.panes ?? 'any') === 'any'
  return fc
    .record({
      windows: fc.subarray([...choices], { minLength: 1, maxLength: Math.min(3, choices.length) }),
      watermark,
      allowedLateness: fc.constantFrom(0, 10, 40),
      idleTimeout: fc.constantFrom(Number.POSITIVE_INFINITY, 20, 60),
      retention: fc.constantFrom(...RETENTIONS),
      early: anyPanes ? EARLY_TRIGGERS : fc.constant(everyElement()),
      late: anyPanes ? LATE_TRIGGERS : fc.constant(everyElement()),
      accumulation: anyPanes ? fc.constantFrom('accumulating', 'accumulating', 'discarding') : fc.constant('accumulating'),
      maxFutureSkew: (options.skew ?? true) ? FUTURE_SKEWS : fc.constant(undefined),
      aggregates: (options.aggregates ?? true) ? PLAN_AGGREGATES : fc.constant(undefined),
      sources: fc.uniqueArray(source, { selector: (s) => s.name, minLength: 1, maxLength: 4 }),
      slotMs: fc.integer({ min: 0, max: 30 }),
      cutPercent: fc.integer({ min: 5, max: 80 }),
      finishPercent: (options.finish ?? true) ? fc.constantFrom(...FINISH_PERCENTS) : fc.constant(0),
      rngSeed: fc.integer(),
    })
    .map((draft) =>
      buildPlan(
        {
          windows: draft.windows,
          watermark: draft.watermark,
          allowedLateness: draft.allowedLateness,
          idleTimeout: draft.idleTimeout,
          retention: draft.retention,
          trigger: { early: draft.early, late: draft.late },
          accumulation: draft.accumulation as 'accumulating' | 'discarding',
          ...(draft.maxFutureSkew === undefined ? {} : { maxFutureSkew: draft.maxFutureSkew }),
          ...(draft.aggregates === undefined ? {} : { aggregates: draft.aggregates }),
        },
        draft.sources,
        draft.slotMs,
        draft.cutPercent,
        draft.rngSeed,
        options.invalid ?? true,
        draft.finishPercent,
      ),
    )
}

/** One input with a single fault, for every validation reason. */
export function invalidInput(kind: number, n: number): unknown {
  const base = { id: `bad#${n}`, source: 'd1', ts: 5, value: 1 }
  const long = 'x'.repeat(1025)
  const faults: unknown[] = [
    null,
    { ...base, ts: Number.NaN },
    { ...base, ts: Number.POSITIVE_INFINITY },
    { ...base, value: Number.NEGATIVE_INFINITY },
    { ...base, value: '3' },
    { ...base, id: '' },
    { source: 'd1', ts: 5, value: 1 },
    { ...base, source: '' },
    { ...base, seq: 0 },
    { ...base, seq: 1.5 },
    { ...base, key: 7 },
    { ...base, id: long },
    { ...base, source: long },
    { ...base, key: long },
  ]
  return faults[kind % faults.length]
}

function buildPlan(
  config: ModelConfig,
  sources: readonly SourceDraft[],
  slotMs: number,
  cutPercent: number,
  rngSeed: number,
  invalid: boolean,
  finishPercent: number,
): StreamPlan {
  const random = seededRandom(rngSeed)
  const finishes = finisher(rngSeed, finishPercent)
  const deliveries: { slot: number; order: number; event: StreamEvent }[] = []
  for (const src of sources) {
    let ts = src.start
    src.steps.forEach((s, i) => {
      ts += s.dt
      const key = KEYS[s.key]
      const withSeq = src.seqMode === 'seq' || (src.seqMode === 'mixed' && !s.noSeq)
      const event: StreamEvent = {
        id: `${src.name}#${i}`,
        source: src.name,
        ts,
        value: s.value,
        ...(withSeq ? { seq: i + 1 } : {}),
        ...(key === undefined ? {} : { key }),
      }
      const slot = src.backlog !== undefined && i >= src.backlog.from ? src.backlog.from + src.backlog.silence : i + s.delay
      deliveries.push({ slot, order: random(), event })
      for (const later of s.copies) deliveries.push({ slot: slot + later, order: random(), event: { ...event } })
    })
  }
  deliveries.sort((a, b) => a.slot - b.slot || a.order - b.order)

  const ops: PlanOp[] = []
  let batch: unknown[] = []
  let maxTs = 0
  let invalidCount = 0
  const flush = () => {
    if (batch.length === 0) return
    finishes.sent(batch as StreamEvent[])
    if (invalid && random() < 0.2) {
      batch.splice(Math.floor(random() * (batch.length + 1)), 0, invalidInput(Math.floor(random() * 100), invalidCount++))
    }
    ops.push({ kind: 'ingest', events: batch as StreamEvent[] })
    batch = []
    if (random() < 0.3) ops.push({ kind: 'tick' })
    if (config.watermark.kind === 'manual' && random() < 0.4) ops.push({ kind: 'advanceWatermark', to: maxTs - Math.floor(random() * 20) })
    ops.push(...finishes.afterBatch())
  }
  for (const d of deliveries) {
    if (batch.length > 0 && random() * 100 < cutPercent) flush()
    if (batch.length === 0) ops.push({ kind: 'clock', to: d.slot * slotMs })
    batch.push(d.event)
    maxTs = Math.max(maxTs, d.event.ts)
  }
  flush()
  ops.push(...finishes.atEnd())
  // Much later in processing time: idle sources stop holding the watermark.
  const lastClock = ops.reduce((t, op) => (op.kind === 'clock' ? op.to : t), 0)
  ops.push({ kind: 'clock', to: lastClock + 1000 }, { kind: 'tick' })
  if (config.watermark.kind === 'manual') ops.push({ kind: 'advanceWatermark', to: maxTs + 30 })
  return { config, ops }
}

/**
 * When a plan finishes which source, from a random stream of its own: after a batch, with
 * `percent` chance, one source that sent (maybe one finished already: a no-op) or, a fifth of
 * the time, one that has not sent (yet); at the end, in a quarter of such plans, every source
 * that sent, so that every known source is finished.
 */
function finisher(rngSeed: number, percent: number) {
  const random = seededRandom(rngSeed ^ 0x5f1a15)
  const sent = new Set<string>()
  const pick = (names: readonly string[]): string | undefined => names[Math.floor(random() * names.length)]
  return {
    /** The valid events of a batch about to be ingested. */
    sent(events: readonly StreamEvent[]): void {
      for (const e of events) sent.add(e.source)
    },
    afterBatch(): PlanOp[] {
      if (percent === 0 || random() * 100 >= percent) return []
      const unknown = SOURCE_NAMES.filter((name) => !sent.has(name))
      const source = sent.size === 0 || random() < 0.2 ? pick(unknown) : pick([...sent])
      return source === undefined ? [] : [{ kind: 'finish', source }]
    },
    atEnd(): PlanOp[] {
      if (percent === 0 || random() >= 0.25) return []
      return [...sent].map((source): PlanOp => ({ kind: 'finish', source }))
    },
  }
}
