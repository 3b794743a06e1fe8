import type { Device, DevicePhase } from './device.ts'
import type { DeviceLink } from './link.ts'

/** One row of the device table: the device and its link, flattened. */
export interface DeviceStatus {
  readonly id: string
  readonly phase: DevicePhase
  readonly online: boolean
  readonly skewMs: number
  readonly seq: number
  readonly queued: number
  readonly inFlight: number
  readonly lastSync: number | null
  readonly uploads: number
  readonly accepted: number
  readonly duplicates: number
  readonly rejected: number
  readonly lost: number
  readonly crashes: number
}

/** The device's status, or `previous` itself when nothing in it changed (so memoized rows skip rendering). */
export function deviceStatus(device: Device, link: DeviceLink, previous: DeviceStatus | undefined): DeviceStatus {
  const state = link.status()
  const next: DeviceStatus = {
    id: device.id,
    phase: device.phase,
    online: state.online,
    skewMs: device.profile.skewMs,
    seq: device.seq,
    queued: state.queued,
    inFlight: state.inFlight,
    lastSync: state.lastSync,
    ...device.counters,
  }
  if (previous === undefined) return next
  for (const field of Object.keys(next) as (keyof DeviceStatus)[]) {
    if (next[field] !== previous[field]) return next
  }
  return previous
}
