import type { ReactNode } from 'react'
import { BasisBadge, badgeKindOf } from './BasisBadge.tsx'
import { type ChartMeasure, type FleetResult, measureText } from './chartMeasure.ts'
import { useWindow, useWindowHistory } from './fleetHooks.ts'
import { clockTime } from './timeFormat.ts'

export interface WindowDetailProps {
  readonly windowId: string
  readonly measure: ChartMeasure
  readonly start: number
  /** True while the pointer is on the window, false when showing the latest correction. */
  readonly pinned: boolean
}

/** One window's current value under the chart's measure and every value it showed before, oldest first. */
export function WindowDetail({ windowId, measure, start, pinned }: WindowDetailProps): ReactNode {
  const result = useWindow(windowId, measure.key, start)
  // A window that turns final is recorded again with the same revision; show each revision once.
  const history = useWindowHistory(windowId, measure.key, start, (entries) =>
    entries.filter((r, i) => i === 0 || entries[i - 1]?.revision !== r.revision),
  )
  const label = pinned ? 'Window' : result !== undefined && result.revision > 0 ? 'Latest correction' : 'Latest window'
  if (result === undefined) {
    return (
      <div className="window-detail">
        <span className="detail-label">Window</span> {clockTime(start)} · no readings
      </div>
    )
  }
  const value = (r: FleetResult): string => measureText(measure, r)
  // The first value and the last two keep the line short however often a window was corrected.
  const hidden = Math.max(0, history.length - 3)
  const shown = hidden === 0 ? history : [history[0] as FleetResult, ...history.slice(-2)]
  return (
    <div className="window-detail">
      <span className="detail-label">{label}</span>
      <span className="detail-time">
        {clockTime(result.start)}–{clockTime(result.end)}
      </span>
      <span className="detail-trail">
        {history.length === 0 ? (
          <span className="detail-step">
            {value(result)} <span className="muted">· {result.count} readings</span> <BasisBadge kind={badgeKindOf(result)} />
          </span>
        ) : (
          shown.map((r, i) => (
            <span key={r.revision} className="detail-step">
              {i > 0 && <span className="detail-arrow">{i === 1 && hidden > 0 ? `→ ${hidden} more →` : '→'}</span>}
              <span className="muted">{r.revision === 0 ? 'on time' : `r${r.revision}`}</span> {value(r)}{' '}
              <span className="muted">({r.count})</span> <BasisBadge kind={badgeKindOf(r)} />
            </span>
          ))
        )}
      </span>
      {result.final && <span className="final-tag">final</span>}
    </div>
  )
}
