import type { WindowResult } from '@tidemark/engine'
import { memo, type ReactNode } from 'react'
import { badgeKindOf } from './BasisBadge.tsx'

export interface WindowColumnProps {
  readonly result: WindowResult
  /** Centre of the window's column. */
  readonly cx: number
  readonly width: number
  /** y of the current value. */
  readonly y: number
  /** y of the value shown on time, when a correction replaced it. */
  readonly onTimeY: number | null
  /** Top of the basis strip under the plot. */
  readonly stripY: number
}

/**
 * The marks of one window: the current value as a dot coloured by basis and,
 * once late data corrected it, a ring where the on-time value was, joined to
 * the dot. Memoized: a column renders only when its own window changed or the
 * axes moved.
 */
export const WindowColumn = memo(function WindowColumn({
  result,
  cx,
  width,
  y,
  onTimeY,
  stripY,
}: WindowColumnProps): ReactNode {
  const kind = badgeKindOf(result)
  const corrected = result.revision > 0
  const r = Math.max(2.5, Math.min(4.5, width / 3.5))
  return (
    <g className={`column column-${kind}`}>
      {corrected && onTimeY !== null && (
        <>
          <line className="correction-link" x1={cx} x2={cx} y1={onTimeY} y2={y} />
          <circle className="on-time-ring" cx={cx} cy={onTimeY} r={r} />
        </>
      )}
      <circle className={`value-dot ${corrected ? 'value-dot-corrected' : ''}`} cx={cx} cy={y} r={r} />
      <rect
        className={`basis-strip ${result.final ? 'basis-strip-final' : ''}`}
        x={cx - width / 2 + 1}
        y={stripY}
        width={Math.max(1, width - 2)}
        height={7}
        rx={1.5}
      />
      {corrected && width >= 12 && (
        <text className="revision-mark" x={cx} y={stripY + 17} textAnchor="middle">
          r{result.revision}
        </text>
      )}
    </g>
  )
})
