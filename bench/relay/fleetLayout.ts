/**
 * Who is who in the relay benchmark: fleets `fleet-00`…, devices each writing their own room
 * `<fleet>/<device>` (the relay's topology: a room per device), dashboards following a fleet's
 * directory `<fleet>/_directory`. Every process of the benchmark derives names from this one
 * layout, so the device simulator, the dashboards and the report agree without a handshake.
 */
import { boundedOutOfOrderness, type EngineOptions, type StreamEvent, tumbling } from '@tidemark/engine'

/**
 * Size of the simulated fleet.
 *
 * @example
 * const layout: FleetLayout = { fleets: 10, devicesPerFleet: 100, dashboardsPerFleet: 2, updatesPerSecond: 1 }
 */
export interface FleetLayout {
  readonly fleets: number
  readonly devicesPerFleet: number
  readonly dashboardsPerFleet: number
  /** Updates each device sends per second (each one engine batch of readings). */
  readonly updatesPerSecond: number
}

/**
 * One simulated device: its room, and the replica and source its token grants.
 *
 * @example
 * const device: DeviceIdentity = deviceIdentity(0, 7) // { fleet: 'fleet-00', room: 'fleet-00/d007', source: 'fleet-00-d007', ... }
 */
export interface DeviceIdentity {
  /** Position in the whole fleet, 0-based: spreads the devices' send phases over a second. */
  readonly index: number
  readonly fleet: string
  readonly room: string
  /** The device's engine replica id: the only log its token lets it write. */
  readonly replica: string
  /** The device's one source: the only cells and clocks its token lets it write. */
  readonly source: string
}

/**
 * What every replica of the benchmark's fleets shares (the demo's fleet configuration): replicas
 * merge only with the same window specs and allowed lateness.
 *
 * @example
 * const engine = createEngine({ ...BENCH_ENGINE_OPTIONS, replicaId: 'fleet-00-d007' })
 */
export const BENCH_ENGINE_OPTIONS: EngineOptions = {
  windows: tumbling(60_000),
  watermark: boundedOutOfOrderness(5_000),
  allowedLateness: 10 * 60_000,
  idleTimeout: 30_000,
}

/**
 * The series each device reads, one reading of each per update: one engine batch.
 *
 * @example
 * METRIC_KEYS.length // 3 readings per update
 */
export const METRIC_KEYS = ['temp', 'humidity', 'battery'] as const

/**
 * The fleet's name.
 *
 * @example
 * fleetName(3) // 'fleet-03'
 */
export function fleetName(fleet: number): string {
  return `fleet-${String(fleet).padStart(2, '0')}`
}

/**
 * The `device`-th device of `fleet`.
 *
 * @example
 * deviceIdentity(1, 42, 100).room // 'fleet-01/d042'
 */
export function deviceIdentity(fleet: number, device: number, devicesPerFleet: number): DeviceIdentity {
  const name = fleetName(fleet)
  const local = `d${String(device).padStart(3, '0')}`
  return { index: fleet * devicesPerFleet + device, fleet: name, room: `${name}/${local}`, replica: `${name}-${local}`, source: `${name}-${local}` }
}

/**
 * Every device of the layout, fleet by fleet.
 *
 * @example
 * allDevices({ fleets: 10, devicesPerFleet: 100, dashboardsPerFleet: 2, updatesPerSecond: 1 }).length // 1000
 */
export function allDevices(layout: FleetLayout): DeviceIdentity[] {
  const out: DeviceIdentity[] = []
  for (let f = 0; f < layout.fleets; f++) for (let d = 0; d < layout.devicesPerFleet; d++) out.push(deviceIdentity(f, d, layout.devicesPerFleet))
  return out
}

/**
 * The fleet's directory room, which its dashboards follow.
 *
 * @example
 * directoryOf('fleet-00') // 'fleet-00/_directory'
 */
export function directoryOf(fleet: string): string {
  return `${fleet}/_directory`
}

/**
 * When, within each period, a device sends: the devices' phases spread evenly over it (1,000
 * devices at one update a second: one update every millisecond).
 *
 * @example
 * sendOffsetMs(deviceIdentity(0, 7, 100), 1_000, 1_000) // 7
 */
export function sendOffsetMs(device: DeviceIdentity, devices: number, periodMs: number): number {
  return (device.index / devices) * periodMs
}

/**
 * One update of a device: a batch of one reading per series (`METRIC_KEYS`), gap-free seqs from
 * `seq` (the engine's `nextSeq`), all stamped `ts`, the time the device takes them and sends.
 *
 * @example
 * engine.ingest(deviceUpdate(device, engine.nextSeq(device.source), Date.now()))
 */
export function deviceUpdate(device: DeviceIdentity, seq: number, ts: number): StreamEvent[] {
  return METRIC_KEYS.map((key, i) => ({ id: `${device.source}-${seq + i}`, source: device.source, seq: seq + i, ts, key, value: sensorValue(key, device.index, ts) }))
}

/** A plausible, varying sensor value: readings that never change would compress unrealistically. */
function sensorValue(key: (typeof METRIC_KEYS)[number], index: number, ts: number): number {
  const phase = (ts / 60_000 + index) % (2 * Math.PI)
  switch (key) {
    case 'temp':
      return Math.round((21 + 3 * Math.sin(phase) + Math.random()) * 100) / 100
    case 'humidity':
      return Math.round((45 + 10 * Math.cos(phase) + 2 * Math.random()) * 10) / 10
    case 'battery':
      return Math.round((100 - ((ts / 3_600_000 + index) % 100)) * 10) / 10
  }
}
