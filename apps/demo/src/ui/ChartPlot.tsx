import type { KeyboardEvent, PointerEvent, ReactNode } from 'react'
import { valueAxis } from './chartScale.ts'
import { axisValues, type ChartWindow } from './chartWindows.ts'
import { clockTime } from './timeFormat.ts'
import { WindowColumn } from './WindowColumn.tsx'

export interface ChartPlotProps {
  /** What the chart shows, for screen readers: its title and caption. */
  readonly label: string
  readonly windows: readonly ChartWindow[]
  /** The finest step of the value axis (1 for a count). */
  readonly axisStep: number
  /** Start of the leftmost slot. */
  readonly firstStart: number
  readonly windowMs: number
  readonly slots: number
  readonly width: number
  readonly height: number
  readonly watermark: number
  /** max(W, P): windows ending at or before it have fired. */
  readonly firingFrontier: number
  readonly allowedLatenessMs: number
  /** Corrections that changed a window after it was final, `[start, count, …]`. */
  readonly afterFinalMarks: readonly number[]
  readonly hoveredStart: number | null
  readonly onHover: (start: number | null) => void
}

const LEFT = 46
const RIGHT = 10
const TOP = 14
const BOTTOM = 46
/** Time-axis label spacings, ms; the first that gives at most about 7 labels is used. */
const LABEL_STEPS = [5_000, 10_000, 15_000, 20_000, 30_000, 60_000, 120_000, 300_000]

