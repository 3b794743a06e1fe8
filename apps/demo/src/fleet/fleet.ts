import type { WindowChange } from '@tidemark/engine'
import type { RemoteEngine, WorkerConnection } from '@tidemark/worker'
import type { FleetAggregates } from './fleetAggregates.ts'
import { type ActivityEntry, ActivityLog } from './activityLog.ts'
import { DEFAULT_STORM, pickTourDevice, planIntro, planStorm, type Toggle } from './connectivityPlan.ts'
import { type ControlChannel, type ControlMessage, silentControlChannel } from './controlChannel.ts'
import type { FollowedRooms } from './dashboardLinks.ts'
import type { LinksReport } from './dashboardHost.ts'
import { type DeviceCommand, type DeviceHostView, DeviceSlot } from './deviceSlot.ts'
import type { DeviceStatus } from './deviceStatus.ts'
import type { FleetHosts } from './fleetHosts.ts'
import { CHART_WINDOWS, DEFAULT_SETTINGS, epochOf, type FleetSettings, MAX_DEVICES } from './fleetSettings.ts'
import { dashboardHostName, type FleetWiring } from './fleetWiring.ts'
import { createPrng } from './prng.ts'
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
  /** This page's link to the device's host worker. */
  readonly host: DeviceHostView
  /** A `?device=` tab of this browser has the device open too (it said so within the last 3 s). */
  readonly tab: boolean
  /** What the device's host last reported; null before its first answer. */
  readonly status: DeviceStatus | null
  /** When the dashboard's document of this device (its room, or its tab channel) last synced. */
  readonly lastHeard: number | null
}

/** Everything the dashboard shows that is not engine state; a new object per tick, immutable. */
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

