import type { Engine } from '@tidemark/engine'
import { type ActivityEntry, ActivityLog } from './activityLog.ts'
import { describeBacklog, StormTally } from './backlogReport.ts'
import { DEFAULT_STORM, pickTourDevice, planIntro, planStorm, type Toggle } from './connectivityPlan.ts'
import { createDeviceProfile, Device } from './device.ts'
import { type DeviceStatus, deviceStatus } from './deviceStatus.ts'
import {
  createDashboardEngine,
  createDeviceEngine,
  DEFAULT_SETTINGS,
  type FleetSettings,
  MAX_DEVICES,
} from './fleetSettings.ts'
import { type Delivery, DeviceLink } from './link.ts'
import { networkLatency } from './networkLatency.ts'
import { createPrng } from './prng.ts'
import { DEFAULT_FAULTS } from './readingProducer.ts'
import { ToggleSchedule } from './toggleSchedule.ts'

/** Everything the dashboard shows that is not engine state; a new object per tick, immutable. */
export interface FleetSnapshot {
  /** Bumped whenever the engines are recreated. */
  readonly generation: number
  readonly dashboard: Engine
  readonly settings: FleetSettings
  readonly now: number
  readonly paused: boolean
  /** The running reconnect storm, if any. */
  readonly storm: { readonly endsAt: number; readonly devices: number } | null
  /** The device the first-minute tour takes offline, while the tour runs. */
  readonly introDevice: string | null
  readonly devices: readonly DeviceStatus[]
  readonly activity: readonly ActivityEntry[]
}

export interface FleetOptions {
  readonly settings?: FleetSettings
  /** Processing-time clock, for the simulation and every engine; default `Date.now`. */
  readonly now?: () => number
  /** Play the first-minute tour (one device offline, then back); default true. */
  readonly intro?: boolean
}

const REBOOT_MS = 1_500
/** Device rows refresh at most this often between control actions: a 64-row table need not repaint 10 times a second. */
const DEVICE_REFRESH_MS = 250

/**
 * The simulated fleet: devices, their links and the dashboard engine, driven
 * by `tick(now)`. Controls (offline, crash, storm, pause, settings) are
 * methods; the UI reads `snapshot()` through `subscribe`. No React here.
 */
export class Fleet {
  readonly #now: () => number
  readonly #log = new ActivityLog()
  readonly #listeners = new Set<() => void>()
  #settings: FleetSettings
  #generation = 0
  #dashboard: Engine
  #devices: Device[] = []
  #links: DeviceLink[] = []
  #schedules: ToggleSchedule[] = []
  #storm: FleetSnapshot['storm'] = null
  #introDevice: string | null = null
  #paused = false
  /** Devices whose uploads reached the dashboard at least once since the engines were made. */
  #reported = new Set<string>()
  #devicesAt = Number.NEGATIVE_INFINITY
  #stormTally = new StormTally()
  #snapshot: FleetSnapshot

  constructor(options: FleetOptions = {}) {
    this.#now = options.now ?? Date.now
    this.#settings = options.settings ?? DEFAULT_SETTINGS
    this.#dashboard = this.#build(this.#now())
    if (options.intro !== false) this.#startIntro(this.#now())
    this.#snapshot = this.#makeSnapshot(this.#now(), [])
  }

  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  snapshot = (): FleetSnapshot => this.#snapshot

  /** Ticks every `intervalMs` on the real clock until the returned function is called. */
  start(intervalMs = 100): () => void {
    const timer = setInterval(() => this.tick(), intervalMs)
    return () => clearInterval(timer)
  }

