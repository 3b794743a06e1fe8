import type { ControlChannel, ControlMessage, DeviceCommand } from './controlChannel.ts'
import type { DeviceLease, DeviceLocks } from './deviceLocks.ts'
import { DeviceNode } from './deviceNode.ts'
import type { DeviceStatus } from './deviceStatus.ts'
import type { FleetSettings } from './fleetSettings.ts'
import { deviceLockName, type FleetWiring } from './fleetWiring.ts'
import { createDeviceProfile, type DeviceProfile, type ProducerFaults } from './readingProducer.ts'

/** Where a device runs, seen from this page. */
export type DeviceWhere = 'here' | 'opening' | 'elsewhere'

export interface DeviceSlotOptions {
  readonly index: number
  readonly settings: FleetSettings
  readonly wiring: FleetWiring
  readonly epoch: string
  readonly now: () => number
  readonly faults: ProducerFaults
  readonly locks: DeviceLocks
  readonly control: ControlChannel
  /**
   * `share` (the dashboard): run the device when its lock is free, hand it over when a tab
   * asks. `take` (a `?device=` tab): ask whoever runs it to hand it over, then run it.
   */
  readonly mode: 'share' | 'take'
  readonly paused?: boolean
  /** Told when the device runs here or stops running here. */
  readonly onChange?: () => void
}

/** A status from another page older than this is shown as unknown. */
const REMOTE_STALE_MS = 3_000
const STATUS_EVERY_MS = 1_000

/**
 * One device slot of a page: runs the device here while this page holds its lock, or
 * forwards commands to the page that runs it and shows the status that page posts.
 * A `?device=` tab that asks for the device gets it: this page closes its engine cleanly
 * (what it sampled uploaded and committed, then a last checkpoint), lets the lock go, and
 * waits to take it back when the tab closes. The tab opens the same IndexedDB log, so the
 * device continues where it stopped.
 *
 * @example
 * const slot = new DeviceSlot({ index: 2, settings, wiring, epoch, now: Date.now, faults: DEFAULT_FAULTS, locks, control, mode: 'share' })
 * slot.start()
 * control.listen((message) => slot.receive(message, Date.now()))
 * slot.command('offline', Date.now()) // here: its link; elsewhere: a message to the page that runs it
 */
export class DeviceSlot {
  readonly id: string
  readonly profile: DeviceProfile
  readonly #options: DeviceSlotOptions
  readonly #rng: ReturnType<typeof createDeviceProfile>['rng']
  readonly #abort = new AbortController()
  #node: DeviceNode | null = null
  #where: DeviceWhere = 'elsewhere'
  #lease: DeviceLease | null = null
  #handOver = false
  #paused: boolean
  #remote: { readonly status: DeviceStatus; readonly at: number } | null = null
  #postedAt = Number.NEGATIVE_INFINITY
  #opened: Promise<void> = Promise.resolve()
  #closed = false

  constructor(options: DeviceSlotOptions) {
    this.#options = options
    const { profile, rng } = createDeviceProfile(options.index, options.settings.seed, options.now())
    this.id = profile.id
    this.profile = profile
    this.#rng = rng
    this.#paused = options.paused ?? false
  }

  /** Starts claiming the device; `opened()` resolves when it first runs here. */
  start(): void {
    this.#opened = this.#claim(this.#options.mode === 'take')
  }

  /** Resolves when the claim started by `start()` (or the last hand-back) ran the device here. */
  opened(): Promise<void> {
    return this.#opened
  }

  get where(): DeviceWhere {
    return this.#where
  }

  /** The device's node while it runs in this page. */
  get node(): DeviceNode | null {
    return this.#node
  }

  get paused(): boolean {
    return this.#paused
  }

