import type { ControlChannel, ControlMessage } from './controlChannel.ts'
import { type DeviceCommand, type DeviceHostView, DeviceSlot } from './deviceSlot.ts'
import type { DeviceStatus } from './deviceStatus.ts'
import type { FleetHosts } from './fleetHosts.ts'
import { epochOf, type FleetSettings, parseSettings } from './fleetSettings.ts'
import type { FleetWiring } from './fleetWiring.ts'

/** What the device page shows. */
export interface DeviceTabSnapshot {
  readonly id: string
  readonly settings: FleetSettings
  readonly epoch: string
  /** This tab's link to the device's host: the same worker (instance) as the dashboard's. */
  readonly host: DeviceHostView
  readonly status: DeviceStatus | null
  readonly now: number
  /** The last command that did not reach the host, else what the host answered or refused that the tab could not use (`DeviceSlot.error`), or null. */
  readonly error: string | null
}

export interface DeviceTabOptions {
  /** Fleet slot index of the device (`deviceIndexOf('d07')`). */
  readonly index: number
  /** Settings from the URL; a dashboard's `settings` message replaces them. */
  readonly settings: FleetSettings
  readonly wiring: FleetWiring
  readonly hosts: FleetHosts
  readonly control: ControlChannel
  readonly now?: () => number
}

/** How often the tab tells the dashboards it has the device open, ms. */
const PRESENCE_EVERY_MS = 1_000

/**
 * A `?device=` tab: one device of the fleet, on its own page. It reaches the device's host (the
 * worker the dashboard reached too: same name, so the same SharedWorker), boots it when no page
 * had, shows its status and sends it commands. It follows the dashboards' settings (another
 * epoch is another host), and tells them it has the device open.
 *
 * @example
 * const tab = new DeviceTab({ index: deviceIndexOf('d07') ?? 0, settings: settingsFromQuery(params), wiring, hosts: workerHosts(), control })
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
  #presenceAt = Number.NEGATIVE_INFINITY
  #error: string | null = null
  #snapshot: DeviceTabSnapshot

  constructor(options: DeviceTabOptions) {
    this.#options = options
    this.#now = options.now ?? Date.now
    this.#settings = options.settings
    this.#slot = this.#makeSlot()
    this.#stopControl = options.control.listen((message) => this.#receive(message))
    this.#snapshot = this.#makeSnapshot(this.#now())
  }

  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  snapshot = (): DeviceTabSnapshot => this.#snapshot

  /** Asks the dashboards for their settings and connects to the device's host. */
  start(): void {
    this.#options.control.post({ type: 'hello', device: this.#slot.id })
    this.#slot.start()
  }

  /** Resolves once the device's host welcomed this tab and answered its boot (for tests). */
  opened(): Promise<void> {
    return this.#slot.opened()
  }

  get slot(): DeviceSlot {
    return this.#slot
  }

  /** Polls the host's status and says the tab is open; then publishes. */
  tick(now = this.#now()): void {
    this.#slot.step(now)
    const instance = this.#slot.host.instance
    if (instance !== '' && now - this.#presenceAt >= PRESENCE_EVERY_MS) {
      this.#presenceAt = now
      this.#options.control.post({ type: 'tab', device: this.#slot.id, instance })
    }
    this.#publish(now)
  }

  /** Ticks every `intervalMs` on the real clock until the returned function is called. */
  run(intervalMs = 100): () => void {
    const timer = setInterval(() => this.tick(), intervalMs)
    return () => clearInterval(timer)
  }

  /** Sends `command` to the device's host; resolves once it answered (a failure shows on the page). */
  async command(command: DeviceCommand): Promise<void> {
    try {
      await this.#slot.command(command)
      this.#error = null
    } catch (error) {
      this.#error = `${command} did not reach the host: ${error instanceof Error ? error.message : String(error)}`
    }
    this.#publish(this.#now())
  }

  /** Disconnects the tab; the host runs on for the other pages. */
  async close(): Promise<void> {
    this.#stopControl()
    this.#listeners.clear()
    await this.#slot.close()
  }

  #makeSlot(): DeviceSlot {
    const { index, wiring, hosts } = this.#options
    const slot: DeviceSlot = new DeviceSlot({
      index,
      settings: this.#settings,
      wiring,
      hosts,
      // A host this tab starts (or restarts) gets this tab's last view of the switches.
      switches: () => ({ online: slot.status()?.online ?? true, paused: slot.status()?.paused ?? false }),
      onChange: () => this.#publish(this.#now()),
      // The current slot's problems show through its `error`; an old slot's (its host refused to retire) only here.
      onError: (message) => {
        if (slot !== this.#slot) this.#error = message
        this.#publish(this.#now())
      },
    })
    return slot
  }

  #receive(message: ControlMessage): void {
    if (message.type !== 'settings') return
    const settings = parseSettings(message.settings)
    if (settings === null) return
    const changed = epochOf(settings) !== epochOf(this.#settings) || settings.seed !== this.#settings.seed
    this.#settings = settings
    if (changed) void this.#restart()
  }

  /**
   * Another epoch: the device's host of that epoch. The host of the old one is retired (the
   * dashboard retires it too; the second retire finds it stopped), so no worker keeps producing
   * into an epoch no page shows.
   */
  async #restart(): Promise<void> {
    const old = this.#slot
    this.#slot = this.#makeSlot()
    await old.retire()
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
      host: this.#slot.host,
      status: this.#slot.status(),
      now,
      error: this.#error ?? this.#slot.error,
    }
  }
}
