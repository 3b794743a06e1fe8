import type { HostMode, RemoteEngine, WorkerConnection } from '@tidemark/worker'
import type { FleetAggregates } from './fleetAggregates.ts'
import type { CrashReply, DeviceHostCommand } from './deviceHost.ts'
import type { DeviceSwitches } from './deviceNode.ts'
import { type DeviceStatus, parseStatus, type RetireReply, sameStatus } from './deviceStatus.ts'
import type { FleetHosts } from './fleetHosts.ts'
import { epochOf, type FleetSettings } from './fleetSettings.ts'
import { deviceHostName, type FleetWiring } from './fleetWiring.ts'
import { createDeviceProfile, type DeviceProfile } from './readingProducer.ts'

/** What an operator can do to a device, from any page that opened it. */
export type DeviceCommand = Extract<DeviceHostCommand, 'online' | 'offline' | 'crash' | 'pause' | 'resume'>

/** This page's link to the device's host, as the tables show it. */
export interface DeviceHostView {
  /** `connecting` until the first host welcomed this page; then the connection's state (`reconnecting` while the host restarts). */
  readonly state: 'connecting' | WorkerConnection['state']
  readonly mode: HostMode | null
  /** The host instance now: the same in every page that opened the device. */
  readonly instance: string
  /** Hosts this page moved to after its first: one per crash (or a host that went away otherwise). */
  readonly restarts: number
  /** Why the connection failed, or why the last host went away. */
  readonly reason: string | null
}

export interface DeviceSlotOptions {
  readonly index: number
  readonly settings: FleetSettings
  readonly wiring: FleetWiring
  readonly hosts: FleetHosts
  /** The switches a host that has not started yet is booted with: this page's view of them. */
  readonly switches: () => DeviceSwitches
  /** Told when the host view, the status or the error changed. */
  readonly onChange?: () => void
  /**
   * Told once per new problem: an answer or a refusal of the device's host that this page could
   * not use (a boot it refused, a status of another device or of an unknown phase). A host that
   * went away mid-call is no problem here: the connection says so and the next host is asked.
   */
  readonly onError?: (message: string) => void
}

/** Status polls at most this often, ms: each is a message to the host and back. */
const POLL_MS = 500

/**
 * One device as one page sees it: the page's `RemoteEngine` of the device's host (a worker named
 * after the device and the epoch, shared by every page that opens the device), the status the
 * host last reported, and the commands. The device itself (producer, engine, log, links) runs in
 * the host; a page only boots a host that has not started (with its switches), polls its status
 * and sends commands, so two pages that open one device drive one producer.
 *
 * @example
 * const slot = new DeviceSlot({ index: 6, settings, wiring, hosts: workerHosts(), switches: () => ({ online: true, paused: false }) })
 * slot.start()
 * await slot.opened()
 * await slot.command('offline') // the host's relay link goes down
 */
export class DeviceSlot {
  readonly id: string
  readonly profile: DeviceProfile
  readonly name: string
  readonly #options: DeviceSlotOptions
  #remote: RemoteEngine<FleetAggregates> | null = null
  #host: DeviceHostView = { state: 'connecting', mode: null, instance: '', restarts: 0, reason: null }
  #status: DeviceStatus | null = null
  /** The host instance that answered `#status`. */
  #statusHost = ''
  /** The host instance this page booted last. */
  #booted = ''
  #polling = false
  #polledAt = Number.NEGATIVE_INFINITY
  /** Why the current host's boot failed (it refused it, or answered no status); null once a host answered a boot. */
  #bootError: string | null = null
  /** Why the last status poll's answer could not be used; null once a status poll was answered well. */
  #statusError: string | null = null
  #opened: Promise<void> = Promise.resolve()
  #ready: (() => void) | null = null
  #closed = false

  constructor(options: DeviceSlotOptions) {
    this.#options = options
    // The profile (clock skew, sensors) is the host's too: the same slot and seed give the same device.
    this.profile = createDeviceProfile(options.index, options.settings.seed, 0).profile
    this.id = this.profile.id
    this.name = deviceHostName(options.wiring, epochOf(options.settings), this.id)
  }

