import { distinct, quantiles, type StreamEvent } from '@tidemark/engine'
import { deviceOfSource } from './deviceSource.ts'

/** Separates a reading's id from the device-clock time its upload handed it to the engine. */
const UPLOAD_MARK = '@'

/**
 * A reading's id with the time its upload handed it to the device's engine, on the device's
 * clock: `d07-123@1800000001040`. The delivery latency of a reading is that time minus its
 * `ts`, so every engine computes it from the event alone: the same on the device that ingests
 * it, in its log's replay after a crash, and in every replica that merges its cell.
 *
 * @example
 * uploadStampedId('d07-123', 1_800_000_001_040) // 'd07-123@1800000001040'
 */
export function uploadStampedId(id: string, uploadedAt: number): string {
  return `${id}${UPLOAD_MARK}${uploadedAt}`
}

/**
 * How long a reading took from its timestamp to its device's engine, ms: the upload time in its
 * id minus its `ts`, both on the device's clock (the clock's skew cancels out; the sample's
 * jitter does not, so a reading sampled just before its upload can show a few ms below zero).
 * NaN for an id without an upload stamp: the engine refuses such a reading with
 * `invalid_aggregate_input` (the fleet's producers stamp every reading).
 *
 * @example
 * deliveryLatencyOf({ id: 'd07-123@1800000001040', source: 'd07', seq: 123, ts: 1_800_000_000_200, key: 'temp', value: 21 }) // 840
 */
export function deliveryLatencyOf(event: StreamEvent): number {
  const at = event.id.lastIndexOf(UPLOAD_MARK)
  return at < 0 ? Number.NaN : Number(event.id.slice(at + 1)) - event.ts
}

/**
 * The aggregates every engine of the fleet keeps per window (devices' and the dashboard's: a
 * replica refuses another with other aggregates): the 95th percentile of the readings' delivery
 * latency (`deliveryLatencyOf`), and how many devices reported readings in the window.
 *
 * @example
 * const { useWindows } = windowHooks<FleetAggregates>()
 * const p95 = useWindows({ window: 'tumbling:2000', key: 'temp' }, (rows) => rows.map((r) => r.aggregates.latency[0]))
 */
export const fleetAggregates = {
  latency: quantiles({ at: [0.95], of: deliveryLatencyOf }),
  // By device: a device's later source (`d07~2`, after it left the fleet and came back) is the same device.
  devices: distinct({ of: (event) => deviceOfSource(event.source) }),
}

/** The type of `fleetAggregates`: what types `result.aggregates` on every engine of the fleet. */
export type FleetAggregates = typeof fleetAggregates
