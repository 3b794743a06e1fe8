import type { PaneInfo, PaneTiming } from './windowResult.ts'

/** Pane infos shared by every result with the same one: most panes are early or on-time with a small index. */
const SHARED = 1024
const early: PaneInfo[] = []
const onTime: PaneInfo[] = []

/** The pane info `{ timing, index, onTimeIndex }`, frozen; shared for early and on-time panes of a small index, so a pane costs no allocation. */
export function paneInfo(timing: PaneTiming, index: number, onTimeIndex: number): PaneInfo {
  if (timing === 'early' && index < SHARED) return (early[index] ??= Object.freeze({ timing, index, onTimeIndex: -1 }))
  if (timing === 'on_time' && index < SHARED && onTimeIndex === 0) return (onTime[index] ??= Object.freeze({ timing, index, onTimeIndex: 0 }))
  return Object.freeze({ timing, index, onTimeIndex })
}
