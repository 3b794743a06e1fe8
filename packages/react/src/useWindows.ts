import { type ResultQuery, type WindowResult, windowsSlice } from '@tidemark/engine'
import { useEngineSlice } from './useEngineSlice.ts'

/**
 * The window results matching `query` (all of them without one), as
 * `engine.results(query)` returns them. Renders at most once per frame, and
 * only when a result inside the query changed. With `selector`, renders only
 * when the selection changes (compared with `isEqual`, default shallow).
 *
 * @example
 * function Temperatures() {
 *   const rows = useWindows({ window: 'tumbling:60000', key: 'temp' })
 *   return <ul>{rows.map((r) => <li key={r.start}>{r.mean}</li>)}</ul>
 * }
 * // Only the number of corrected windows; no render while it stays the same.
 * const corrected = useWindows(undefined, (rows) => rows.filter((r) => r.revision > 0).length)
 */
export function useWindows(query?: ResultQuery): readonly WindowResult[]
export function useWindows<S>(
  query: ResultQuery | undefined,
  selector: (results: readonly WindowResult[]) => S,
  isEqual?: (a: S, b: S) => boolean,
): S
export function useWindows(
  query?: ResultQuery,
  selector?: (results: readonly WindowResult[]) => unknown,
  isEqual?: (a: unknown, b: unknown) => boolean,
): unknown {
  return useEngineSlice(
    'useWindows',
    () => windowsSlice(query),
    [query?.window, query?.key, query?.from, query?.to],
    selector,
    isEqual,
  )
}