/** The dashboard's links are asked how they follow the fleet at most this often. */
const LINKS_POLL_MS = 500
/** A device tab that has not said so for this long is taken to be closed. */
const TAB_STALE_MS = 3_000
const LATE_CORRECTIONS_KEPT = 60
/** Windows whose counted revision is remembered before the old ones are let go. */
const CORRECTED_KEPT = 2_000

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
  #generation = 0
  #dashboard: RemoteEngine<FleetAggregates> | null = null
  #dashboardHost: WorkerConnection | null = null
  #dashboardReady: Promise<void> = Promise.resolve()
  #stopChanges: () => void = () => {}
  #links: LinksReport | null = null
  #linksAt = Number.NEGATIVE_INFINITY
  #linksPolling = false
  #slots: DeviceSlot[] = []
  #schedules: ToggleSchedule[] = []
  #storm: FleetSnapshot['storm'] = null
  #stormTally: StormTally | null = null
  #stormSettlesAt: number | null = null
  #watches: ReconnectWatch[] = []
  #introDevice: string | null = null
  #paused = false
  #lateCorrections: readonly LateCorrection[] = []
  /** The last revision of each window counted as a correction (`window|key|start`). */
  readonly #corrected = new Map<string, number>()
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
    this.#stopControl = this.#control.listen((message) => this.#receive(message))
    const now = this.#now()
    this.#slots = this.#makeSlots(0, this.#settings.deviceCount)
    for (const slot of this.#slots) slot.start()
    this.#connectDashboard()
    if (options.intro !== false) this.#startIntro(now)
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
    await this.#dashboardReady
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
    for (const schedule of this.#schedules) {
      for (const toggle of schedule.due(now)) this.#applyToggle(toggle, schedule.name, now)
    }
    this.#finishSchedules(now)
    for (const slot of this.#slots) slot.step(now)
    this.#pollLinks(now)
    this.#noteRestarts(now)
    this.#finishWatches(now)
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

  /**
   * Applies new settings. A new epoch (window, allowed lateness) retires every device's host
   * (a clean stop) and starts the hosts of that epoch, which reopen their own logs of it; in the
   * same epoch, devices past the new count are retired and new ones started, the others run on.
   * The dashboard engine gets a host of the new settings either way.
   */
  configure(patch: Partial<FleetSettings>): void {
    const now = this.#now()
    const previous = this.#settings
    const next = { ...previous, ...patch }
    const settings = { ...next, deviceCount: Math.max(1, Math.min(MAX_DEVICES, Math.round(next.deviceCount))) }
    this.#settings = settings
    this.#schedules = []
    this.#storm = null
    this.#stormTally = null
    this.#stormSettlesAt = null
    this.#watches = []
    this.#introDevice = null
    this.#lateCorrections = []
    const sameEpoch = epochOf(previous) === epochOf(settings) && previous.seed === settings.seed
    const kept = sameEpoch ? this.#slots.slice(0, settings.deviceCount) : []
    const retiring = this.#slots.slice(kept.length)
    const added = this.#makeSlots(kept.length, settings.deviceCount)
    this.#slots = [...kept, ...added]
    // A device retired and started again in the same epoch has the same host name: the new
    // host waits for the old one to be gone.
    this.#starting = Promise.all(retiring.map((slot) => slot.retire())).then(() => {
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

  /** Disconnects this page from every host (the hosts stop when no page has them open). */
  async close(): Promise<void> {
    this.#closed = true
    this.#stopControl()
    this.#listeners.clear()
    this.#stopChanges()
    await this.#starting
    await this.#dashboardReady
    await Promise.all(this.#slots.map((slot) => slot.close()))
    await this.#dashboard?.close().catch(() => {})
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
      })
      slots.push(slot)
    }
    return slots
  }

  /** A host for the dashboard engine of the current settings; the previous one is retired. */
  #connectDashboard(): void {
    const generation = ++this.#generation
    const settings = this.#settings
    const old = this.#dashboard
    this.#stopChanges()
    this.#stopChanges = () => {}
    this.#dashboard = null
    this.#dashboardHost = null
    this.#links = null
    this.#allReported = false
    this.#corrected.clear()
    if (old !== null) void retireDashboard(old)
    const ready = this.#hosts.connect({
      kind: 'dashboard',
      name: dashboardHostName(this.#wiring, settings),
      config: { settings, wiring: this.#wiring, devices: this.#slots.map((slot) => slot.id) },
    })
    this.#dashboardReady = ready.then(
      (remote) => {
        if (generation !== this.#generation || this.#closed) {
          void remote.close().catch(() => {})
          return
        }
        this.#dashboard = remote
        this.#dashboardHost = remote.connection()
        this.#stopChanges = remote.subscribe((changes) => this.#onChanges(changes))
        remote.onConnection((connection) => {
          if (remote !== this.#dashboard) return
          this.#dashboardHost = connection
          this.#publish(this.#now())
        })
        this.#publish(this.#now())
      },
      (error: unknown) => {
        this.#log.add(this.#now(), 'bad', `The dashboard engine's host did not start: ${messageOf(error)}`)
      },
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

  /**
   * Counts each correction once: by its window and revision. The page's mirror may hand a
   * window's latest result out again as a change (when its history arrives, or when a new
   * dashboard host's state replaces the mirror), and that is no new correction.
   */
  #onChanges(changes: readonly WindowChange[]): void {
    const fresh: WindowChange[] = []
    for (const change of changes) {
      if (change.type !== 'correction') continue
      const { window, key, start, revision } = change.result
      const at = `${window}|${key}|${start}`
      if (revision <= (this.#corrected.get(at) ?? 0)) continue
      this.#corrected.set(at, revision)
      fresh.push(change)
      for (const watch of this.#watches) watch.count(change)
      this.#stormTally?.count(change)
    }
    if (fresh.length === 0) return
    const now = this.#now()
    this.#lateCorrections = [...lateCorrectionsOf(fresh, now).reverse(), ...this.#lateCorrections].slice(0, LATE_CORRECTIONS_KEPT)
    // Windows behind the watermark by more than the charts' span are never corrected again here.
    if (this.#corrected.size > CORRECTED_KEPT) {
      const horizon = (this.#dashboard?.watermark() ?? Number.NEGATIVE_INFINITY) - CHART_WINDOWS * this.#settings.windowMs - this.#settings.allowedLatenessMs
      for (const at of this.#corrected.keys()) if (Number(at.split('|')[2]) < horizon) this.#corrected.delete(at)
    }
  }

  /** Asks the dashboard's host how its links follow the fleet (last heard per device, rooms, errors). */
  #pollLinks(now: number): void {
    const dashboard = this.#dashboard
    if (dashboard === null || this.#linksPolling || now - this.#linksAt < LINKS_POLL_MS) return
    this.#linksAt = now
    this.#linksPolling = true
    dashboard
      .command('links')
      .then(
        (report) => {
          if (dashboard !== this.#dashboard) return
          const links = report as LinksReport
          for (const error of links.errors) this.#log.add(this.#now(), 'bad', `Replication: ${error}`)
          this.#links = { ...links, followed: sameFollowed(this.#links?.followed ?? null, links.followed) }
        },
        () => {
          // Its host went away mid-call: the next poll asks the next one.
        },
      )
      .finally(() => {
        this.#linksPolling = false
      })
  }

  #setOnline(id: string, online: boolean, now: number, by: 'operator' | 'intro' | 'storm'): void {
    const slot = this.slot(id)
    if (slot === undefined) return
    const status = slot.status()
    if (status !== null && status.online === online) return
    if (online) {
      const offlineMs = status?.offlineSince == null ? 0 : now - status.offlineSince
      if (this.#storm !== null || by === 'storm') this.#stormTally?.reconnected()
      else this.#watches.push(new ReconnectWatch(id, now, offlineMs, status?.offlineReadings ?? 0))
    }
    this.#command(slot, online ? 'online' : 'offline')
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

  #finishWatches(now: number): void {
    if (this.#watches.length > 0) {
      const lastHeard = this.#links?.lastHeard ?? {}
      for (const watch of this.#watches) {
        const status = this.slot(watch.device)?.status() ?? null
        const heard = lastHeard[watch.device] ?? null
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
    const dashboard = this.#dashboard
    if (dashboard === null || this.#allReported || now - this.#reportedCheckAt < 1_000) return
    this.#reportedCheckAt = now
    if (dashboard.stats().sources < this.#slots.length) return
    this.#allReported = true
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
    const lastHeard = this.#links?.lastHeard ?? {}
    const next = this.#slots.map((slot, i) => {
      const tabAt = this.#tabs.get(slot.id)
      return rowOf(slot, lastHeard[slot.id] ?? null, tabAt !== undefined && now - tabAt <= TAB_STALE_MS, previous[i])
    })
    const devices = next.length === previous.length && next.every((row, i) => row === previous[i]) ? previous : next
    const dashboard = this.#dashboard
    return {
      generation: this.#generation,
      dashboard,
      dashboardHost: this.#dashboardHost,
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
      relayRooms: this.#links?.followed ?? null,
    }
  }
}

/** Retires the dashboard engine's host of earlier settings (its worker ends), then disconnects. */
async function retireDashboard(engine: RemoteEngine<FleetAggregates>): Promise<void> {
  try {
    if (engine.connection().state === 'connected') await engine.command('retire')
  } catch {
    // Gone already.
  }
  await engine.close().catch(() => {})
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
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
function rowOf(slot: DeviceSlot, lastHeard: number | null, tab: boolean, previous: DeviceRow | undefined): DeviceRow {
  const next: DeviceRow = { id: slot.id, host: slot.host, tab, status: slot.status(), lastHeard }
  if (
    previous !== undefined &&
    previous.id === next.id &&
    previous.host === next.host &&
    previous.tab === next.tab &&
    previous.status === next.status &&
    previous.lastHeard === next.lastHeard
  ) {
    return previous
  }
  return next
}
