import type { AggregateDefinitions, AggregateResults, AnyAggregate } from '../aggregates/aggregate.ts'
import type { Basis } from '../time/basis.ts'

export type { Basis } from '../time/basis.ts'

/** Lifecycle of a window result. */
export type ResultStatus = 'provisional' | 'on_time' | 'corrected'

/**
 * What the panes of a window carry: `accumulating`, the whole window each time; `discarding`,
 * only what arrived since the window's last pane (docs/semantics.md, Triggers and accumulation).
 *
 * @example
 * createEngine({ windows: tumbling(60_000), accumulation: 'discarding' })
 */
export type Accumulation = 'accumulating' | 'discarding'

/**
 * Where a pane stands against the window's on-time firing: `early` before it (a `provisional`
 * result), `on_time` the firing itself, `late` after it (a `corrected` result).
 *
 * @example
 * const timing: PaneTiming = 'early'
 */
export type PaneTiming = 'early' | 'on_time' | 'late'

/**
 * Which pane of its window a result is (Beam's PaneInfo).
 *
 * @example
 * // the third pane of a window, its first late one, after one early pane and the on-time one:
 * // { timing: 'late', index: 2, onTimeIndex: 1 }
 */
export interface PaneInfo {
  readonly timing: PaneTiming
  /** Counts the window's panes from 0, early ones included. */
  readonly index: number
  /** Counts the on-time and late panes from 0 (the on-time pane is 0); -1 for an early pane. */
  readonly onTimeIndex: number
}

/**
 * An engine without aggregates: the default of the type parameter of `Engine`, `WindowResult`
 * and `WindowChange`, under which results have no `aggregates` field.
 *
 * @example
 * const engine: Engine<NoAggregates> = createEngine({ windows: tumbling(60_000) })
 */
export type NoAggregates = Readonly<Record<never, AnyAggregate>>

/**
 * The fields every window result has, with or without aggregates.
 *
 * @example
 * const fields: WindowResultFields = engine.results()[0] as WindowResultFields
 */
export interface WindowResultFields {
  /** Id of the window spec, e.g. `'tumbling:60000'`. */
  readonly window: string
  /** The series key. */
  readonly key: string
  /** Window start, inclusive (event-time ms). */
  readonly start: number
  /** Window end, exclusive. */
  readonly end: number
  /** Events in the window, from every source. */
  readonly count: number
  readonly sum: number
  readonly min: number
  readonly max: number
  /** `sum / count`. */
  readonly mean: number
  /** `provisional` before the window fired, `on_time` when it fired, `corrected` after a correction. */
  readonly status: ResultStatus
  /** 0 for the first on-time emission, +1 per correction. */
  readonly revision: number
  /** True once the watermark passed `end + allowedLateness`: local events can no longer change it. */
  readonly final: boolean
  /** How the engine knew the window was complete when this result was emitted. */
  readonly basis: Basis
  /** Which pane of the window this result is; a `final` or `retract` change repeats the pane of the result it carries. */
  readonly pane: PaneInfo
}

/**
 * The `aggregates` field of the results of an engine with aggregates `A`: each name mapped to its
 * aggregate's result; nothing for `NoAggregates`.
 *
 * @example
 * type Shown = WindowAggregates<{ latency: ReturnType<typeof quantiles> }> // { readonly aggregates: { readonly latency: number[] } }
 */
export type WindowAggregates<A extends AggregateDefinitions> = [keyof A] extends [never] ? unknown : { readonly aggregates: AggregateResults<A> }

/**
 * The value of one window for one key; with aggregates, `aggregates` holds what each computed
 * over the window's events (over the pane's events for a discarding pane).
 *
 * @example
 * // { window: 'tumbling:60000', key: 'temp', start: 0, end: 60000, count: 3, sum: 63, min: 20, max: 22,
 * //   mean: 21, status: 'on_time', revision: 0, final: false, basis: 'derived',
 * //   pane: { timing: 'on_time', index: 2, onTimeIndex: 0 } }
 * // with aggregates: { ..., aggregates: { latency: [12.1, 48.3, 97.6], devices: 3 } }
 */
export type WindowResult<A extends AggregateDefinitions = NoAggregates> = WindowResultFields & WindowAggregates<A>

/**
 * What happened to a window: `provisional` (changed before it fired), `on_time` (it fired),
 * `correction` (changed after it fired), `final` (it turned final), `retract` (a session that no
 * longer exists under this identity).
 *
 * @example
 * engine.subscribe((changes) => {
 *   for (const change of changes) if (change.type === 'correction') redraw(change.result, change.previous)
 * })
 */
export type WindowChangeType = 'provisional' | 'on_time' | 'correction' | 'final' | 'retract'

/**
 * One change to one window. `provisional`, `on_time` and `correction` changes are panes
 * (early, on-time and late); `final` and `retract` repeat the result they carry, pane included.
 * In accumulating mode a `correction` carries `previous`, the result it replaces, so a consumer
 * can subtract the old value and add the new (accumulating-and-retracting). In discarding mode
 * a pane carries only what arrived since the window's last pane and has no `previous`, except
 * a pane that had to carry the whole window (docs/semantics.md, Triggers and accumulation).
 */
export interface WindowChange<A extends AggregateDefinitions = NoAggregates> {
  /** What happened to the window. */
  readonly type: WindowChangeType
  /** The window's result after the change (for `retract`, the result withdrawn). */
  readonly result: WindowResult<A>
  /** `result.pane`: which pane of the window this is. */
  readonly pane: PaneInfo
  /**
   * The result this change replaces: accumulating mode, a `correction` (absent for a window whose
   * first result is a correction); discarding mode, a pane that carries the whole window again.
   */
  readonly previous?: WindowResult<A>
}

/** Filter for `engine.results(query)`: `from`/`to` bound window starts, `[from, to)`. */
export interface ResultQuery {
  /** Only this window spec id. */
  readonly window?: string
  /** Only this key. */
  readonly key?: string
  /** Only windows starting at or after this time. */
  readonly from?: number
  /** Only windows starting before this time. */
  readonly to?: number
}

/**
 * Order of `engine.results()`: by window spec id, key, start, then end (the windows of a
 * cumulating spec share their start).
 *
 * @example
 * [...archived, ...live].sort(compareResults) // merged in the order results() uses
 */
export function compareResults(a: Pick<WindowResultFields, 'window' | 'key' | 'start' | 'end'>, b: Pick<WindowResultFields, 'window' | 'key' | 'start' | 'end'>): number {
  if (a.window !== b.window) return a.window < b.window ? -1 : 1
  if (a.key !== b.key) return a.key < b.key ? -1 : 1
  return a.start - b.start || a.end - b.end
}
