import { type LateEvent, lateEventsSlice } from '@tidemark/engine'
import { useEngineSlice } from './useEngineSlice.ts'

/**
 * The late lane: events a window refused as beyond lateness, with the window
 * and reason, as `engine.lateEvents()` lists them (bounded by the engine).
 * Re-read once per frame; renders only when the lane changed.
 *
 * @example
 * function LateLane() {
 *   const late = useLateEvents()
 *   return <ol>{late.map((l) => <li key={l.event.id}>{l.event.source} {l.reason}</li>)}</ol>
 * }
 * const lateCount = useLateEvents((late) => late.length)
 */
export function useLateEvents(): readonly LateEvent[]
export function useLateEvents<S>(
  selector: (lateEvents: readonly LateEvent[]) => S,
  isEqual?: (a: S, b: S) => boolean,
): S
export function useLateEvents(
  selector?: (lateEvents: readonly LateEvent[]) => unknown,
  isEqual?: (a: unknown, b: unknown) => boolean,
): unknown {
  return useEngineSlice('useLateEvents', () => lateEventsSlice, [], selector, isEqual)
}
