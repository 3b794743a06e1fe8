import { windowHooks } from '@tidemark/react'
import type { FleetAggregates } from '../fleet/fleetAggregates.ts'

/**
 * The window hooks of `@tidemark/react` typed for the fleet's aggregates: `result.aggregates`
 * is `{ latency: number[]; devices: number }` in every result they return.
 *
 * @example
 * const devices = useWindows({ window: 'tumbling:2000', key: 'temp' }, (rows) => rows.map((r) => r.aggregates.devices))
 */
export const { useWindows, useWindow, useWindowHistory } = windowHooks<FleetAggregates>()
