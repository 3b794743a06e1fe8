import { AggregateSet } from '../aggregates/aggregateSet.ts'
import type { AggregateDefinitions } from '../aggregates/aggregate.ts'
import { SessionWindowIndex } from '../windows/sessionWindowIndex.ts'
import { SlicedWindowIndex } from '../windows/slicedWindowIndex.ts'
import { boundedOutOfOrderness, checkWatermarkStrategy, type WatermarkStrategy } from '../time/watermarkStrategy.ts'
import { assertKnownOptions, describeValue } from '../options/knownOptions.ts'
import { durationOption } from '../options/durationOption.ts'
import { maxFutureSkewOf } from '../input/futureSources.ts'
import { processingClock } from '../time/processingClock.ts'
import type { WindowIndex } from '../windows/windowIndex.ts'
import { everyElement, remadeTrigger, type Trigger, type TriggerOptions } from '../windows/trigger.ts'
import type { Accumulation, NoAggregates } from '../windows/windowResult.ts'
import { cumulating, session, sliding, tumbling, type WindowSpec } from '../windows/windowSpec.ts'

/**
 * Bounds on every buffer; reaching one refuses input with `overflow` instead of growing.
 *
 * @example
 * createEngine({ windows: tumbling(60_000), limits: { maxWindows: 10_000, maxBatch: 5_000 } })
 */
export interface EngineLimits {
  /** Live windows across specs and keys (default 100,000). */
  readonly maxWindows?: number
  /** Remembered event ids and out-of-order seqs across sources (default 1,000,000). */
  readonly maxDedupEntries?: number
  /** Entries kept on the late lane; older ones are trimmed and counted (default 10,000). */
  readonly maxLateEvents?: number
  /** Known sources (default 100,000). */
  readonly maxSources?: number
  /** Events in one `ingest` call (default 1,000,000). */
  readonly maxBatch?: number
}

/**
 * What `createEngine` and `openEngine` take; only `windows` is required. `A` is the type of
 * `aggregates`, from which results get their `aggregates` field's type.
 *
 * @example
 * const options: EngineOptions = { windows: [tumbling(60_000), sliding(60_000, 10_000)], watermark: boundedOutOfOrderness(5_000), allowedLateness: 30_000 }
 * const engine = createEngine(options)
 */
export interface EngineOptions<A extends AggregateDefinitions = NoAggregates> {
  /** One window spec or several (`tumbling`, `sliding`, `cumulating`, `session`); every event is placed in every spec. */
  readonly windows: WindowSpec | readonly WindowSpec[]
  /** Default `boundedOutOfOrderness(0)`. */
  readonly watermark?: WatermarkStrategy
  /** Processing-time ms after which a silent source stops holding the watermark; default Infinity. */
  readonly idleTimeout?: number
  /** Event-time ms a fired window still accepts corrections; default 0. */
  readonly allowedLateness?: number
  /** Event-time ms a final window stays in `results()` before it leaves live state; default 60,000. */
  readonly retention?: number
  /** Processing-time clock in ms; default `Date.now`. A call whose reading is not a number (a Date, `now: Date`'s string) throws a TypeError before it changes anything. */
  readonly now?: () => number
  /** Bounds on every buffer (see `EngineLimits`). */
  readonly limits?: EngineLimits
  /** This replica's id, the writer of every source it ingests; default a random UUID (another random id where `crypto.randomUUID` is missing: an insecure origin). */
  readonly replicaId?: string
  /**
   * When panes besides the on-time one fire: `early` (before the window fires on time) and
   * `late` (after it, while late data is admitted), each `everyElement()` by default
   * (docs/semantics.md, Triggers and accumulation).
   */
  readonly trigger?: TriggerOptions
  /**
   * What each pane carries: `'accumulating'` (default), the whole window, corrections with
   * `previous`; or `'discarding'`, only what arrived since the window's last pane.
   */
  readonly accumulation?: Accumulation
  /**
   * Processing-time ms an event's `ts` may be ahead of `now()`: a later one is refused with
   * `future_ts` and moves no frontier. Default 86,400,000 (a day); Infinity accepts any; a
   * `now()` reading no finite time (NaN, an infinity) refuses nothing.
   */
  readonly maxFutureSkew?: number
  /**
   * Aggregates computed over each window's events beside count, sum, min and max, by the name
   * `result.aggregates` shows them under: `quantiles`, `distinct`, `latest`, `histogram`,
   * `defineAggregate` (docs/semantics.md, Aggregates). Replicas must configure the same ones.
   */
  readonly aggregates?: A
}

/** Options with every default filled in and every value checked. */
export interface ResolvedOptions {
  readonly specs: readonly WindowSpec[]
  readonly watermark: WatermarkStrategy
  readonly idleTimeout: number
  readonly allowedLateness: number
  readonly retention: number
  readonly now: () => number
  readonly limits: Required<EngineLimits>
  readonly replicaId: string
  /** Corrections kept per window for `history()`. */
  readonly historyLimit: number
  readonly early: Trigger
  readonly late: Trigger
  readonly accumulation: Accumulation
  readonly maxFutureSkew: number
  /** The aggregates, in name order; null without. */
  readonly aggregates: AggregateSet | null
}