  /** Advances the simulation to `now`: connectivity plans, devices, links, idle check; then publishes. */
  tick(now = this.#now()): void {
    for (const schedule of this.#schedules) {
      for (const toggle of schedule.due(now)) this.#applyToggle(toggle, schedule.name, now)
    }
    this.#finishSchedules(now)
    this.#devices.forEach((device, i) => {
      const reboots = device.reboots
      const upload = device.step(now, !this.#paused)
      if (device.reboots !== reboots) {
        this.#log.add(now, 'info', `${device.id} rebooted; continues at seq ${device.seq + 1}`)
      }
      if (upload !== null) this.#links[i]?.send(upload, now)
    })
    for (const link of this.#links) {
      for (const delivery of link.deliverDue(now)) {
        if (delivery.backlog) this.#logBacklog(delivery, now)
        if (!this.#reported.has(delivery.source)) this.#noteReported(delivery.source, now)
      }
    }
    this.#dashboard.tick()
    this.#publish(now, false)
  }

  setOnline(id: string, online: boolean): void {
    const now = this.#now()
    this.#linkOf(id)?.setOnline(online, now)
    this.#log.add(now, online ? 'good' : 'warn', `${id} ${online ? 'back online' : 'taken offline'}`)
    this.#publish(now)
  }

  /** Kills a device: its engine, unsent readings and link queue are lost (no write-ahead log yet). */
  crash(id: string): void {
    const now = this.#now()
    const index = this.#devices.findIndex((device) => device.id === id)
    const device = this.#devices[index]
    const link = this.#links[index]
    if (device === undefined || link === undefined || device.phase === 'rebooting') return
    const queued = link.dropQueue()
    const buffered = device.crash(now, REBOOT_MS, queued)
    const lost = queued + buffered
    this.#log.add(
      now,
      lost > 0 ? 'bad' : 'warn',
      lost > 0
        ? `${id} crashed: lost ${lost} unsent readings (no WAL yet). The gap in its seq means windows can no longer be proven complete, only derived from the watermark.`
        : `${id} crashed with nothing unsent; rebooting`,
    )
    this.#publish(now)
  }

  setPaused(paused: boolean): void {
    const now = this.#now()
    if (paused === this.#paused) return
    this.#paused = paused
    if (!paused) for (const device of this.#devices) device.resume(now)
    this.#log.add(now, 'info', paused ? 'Producers paused' : 'Producers resumed')
    this.#publish(now)
  }

  /** Many devices drop off and come back at random for `durationMs`; all are online when it ends. */
  startStorm(durationMs: number): void {
    const now = this.#now()
    const rng = createPrng(this.#settings.seed + now)
    const toggles = planStorm(
      this.#devices.map((device) => device.id),
      now,
      { ...DEFAULT_STORM, durationMs },
      rng,
    )
    const schedule = new ToggleSchedule('storm', toggles)
    this.#schedules.push(schedule)
    const caught = new Set(toggles.map((toggle) => toggle.device)).size
    this.#storm = { endsAt: Math.max(schedule.endsAt, this.#storm?.endsAt ?? 0), devices: caught }
    this.#log.add(now, 'warn', `Reconnect storm: ${caught} devices flapping for ${Math.round(durationMs / 1000)} s`)
    this.#publish(now)
  }

  /** Applies new settings: every engine, device and queue starts afresh. */
  configure(patch: Partial<FleetSettings>): void {
    const now = this.#now()
    const next = { ...this.#settings, ...patch }
    this.#settings = { ...next, deviceCount: Math.max(1, Math.min(MAX_DEVICES, Math.round(next.deviceCount))) }
    this.#closeEngines()
    this.#schedules = []
    this.#storm = null
    this.#stormTally = new StormTally()
    this.#introDevice = null
    this.#dashboard = this.#build(now)
    const s = this.#settings
    this.#log.add(
      now,
      'info',
      `Engines recreated: ${s.deviceCount} devices, ${s.windowMs / 1000} s windows, lateness ${s.allowedLatenessMs / 1000} s`,
    )
    this.#publish(now)
  }

  close(): void {
    this.#closeEngines()
    this.#listeners.clear()
  }

  #build(now: number): Engine {
    const settings = this.#settings
    const clock = this.#now
    this.#generation++
    this.#reported = new Set()
    const dashboard = createDashboardEngine(settings, clock)
    this.#devices = []
    this.#links = []
    for (let i = 0; i < settings.deviceCount; i++) {
      const rng = createPrng(settings.seed * 7 + i * 7_919)
      const profile = createDeviceProfile(i, rng, now)
      this.#devices.push(new Device(profile, DEFAULT_FAULTS, rng, () => createDeviceEngine(settings, clock), now))
      this.#links.push(new DeviceLink(profile.id, dashboard, networkLatency(rng)))
    }
    return dashboard
  }

  #startIntro(now: number): void {
    const pick = pickTourDevice(this.#devices.map((device) => device.profile))
    if (pick === undefined) return
    this.#introDevice = pick
    this.#schedules.push(new ToggleSchedule('intro', planIntro(pick, now, this.#settings.allowedLatenessMs)))
  }

  #applyToggle(toggle: Toggle, schedule: string, now: number): void {
    this.#linkOf(toggle.device)?.setOnline(toggle.online, now)
    if (schedule === 'intro') {
      this.#log.add(
        now,
        toggle.online ? 'good' : 'warn',
        toggle.online
          ? `Tour: ${toggle.device} reconnects and uploads its queue`
          : `Tour: ${toggle.device} loses its connection; it keeps sampling and queues its readings`,
      )
    }
  }

  #finishSchedules(now: number): void {
    if (!this.#schedules.some((schedule) => schedule.done)) return
    for (const schedule of this.#schedules) {
      if (!schedule.done) continue
      if (schedule.name === 'intro') this.#introDevice = null
    }
    this.#schedules = this.#schedules.filter((schedule) => !schedule.done)
    if (this.#storm !== null && !this.#schedules.some((schedule) => schedule.name === 'storm')) {
      this.#storm = null
      const report = this.#stormTally.report()
      this.#log.add(now, report.tone, report.text)
      this.#stormTally = new StormTally()
    }
  }

  #logBacklog(delivery: Delivery, now: number): void {
    if (this.#storm !== null) {
      this.#stormTally.add(delivery)
      return
    }
    const report = describeBacklog(delivery)
    this.#log.add(now, report.tone, report.text)
  }

  // Proof covers known sources only: until a device's first upload lands, the
  // others can prove windows it has readings for, and its readings then correct them.
  #noteReported(source: string, now: number): void {
    this.#reported.add(source)
    if (this.#reported.size !== this.#devices.length) return
    this.#log.add(
      now,
      'info',
      `All ${this.#devices.length} devices have reported. The first windows were corrected as each device joined: proof covers only devices the engine already knows.`,
    )
  }

  #linkOf(id: string): DeviceLink | undefined {
    return this.#links.find((link) => link.source === id)
  }

  #closeEngines(): void {
    for (const device of this.#devices) device.close()
    void this.#dashboard.close()
  }

  /** `refreshDevices` false: device rows are re-read only if the last read is older than DEVICE_REFRESH_MS. */
  #publish(now: number, refreshDevices = true): void {
    this.#snapshot = this.#makeSnapshot(now, this.#snapshot.devices, refreshDevices)
    for (const listener of this.#listeners) listener()
  }

  #makeSnapshot(now: number, previous: readonly DeviceStatus[], refreshDevices = true): FleetSnapshot {
    let devices = previous
    if (refreshDevices || now - this.#devicesAt >= DEVICE_REFRESH_MS || previous.length !== this.#devices.length) {
      this.#devicesAt = now
      const next = this.#devices.map((device, i) =>
        deviceStatus(device, this.#links[i] as DeviceLink, previous[i]?.id === device.id ? previous[i] : undefined),
      )
      if (next.length !== previous.length || next.some((status, i) => status !== previous[i])) devices = next
    }
    return {
      generation: this.#generation,
      dashboard: this.#dashboard,
      settings: this.#settings,
      now,
      paused: this.#paused,
      storm: this.#storm,
      introDevice: this.#introDevice,
      devices,
      activity: this.#log.entries(),
    }
  }
}
