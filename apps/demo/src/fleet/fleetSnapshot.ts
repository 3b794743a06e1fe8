import type { RemoteEngine, WorkerConnection } from '@tidemark/worker'
import type { ActivityEntry } from './activityLog.ts'
import type { StormState } from './connectivityDrills.ts'
import type { FollowedRooms } from './dashboardLinks.ts'
import type { DeviceHostView, DeviceSlot } from './deviceSlot.ts'
import type { DeviceStatus } from './deviceStatus.ts'
import type { FleetAggregates } from './fleetAggregates.ts'
import type { FleetSettings } from './fleetSettings.ts'
import type { FleetWiring } from './fleetWiring.ts'
import type { LateCorrection } from './reconnectReport.ts'

/**
 * One row of the device table.
 *
 * @example
 * const row: DeviceRow = { id: 'd03', host: slot.host, tab: false, status: slot.status(), error: slot.error, lastHeard: null }
 */
export interface DeviceRow {
  readonly id: string
  /** This page's link to the device's host worker. */
  readonly host: DeviceHostView
  /** A `?device=` tab of this browser has the device open too (it said so within the last 3 s). */
  readonly tab: boolean
  /** What the device's host last reported; null before its first answer. */
  readonly status: DeviceStatus | null
  /** What its host answered or refused that this page could not use (a refused boot, a malformed status); null when nothing. */
  readonly error: string | null
  /** When the dashboard's document of this device (its room, or its tab channel) last synced. */
  readonly lastHeard: number | null
}

/**
 * Everything the dashboard shows that is not engine state; a new object per tick, immutable.
 *
 * @example
 * const { devices, storm, activity } = fleet.snapshot()
 */
export interface FleetSnapshot {
  /** Bumped whenever the dashboard engine is replaced (new settings). */
  readonly generation: number
  /** The dashboard engine as this page reads it (the mirror of its host's engine); null while that host starts. */
  readonly dashboard: RemoteEngine<FleetAggregates> | null
  /** This page's link to the dashboard engine's host; null while it starts. */
  readonly dashboardHost: WorkerConnection | null
  readonly settings: FleetSettings
  readonly epoch: string
  readonly wiring: FleetWiring
  readonly now: number
  readonly paused: boolean
  readonly storm: StormState | null
  /** The device the first-minute tour takes offline, while the tour runs. */
  readonly introDevice: string | null
  readonly devices: readonly DeviceRow[]
  readonly activity: readonly ActivityEntry[]
  /** Windows changed by state that landed after they fired, newest first. */
  readonly lateCorrections: readonly LateCorrection[]
  /** The device rooms the dashboard follows on the relay and those refused; null without a relay. */
  readonly relayRooms: FollowedRooms | null
}

/**
 * The slot's row, or `previous` itself when nothing in it changed (memoized rows skip rendering).
 *
 * @example
 * const row = rowOf(slot, lastHeard[slot.id] ?? null, false, previousRows[i])
 */
export function rowOf(slot: DeviceSlot, lastHeard: number | null, tab: boolean, previous: DeviceRow | undefined): DeviceRow {
  const next: DeviceRow = { id: slot.id, host: slot.host, tab, status: slot.status(), error: slot.error, lastHeard }
  if (
    previous !== undefined &&
    previous.id === next.id &&
    previous.host === next.host &&
    previous.tab === next.tab &&
    previous.status === next.status &&
    previous.error === next.error &&
    previous.lastHeard === next.lastHeard
  ) {
    return previous
  }
  return next
}
