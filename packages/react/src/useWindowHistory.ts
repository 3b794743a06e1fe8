import { windowHistorySlice, type WindowResult } from '@tidemark/engine'
import { useEngineSlice } from './useEngineSlice.ts'
import type { WindowAt } from './useWindow.ts'

/**
 * Every value one window has shown, oldest first, from `engine.history()`:
 * the on-time pane and each late pane after it, each with its `pane`, so a
 * chart can draw what was shown at first next to what it became. The engine
 * keeps the last 64 panes of a window, and a window first seen after it fired
 * (merged from a peer) has no on-time pane: find it by `status`, not at `[0]`.
 * Renders at most once per frame, and only in frames that changed this window.
 * A window of a cumulating spec is named by `{ start, end }`.
 *
 * @example
 * function CorrectedBar({ start }: { start: number }) {
 *   const history = useWindowHistory('tumbling:60000', 'temp', start)
 *   const onTime = history.find((pane) => pane.status === 'on_time')
 *   const latest = history.at(-1)
 *   return <Bar value={latest?.sum} ghost={onTime !== latest ? onTime?.sum : undefined} />
 * }
 */
export function useWindowHistory(window: string, key: string, at: WindowAt): readonly WindowResult[]
export function useWindowHistory<S>(
  window: string,
  key: string,
  at: WindowAt,
  selector: (history: readonly WindowResult[]) => S,
  isEqual?: (a: S, b: S) => boolean,
): S
export function useWindowHistory(
  window: string,
  key: string,
  at: WindowAt,
  selector?: (history: readonly WindowResult[]) => unknown,
  isEqual?: (a: unknown, b: unknown) => boolean,
): unknown {
  const start = typeof at === 'number' ? at : at.start
  const end = typeof at === 'number' ? undefined : at.end
  return useEngineSlice(
    'useWindowHistory',
    () => windowHistorySlice(window, key, start, end),
    [window, key, start, end],
    selector,
    isEqual,
  )
}
