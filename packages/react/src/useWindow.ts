import { type WindowResult, windowSlice } from '@tidemark/engine'
import { useEngineSlice } from './useEngineSlice.ts'

/**
 * Where a window is among its spec's and key's windows: its start, or, for the windows of a
 * cumulating spec (which share their start), its start and end.
 *
 * @example
 * const dayToTwo: WindowAt = { start: day, end: day + 7_200_000 } // [day, day + 2 h) of cumulating(86_400_000, 3_600_000)
 */
export type WindowAt = number | { readonly start: number; readonly end: number }

/**
 * The current result of one window, `undefined` until it has one (and after
 * it leaves live state). Renders at most once per frame, and only in frames
 * that changed this window: a correction shows as a new `revision` with
 * `status: 'corrected'`, and every result carries its `pane`. With `selector`,
 * renders only when the selection changes. A window of a cumulating spec is
 * named by `{ start, end }` (a start alone names the one covering the whole period).
 *
 * @example
 * function Minute({ start }: { start: number }) {
 *   const result = useWindow('tumbling:60000', 'temp', start)
 *   if (result === undefined) return <span>…</span>
 *   return <span title={`${result.status}, pane ${result.pane.index}`}>{result.mean.toFixed(1)}</span>
 * }
 * const mean = useWindow('tumbling:60000', 'temp', start, (r) => r?.mean)
 * const soFar = useWindow('cumulating:86400000:3600000', 'temp', { start: day, end: day + 7_200_000 })
 */
export function useWindow(window: string, key: string, at: WindowAt): WindowResult | undefined
export function useWindow<S>(
  window: string,
  key: string,
  at: WindowAt,
  selector: (result: WindowResult | undefined) => S,
  isEqual?: (a: S, b: S) => boolean,
): S
export function useWindow(
  window: string,
  key: string,
  at: WindowAt,
  selector?: (result: WindowResult | undefined) => unknown,
  isEqual?: (a: unknown, b: unknown) => boolean,
): unknown {
  const start = typeof at === 'number' ? at : at.start
  const end = typeof at === 'number' ? undefined : at.end
  return useEngineSlice('useWindow', () => windowSlice(window, key, start, end), [window, key, start, end], selector, isEqual)
}
