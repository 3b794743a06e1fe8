import type { Engine, WindowChange } from '@tidemark/engine'
import { type ActivityEntry, ActivityLog } from './activityLog.ts'
import { DEFAULT_STORM, pickTourDevice, planIntro, planStorm, type Toggle } from './connectivityPlan.ts'
import { type ControlChannel, type ControlMessage, silentControlChannel } from './controlChannel.ts'
import { DashboardLinks, type FollowedRooms } from './dashboardLinks.ts'
import { type DeviceLocks, pageDeviceLocks } from './deviceLocks.ts'
import { DeviceSlot, type DeviceWhere } from './deviceSlot.ts'
import type { DeviceStatus } from './deviceStatus.ts'
import { createDashboardEngine, DEFAULT_SETTINGS, epochOf, type FleetSettings, MAX_DEVICES } from './fleetSettings.ts'
import type { FleetWiring } from './fleetWiring.ts'
import { createPrng } from './prng.ts'
import { DEFAULT_FAULTS } from './readingProducer.ts'
import {
  type LateCorrection,
  lateCorrectionsOf,
  RECONNECT_SETTLE_MS,
  ReconnectWatch,
  StormTally,
} from './reconnectReport.ts'
import { ToggleSchedule } from './toggleSchedule.ts'

/** One row of the device table. */
export interface DeviceRow {
  readonly id: string
  readonly where: DeviceWhere
  /** Its status: from its node here, from the page that runs it otherwise; null when unknown. */
  readonly status: DeviceStatus | null
  /** When the dashboard's document of this device (its room, or its tab channel) last synced. */
  readonly lastHeard: number | null
}

/** Everything the dashboard shows that is not engine state; a new object per tick, immutable. */
export interface FleetSnapshot {
  /** Bumped whenever the engines are recreated. */
  readonly generation: number
  readonly dashboard: Engine
  readonly settings: FleetSettings
  readonly epoch: string
  readonly wiring: FleetWiring
  readonly now: number
  readonly paused: boolean
  readonly storm: { readonly endsAt: number; readonly devices: number } | null
  /** The device the first-minute tour takes offline, while the tour runs. */
  readonly introDevice: string | null
  readonly devices: readonly DeviceRow[]
  readonly activity: readonly ActivityEntry[]
  /** Windows changed by state that landed after they fired, newest first. */
  readonly lateCorrections: readonly LateCorrection[]
  /** The device rooms the dashboard follows on the relay and those refused; null without a relay. */
  readonly relayRooms: FollowedRooms | null
}

export interface FleetOptions {
  readonly wiring: FleetWiring
  readonly settings?: FleetSettings
  /** Processing-time clock for the simulation and every engine; default `Date.now`. */
  readonly now?: () => number
  /** Play the first-minute tour (one device offline, then back); default true. */
  readonly intro?: boolean
  /** Who may run which device; default: this page alone. */
  readonly locks?: DeviceLocks
  /** Messages to and from `?device=` tabs; default none. */
  readonly control?: ControlChannel
}

/**
 * Device rows refresh at most this often between control actions: each refresh reads every
 * device's engine stats, and dozens of rows need not repaint more than twice a second.
 */
const DEVICE_REFRESH_MS = 500
const LATE_CORRECTIONS_KEPT = 60

/**
 * The dashboard page's fleet: the dashboard engine, the links through which it follows every
 * device's document (read-only: the relay's directory of device rooms, or each device's tab
 * channel), and a slot per device that runs the device in this page unless a `?device=` tab does. Driven by `tick(now)`; controls (offline, crash, storm,
 * pause, settings) are methods; the UI reads `snapshot()` through `subscribe`. No React here.
 *
 * The dashboard engine owns no source and ingests nothing: its windows are the lattice
 * state that the devices' engines wrote into their documents, merged.
 *
 * @example
 * const fleet = new Fleet({ wiring: await loadWiring('f1', fetch, probeWebsocket), control: openControlChannel('c') })
 * fleet.start(100)
 * fleet.setOnline('d03', false) // its relay link disconnects; it keeps ingesting
 * fleet.snapshot().dashboard.results({ window: 'tumbling:2000', key: 'temp' })
 */
export class Fleet {
  readonly #now: () => number
  readonly #wiring: FleetWiring
  readonly #locks: DeviceLocks
  readonly #control: ControlChannel
  readonly #log = new ActivityLog()
  readonly #listeners = new Set<() => void>()
  readonly #stopControl: () => void
  #settings: FleetSettings
  #generation = 0
  #dashboard!: Engine
  #stopChanges: () => void = () => {}
  #links!: DashboardLinks
  #slots: DeviceSlot[] = []
  #schedules: ToggleSchedule[] = []
  #storm: FleetSnapshot['storm'] = null
  #stormTally: StormTally | null = null
  #stormSettlesAt: number | null = null
  #watches: ReconnectWatch[] = []
  #introDevice: string | null = null
  #paused = false
  #lateCorrections: readonly LateCorrection[] = []
  #allReported = false
  #reportedCheckAt = Number.NEGATIVE_INFINITY
  #devicesAt = Number.NEGATIVE_INFINITY
  #relayRooms: FollowedRooms | null = null
  #closing: Promise<void> = Promise.resolve()
  #snapshot: FleetSnapshot