/** The SVG of one windowed chart: value axis, time axis, lateness zones, the series line and one column per window (at its measure's value). */
export function ChartPlot(props: ChartPlotProps): ReactNode {
  const { windows, firstStart, windowMs, slots, width, height } = props
  // Never left of the plot's left edge: a chart body measures 0 px while its panel is laid out or hidden.
  const plotRight = Math.max(LEFT, width - RIGHT)
  const plotBottom = height - BOTTOM
  const colW = (plotRight - LEFT) / slots
  const xOf = (t: number): number => LEFT + ((t - firstStart) / windowMs) * colW
  const clampX = (x: number): number => Math.max(LEFT, Math.min(plotRight, x))

  const axis = valueAxis(axisValues(windows), 4, props.axisStep)
  const yOf = (v: number): number =>
    Math.max(TOP, Math.min(plotBottom, plotBottom - ((v - axis.min) / (axis.max - axis.min)) * (plotBottom - TOP)))
  const late: { start: number; count: number }[] = []
  for (let i = 0; i + 1 < props.afterFinalMarks.length; i += 2) {
    const start = props.afterFinalMarks[i] as number
    if (start >= firstStart) late.push({ start, count: props.afterFinalMarks[i + 1] as number })
  }

  let line = ''
  let previousStart = Number.NaN
  for (const { result, value } of windows) {
    const command = result.start === previousStart + windowMs ? 'L' : 'M'
    line += `${command}${(xOf(result.start) + colW / 2).toFixed(1)},${yOf(value).toFixed(1)}`
    previousStart = result.start
  }

  const finalX = clampX(xOf(props.watermark - props.allowedLatenessMs))
  const watermarkX = clampX(xOf(props.watermark))
  const openX = clampX(xOf(props.firingFrontier))
  const labelStep = LABEL_STEPS.find((step) => step >= (slots * windowMs) / 7) ?? 600_000
  const labelEvery = Math.max(1, Math.round(labelStep / windowMs))
  const timeLabels: number[] = []
  for (let i = 0; i < slots; i++) {
    const t = firstStart + i * windowMs
    if (Math.round(t / windowMs) % labelEvery === 0) timeLabels.push(t)
  }

  const onPointerMove = (event: PointerEvent<SVGRectElement>): void => {
    const box = event.currentTarget.getBoundingClientRect()
    const slot = Math.floor((event.clientX - box.left) / colW)
    props.onHover(slot >= 0 && slot < slots ? firstStart + slot * windowMs : null)
  }

  // The keyboard's hover: focus picks the latest window with a value, the arrows, Home and End step through the slots.
  const lastSlot = firstStart + (slots - 1) * windowMs
  const latestStart = windows.at(-1)?.result.start ?? lastSlot
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>): void => {
    const current = props.hoveredStart
    let next: number | null
    if (event.key === 'Escape') next = null
    else if (event.key === 'Home') next = windows[0]?.result.start ?? firstStart
    else if (event.key === 'End') next = latestStart
    else if (event.key === 'ArrowLeft' || event.key === 'ArrowRight') {
      next = current === null ? latestStart : Math.max(firstStart, Math.min(lastSlot, current + (event.key === 'ArrowLeft' ? -windowMs : windowMs)))
    } else return
    event.preventDefault()
    props.onHover(next)
  }

  return (
    // A slider over the windows: the keyboard's hover, the values shown below the chart.
    <div
      className="chart-plot"
      role="slider"
      aria-label={`${props.label}: one column per window; arrow keys, Home and End show a window's values below the chart`}
      aria-valuemin={0}
      aria-valuemax={slots - 1}
      aria-valuenow={Math.round(((props.hoveredStart ?? latestStart) - firstStart) / windowMs)}
      aria-valuetext={`window ${clockTime(props.hoveredStart ?? latestStart)}`}
      tabIndex={0}
      onKeyDown={onKeyDown}
      onFocus={() => {
        if (props.hoveredStart === null) props.onHover(latestStart)
      }}
      onBlur={() => props.onHover(null)}
    >
    <svg className="chart-svg" width={width} height={height} aria-hidden="true">
      <rect className="zone-correctable" x={finalX} y={TOP} width={Math.max(0, watermarkX - finalX)} height={plotBottom - TOP} />
      <rect className="zone-open" x={openX} y={TOP} width={Math.max(0, plotRight - openX)} height={plotBottom - TOP} />
      {axis.ticks.map((tick) => (
        <g key={tick}>
          <line className="grid-line" x1={LEFT} x2={plotRight} y1={yOf(tick)} y2={yOf(tick)} />
          <text className="axis-label" x={LEFT - 6} y={yOf(tick) + 3.5} textAnchor="end">
            {tick.toFixed(axis.decimals)}
          </text>
        </g>
      ))}
      {timeLabels.map((t) => (
        <text key={t} className="axis-label" x={xOf(t)} y={height - 6} textAnchor="middle">
          {clockTime(t)}
        </text>
      ))}
      {props.hoveredStart !== null && (
        <rect className="hover-column" x={xOf(props.hoveredStart)} y={TOP} width={colW} height={plotBottom - TOP + 26} />
      )}
      {props.watermark > firstStart && (
        <>
          <line className="frontier-line final-line" x1={finalX} x2={finalX} y1={TOP} y2={plotBottom} />
          <text className="frontier-label" x={finalX + 3} y={TOP + 9}>
            final
          </text>
          <line className="frontier-line watermark-line" x1={watermarkX} x2={watermarkX} y1={TOP} y2={plotBottom} />
          <text className="frontier-label watermark-label" x={watermarkX + 3} y={TOP + 9}>
            W
          </text>
        </>
      )}
      <path className="series-line" d={line} />
      {late.map(({ start, count }) => (
        <g key={start} className="late-mark">
          <title>{`changed ${count}× after it was final (finality violation: merged anyway)`}</title>
          <path d={lateGlyph(xOf(start) + colW / 2, plotBottom - 5)} />
          {colW >= 16 && (
            <text x={xOf(start) + colW / 2} y={plotBottom - 12} textAnchor="middle">
              {count}
            </text>
          )}
        </g>
      ))}
      {windows.map(({ result, value, onTimeValue }) => (
        <WindowColumn
          key={result.start}
          result={result}
          cx={xOf(result.start) + colW / 2}
          width={colW}
          y={yOf(value)}
          onTimeY={onTimeValue === null ? null : yOf(onTimeValue)}
          stripY={plotBottom + 6}
        />
      ))}
      <rect
        className="hover-target"
        x={LEFT}
        y={TOP}
        width={plotRight - LEFT}
        height={plotBottom - TOP + 26}
        onPointerMove={onPointerMove}
        onPointerLeave={() => props.onHover(null)}
      />
    </svg>
    </div>
  )
}

/** A small cross marking a window changed after it was final. */
function lateGlyph(x: number, y: number): string {
  const r = 3
  return `M${x - r},${y - r}L${x + r},${y + r}M${x + r},${y - r}L${x - r},${y + r}`
}