  /** Advances the device when it runs here, and posts its status to the other pages now and then. */
  step(now: number): void {
    const node = this.#node
    if (node === null) return
    node.step(now, !this.#paused)
    if (now - this.#postedAt >= STATUS_EVERY_MS) {
      this.#postedAt = now
      this.#options.control.post({ type: 'status', status: node.status() })
    }
  }

  /** Applies a command here, or sends it to the page that runs the device. Returns readings lost to a local crash. */
  command(command: DeviceCommand, now: number): number {
    const node = this.#node
    if (node === null) {
      this.#options.control.post({ type: 'command', device: this.id, command })
      if (command === 'pause' || command === 'resume') this.#paused = command === 'pause'
      return 0
    }
    return this.#apply(node, command, now)
  }

  /** The device's status: its node's here, the last one its page posted otherwise (null when none is fresh). */
  status(now: number): DeviceStatus | null {
    if (this.#node !== null) return this.#node.status()
    const remote = this.#remote
    return remote !== null && now - remote.at <= REMOTE_STALE_MS ? remote.status : null
  }

  /** A message from another page. */
  receive(message: ControlMessage, now: number): void {
    const epoch = this.#options.epoch
    if (message.type === 'status' && message.status.id === this.id && message.status.epoch === epoch) {
      if (this.#node === null) this.#remote = { status: message.status, at: now }
    } else if (message.type === 'command' && (message.device === this.id || message.device === '*')) {
      if (this.#node !== null) this.#apply(this.#node, message.command, now)
      else if (message.command === 'pause' || message.command === 'resume') this.#paused = message.command === 'pause'
    } else if (message.type === 'takeover' && message.device === this.id && message.epoch === epoch) {
      if (this.#where !== 'elsewhere') void this.#yield()
    }
  }

  /** Stops running the device here (clean close) and stops waiting for it. */
  async close(): Promise<void> {
    this.#closed = true
    this.#abort.abort()
    const node = this.#node
    this.#node = null
    this.#where = 'elsewhere'
    await node?.close(!this.#paused)
    this.#lease?.release()
    this.#lease = null
  }

  #apply(node: DeviceNode, command: DeviceCommand, now: number): number {
    switch (command) {
      case 'online':
      case 'offline':
        node.setOnline(command === 'online')
        return 0
      case 'crash':
        return node.crash(now)
      case 'pause':
        this.#paused = true
        return 0
      case 'resume':
        if (this.#paused) node.resume(now)
        this.#paused = false
        return 0
    }
  }

  /** `ask`: ask whoever runs the device to hand it over (a tab's first claim only, so two tabs never ping-pong). */
  async #claim(ask: boolean): Promise<void> {
    const { locks, wiring, epoch, control } = this.#options
    const name = deviceLockName(wiring, epoch, this.id)
    const granted = locks.acquire(name, this.#abort.signal)
    // The ask goes out once the request is in the lock manager's queue, so the lock comes here
    // next: the page that lets the device go asks for it again at once, behind this request.
    const asked = ask
      ? locks.queued().then(() => {
          if (!this.#closed) control.post({ type: 'takeover', device: this.id, epoch })
        })
      : undefined
    const [lease] = await Promise.all([granted, asked])
    if (this.#closed) {
      lease.release()
      return
    }
    this.#lease = lease
    this.#where = 'opening'
    this.#remote = null
    this.#options.onChange?.()
    const node = await DeviceNode.open({
      profile: this.profile,
      faults: this.#options.faults,
      rng: this.#rng,
      settings: this.#options.settings,
      wiring,
      epoch,
      now: this.#options.now,
    })
    if (this.#closed) {
      await node.close(!this.#paused)
      lease.release()
      return
    }
    this.#node = node
    this.#where = 'here'
    this.#options.onChange?.()
    if (this.#handOver) await this.#yield()
  }

  /** Hands the device to the page that asked: clean close, lock released, then wait to get it back. */
  async #yield(): Promise<void> {
    if (this.#node === null) {
      // Still opening: hand over as soon as it is open.
      this.#handOver = true
      return
    }
    this.#handOver = false
    const node = this.#node
    this.#node = null
    this.#where = 'elsewhere'
    this.#options.onChange?.()
    await node.close(!this.#paused)
    this.#lease?.release()
    this.#lease = null
    if (!this.#closed) this.#opened = this.#claim(false)
  }
}
