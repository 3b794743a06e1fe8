import type { ControlChannel, ControlMessage, DeviceCommand } from './controlChannel.ts'
import type { DeviceLocks } from './deviceLocks.ts'
import { DeviceSlot, type DeviceWhere } from './deviceSlot.ts'
import type { DeviceStatus } from './deviceStatus.ts'
import { epochOf, type FleetSettings, parseSettings } from './fleetSettings.ts'
import type { FleetWiring } from './fleetWiring.ts'
import { DEFAULT_FAULTS } from './readingProducer.ts'

/** What the device page shows. */
export interface DeviceTabSnapshot {
  readonly id: string
  readonly settings: FleetSettings
  readonly epoch: string
  readonly where: DeviceWhere
  readonly paused: boolean
  readonly status: DeviceStatus | null
  readonly now: number
}

export interface DeviceTabOptions {
  /** Fleet slot index of the device (`deviceIndexOf('d07')`). */
  readonly index: number
  /** Settings from the URL; a dashboard's `settings` message replaces them. */
  readonly settings: FleetSettings
  readonly wiring: FleetWiring
  readonly locks: DeviceLocks
  readonly control: ControlChannel
  readonly now?: () => number
}

/**
 * A `?device=` tab: runs one device of the fleet on its own. It asks whoever runs the
 * device (usually the dashboard page) to hand it over, opens the device's log, follows the
 * dashboards' settings and commands, and posts its status for their device tables.
 *
 * @example
 * const tab = new DeviceTab({ index: deviceIndexOf('d07') ?? 0, settings: settingsFromQuery(params), wiring, locks, control })
 * tab.start()
 * tab.run(100)
 */
export class DeviceTab {
  readonly #options: DeviceTabOptions
  readonly #now: () => number
  readonly #listeners = new Set<() => void>()
  readonly #stopControl: () => void
  #settings: FleetSettings
  #slot: DeviceSlot
  #snapshot: DeviceTabSnapshot

  constructor(options: DeviceTabOptions) {
    this.#options = options
    this.#now = options.now ?? Date.now
    this.#settings = options.settings
    this.#slot = this.#makeSlot(false)
    this.#stopControl = options.control.listen((message) => this.#receive(message))
    this.#snapshot = this.#makeSnapshot(this.#now())
  }

  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  snapshot = (): DeviceTabSnapshot => this.#snapshot

  /** Asks the dashboards for their settings and claims the device. */
  start(): void {
    this.#options.control.post({ type: 'hello', device: this.#slot.id })
    this.#slot.start()
  }

  /** Resolves when the device first runs in this tab (for tests). */
  opened(): Promise<void> {
    return this.#slot.opened()
  }

  get slot(): DeviceSlot {
    return this.#slot
  }

  tick(now = this.#now()): void {
    this.#slot.step(now)
    this.#publish(now)
  }

  /** Ticks every `intervalMs` on the real clock until the returned function is called. */
  run(intervalMs = 100): () => void {
    const timer = setInterval(() => this.tick(), intervalMs)
    return () => clearInterval(timer)
  }

  command(command: DeviceCommand): void {
    const now = this.#now()
    this.#slot.command(command, now)
    this.#publish(now)
  }

  async close(): Promise<void> {
    this.#stopControl()
    this.#listeners.clear()
    await this.#slot.close()
  }

  #makeSlot(paused: boolean): DeviceSlot {
    const { index, wiring, locks, control } = this.#options
    return new DeviceSlot({
      index,
      settings: this.#settings,
      wiring,
      epoch: epochOf(this.#settings),
      now: this.#now,
      faults: DEFAULT_FAULTS,
      locks,
      control,
      mode: 'take',
      paused,
      onChange: () => this.#publish(this.#now()),
    })
  }

  #receive(message: ControlMessage): void {
    const now = this.#now()
    if (message.type === 'settings') {
      const settings = parseSettings(message.settings)
      if (settings === null) return
      const changed = epochOf(settings) !== epochOf(this.#settings) || settings.seed !== this.#settings.seed
      this.#settings = settings
      if (changed) void this.#restart()
      return
    }
    if (message.type === 'hello') return
    this.#slot.receive(message, now)
  }

  /** Another epoch: this device's log and room of that epoch. */
  async #restart(): Promise<void> {
    const old = this.#slot
    this.#slot = this.#makeSlot(old.paused)
    await old.close()
    this.#slot.start()
    this.#publish(this.#now())
  }

  #publish(now: number): void {
    this.#snapshot = this.#makeSnapshot(now)
    for (const listener of this.#listeners) listener()
  }

  #makeSnapshot(now: number): DeviceTabSnapshot {
    return {
      id: this.#slot.id,
      settings: this.#settings,
      epoch: epochOf(this.#settings),
      where: this.#slot.where,
      paused: this.#slot.paused,
      status: this.#slot.status(now),
      now,
    }
  }
}
