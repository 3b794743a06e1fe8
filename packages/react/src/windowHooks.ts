import type { AggregateDefinitions, ResultQuery, WindowResult } from '@tidemark/engine'
import type { WindowAt } from './useWindow.ts'
import { useWindow } from './useWindow.ts'
import { useWindowHistory } from './useWindowHistory.ts'
import { useWindows } from './useWindows.ts'

/**
 * `useWindows`, `useWindow` and `useWindowHistory` with results typed for an engine's
 * aggregates `A` (the type of its `aggregates` option), so `result.aggregates` has their types.
 *
 * @example
 * const { useWindows } = windowHooks<typeof aggregates>()
 * const p99 = useWindows({ window: 'tumbling:60000' }, (rows) => rows.map((r) => r.aggregates.latency[2]))
 */
export interface WindowHooks<A extends AggregateDefinitions> {
  /** `useWindows`, typed: the results matching `query`. */
  useWindows(query?: ResultQuery): readonly WindowResult<A>[]
  /** `useWindows`, typed: a selection of the results matching `query`. */
  useWindows<S>(query: ResultQuery | undefined, selector: (results: readonly WindowResult<A>[]) => S, isEqual?: (a: S, b: S) => boolean): S
  /** `useWindow`, typed: one window's current result. */
  useWindow(window: string, key: string, at: WindowAt): WindowResult<A> | undefined
  /** `useWindow`, typed: a selection of one window's current result. */
  useWindow<S>(window: string, key: string, at: WindowAt, selector: (result: WindowResult<A> | undefined) => S, isEqual?: (a: S, b: S) => boolean): S
  /** `useWindowHistory`, typed: one window's on-time and late panes. */
  useWindowHistory(window: string, key: string, at: WindowAt): readonly WindowResult<A>[]
  /** `useWindowHistory`, typed: a selection of one window's on-time and late panes. */
  useWindowHistory<S>(window: string, key: string, at: WindowAt, selector: (history: readonly WindowResult<A>[]) => S, isEqual?: (a: S, b: S) => boolean): S
}

/**
 * The window hooks typed for the aggregates `A` an engine was made with (the type of its
 * `aggregates` option): the same hooks, nothing added at run time. Call it once, beside the
 * aggregates, and use the hooks it returns under the engine's `EngineProvider`.
 *
 * @example
 * const aggregates = { latency: quantiles({ at: [0.5, 0.95, 0.99] }) }
 * const { useWindows } = windowHooks<typeof aggregates>()
 * function P99() {
 *   const rows = useWindows({ window: 'tumbling:60000', key: 'api' })
 *   return <ol>{rows.map((r) => <li key={r.start}>{r.aggregates.latency[2]}</li>)}</ol>
 * }
 */
export function windowHooks<A extends AggregateDefinitions>(): WindowHooks<A> {
  return { useWindows, useWindow, useWindowHistory } as WindowHooks<A>
}