export const DEFAULT_LIMITS: Required<EngineLimits> = {
  maxWindows: 100_000,
  maxDedupEntries: 1_000_000,
  maxLateEvents: 10_000,
  maxSources: 100_000,
  maxBatch: 1_000_000,
}

/**
 * The keys `createEngine` takes (`openEngine` adds its own).
 *
 * @example
 * assertKnownOptions('openEngine', options, [...ENGINE_OPTION_KEYS, 'persistence', 'checkpointEvery', 'writeRetry', 'checkpointOnClose'])
 */
export const ENGINE_OPTION_KEYS: readonly (keyof EngineOptions)[] = [
  'windows',
  'watermark',
  'idleTimeout',
  'allowedLateness',
  'retention',
  'now',
  'limits',
  'replicaId',
  'trigger',
  'accumulation',
  'maxFutureSkew',
  'aggregates',
]

/** Options that live elsewhere: the hint given when one is passed here. */
export const MOVED_ENGINE_OPTIONS: Readonly<Record<string, string>> = {
  doc: "bind a Y.Doc with bindDoc(engine, doc) from '@tidemark/yjs'",
  onReplicationError: "pass onError to bindDoc(engine, doc, { onError }) from '@tidemark/yjs'",
}

/** Why each limit has the smallest value it has: a smaller one would refuse every input. */
const LIMIT_MINIMUMS: Readonly<Record<keyof EngineLimits, readonly [number, string]>> = {
  maxWindows: [1, 'with 0 every event would be refused'],
  maxDedupEntries: [1, 'with 0 every event out of order or without seq would be refused'],
  maxLateEvents: [0, '0 keeps no late events, only their count'],
  maxSources: [1, 'with 0 every event would be refused'],
  maxBatch: [1, 'with 0 every batch would be refused'],
}

/**
 * Checks engine options as `createEngine` does, without making an engine: for a wrapper
 * (`openEngine`) that must refuse bad options before it opens storage. `where` names the
 * function in the errors.
 *
 * @example
 * checkEngineOptions({ windows: tumbling(60_000), allowedLateness: -1 }, 'openEngine') // RangeError naming allowedLateness
 */
export function checkEngineOptions<A extends AggregateDefinitions>(options: EngineOptions<A>, where = 'createEngine'): void {
  resolveOptions(options, where)
}

/** Checks options and fills defaults; throws a RangeError or TypeError naming the bad option. */
export function resolveOptions<A extends AggregateDefinitions>(options: EngineOptions<A>, where = 'createEngine'): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError(`${where} needs an options object`)
  assertKnownOptions(where, options, ENGINE_OPTION_KEYS, MOVED_ENGINE_OPTIONS)
  const specs = checkSpecs(options.windows)
  const allowedLateness = durationOption('allowedLateness', options.allowedLateness, 0, null)
  if (!Number.isFinite(allowedLateness)) {
    // Infinite lateness: no window would ever turn final, so neither windows nor dedup memory could be released.
    throw new RangeError(
      'allowedLateness must be a finite number >= 0 of ms, got Infinity: a window that never turns final is never released (to keep final windows in results() longer, raise retention)',
    )
  }
  const now = processingClock(options.now)
  const { early, late } = triggersOf(options.trigger, where)
  const accumulation = options.accumulation ?? 'accumulating'
  if (accumulation !== 'accumulating' && accumulation !== 'discarding') {
    throw new RangeError(`accumulation must be 'accumulating' or 'discarding', got ${describeValue(accumulation)}`)
  }
  return {
    specs,
    watermark: options.watermark === undefined ? boundedOutOfOrderness(0) : checkWatermarkStrategy(options.watermark),
    idleTimeout: durationOption('idleTimeout', options.idleTimeout, Number.POSITIVE_INFINITY, 'sources never turn idle'),
    allowedLateness,
    retention: durationOption('retention', options.retention, 60_000, 'final windows stay in results() until limits.maxWindows refuses new ones'),
    now,
    replicaId: replicaIdOf(options.replicaId),
    limits: limitsOf(options.limits, where),
    historyLimit: 64,
    early,
    late,
    accumulation,
    maxFutureSkew: maxFutureSkewOf(options.maxFutureSkew),
    aggregates: AggregateSet.of(options.aggregates),
  }
}

/** The early and late triggers, each made by its constructor; late panes have no aligned trigger. */
function triggersOf(given: EngineOptions['trigger'], where: string): { early: Trigger; late: Trigger } {
  if (given === undefined) return { early: everyElement(), late: everyElement() }
  if (typeof given !== 'object' || given === null) throw new TypeError(`trigger must be an object { early?, late? }, got ${describeValue(given)}`)
  assertKnownOptions(`${where}: trigger`, given, ['early', 'late'])
  const made = (name: 'early' | 'late', value: unknown): Trigger => {
    if (value === undefined) return everyElement()
    const trigger = remadeTrigger(value)
    const allowed = name === 'early' ? 'everyElement(), afterProcessingTime(ms), alignedProcessingTime(periodMs, offsetMs) or never()' : 'everyElement(), afterProcessingTime(ms) or never()'
    if (trigger === null || (name === 'late' && trigger.kind === 'aligned_processing_time')) {
      throw new TypeError(`trigger.${name} must be ${allowed}, got ${describeSpec(value)}`)
    }
    return trigger
  }
  return { early: made('early', given.early), late: made('late', given.late) }
}

