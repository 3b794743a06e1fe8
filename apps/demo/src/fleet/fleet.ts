import type { WindowChange } from '@tidemark/engine'
import { ActivityLog } from './activityLog.ts'
import { ConnectivityDrills, type OnlineChanger } from './connectivityDrills.ts'
import { type ControlChannel, type ControlMessage, silentControlChannel } from './controlChannel.ts'
import { CorrectionLedger } from './correctionLedger.ts'
import { DashboardConnection } from './dashboardConnection.ts'
import { type DeviceCommand, DeviceSlot } from './deviceSlot.ts'
import { RETIRE_ACK_MS, type RetireReply } from './deviceStatus.ts'
import type { FleetHosts } from './fleetHosts.ts'
import { CHART_WINDOWS, DEFAULT_SETTINGS, deviceIndexOf, epochOf, type FleetSettings, MAX_DEVICES } from './fleetSettings.ts'
import { type DeviceRow, type FleetSnapshot, rowOf } from './fleetSnapshot.ts'
import type { FleetWiring } from './fleetWiring.ts'

export interface FleetOptions {
  readonly wiring: FleetWiring
  /** Where the engines run: `workerHosts()` in the browser. */
  readonly hosts: FleetHosts
  readonly settings?: FleetSettings
  /** Processing-time clock of the simulation's plans and reports; default `Date.now`. */
  readonly now?: () => number
  /** Play the first-minute tour (one device offline, then back); default true. */
  readonly intro?: boolean
  /** Messages to and from `?device=` tabs; default none. */
  readonly control?: ControlChannel
}

/** A device tab that has not said so for this long is taken to be closed. */
const TAB_STALE_MS = 3_000

/**
 * The dashboard page's fleet: the dashboard engine and a slot per device, each a `RemoteEngine`
 * of a host worker (`@tidemark/worker`). A device's host (named after the device and the epoch)
 * runs its producer, its engine over its IndexedDB log and its relay link; every page that opens
 * the device reaches that one host, so a `?device=` tab shares it. The dashboard's host runs the
 * dashboard engine, which follows every device's room read-only; this page's charts read its
 * mirror. Driven by `tick(now)`; controls (offline, crash, storm, pause, settings) are host
 * commands; the UI reads `snapshot()` through `subscribe`. No React here.
 *
 * The dashboard engine owns no source and ingests nothing: its windows are the lattice
 * state that the devices' engines wrote into their documents, merged.
 *
 * @example
 * const fleet = new Fleet({ wiring: await loadWiring('f1', fetch, probeWebsocket), hosts: workerHosts(), control: openControlChannel('c') })
 * fleet.start(100)
 * fleet.setOnline('d03', false) // its host's relay link disconnects; it keeps ingesting
 * fleet.snapshot().dashboard?.results({ window: 'tumbling:2000', key: 'temp' })
 */
export class Fleet {
  readonly #now: () => number
  readonly #wiring: FleetWiring
  readonly #hosts: FleetHosts
  readonly #control: ControlChannel
  readonly #log = new ActivityLog()
  readonly #listeners = new Set<() => void>()
  readonly #stopControl: () => void
  readonly #tabs = new Map<string, number>()
  /** Host restarts already reported, by device. */
  readonly #restartsSeen = new Map<string, number>()
  #settings: FleetSettings
  readonly #dashboard: DashboardConnection
  #slots: DeviceSlot[] = []
  readonly #drills: ConnectivityDrills
  #paused = false
  readonly #corrections = new CorrectionLedger()
  #allReported = false
  #reportedCheckAt = Number.NEGATIVE_INFINITY
  #starting: Promise<void> = Promise.resolve()
  #closed = false
  #snapshot: FleetSnapshot

