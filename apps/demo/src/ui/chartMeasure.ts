import type { WindowResult } from '@tidemark/engine'
import type { FleetAggregates } from '../fleet/fleetAggregates.ts'
import { METRICS, type MetricKey } from '../fleet/metrics.ts'

/** A window of the dashboard engine: its values and the fleet's aggregates. */
export type FleetResult = WindowResult<FleetAggregates>

/**
 * What one chart plots per window of one series: the mean of a metric, the 95th percentile
 * of the readings' delivery latency, or the devices that reported.
 */
export interface ChartMeasure {
  /** Unique per chart (a React key; `data-measure` on the page). */
  readonly id: string
  /** The series whose windows it reads. */
  readonly key: MetricKey
  readonly title: string
  /** What the value is, beside the title. */
  readonly caption: string
  readonly unit: string
  readonly digits: number
  /** The finest step of the value axis (1 for a count); 0: any. */
  readonly axisStep: number
  /** The value a window shows; null when it has none (an empty pane has no quantile). */
  readonly valueOf: (result: FleetResult) => number | null
}

/** The series the fleet-wide charts read: every device samples and uploads its three sensors together. */
const FLEET_SERIES: MetricKey = 'temp'

/** One chart per metric: its window mean. */
export const MEAN_MEASURES: readonly ChartMeasure[] = METRICS.map((metric) => ({
  id: `${metric.key}-mean`,
  key: metric.key,
  title: metric.label,
  caption: `mean, ${metric.unit}`,
  unit: metric.unit,
  digits: metric.digits,
  axisStep: 0,
  valueOf: (result) => result.mean,
}))

/**
 * The 95th percentile of the delivery latency (`deliveryLatencyOf`: upload time minus the
 * reading's timestamp, on the device's clock) of the window's temperature readings, in seconds.
 */
export const LATENCY_MEASURE: ChartMeasure = {
  id: 'latency-p95',
  key: FLEET_SERIES,
  title: 'Delivery latency',
  caption: 'p95, s · timestamp to device ingest',
  unit: 's',
  digits: 2,
  axisStep: 0,
  valueOf: (result) => {
    const p95 = result.aggregates.latency[0]
    return p95 === undefined ? null : p95 / 1_000
  },
}

/** How many devices reported temperature readings in the window (a distinct count of sources). */
export const DEVICES_MEASURE: ChartMeasure = {
  id: 'devices',
  key: FLEET_SERIES,
  title: 'Devices reporting',
  caption: 'distinct devices',
  unit: 'devices',
  digits: 0,
  axisStep: 1,
  valueOf: (result) => result.aggregates.devices,
}

/** Every chart of the dashboard, top to bottom. */
export const CHART_MEASURES: readonly ChartMeasure[] = [...MEAN_MEASURES, LATENCY_MEASURE, DEVICES_MEASURE]

/**
 * A window's value under `measure` as the dashboard writes it: digits and unit.
 *
 * @example
 * measureText(LATENCY_MEASURE, result) // '1.04 s'
 */
export function measureText(measure: ChartMeasure, result: FleetResult): string {
  const value = measure.valueOf(result)
  return value === null ? '—' : `${value.toFixed(measure.digits)} ${measure.unit}`
}
