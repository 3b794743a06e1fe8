import { type WindowResult, windowStart } from '@tidemark/engine'
import { useEngineStats, useWatermark, useWindows } from '@tidemark/react'
import { type ReactNode, useMemo, useState } from 'react'
import { windowIdOf, windowSpecOf } from '../fleet/fleetSettings.ts'
import type { Metric } from '../fleet/metrics.ts'
import { BasisBadge, badgeKindOf } from './BasisBadge.tsx'
import { ChartPlot } from './ChartPlot.tsx'
import { afterFinalMarks, type ChartWindow, onTimeMeanOf, slotCount } from './chartWindows.ts'
import { useElementWidth } from './useElementWidth.ts'
import { useFleet } from './useFleet.ts'
import { WindowDetail } from './WindowDetail.tsx'

const HEIGHT = 184

/**
 * One metric's windows over the last window slots (up to `CHART_WINDOWS`):
 * each window's current mean, and for corrected windows the mean it showed
 * on time. Re-renders at most once per frame (the hooks), and only the
 * columns whose window changed.
 */
export function WindowChart({ metric }: { readonly metric: Metric }): ReactNode {
  const windowId = useFleet((s) => windowIdOf(s.settings))
  const windowMs = useFleet((s) => s.settings.windowMs)
  const lateness = useFleet((s) => s.settings.allowedLatenessMs)
  const dashboard = useFleet((s) => s.dashboard)
  // One slot of headroom on the right: devices whose clocks run fast open windows "in the future".
  const lastStart = useFleet((s) => windowStart(windowSpecOf(s.settings), s.now) + s.settings.windowMs)
  const results = useWindows({ window: windowId, key: metric.key })
  const slots = slotCount(results, lastStart, windowMs)
  const firstStart = lastStart - (slots - 1) * windowMs
  const watermark = useWatermark()
  const proofFrontier = useEngineStats((s) => s.proofFrontier)
  const lateCorrections = useFleet((s) => s.lateCorrections)
  const late = useMemo(() => afterFinalMarks(lateCorrections, metric.key), [lateCorrections, metric.key])
  const [hovered, setHovered] = useState<number | null>(null)
  const [ref, width] = useElementWidth<HTMLDivElement>(760)

  const windows = useMemo((): ChartWindow[] => {
    const end = firstStart + slots * windowMs
    return results
      .filter((r) => r.start >= firstStart && r.start < end)
      .map((result) => ({ result, onTimeMean: result.revision > 0 && dashboard !== null ? onTimeMeanOf(dashboard, result) : null }))
  }, [results, firstStart, slots, windowMs, dashboard])
  let afterFinal = 0
  for (let i = 1; i < late.length; i += 2) afterFinal += late[i] as number

  let latest: WindowResult | undefined
  let lastCorrected: WindowResult | undefined
  let corrected = 0
  for (const { result } of windows) {
    if (result.status !== 'provisional') latest = result
    if (result.revision > 0) {
      corrected++
      lastCorrected = result
    }
  }
  const detailStart = hovered ?? lastCorrected?.start ?? latest?.start ?? null

  return (
    <section className="panel chart-panel">
      <header className="chart-header">
        <div>
          <h2>
            {metric.label} <span className="unit">mean, {metric.unit}</span>
          </h2>
          <p className="chart-sub">
            {windowMs / 1000} s tumbling windows · {corrected} corrected in view · {afterFinal} changed after final
          </p>
        </div>
        {latest !== undefined && (
          <div className="chart-latest">
            <span className="chart-latest-value">
              {latest.mean.toFixed(metric.digits)}
              <span className="unit">{metric.unit}</span>
            </span>
            <BasisBadge kind={badgeKindOf(latest)} />
          </div>
        )}
      </header>
      <div ref={ref} className="chart-body">
        <ChartPlot
          windows={windows}
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
        <WindowDetail windowId={windowId} metric={metric} start={detailStart} pinned={hovered !== null} />
      )}
    </section>
  )
}
