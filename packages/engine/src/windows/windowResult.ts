/** How the engine knows a window is complete (docs/semantics.md, Basis). */
export type Basis = 'proven' | 'derived' | 'fallback' | 'unknown'

/** Lifecycle of a window result. */
export type ResultStatus = 'provisional' | 'on_time' | 'corrected'

/**
 * The value of one window for one key.
 *
 * @example
 * // { window: 'tumbling:60000', key: 'temp', start: 0, end: 60000, count: 3, sum: 63, min: 20, max: 22,
 * //   mean: 21, status: 'on_time', revision: 0, final: false, basis: 'derived' }
 */
export interface WindowResult {
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
}

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
 * One change to one window. A `correction` carries `previous` so a consumer can
 * subtract the old value and add the new (accumulating-and-retracting).
 */
export interface WindowChange {
  /** What happened to the window. */
  readonly type: WindowChangeType
  /** The window's result after the change (for `retract`, the result withdrawn). */
  readonly result: WindowResult
  /** For a `correction`: the result it replaces (absent for a window whose first result is a correction). */
  readonly previous?: WindowResult
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
 * Order of `engine.results()`: by window spec id, key, start.
 *
 * @example
 * [...archived, ...live].sort(compareResults) // merged in the order results() uses
 */
export function compareResults(a: WindowResult, b: WindowResult): number {
  if (a.window !== b.window) return a.window < b.window ? -1 : 1
  if (a.key !== b.key) return a.key < b.key ? -1 : 1
  return a.start - b.start
}