  /** Connects to the device's host (starting it when none runs); `opened()` resolves once a host is booted. */
  start(): void {
    this.#opened = new Promise<void>((resolve) => {
      this.#ready = resolve
    })
    void this.#connect()
  }

  /** Resolves once the device's host welcomed this page and answered its boot. */
  opened(): Promise<void> {
    return this.#opened
  }

  /** This page's engine of the device's host (a mirror of the device's windows); null until connected. */
  get remote(): RemoteEngine<FleetAggregates> | null {
    return this.#remote
  }

  get host(): DeviceHostView {
    return this.#host
  }

  /** The status the host last reported; null before its first answer. */
  status(): DeviceStatus | null {
    return this.#status
  }

  /** What the device's host answered or refused that this page could not use (its boot first, then its status); null when nothing. */
  get error(): string | null {
    return this.#bootError ?? this.#statusError
  }

  /** The host instance whose answer `status()` is: an earlier one's while a restarted host has not answered yet. */
  get statusHost(): string {
    return this.#statusHost
  }

  /** Polls the host's status when the last poll is older than `POLL_MS` and none is under way. */
  step(now: number): void {
    if (this.#polling || now - this.#polledAt < POLL_MS) return
    this.#polledAt = now
    this.#polling = true
    void this.refresh().finally(() => {
      this.#polling = false
    })
  }

  /** Asks the host for its status now; resolves with it (the last one when no host answered). */
  async refresh(): Promise<DeviceStatus | null> {
    const remote = this.#remote
    if (remote === null || this.#host.state !== 'connected') return this.#status
    const instance = remote.connection().instance
    let reply: unknown
    try {
      reply = await remote.command('status')
    } catch (error) {
      // The host went away mid-call (a crash): the connection says so, and the next host answers the next poll.
      if (!this.#hostGone(remote, instance)) this.#fail('status', `${this.id}'s host did not answer its status: ${messageOf(error)}`)
      return this.#status
    }
    this.#take('status', reply)
    return this.#status
  }

  /**
   * Sends a command to the device's host. Resolves with the readings lost for `crash`, else 0.
   * Rejects when no host could answer (the connection's `reason` says why).
   */
  async command(command: DeviceCommand): Promise<number> {
    const remote = this.#remote
    if (remote === null) throw new Error(`${this.id}: its host is not connected yet`)
    const reply = await remote.command(command)
    if (command === 'crash') return (reply as CrashReply).lost
    this.#show(parseStatus(reply, this.id))
    return 0
  }

  /**
   * Stops the device in this epoch: a clean stop in its host (last upload, last checkpoint), then
   * the worker ends. With `finish` the device leaves the fleet: its host finishes its source first
   * (see `DeviceNode.retire`). Resolves with what the host answered; null when no host answered.
   */
  async retire(finish = false): Promise<RetireReply | null> {
    this.#closed = true
    const remote = this.#remote
    if (remote === null) return null
    const { state, instance } = remote.connection()
    let reply: RetireReply | null = null
    try {
      if (state === 'connected') reply = (await remote.command('retire', { finish })) as RetireReply
    } catch (error) {
      // Already gone: nothing left to stop. A host still there that refused keeps running: say so.
      const now = remote.connection()
      if (now.state === 'connected' && now.instance === instance) this.#options.onError?.(`${this.id}'s host refused to retire: ${messageOf(error)}`)
    }
    await this.close()
    return reply
  }

  /** Disconnects this page; the host keeps running for the other pages that opened the device. */
  async close(): Promise<void> {
    this.#closed = true
    this.#ready?.()
    const remote = this.#remote
    this.#remote = null
    if (remote !== null && remote.connection().state !== 'closed') await remote.close().catch(() => {})
  }

  async #connect(): Promise<void> {
    const { index, settings, wiring, hosts } = this.#options
    let remote: RemoteEngine<FleetAggregates>
    try {
      remote = await hosts.connect({ kind: 'device', name: this.name, config: { index, settings, wiring } })
    } catch (error) {
      this.#host = { ...this.#host, state: 'failed', reason: messageOf(error) }
      this.#ready?.()
      this.#options.onChange?.()
      return
    }
    if (this.#closed) {
      await remote.close().catch(() => {})
      return
    }
    this.#remote = remote
    remote.onConnection((connection) => this.#connected(connection))
    this.#connected(remote.connection())
  }

  #connected(connection: WorkerConnection): void {
    if (this.#closed) return
    this.#host = { state: connection.state, mode: connection.mode, instance: connection.instance, restarts: connection.takeovers, reason: connection.reason }
    this.#options.onChange?.()
    if (connection.state !== 'connected' || connection.instance === this.#booted) return
    // A host this page has not booted: the first host, or the next one after a crash. Only the
    // first boot of a host counts, so whichever page asks first sets its switches.
    this.#booted = connection.instance
    void this.#boot()
  }

  async #boot(): Promise<void> {
    const remote = this.#remote
    if (remote === null) return
    const instance = remote.connection().instance
    try {
      this.#take('boot', await remote.command('boot', this.#options.switches()))
    } catch (error) {
      // The host went away before answering: the next one is booted when it welcomes this page.
      if (!this.#hostGone(remote, instance)) this.#fail('boot', `${this.id}'s host refused its boot: ${messageOf(error)}`)
    }
    this.#ready?.()
  }

  /** The host that a call made to `instance` went to is gone: the connection left it (a crash, `failed`, `closed`), or this page did. */
  #hostGone(remote: RemoteEngine<FleetAggregates>, instance: string): boolean {
    const connection = remote.connection()
    return this.#closed || remote !== this.#remote || connection.state !== 'connected' || connection.instance !== instance
  }

  /** A host's answer to `boot` or `status`: shown when it is a status of this device, else its reason is. */
  #take(call: 'boot' | 'status', reply: unknown): void {
    let status: DeviceStatus
    try {
      status = parseStatus(reply, this.id)
    } catch (error) {
      this.#fail(call, messageOf(error))
      return
    }
    const had = this.error
    if (call === 'boot') this.#bootError = null
    else this.#statusError = null
    this.#show(status)
    if (this.error !== had) this.#options.onChange?.()
  }

  /** Keeps why `call` failed; a reason not already shown is told (a poll failing the same way again is not news). */
  #fail(call: 'boot' | 'status', message: string): void {
    const had = call === 'boot' ? this.#bootError : this.#statusError
    if (call === 'boot') this.#bootError = message
    else this.#statusError = message
    if (had === message) return
    this.#options.onError?.(message)
    this.#options.onChange?.()
  }

  #show(status: DeviceStatus): void {
    // A host answers over its own link only: the host this page is connected to now.
    this.#statusHost = this.#host.instance
    if (this.#status !== null && sameStatus(this.#status, status)) return
    this.#status = status
    this.#options.onChange?.()
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