  constructor(options: FleetOptions) {
    this.#now = options.now ?? Date.now
    this.#wiring = options.wiring
    this.#hosts = options.hosts
    this.#control = options.control ?? silentControlChannel
    this.#settings = options.settings ?? DEFAULT_SETTINGS
    this.#drills = new ConnectivityDrills({
      log: this.#log,
      setOnline: (id, online, now, by) => this.#setOnline(id, online, now, by),
      status: (id) => this.slot(id)?.status() ?? null,
    })
    this.#dashboard = new DashboardConnection({
      hosts: this.#hosts,
      wiring: this.#wiring,
      log: this.#log,
      now: this.#now,
      onChanges: (changes) => this.#onChanges(changes),
      changed: () => this.#publish(this.#now()),
      closed: () => this.#closed,
    })
    this.#stopControl = this.#control.listen((message) => this.#receive(message))
    const now = this.#now()
    this.#slots = this.#makeSlots(0, this.#settings.deviceCount)
    for (const slot of this.#slots) slot.start()
    this.#connectDashboard()
    if (options.intro !== false) this.#drills.startIntro(this.#slots.map((slot) => slot.profile), now, this.#settings.allowedLatenessMs)
    if (this.#wiring.relayNotice !== null) this.#log.add(now, 'warn', this.#wiring.relayNotice)
    this.#snapshot = this.#makeSnapshot(now, [])
  }

  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  snapshot = (): FleetSnapshot => this.#snapshot

  /** Resolves once the dashboard's host welcomed this page and every device's host is booted (for tests). */
  async ready(): Promise<void> {
    await this.#starting
    await this.#dashboard.ready
    await Promise.all(this.#slots.map((slot) => slot.opened()))
  }

  /** The slot of device `id`. */
  slot(id: string): DeviceSlot | undefined {
    return this.#slots.find((slot) => slot.id === id)
  }

  /** Ticks every `intervalMs` on the real clock until the returned function is called. */
  start(intervalMs = 100): () => void {
    const timer = setInterval(() => this.tick(), intervalMs)
    return () => clearInterval(timer)
  }

  /** Advances the simulation to `now`: connectivity plans, status polls, reports; then publishes. */
  tick(now = this.#now()): void {
    this.#drills.play(now)
    for (const slot of this.#slots) slot.step(now)
    this.#dashboard.pollLinks(now)
    this.#noteRestarts(now)
    this.#drills.finishReports(now, this.#dashboard.links?.lastHeard ?? {})
    this.#noteAllReported(now)
    this.#publish(now)
  }

  /** Connects or disconnects a device's link (in its host); it keeps ingesting into its log. */
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

  /**
   * Crashes a device's host: its worker ends without closing the engine (no last checkpoint).
   * The pages that have the device open start its host again, which recovers it from the log.
   * Resolves once the host answered.
   */
  async crash(id: string): Promise<void> {
    const slot = this.slot(id)
    if (slot === undefined) return
    try {
      const lost = await slot.command('crash')
      this.#log.add(
        this.#now(),
        'warn',
        `${id} crashed: its host worker ended without closing its engine${lost > 0 ? `; ${lost} readings sampled or ingested and not yet durable died with it (never acknowledged)` : ''}. Its pages start the host again, which recovers it from its write-ahead log.`,
      )
    } catch (error) {
      this.#log.add(this.#now(), 'bad', `${id} could not be crashed: ${messageOf(error)}`)
    }
    this.#publish(this.#now())
  }

  setPaused(paused: boolean): void {
    const now = this.#now()
    if (paused === this.#paused) return
    this.#paused = paused
    for (const slot of this.#slots) this.#command(slot, paused ? 'pause' : 'resume')
    this.#log.add(now, 'info', paused ? 'Producers paused' : 'Producers resumed')
    this.#publish(now)
  }

  /** Many devices drop off and come back at random for `durationMs`; all are online when it ends. */
  startStorm(durationMs: number): void {
    const now = this.#now()
    this.#drills.startStorm(
      this.#slots.map((slot) => slot.id),
      now,
      durationMs,
      this.#settings.seed,
    )
    this.#publish(now)
  }

  /**
   * Applies new settings. A new epoch (window, allowed lateness) retires every device's host
   * (a clean stop) and starts the hosts of that epoch, which reopen their own logs of it; in the
   * same epoch, devices past the new count are retired and new ones started, the others run on.
   * Devices past the new count leave the fleet: their hosts finish their sources before they end
   * (`engine.finishSource`), so no dashboard that gets their clocks waits for them. The dashboard
   * engine gets a host of the new settings either way.
   */
  configure(patch: Partial<FleetSettings>): void {
    const now = this.#now()
    const previous = this.#settings
    const next = { ...previous, ...patch }
    const settings = { ...next, deviceCount: Math.max(1, Math.min(MAX_DEVICES, Math.round(next.deviceCount))) }
    this.#settings = settings
    this.#drills.reset()
    this.#corrections.clearLate()
    const sameEpoch = epochOf(previous) === epochOf(settings) && previous.seed === settings.seed
    const kept = sameEpoch ? this.#slots.slice(0, settings.deviceCount) : []
    const retiring = this.#slots.slice(kept.length)
    const added = this.#makeSlots(kept.length, settings.deviceCount)
    this.#slots = [...kept, ...added]
    // A device retired and started again in the same epoch has the same host name: the new
    // host waits for the old one to be gone.
    // Past the new count a device leaves the fleet (in a new epoch the others only move on to it).
    const leaving = (slot: DeviceSlot): boolean => (deviceIndexOf(slot.id) ?? 0) >= settings.deviceCount
    const retired = retiring.map(async (slot) => this.#noteRetired(slot.id, leaving(slot), await slot.retire(leaving(slot))))
    this.#starting = Promise.all(retired).then(() => {
      if (this.#closed) return
      for (const slot of added) slot.start()
    })
    this.#connectDashboard()
    this.#control.post({ type: 'settings', settings })
    this.#log.add(
      now,
      'info',
      sameEpoch
        ? `Settings: ${settings.deviceCount} devices (${added.length} started, ${retiring.length} retired), out-of-orderness ${settings.outOfOrdernessMs / 1000} s; the dashboard engine reopened`
        : `Engines reopened: ${settings.deviceCount} devices, ${settings.windowMs / 1000} s windows, lateness ${settings.allowedLatenessMs / 1000} s (epoch ${epochOf(settings)})`,
    )
    this.#publish(now)
  }

  /** What a device's host said it did as it retired; a device that left the fleet gets a line in the activity feed. */
  #noteRetired(id: string, left: boolean, reply: RetireReply | null): void {
    if (!left || reply === null || this.#closed) return
    const now = this.#now()
    if (!reply.finished) {
      this.#log.add(now, 'bad', `${id} retired without finishing its source (its write-ahead log refused the write): dashboards go on without it only once it is idle (fallback windows)`)
    } else if (reply.relay === 'acknowledged') {
      this.#log.add(now, 'info', `${id} retired: its source finished, and the relay has it: the dashboard no longer waits for ${id}, and later windows are proven without it`)
    } else if (reply.relay === null) {
      this.#log.add(now, 'info', `${id} retired: its source finished`)
    } else {
      const why = reply.relay === 'offline' ? 'it was offline' : `the relay did not acknowledge it within ${RETIRE_ACK_MS / 1000} s`
      this.#log.add(now, 'warn', `${id} retired: its source finished in its write-ahead log, but ${why}: the dashboard goes on without ${id} only once it is idle (fallback windows)`)
    }
    this.#publish(now)
  }

  /** Disconnects this page from every host (the hosts stop when no page has them open). */
  async close(): Promise<void> {
    this.#closed = true
    this.#stopControl()
    this.#listeners.clear()
    this.#dashboard.stopChanges()
    await this.#starting
    await this.#dashboard.ready
    await Promise.all(this.#slots.map((slot) => slot.close()))
    await this.#dashboard.engine?.close().catch(() => {})
  }

  #makeSlots(from: number, to: number): DeviceSlot[] {
    const slots: DeviceSlot[] = []
    for (let index = from; index < to; index++) {
      const slot: DeviceSlot = new DeviceSlot({
        index,
        settings: this.#settings,
        wiring: this.#wiring,
        hosts: this.#hosts,
        // A host that restarted is booted with what this page last knew of the device.
        switches: () => ({ online: slot.status()?.online ?? true, paused: this.#paused }),
        // A boot its host refused, a status it answered that is not one: shown in the activity feed (and on its row).
        onError: (message) => this.#log.add(this.#now(), 'bad', message),
      })
      slots.push(slot)
    }
    return slots
  }

  /** A host for the dashboard engine of the current settings; the previous one is retired. */
  #connectDashboard(): void {
    this.#allReported = false
    this.#corrections.forgetRevisions()
    this.#dashboard.connect(
      this.#settings,
      this.#slots.map((slot) => slot.id),
    )
  }

  #command(slot: DeviceSlot, command: DeviceCommand): void {
    slot.command(command).catch((error: unknown) => {
      this.#log.add(this.#now(), 'bad', `${slot.id}: ${command} did not reach its host: ${messageOf(error)}`)
    })
  }

  #receive(message: ControlMessage): void {
    if (message.type === 'hello') {
      this.#control.post({ type: 'settings', settings: this.#settings })
      return
    }
    if (message.type === 'tab') this.#tabs.set(message.device, this.#now())
  }

  /** Each correction counted once (see `CorrectionLedger`), credited to the reconnects watched now. */
  #onChanges(changes: readonly WindowChange[]): void {
    const fresh = this.#corrections.fresh(changes)
    for (const change of fresh) this.#drills.count(change)
    if (fresh.length === 0) return
    // Windows behind the watermark by more than the charts' span are never corrected again here.
    this.#corrections.record(
      fresh,
      this.#now(),
      () => (this.#dashboard.engine?.watermark() ?? Number.NEGATIVE_INFINITY) - CHART_WINDOWS * this.#settings.windowMs - this.#settings.allowedLatenessMs,
    )
  }

  #setOnline(id: string, online: boolean, now: number, by: OnlineChanger): void {
    const slot = this.slot(id)
    if (slot === undefined) return
    const status = slot.status()
    if (status !== null && status.online === online) return
    if (online) this.#drills.reconnecting(id, now, status, by)
    this.#command(slot, online ? 'online' : 'offline')
  }

  /** A device whose host came back (after a crash) and answered: what its log gave back. */
  #noteRestarts(now: number): void {
    for (const slot of this.#slots) {
      const { restarts, state, instance, mode } = slot.host
      const seen = this.#restartsSeen.get(slot.id) ?? 0
      const recovery = slot.status()?.recovery ?? null
      if (restarts <= seen || state !== 'connected' || slot.statusHost !== instance || recovery === null || slot.status()?.phase !== 'running') continue
      this.#restartsSeen.set(slot.id, restarts)
      this.#log.add(
        now,
        recovery.lostEvents > 0 || recovery.lossUnknown ? 'bad' : 'good',
        `${slot.id}'s host is back (${mode} worker ${instance.slice(0, 8)}): recovered ${recovery.recoveredReadings} readings from its write-ahead log (${recovery.replayedRecords} records replayed, ${recovery.lossUnknown ? 'loss unknown' : `${recovery.lostEvents} lost`}); it continues after seq ${recovery.resumedAfterSeq}`,
      )
    }
  }

  // Proof covers known sources only: until a device's state first lands, the others can
  // prove windows it has readings for, and its cells then correct them (devices that start
  // after the dashboard engine's refill: a new fleet, a larger one).
  #noteAllReported(now: number): void {
    const dashboard = this.#dashboard.engine
    if (dashboard === null || this.#allReported || now - this.#reportedCheckAt < 1_000) return
    this.#reportedCheckAt = now
    if (dashboard.stats().sources < this.#slots.length) return
    this.#allReported = true
    // A refill that took every device's room together corrected nothing (the activity feed said so).
    const refill = this.#dashboard.links?.followed?.refill
    if (refill?.state === 'merged' && refill.rooms >= this.#slots.length) return
    this.#log.add(
      now,
      'info',
      `All ${this.#slots.length} devices' documents have reached the dashboard. The first windows were corrected as each joined: proof covers only devices the engine already knows.`,
    )
  }

  #publish(now: number): void {
    this.#snapshot = this.#makeSnapshot(now, this.#snapshot.devices)
    for (const listener of this.#listeners) listener()
  }

  #makeSnapshot(now: number, previous: readonly DeviceRow[]): FleetSnapshot {
    const lastHeard = this.#dashboard.links?.lastHeard ?? {}
    const next = this.#slots.map((slot, i) => {
      const tabAt = this.#tabs.get(slot.id)
      return rowOf(slot, lastHeard[slot.id] ?? null, tabAt !== undefined && now - tabAt <= TAB_STALE_MS, previous[i])
    })
    const devices = next.length === previous.length && next.every((row, i) => row === previous[i]) ? previous : next
    return {
      generation: this.#dashboard.generation,
      dashboard: this.#dashboard.engine,
      dashboardHost: this.#dashboard.host,
      settings: this.#settings,
      epoch: epochOf(this.#settings),
      wiring: this.#wiring,
      now,
      paused: this.#paused,
      storm: this.#drills.storm,
      introDevice: this.#drills.introDevice,
      devices,
      activity: this.#log.entries(),
      lateCorrections: this.#corrections.lateCorrections,
      relayRooms: this.#dashboard.links?.followed ?? null,
    }
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
