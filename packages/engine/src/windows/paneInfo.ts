import type { PaneInfo, PaneTiming } from './windowResult.ts'

/** Pane infos shared by every result with the same one: most panes have a small index. */
const SHARED = 1024
/** Late panes shared up to this many on-time and late panes per window. */
const SHARED_LATE = 64
const early: PaneInfo[] = []
const onTime: PaneInfo[] = []
/** By `index × SHARED_LATE + onTimeIndex`. */
const late: PaneInfo[] = []

/**
 * The pane info `{ timing, index, onTimeIndex }`, frozen, and shared where small, so most panes
 * cost no allocation. Adapters that decode pane infos (a worker's mirror) use it too: values no
 * engine gives (a fractional or negative index) get a pane info of their own, never a shared slot.
 *
 * @example
 * paneInfo('late', 3, 1) === paneInfo('late', 3, 1) // true: one shared, frozen object
 */
export function paneInfo(timing: PaneTiming, index: number, onTimeIndex: number): PaneInfo {
  let shared: PaneInfo[] | null = null
  let at = index
  if (!Number.isInteger(index) || index < 0) shared = null
  else if (timing === 'early') shared = index < SHARED && onTimeIndex === -1 ? early : null
  else if (timing === 'on_time') shared = index < SHARED && onTimeIndex === 0 ? onTime : null
  else if (index < SHARED && Number.isInteger(onTimeIndex) && onTimeIndex >= 0 && onTimeIndex < SHARED_LATE) {
    shared = late
    at = index * SHARED_LATE + onTimeIndex
  }
  if (shared === null) return Object.freeze({ timing, index, onTimeIndex })
  let pane = shared[at]
  if (pane === undefined) {
    pane = Object.freeze({ timing, index, onTimeIndex })
    shared[at] = pane
  }
  return pane
}