  constructor(options: FleetOptions) {
    this.#now = options.now ?? Date.now
    this.#wiring = options.wiring
    this.#locks = options.locks ?? pageDeviceLocks()
    this.#control = options.control ?? silentControlChannel
    this.#settings = options.settings ?? DEFAULT_SETTINGS
    this.#stopControl = this.#control.listen((message) => this.#receive(message))
    const now = this.#now()
    this.#build()
    if (options.intro !== false) this.#startIntro(now)
    if (this.#wiring.relayNotice !== null) this.#log.add(now, 'warn', this.#wiring.relayNotice)
    this.#snapshot = this.#makeSnapshot(now, [])
  }

  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  snapshot = (): FleetSnapshot => this.#snapshot

  /** Resolves once every device this page can run has opened its engine (for tests). */
  async ready(): Promise<void> {
    await this.#closing
    await Promise.all(this.#slots.map((slot) => slot.opened()))
  }

  /** The slot of device `id` (for tests and the tab handover). */
  slot(id: string): DeviceSlot | undefined {
    return this.#slots.find((slot) => slot.id === id)
  }

  /** Ticks every `intervalMs` on the real clock until the returned function is called. */
  start(intervalMs = 100): () => void {
    const timer = setInterval(() => this.tick(), intervalMs)
    return () => clearInterval(timer)
  }

  /** Advances the simulation to `now`: connectivity plans, devices, the dashboard's idle check; then publishes. */
  tick(now = this.#now()): void {
    for (const schedule of this.#schedules) {
      for (const toggle of schedule.due(now)) this.#applyToggle(toggle, schedule.name, now)
    }
    this.#finishSchedules(now)
    for (const slot of this.#slots) slot.step(now)
    this.#dashboard.tick()
    this.#finishWatches(now)
    this.#noteAllReported(now)
    this.#publish(now, false)
  }

  /** Connects or disconnects a device's link; its engine keeps ingesting into its log. */
  setOnline(id: string, online: boolean): void {
    const now = this.#now()
    this.#setOnline(id, online, now, 'operator')
    this.#log.add(
      now,
      online ? 'good' : 'warn',
      online ? `${id} back online: its link reconnects and exchanges state vectors` : `${id} taken offline: its link disconnects, it keeps ingesting into its write-ahead log`,
    )
    this.#publish(now)
  }

  /** Drops a device's engine without closing it, and reopens it from IndexedDB after a reboot delay. */
  crash(id: string): void {
    const now = this.#now()
    const slot = this.slot(id)
    if (slot === undefined) return
    const here = slot.node !== null
    const lost = slot.command('crash', now)
    this.#log.add(
      now,
      'warn',
      here
        ? `${id} crashed: engine dropped without close${lost > 0 ? `; ${lost} sampled readings not yet ingested died with it (never acknowledged)` : ''}. It reopens from IndexedDB in 1.5 s.`
        : `${id} (in its own tab) told to crash`,
    )
    this.#publish(now)
  }

  setPaused(paused: boolean): void {
    const now = this.#now()
    if (paused === this.#paused) return
    this.#paused = paused
    for (const slot of this.#slots) if (slot.node !== null) slot.command(paused ? 'pause' : 'resume', now)
    this.#control.post({ type: 'command', device: '*', command: paused ? 'pause' : 'resume' })
    this.#log.add(now, 'info', paused ? 'Producers paused' : 'Producers resumed')
    this.#publish(now)
  }

  /** Many devices drop off and come back at random for `durationMs`; all are online when it ends. */
  startStorm(durationMs: number): void {
    const now = this.#now()
    const rng = createPrng(this.#settings.seed + now)
    const toggles = planStorm(
      this.#slots.map((slot) => slot.id),
      now,
      { ...DEFAULT_STORM, durationMs },
      rng,
    )
    const schedule = new ToggleSchedule('storm', toggles)
    this.#schedules.push(schedule)
    const caught = new Set(toggles.map((toggle) => toggle.device)).size
    this.#storm = { endsAt: Math.max(schedule.endsAt, this.#storm?.endsAt ?? 0), devices: caught }
    this.#stormTally ??= new StormTally()
    this.#log.add(now, 'warn', `Reconnect storm: ${caught} devices toggling their links for ${Math.round(durationMs / 1000)} s`)
    this.#publish(now)
  }

  /** Applies new settings: a new epoch, every engine reopened (devices from their logs of that epoch). */
  configure(patch: Partial<FleetSettings>): void {
    const now = this.#now()
    const next = { ...this.#settings, ...patch }
    this.#settings = { ...next, deviceCount: Math.max(1, Math.min(MAX_DEVICES, Math.round(next.deviceCount))) }
    const closing = this.#teardown()
    this.#schedules = []
    this.#storm = null
    this.#stormTally = null
    this.#stormSettlesAt = null
    this.#watches = []
    this.#introDevice = null
    this.#lateCorrections = []
    this.#build(closing)
    this.#control.post({ type: 'settings', settings: this.#settings })
    const s = this.#settings
    this.#log.add(
      now,
      'info',
      `Engines reopened: ${s.deviceCount} devices, ${s.windowMs / 1000} s windows, lateness ${s.allowedLatenessMs / 1000} s (epoch ${epochOf(s)})`,
    )
    this.#publish(now)
  }

  /** Closes every engine cleanly and stops listening. */
  async close(): Promise<void> {
    this.#stopControl()
    this.#listeners.clear()
    await this.#teardown()
  }

  #build(after: Promise<void> = Promise.resolve()): void {
    const settings = this.#settings
    const epoch = epochOf(settings)
    this.#generation++
    this.#allReported = false
    this.#dashboard = createDashboardEngine(settings, this.#now)
    this.#stopChanges = this.#dashboard.subscribe((changes) => this.#onChanges(changes))
    this.#slots = []
    for (let i = 0; i < settings.deviceCount; i++) {
      const slot = new DeviceSlot({
        index: i,
        settings,
        wiring: this.#wiring,
        epoch,
        now: this.#now,
        faults: DEFAULT_FAULTS,
        locks: this.#locks,
        control: this.#control,
        mode: 'share',
        paused: this.#paused,
        onChange: () => this.#publish(this.#now()),
      })
      this.#slots.push(slot)
    }
    this.#links = new DashboardLinks(this.#dashboard, {
      wiring: this.#wiring,
      epoch,
      devices: this.#slots.map((slot) => slot.id),
      now: this.#now,
      onError: (error) => this.#log.add(this.#now(), 'bad', `Replication: ${error.message}`),
    })
    // The previous epoch's devices close first: with the same epoch they hold the same logs.
    this.#closing = after.then(() => {
      for (const slot of this.#slots) slot.start()
    })
  }

