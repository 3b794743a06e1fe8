/**
 * The shapes docs/semantics.md and docs/replication.md show, written out as a reader sees them
 * (no `readonly`, comments inline) and checked here to be the packages' own types.
 */
import type { Cell as EngineCell, StreamEvent as EngineStreamEvent, WindowResult as EngineWindowResult } from '@tidemark/engine'

/** True only when `A` and `B` are assignable both ways. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false

// #region stream-event
interface StreamEvent {
  id: string // unique per event; the dedup key when seq is absent
  source: string // producing device or replica
  seq?: number // per-source sequence number, 1-based, gap-free when complete
  ts: number // event time, ms since the epoch
  key?: string // series key; default ''
  value: number // the measurement
}
// #endregion stream-event

// #region window-result
interface WindowResult {
  window: string // spec id
  key: string
  start: number
  end: number
  count: number
  sum: number
  min: number
  max: number
  mean: number
  status: 'provisional' | 'on_time' | 'corrected'
  revision: number // 0 for the on-time result, +1 per correction
  final: boolean
  basis: 'proven' | 'derived' | 'fallback' | 'unknown'
  pane: {
    timing: 'early' | 'on_time' | 'late' // provisional, on_time and corrected results
    index: number // the window's panes counted from 0
    onTimeIndex: number // the on-time and late panes counted from 0; -1 for an early pane
  }
}
// #endregion window-result

// #region cell
interface Cell {
  count: number
  sum: number
  min: number
  max: number
  maxTs: number
  version: number
}
// #endregion cell

export const shapesMatch: [Same<StreamEvent, EngineStreamEvent>, Same<WindowResult, EngineWindowResult>, Same<Cell, EngineCell>] = [
  true,
  true,
  true,
]
