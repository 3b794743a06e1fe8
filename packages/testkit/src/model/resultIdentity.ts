/**
 * How the tests order, name and compare window results and changes.
 */
import type { WindowChange, WindowResult } from '@tidemark/engine'

/**
 * The engine's order of results: window spec, key, start, end.
 *
 * @example
 * expect([...model.results()].sort(compareResults)).toEqual(engine.results())
 */
export function compareResults(a: WindowResult, b: WindowResult): number {
  if (a.window !== b.window) return a.window < b.window ? -1 : 1
  if (a.key !== b.key) return a.key < b.key ? -1 : 1
  return a.start - b.start || a.end - b.end
}

/** Identity of a window result (a session's end moves; the windows of a cumulating spec share their start). */
export function resultId(result: Pick<WindowResult, 'window' | 'key' | 'start' | 'end'>): string {
  return result.window.startsWith('session:')
    ? JSON.stringify([result.window, result.key, result.start])
    : JSON.stringify([result.window, result.key, result.start, result.end])
}

/** A canonical text of one change, for comparing the changes of one operation as a multiset. */
export function changeText(change: WindowChange): string {
  const { type, result, pane, previous } = change
  return JSON.stringify([type, result, pane, previous ?? null])
}