/** The window specs, each one made by `tumbling`, `sliding` or `session`. */
function checkSpecs(windows: EngineOptions['windows']): WindowSpec[] {
  const specs = (Array.isArray(windows) ? windows : [windows]) as unknown[]
  if (windows === undefined || specs.length === 0) {
    throw new TypeError('options.windows must be a window spec or a non-empty array of them (tumbling, sliding, cumulating, session)')
  }
  // Indexed, not forEach: a hole is checked (and refused) too.
  for (let i = 0; i < specs.length; i++) {
    const spec = specs[i]
    const made = remade(spec)
    if (made === null || made.id !== (spec as WindowSpec).id) {
      const where = Array.isArray(windows) ? `options.windows[${i}]` : 'options.windows'
      throw new TypeError(
        `${where} must be a window spec made by tumbling(size), sliding(size, slide), cumulating(maxSize, step) or session(gap), got ${describeSpec(spec)}`,
      )
    }
  }
  const ids = new Set(specs.map((s) => (s as WindowSpec).id))
  if (ids.size !== specs.length) throw new RangeError('options.windows has the same window spec twice')
  return specs as WindowSpec[]
}

/** The spec its constructor makes from the same numbers, or null when they make none. */
function remade(spec: unknown): WindowSpec | null {
  if (typeof spec !== 'object' || spec === null) return null
  const s = spec as Record<string, unknown>
  try {
    if (s.kind === 'tumbling') return tumbling(s.size as number)
    if (s.kind === 'sliding') return sliding(s.size as number, s.slide as number)
    if (s.kind === 'cumulating') return cumulating(s.size as number, s.step as number)
    if (s.kind === 'session') return session(s.gap as number)
  } catch {
    return null
  }
  return null
}

function describeSpec(spec: unknown): string {
  if (typeof spec !== 'object' || spec === null) return describeValue(spec)
  try {
    return JSON.stringify(spec)
  } catch {
    return 'an object that is not one'
  }
}

function limitsOf(given: EngineLimits | undefined, where: string): Required<EngineLimits> {
  const limits = { ...DEFAULT_LIMITS }
  if (given === undefined) return limits
  if (typeof given !== 'object' || given === null) throw new TypeError(`limits must be an object of limits, got ${describeValue(given)}`)
  assertKnownOptions(`${where}: limits`, given, Object.keys(DEFAULT_LIMITS))
  for (const name of Object.keys(DEFAULT_LIMITS) as (keyof EngineLimits)[]) {
    const value = given[name]
    if (value === undefined) continue
    const [min, why] = LIMIT_MINIMUMS[name]
    if (!Number.isSafeInteger(value) || value < min) {
      throw new RangeError(`limits.${name} must be an integer >= ${min} (${why}), got ${describeValue(value)}`)
    }
    limits[name] = value
  }
  return limits
}

/**
 * Where engines get their window indexes: `indexFor`, except while the testing entry builds an
 * engine on the per-window reference placement (`createPerWindowEngine`).
 */
export const windowIndexes: { of: (spec: WindowSpec) => WindowIndex } = { of: indexFor }

/** One window index per spec. */
export function indexFor(spec: WindowSpec): WindowIndex {
  switch (spec.kind) {
    case 'tumbling':
    case 'sliding':
    case 'cumulating':
      return new SlicedWindowIndex(spec)
    case 'session':
      return new SessionWindowIndex(spec.id, spec.gap)
    default:
      throw new TypeError(`unknown window spec ${JSON.stringify(spec)}`)
  }
}

function replicaIdOf(given: string | undefined): string {
  if (given !== undefined) {
    if (typeof given !== 'string' || given.length === 0 || given.length > 128) {
      throw new RangeError('replicaId must be a non-empty string of at most 128 characters')
    }
    return given
  }
  const random = (globalThis.crypto as Crypto | undefined)?.randomUUID?.()
  return random ?? `r-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`
}

/**
 * What replicas must agree on to merge: window specs and allowed lateness, with a sliding or
 * cumulating spec that their cells are slices, and each aggregate's name and `configuration`
 * (what shapes its states). Retention, limits, triggers, accumulation and clock skew are local choices.
 */
export function configurationOf(options: ResolvedOptions): string {
  const windows = options.specs.map((s) => s.id).sort()
  const sliced = options.specs.some((s) => s.kind === 'sliding' || s.kind === 'cumulating')
  const base = { windows, allowedLateness: options.allowedLateness, ...(sliced ? { cells: 'slices' } : {}) }
  return JSON.stringify(options.aggregates === null ? base : { ...base, aggregates: options.aggregates.configuration })
}
