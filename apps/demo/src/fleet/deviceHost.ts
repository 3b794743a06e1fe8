import type { HostContext, HostEngineOptions } from '@tidemark/worker/host'
import type { FleetAggregates } from './fleetAggregates.ts'
import { DeviceNode, type DeviceSwitches } from './deviceNode.ts'
import type { DeviceStatus, RetireReply } from './deviceStatus.ts'
import { epochOf, fleetEngineOptions, type FleetSettings, MAX_DEVICES, parseSettings } from './fleetSettings.ts'
import { type FleetWiring, parseWiring } from './fleetWiring.ts'
import type { HostPlatform } from './hostPlatform.ts'
import { DEFAULT_FAULTS } from './readingProducer.ts'

/** What a page passes a device's host (`connectEngine({ config })`): the first page's is used. */
export interface DeviceHostConfig {
  /** Fleet slot index (`d01` is 0). */
  readonly index: number
  readonly settings: FleetSettings
  readonly wiring: FleetWiring
}

/**
 * The commands of a device's host (`engine.command(name, payload)`). Each answers the device's
 * status, `crash` the readings lost with it, `retire` what it did (`RetireReply`).
 *
 * - `boot` (`DeviceSwitches`): starts a host that has not started yet (the first page's switches).
 * - `status`: the device's status.
 * - `online`, `offline`: its relay link (or tab channel) up or down.
 * - `pause`, `resume`: its producer.
 * - `crash`: the host ends its worker without closing anything; the pages start it again.
 * - `retire` (`{ finish?: boolean }`): a clean stop (last upload; with `finish`, the device left
 *   the fleet: its source finished, durable; the relay's acknowledgement awaited, bounded; last
 *   checkpoint), then the worker ends.
 */
export type DeviceHostCommand = 'boot' | 'status' | 'online' | 'offline' | 'pause' | 'resume' | 'crash' | 'retire'

/** What `crash` answers. */
export interface CrashReply {
  /** Readings sampled or ingested and never durable: they die with the host. */
  readonly lost: number
}

/**
 * Changes reach the pages at most this often, ms. A device's own windows are only shown as its
 * status, so its host need not send them every frame to every page that holds the device.
 */
const DEVICE_FRAME_MS = 250

/**
 * The `hostEngine` options of one device's host (`src/fleet/deviceHost.worker.ts` passes them
 * in a worker; tests run them in Node): the device's engine over its own write-ahead log, named
 * after the host, and its producer and links (`DeviceNode`), driven by the commands.
 *
 * @example
 * hostEngine(deviceHostOptions(self.name, workerHostPlatform()))
 */
export function deviceHostOptions(name: string, platform: HostPlatform): HostEngineOptions<FleetAggregates> {
  let device: DeviceNode | null = null
  const node = (): DeviceNode => {
    if (device === null) throw new Error(`${name}: the device is not set up (its host failed to start)`)
    return device
  }
  const commands: Record<DeviceHostCommand, (payload: unknown, context: HostContext<FleetAggregates>) => unknown> = {
    boot: (payload): DeviceStatus => node().boot(parseSwitches(payload)),
    status: (): DeviceStatus => node().status(),
    online: (): DeviceStatus => {
      node().setOnline(true)
      return node().status()
    },
    offline: (): DeviceStatus => {
      node().setOnline(false)
      return node().status()
    },
    pause: (): DeviceStatus => {
      node().setPaused(true)
      return node().status()
    },
    resume: (): DeviceStatus => {
      node().setPaused(false)
      return node().status()
    },
    crash: (): CrashReply => {
      const lost = node().crash()
      platform.terminate()
      return { lost }
    },
    retire: async (payload, { engine }): Promise<RetireReply> => {
      const reply = await node().retire(parseFinish(payload))
      await engine.close()
      platform.terminate()
      return reply
    },
  }
  return {
    name,
    engine: (config) => fleetEngineOptions(parseDeviceHostConfig(config).settings, platform.now),
    frameMs: DEVICE_FRAME_MS,
    setup({ engine, config }) {
      const { index, settings, wiring } = parseDeviceHostConfig(config)
      device = new DeviceNode(engine, { index, settings, wiring, transports: platform.transports, epoch: epochOf(settings), faults: DEFAULT_FAULTS, platform })
      return () => device?.halt()
    },
    commands,
  }
}

/**
 * The config a page passed (data from outside the worker), checked: a TypeError says what is
 * wrong, and the host tells every page (`connection().state === 'failed'`).
 *
 * @example
 * const { index, settings } = parseDeviceHostConfig(config)
 */
export function parseDeviceHostConfig(config: unknown): DeviceHostConfig {
  if (typeof config !== 'object' || config === null) throw new TypeError(`a device host needs a config { index, settings, wiring }, got ${String(config)}`)
  const { index, settings, wiring } = config as Record<string, unknown>
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= MAX_DEVICES) {
    throw new TypeError(`a device host's index must be an integer in [0, ${MAX_DEVICES}), got ${String(index)}`)
  }
  const parsed = parseSettings(settings)
  if (parsed === null) throw new TypeError('a device host got settings out of range (see parseSettings)')
  return { index, settings: parsed, wiring: parseWiring(wiring) }
}

function parseFinish(payload: unknown): boolean {
  const finish = ((payload ?? {}) as Record<string, unknown>).finish ?? false
  if (typeof finish !== 'boolean') throw new TypeError(`retire takes { finish?: boolean }, got ${JSON.stringify(payload)}`)
  return finish
}

function parseSwitches(payload: unknown): DeviceSwitches {
  const { online, paused } = (payload ?? {}) as Record<string, unknown>
  if (typeof online !== 'boolean' || typeof paused !== 'boolean') throw new TypeError(`boot needs { online: boolean, paused: boolean }, got ${JSON.stringify(payload)}`)
  return { online, paused }
}