  #teardown(): Promise<void> {
    this.#stopChanges()
    const slots = this.#slots
    const links = this.#links
    const dashboard = this.#dashboard
    return Promise.all(slots.map((slot) => slot.close())).then(async () => {
      links.destroy()
      await dashboard.close()
    })
  }

  #receive(message: ControlMessage): void {
    const now = this.#now()
    if (message.type === 'hello') {
      this.#control.post({ type: 'settings', settings: this.#settings })
      return
    }
    if (message.type === 'settings') return
    const id = message.type === 'status' ? message.status.id : message.device
    for (const slot of this.#slots) if (id === '*' || slot.id === id) slot.receive(message, now)
  }

  #onChanges(changes: readonly WindowChange[]): void {
    let corrections = 0
    for (const change of changes) {
      if (change.type !== 'correction') continue
      corrections++
      for (const watch of this.#watches) watch.count(change)
      this.#stormTally?.count(change)
    }
    if (corrections === 0) return
    const now = this.#now()
    this.#lateCorrections = [...lateCorrectionsOf(changes, now).reverse(), ...this.#lateCorrections].slice(0, LATE_CORRECTIONS_KEPT)
  }

  #setOnline(id: string, online: boolean, now: number, by: 'operator' | 'intro' | 'storm'): void {
    const slot = this.slot(id)
    if (slot === undefined) return
    const status = slot.status(now)
    if (status !== null && status.online === online) return
    if (online) {
      const offlineMs = status?.offlineSince == null ? 0 : now - status.offlineSince
      if (this.#storm !== null || by === 'storm') this.#stormTally?.reconnected()
      else this.#watches.push(new ReconnectWatch(id, now, offlineMs, status?.offlineReadings ?? 0))
    }
    slot.command(online ? 'online' : 'offline', now)
  }

  #startIntro(now: number): void {
    const pick = pickTourDevice(this.#slots.map((slot) => slot.profile))
    if (pick === undefined) return
    this.#introDevice = pick
    this.#schedules.push(new ToggleSchedule('intro', planIntro(pick, now, this.#settings.allowedLatenessMs)))
  }

  #applyToggle(toggle: Toggle, schedule: string, now: number): void {
    this.#setOnline(toggle.device, toggle.online, now, schedule === 'storm' ? 'storm' : 'intro')
    if (schedule !== 'intro') return
    this.#log.add(
      now,
      toggle.online ? 'good' : 'warn',
      toggle.online
        ? `Tour: ${toggle.device} reconnects; its document catches up and corrects the windows that fired without it`
        : `Tour: ${toggle.device} loses its connection; it keeps ingesting into its own engine and write-ahead log`,
    )
  }

  #finishSchedules(now: number): void {
    if (!this.#schedules.some((schedule) => schedule.done)) return
    for (const schedule of this.#schedules) if (schedule.done && schedule.name === 'intro') this.#introDevice = null
    this.#schedules = this.#schedules.filter((schedule) => !schedule.done)
    if (this.#storm !== null && !this.#schedules.some((schedule) => schedule.name === 'storm')) {
      this.#storm = null
      // The storm's corrections are counted until the last backlog had time to land.
      this.#stormSettlesAt = now + RECONNECT_SETTLE_MS
    }
  }

  #finishWatches(now: number): void {
    if (this.#watches.length > 0) {
      const lastHeard = this.#links.lastHeard()
      for (const watch of this.#watches) {
        const status = this.slot(watch.device)?.status(now)
        const heard = lastHeard.get(watch.device) ?? null
        if (status?.online === true && status.pending === 0 && heard !== null && heard >= watch.at) watch.caughtUp(now)
        if (!watch.due(now)) continue
        const report = watch.report()
        this.#log.add(now, report.tone, report.text)
      }
      this.#watches = this.#watches.filter((watch) => !watch.due(now))
    }
    const tally = this.#stormTally
    if (tally !== null && this.#stormSettlesAt !== null && now >= this.#stormSettlesAt) {
      const report = tally.report()
      this.#log.add(now, report.tone, report.text)
      this.#stormTally = null
      this.#stormSettlesAt = null
    }
  }

  // Proof covers known sources only: until a device's state first lands, the others can
  // prove windows it has readings for, and its cells then correct them.
  #noteAllReported(now: number): void {
    if (this.#allReported || now - this.#reportedCheckAt < 1_000) return
    this.#reportedCheckAt = now
    if (this.#dashboard.stats().sources < this.#slots.length) return
    this.#allReported = true
    this.#log.add(
      now,
      'info',
      `All ${this.#slots.length} devices' documents have reached the dashboard. The first windows were corrected as each joined: proof covers only devices the engine already knows.`,
    )
  }

  /** `refreshDevices` false: device rows are re-read only if the last read is older than DEVICE_REFRESH_MS. */
  #publish(now: number, refreshDevices = true): void {
    this.#snapshot = this.#makeSnapshot(now, this.#snapshot.devices, refreshDevices)
    for (const listener of this.#listeners) listener()
  }

  #makeSnapshot(now: number, previous: readonly DeviceRow[], refreshDevices = true): FleetSnapshot {
    let devices = previous
    if (refreshDevices || now - this.#devicesAt >= DEVICE_REFRESH_MS || previous.length !== this.#slots.length) {
      this.#devicesAt = now
      const lastHeard = this.#links.lastHeard()
      const next = this.#slots.map((slot, i) => rowOf(slot, lastHeard.get(slot.id) ?? null, now, previous[i]))
      if (next.length !== previous.length || next.some((row, i) => row !== previous[i])) devices = next
      this.#relayRooms = sameFollowed(this.#relayRooms, this.#links.followed())
    }
    return {
      generation: this.#generation,
      dashboard: this.#dashboard,
      settings: this.#settings,
      epoch: epochOf(this.#settings),
      wiring: this.#wiring,
      now,
      paused: this.#paused,
      storm: this.#storm,
      introDevice: this.#introDevice,
      devices,
      activity: this.#log.entries(),
      lateCorrections: this.#lateCorrections,
      relayRooms: this.#relayRooms,
    }
  }
}

/** `next`, or `previous` itself when it says the same (an unchanged slice does not render). */
function sameFollowed(previous: FollowedRooms | null, next: FollowedRooms | null): FollowedRooms | null {
  if (previous === null || next === null) return next
  const same =
    previous.rooms === next.rooms &&
    previous.refused.length === next.refused.length &&
    previous.refused.every((r, i) => r.room === next.refused[i]?.room && r.refusal === next.refused[i]?.refusal)
  return same ? previous : next
}

/** The slot's row, or `previous` itself when nothing in it changed (memoized rows skip rendering). */
function rowOf(slot: DeviceSlot, lastHeard: number | null, now: number, previous: DeviceRow | undefined): DeviceRow {
  const next: DeviceRow = { id: slot.id, where: slot.where, status: slot.status(now), lastHeard }
  if (
    previous !== undefined &&
    previous.id === next.id &&
    previous.where === next.where &&
    previous.status === next.status &&
    previous.lastHeard === next.lastHeard
  ) {
    return previous
  }
  return next
}
