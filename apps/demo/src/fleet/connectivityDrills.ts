import type { WindowChange } from '@tidemark/engine'
import type { ActivityLog } from './activityLog.ts'
import { DEFAULT_STORM, pickTourDevice, planIntro, planStorm, type Toggle } from './connectivityPlan.ts'
import type { DeviceStatus } from './deviceStatus.ts'
import { createPrng } from './prng.ts'
import type { DeviceProfile } from './readingProducer.ts'
import { RECONNECT_SETTLE_MS, ReconnectWatch, StormTally } from './reconnectReport.ts'
import { ToggleSchedule } from './toggleSchedule.ts'

/**
 * A reconnect storm while it runs: when its last toggle is due, and how many devices it toggles.
 *
 * @example
 * const storm: StormState = { endsAt: now + 20_000, devices: 12 }
 */
export interface StormState {
  readonly endsAt: number
  readonly devices: number
}

/** Who took a device's link offline or back online. */
export type OnlineChanger = 'operator' | 'intro' | 'storm'

/**
 * What the drills act on: the fleet's activity log and its devices.
 *
 * @example
 * const targets: DrillTargets = {
 *   log,
 *   setOnline: (id, online) => void slots.get(id)?.command(online ? 'online' : 'offline'),
 *   status: (id) => slots.get(id)?.status() ?? null,
 * }
 */
export interface DrillTargets {
  readonly log: ActivityLog
  /** Connects or disconnects a device's link, as the drill `by` plays it. */
  readonly setOnline: (id: string, online: boolean, now: number, by: OnlineChanger) => void
  /** What the device's host last reported; null before its first answer (or for no such device). */
  readonly status: (id: string) => DeviceStatus | null
}

/**
 * The simulation's connectivity drills: the first-minute tour (one device offline, then back)
 * and reconnect storms, played as schedules of toggles, and the reports of what came of each
 * reconnect (the windows its backlog corrected on the dashboard). A reconnect during a storm is
 * counted in the storm's tally, one report for the whole storm; any other gets a watch and a
 * report of its own.
 *
 * @example
 * const drills = new ConnectivityDrills({ log, setOnline, status })
 * drills.startStorm(['d00', 'd01', 'd02'], now, 20_000, seed)
 * // every tick:
 * drills.play(now)
 * drills.finishReports(now, lastHeard)
 */
export class ConnectivityDrills {
  readonly #targets: DrillTargets
  #schedules: ToggleSchedule[] = []
  #storm: StormState | null = null
  #stormTally: StormTally | null = null
  #stormSettlesAt: number | null = null
  #watches: ReconnectWatch[] = []
  #introDevice: string | null = null

  constructor(targets: DrillTargets) {
    this.#targets = targets
  }

  /** The storm running now; null when none is. */
  get storm(): StormState | null {
    return this.#storm
  }

  /** The device the first-minute tour takes offline, while the tour runs. */
  get introDevice(): string | null {
    return this.#introDevice
  }

  /** Plans the first-minute tour on the device that shows it best (none when no device fits). */
  startIntro(profiles: readonly DeviceProfile[], now: number, allowedLatenessMs: number): void {
    const pick = pickTourDevice(profiles)
    if (pick === undefined) return
    this.#introDevice = pick
    this.#schedules.push(new ToggleSchedule('intro', planIntro(pick, now, allowedLatenessMs)))
  }

  /** Many devices drop off and come back at random for `durationMs`; all are online when it ends. */
  startStorm(devices: readonly string[], now: number, durationMs: number, seed: number): void {
    const rng = createPrng(seed + now)
    const toggles = planStorm(devices, now, { ...DEFAULT_STORM, durationMs }, rng)
    const schedule = new ToggleSchedule('storm', toggles)
    this.#schedules.push(schedule)
    const caught = new Set(toggles.map((toggle) => toggle.device)).size
    this.#storm = { endsAt: Math.max(schedule.endsAt, this.#storm?.endsAt ?? 0), devices: caught }
    this.#stormTally ??= new StormTally()
    this.#targets.log.add(now, 'warn', `Reconnect storm: ${caught} devices toggling their links for ${Math.round(durationMs / 1000)} s`)
  }

  /** Plays the toggles due by `now`, then lets go of the schedules that are done. */
  play(now: number): void {
    for (const schedule of this.#schedules) {
      for (const toggle of schedule.due(now)) this.#applyToggle(toggle, schedule.name, now)
    }
    this.#finishSchedules(now)
  }

  /** Device `id` is coming back online (`status`: what its host last reported): watch what its backlog corrects. */
  reconnecting(id: string, now: number, status: DeviceStatus | null, by: OnlineChanger): void {
    const offlineMs = status?.offlineSince == null ? 0 : now - status.offlineSince
    if (this.#storm !== null || by === 'storm') this.#stormTally?.reconnected()
    else this.#watches.push(new ReconnectWatch(id, now, offlineMs, status?.offlineReadings ?? 0))
  }

  /** A correction the dashboard counted (once per window and revision): credited to the reconnects watched now. */
  count(change: WindowChange): void {
    for (const watch of this.#watches) watch.count(change)
    this.#stormTally?.count(change)
  }

  /**
   * Reports the reconnects whose watch is over, and the storm's tally once its last backlog had
   * time to land. `lastHeard`: when the dashboard's document of each device last synced.
   */
  finishReports(now: number, lastHeard: Readonly<Record<string, number | null>>): void {
    if (this.#watches.length > 0) {
      for (const watch of this.#watches) {
        const status = this.#targets.status(watch.device)
        const heard = lastHeard[watch.device] ?? null
        if (status?.online === true && status.pending === 0 && heard !== null && heard >= watch.at) watch.caughtUp(now)
        if (!watch.due(now)) continue
        const report = watch.report()
        this.#targets.log.add(now, report.tone, report.text)
      }
      this.#watches = this.#watches.filter((watch) => !watch.due(now))
    }
    const tally = this.#stormTally
    if (tally !== null && this.#stormSettlesAt !== null && now >= this.#stormSettlesAt) {
      const report = tally.report()
      this.#targets.log.add(now, report.tone, report.text)
      this.#stormTally = null
      this.#stormSettlesAt = null
    }
  }

  /** Drops every drill and watch: new settings start the fleet over. */
  reset(): void {
    this.#schedules = []
    this.#storm = null
    this.#stormTally = null
    this.#stormSettlesAt = null
    this.#watches = []
    this.#introDevice = null
  }

  #applyToggle(toggle: Toggle, schedule: string, now: number): void {
    this.#targets.setOnline(toggle.device, toggle.online, now, schedule === 'storm' ? 'storm' : 'intro')
    if (schedule !== 'intro') return
    this.#targets.log.add(
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
}
