import type { PaneInfo, PaneTiming } from './windowResult.ts'

/** Pane infos shared by every result with the same one: most panes are early or on-time with a small index. */
const SHARED = 1024
const early: PaneInfo[] = []
const onTime: PaneInfo[] = []

/** The pane info `{ timing, index, onTimeIndex }`, frozen; shared for early and on-time panes of a small index, so a pane costs no allocation. */
export function paneInfo(timing: PaneTiming, index: number, onTimeIndex: number): PaneInfo {
  const shared = index >= SHARED ? null : timing === 'early' ? early : timing === 'on_time' && onTimeIndex === 0 ? onTime : null
  if (shared === null) return Object.freeze({ timing, index, onTimeIndex })
  let pane = shared[index]
  if (pane === undefined) {
    pane = Object.freeze({ timing, index, onTimeIndex })
    shared[index] = pane
  }
  return pane
}
