import type { PaneInfo, PaneTiming } from '@tidemark/engine'

/** Pane infos kept per timing for indexes below this: most windows have few panes. */
const SHARED = 1024
/** Late panes shared up to this many on-time and late panes per window. */
const SHARED_LATE = 64
const early: PaneInfo[] = []
const onTime: PaneInfo[] = []
/** By `index × SHARED_LATE + onTimeIndex`. */
const late: PaneInfo[] = []

/**
 * The pane info `{ timing, index, onTimeIndex }` as a decoded row gives it, frozen, and shared
 * where small (as the engine shares its own): a mirror of 10,000 windows holds a few hundred
 * pane infos, not 10,000.
 */
export function paneOf(timing: PaneTiming, index: number, onTimeIndex: number): PaneInfo {
  let shared: PaneInfo[] | null = null
  let at = index
  // Only indexes a host sends (whole, not negative) are cache slots.
  if (!Number.isInteger(index) || index < 0) shared = null
  else if (timing === 'early') shared = index < SHARED && onTimeIndex === -1 ? early : null
  else if (timing === 'on_time') shared = index < SHARED && onTimeIndex === 0 ? onTime : null
  else if (index < SHARED && onTimeIndex >= 0 && onTimeIndex < SHARED_LATE) {
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
