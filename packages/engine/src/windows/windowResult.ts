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
  readonly window: string
  readonly key: string
  readonly start: number
  readonly end: number
  readonly count: number
  readonly sum: number
  readonly min: number
  readonly max: number
  readonly mean: number
  readonly status: ResultStatus
  /** 0 for the first on-time emission, +1 per correction. */
  readonly revision: number
  readonly final: boolean
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
  readonly type: WindowChangeType
  readonly result: WindowResult
  readonly previous?: WindowResult
}

/** Filter for `engine.results(query)`: `from`/`to` bound window starts, `[from, to)`. */
export interface ResultQuery {
  readonly window?: string
  readonly key?: string
  readonly from?: number
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
