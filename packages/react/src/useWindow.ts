import { type WindowResult, windowSlice } from '@tidemark/engine'
import { useEngineSlice } from './useEngineSlice.ts'

/**
 * The current result of one window, `undefined` until it has one (and after
 * it leaves live state). Renders at most once per frame, and only in frames
 * that changed this window: a correction shows as a new `revision` with
 * `status: 'corrected'`. With `selector`, renders only when the selection
 * changes.
 *
 * @example
 * function Minute({ start }: { start: number }) {
 *   const result = useWindow('tumbling:60000', 'temp', start)
 *   if (result === undefined) return <span>…</span>
 *   return <span title={result.status}>{result.mean.toFixed(1)}</span>
 * }
 * const mean = useWindow('tumbling:60000', 'temp', start, (r) => r?.mean)
 */
export function useWindow(window: string, key: string, start: number): WindowResult | undefined
export function useWindow<S>(
  window: string,
  key: string,
  start: number,
  selector: (result: WindowResult | undefined) => S,
  isEqual?: (a: S, b: S) => boolean,
): S
export function useWindow(
  window: string,
  key: string,
  start: number,
  selector?: (result: WindowResult | undefined) => unknown,
  isEqual?: (a: unknown, b: unknown) => boolean,
): unknown {
  return useEngineSlice('useWindow', () => windowSlice(window, key, start), [window, key, start], selector, isEqual)
}
