import { windowStart } from '@tidemark/engine'
import { useEngineStats, useWatermark } from '@tidemark/react'
import { type ReactNode, useMemo, useState } from 'react'
import { windowIdOf, windowSpecOf } from '../fleet/fleetSettings.ts'
import { BasisBadge, badgeKindOf } from './BasisBadge.tsx'
import { ChartPlot } from './ChartPlot.tsx'
import type { ChartMeasure, FleetResult } from './chartMeasure.ts'
import { afterFinalMarks, type ChartWindow, onTimeValueOf, slotCount } from './chartWindows.ts'
import { useWindows } from './fleetHooks.ts'
import { useElementWidth } from './useElementWidth.ts'
import { useFleet } from './useFleet.ts'
import { WindowDetail } from './WindowDetail.tsx'

const HEIGHT = 184

/**
 * One measure of one series over the last window slots (up to `CHART_WINDOWS`): each window's
 * current value (a metric's mean, the p95 delivery latency, the devices reporting), and for
 * corrected windows the value it showed on time. Re-renders at most once per frame (the
 * hooks), and only the columns whose window changed.
 */
export function WindowChart({ measure }: { readonly measure: ChartMeasure }): ReactNode {
  const windowId = useFleet((s) => windowIdOf(s.settings))
  const windowMs = useFleet((s) => s.settings.windowMs)
  const lateness = useFleet((s) => s.settings.allowedLatenessMs)
  const dashboard = useFleet((s) => s.dashboard)
  // One slot of headroom on the right: devices whose clocks run fast open windows "in the future".
  const lastStart = useFleet((s) => windowStart(windowSpecOf(s.settings), s.now) + s.settings.windowMs)
  const results = useWindows({ window: windowId, key: measure.key })
  const slots = slotCount(results, lastStart, windowMs)
  const firstStart = lastStart - (slots - 1) * windowMs
  const watermark = useWatermark()
  const proofFrontier = useEngineStats((s) => s.proofFrontier)
  const lateCorrections = useFleet((s) => s.lateCorrections)
  const late = useMemo(() => afterFinalMarks(lateCorrections, measure.key), [lateCorrections, measure.key])
  const [hovered, setHovered] = useState<number | null>(null)
  const [ref, width] = useElementWidth<HTMLDivElement>(760)

  const windows = useMemo((): ChartWindow[] => {
    const end = firstStart + slots * windowMs
    return results.flatMap((result) => {
      const value = measure.valueOf(result)
      if (value === null || result.start < firstStart || result.start >= end) return []
      return [{ result, value, onTimeValue: result.revision > 0 && dashboard !== null ? onTimeValueOf(dashboard, result, measure) : null }]
    })
  }, [results, firstStart, slots, windowMs, dashboard, measure])
  let afterFinal = 0
  for (let i = 1; i < late.length; i += 2) afterFinal += late[i] as number

  let latest: ChartWindow | undefined
  let lastCorrected: FleetResult | undefined
  let corrected = 0
  for (const window of windows) {
    const { result } = window
    if (result.status !== 'provisional') latest = window
    if (result.revision > 0) {
      corrected++
      lastCorrected = result
    }
  }
  const detailStart = hovered ?? lastCorrected?.start ?? latest?.result.start ?? null

  return (
    <section className="panel chart-panel" data-measure={measure.id}>
      <header className="chart-header">
        <div>
          <h2>
            {measure.title} <span className="unit">{measure.caption}</span>
          </h2>
          <p className="chart-sub">
            {windowMs / 1000} s tumbling windows · {corrected} corrected in view · {afterFinal} changed after final
          </p>
        </div>
        {latest !== undefined && (
          <div className="chart-latest">
            <span className="chart-latest-value">
              {latest.value.toFixed(measure.digits)}
              <span className="unit">{measure.unit}</span>
            </span>
            <BasisBadge kind={badgeKindOf(latest.result)} />
          </div>
        )}
      </header>
      <div ref={ref} className="chart-body">
        <ChartPlot
          label={`${measure.title}, ${measure.caption}`}
          windows={windows}
          axisStep={measure.axisStep}
          firstStart={firstStart}
          windowMs={windowMs}
          slots={slots}
          afterFinalMarks={late}
          width={width}
          height={HEIGHT}
          watermark={watermark}
          firingFrontier={Math.max(watermark, proofFrontier)}
          allowedLatenessMs={lateness}
          hoveredStart={hovered}
          onHover={setHovered}
        />
      </div>
      {detailStart !== null && (
        <WindowDetail windowId={windowId} measure={measure} start={detailStart} pinned={hovered !== null} />
      )}
    </section>
  )
}
