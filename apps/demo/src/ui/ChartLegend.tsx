import type { ReactNode } from 'react'
import { BADGE_HINTS, LEGEND_KINDS } from './BasisBadge.tsx'

/** How to read the charts: basis colours, on-time versus corrected marks, and the lateness zones. */
export function ChartLegend(): ReactNode {
  return (
    <div className="legend">
      {LEGEND_KINDS.map((kind) => (
        <span key={kind} className="legend-item" title={BADGE_HINTS[kind]}>
          <svg width="12" height="12" aria-hidden="true">
            <circle className={`column-${kind} legend-dot`} cx="6" cy="6" r="4.5" />
          </svg>
          {kind}
        </span>
      ))}
      <span className="legend-sep" />
      <span className="legend-item" title="The value the window showed when it fired">
        <svg width="30" height="12" aria-hidden="true">
          <circle className="on-time-ring" cx="6" cy="6" r="4" />
          <line className="correction-link" x1="10" x2="20" y1="6" y2="6" />
          <circle className="column-proven legend-dot" cx="24" cy="6" r="4" />
        </svg>
        on-time → corrected
      </span>
      <span className="legend-item late-mark" title="A device's state landed after the window was final: merged anyway, counted as a finality violation">
        <svg width="12" height="12" aria-hidden="true">
          <path d="M3,3L9,9M9,3L3,9" />
        </svg>
        changed after final
      </span>
      <span className="legend-item" title="Windows between the finality horizon (W − lateness) and the watermark accept late readings">
        <span className="legend-zone zone-correctable-swatch" />
        accepting corrections
      </span>
      <span className="legend-item" title="Windows that have not fired yet">
        <span className="legend-zone zone-open-swatch" />
        open
      </span>
    </div>
  )
}
