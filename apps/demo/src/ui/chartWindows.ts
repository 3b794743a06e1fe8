import type { Engine, WindowResult } from '@tidemark/engine'
import type { FleetAggregates } from '../fleet/fleetAggregates.ts'
import { CHART_WINDOWS } from '../fleet/fleetSettings.ts'
import type { LateCorrection } from '../fleet/reconnectReport.ts'
import type { ChartMeasure, FleetResult } from './chartMeasure.ts'

/** A window on the chart: its value under the chart's measure, and the value it showed on time when a correction has replaced it. */
export interface ChartWindow {
  readonly result: FleetResult
  readonly value: number
  readonly onTimeValue: number | null
}

/** Fewest window slots a chart shows: a young fleet's few windows are not stretched across the whole width. */
export const MIN_CHART_WINDOWS = 20

/** The value a window showed on time under `measure`, or null when it was born late (its on-time result was the empty window) or showed none. */
export function onTimeValueOf(engine: Pick<Engine<FleetAggregates>, 'history'>, result: WindowResult, measure: ChartMeasure): number | null {
  const first = engine.history(result.window, result.key, result.start)[0]
  return first !== undefined && first.revision === 0 ? measure.valueOf(first) : null
}

/** How many slots to show: from the oldest window there is up to `lastStart`, between the min and max slot counts. */
export function slotCount(results: readonly WindowResult[], lastStart: number, windowMs: number): number {
  let earliest = lastStart
  for (const result of results) if (result.start < earliest) earliest = result.start
  const span = Math.floor((lastStart - earliest) / windowMs) + 1
  return Math.max(MIN_CHART_WINDOWS, Math.min(CHART_WINDOWS, span))
}

/**
 * Per window start, how many corrections of `key` changed it after it was final (finality
 * violations), flattened `[start, count, start, count, …]` in start order.
 */
export function afterFinalMarks(corrections: readonly LateCorrection[], key: string): number[] {
  const counts = new Map<number, number>()
  for (const correction of corrections) {
    if (correction.key !== key || !correction.afterFinal) continue
    counts.set(correction.start, (counts.get(correction.start) ?? 0) + 1)
  }
  return [...counts].sort((a, b) => a[0] - b[0]).flat()
}

/**
 * The values that set the value axis: windows with at least half the readings
 * of the fullest one. A window a single device opened (at start-up, or one
 * running fast) is drawn, clamped to the edge, but does not squash the rest.
 */
export function axisValues(windows: readonly ChartWindow[]): number[] {
  let fullest = 0
  for (const { result } of windows) if (result.count > fullest) fullest = result.count
  const values: number[] = []
  for (const { result, value, onTimeValue } of windows) {
    if (result.count < fullest / 2) continue
    values.push(value)
    if (onTimeValue !== null) values.push(onTimeValue)
  }
  return values
}
