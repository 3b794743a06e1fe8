import { tickWhenDue } from '@tidemark/engine'
import type { HostContext, HostEngineOptions } from '@tidemark/worker/host'
import type { FleetAggregates } from './fleetAggregates.ts'
import { DashboardLinks, type FollowedRooms } from './dashboardLinks.ts'
import { dashboardEngineOptions, epochOf, type FleetSettings, parseSettings } from './fleetSettings.ts'
import { HearingClock } from './hearingClock.ts'
import { type FleetWiring, parseWiring } from './fleetWiring.ts'
import type { HostPlatform } from './hostPlatform.ts'

/** What a dashboard page passes the dashboard's host: the first page's is used. */
export interface DashboardHostConfig {
  readonly settings: FleetSettings
  readonly wiring: FleetWiring
  /** The fleet's devices (without a relay, the host follows each one's tab channel). */
  readonly devices: readonly string[]
}

/** What the `links` command answers: how the dashboard engine follows the fleet. */
export interface LinksReport {
  /** When each device's state last arrived (its followed document's last sync), by device id. */
  readonly lastHeard: Readonly<Record<string, number | null>>
  /** The rooms followed on the relay and the refused ones; null without a relay. */
  readonly followed: FollowedRooms | null
  /** What the followed documents' bindings or the relay client could not use since the last report. */
  readonly errors: readonly string[]
}

/**
 * The commands of the dashboard's host: `links` (a `LinksReport`), `retire` (the worker ends;
 * the engine starts empty in every host and refills from the relay, so there is nothing to
 * close cleanly).
 */
export type DashboardHostCommand = 'links' | 'retire'

/** Errors kept between two `links` reports. */
const ERRORS_KEPT = 20

/**
 * How often the host reads its clock besides the engine's own readings, ms: `HearingClock` asks
 * whether the dashboard hears its rooms on every reading, so it notices its link going down and
 * coming back within this, even while nothing merges or ticks.
 */
const HEARING_POLL_MS = 250

/**
 * The `hostEngine` options of the dashboard's host (`src/fleet/dashboardHost.worker.ts` passes
 * them in a worker; tests run them in Node): an engine that owns no source and ingests nothing,
 * with no log of its own, following every device's room read-only (`DashboardLinks`). The
 * dashboard pages read it through their `RemoteEngine`; the charts draw from its mirror.
 *
 * @example
 * hostEngine(dashboardHostOptions(self.name, workerHostPlatform()))
 */
export function dashboardHostOptions(name: string, platform: HostPlatform): HostEngineOptions<FleetAggregates> {
  let links: DashboardLinks | null = null
  // Stands still while the dashboard cannot hear every room: no device turns idle on it then.
  const clock = new HearingClock(platform.now)
  let stopTicks: (() => void) | null = null
  let stopPoll: (() => void) | null = null
  const errors: string[] = []
  const stop = (): void => {
    stopTicks?.()
    stopTicks = null
    stopPoll?.()
    stopPoll = null
    links?.destroy()
    links = null
  }
  const commands: Record<DashboardHostCommand, (payload: unknown, context: HostContext<FleetAggregates>) => unknown> = {
    links: (): LinksReport => {
      const lastHeard: Record<string, number | null> = {}
      for (const [device, at] of links?.lastHeard() ?? []) lastHeard[device] = at
      return { lastHeard, followed: links?.followed() ?? null, errors: errors.splice(0) }
    },
    retire: (): null => {
      stop()
      platform.terminate()
      return null
    },
  }
  return {
    name,
    engine: (config) => dashboardEngineOptions(parseDashboardHostConfig(config).settings, clock.now),
    log: false,
    setup({ engine, config }) {
      const { settings, wiring, devices } = parseDashboardHostConfig(config)
      links = new DashboardLinks(engine, {
        wiring,
        transports: platform.transports,
        epoch: epochOf(settings),
        devices,
        now: platform.now,
        timers: platform.timers,
        random: platform.random,
        idleTimeoutMs: settings.idleTimeoutMs,
        onError: (error) => {
          errors.push(error.message)
          if (errors.length > ERRORS_KEPT) errors.shift()
        },
      })
      const followed = links
      clock.listen(() => followed.hearsAll())
      stopPoll = platform.every(HEARING_POLL_MS, () => clock.now())
      // A tick when a silent device turns idle (its clock stops holding the watermark), and only then.
      stopTicks = tickWhenDue(engine, { now: clock.now, timers: platform.timers })
      return stop
    },
    commands,
  }
}

/**
 * The config a dashboard page passed, checked: a TypeError says what is wrong.
 *
 * @example
 * const { settings, devices } = parseDashboardHostConfig(config)
 */
export function parseDashboardHostConfig(config: unknown): DashboardHostConfig {
  if (typeof config !== 'object' || config === null) throw new TypeError(`the dashboard host needs a config { settings, wiring, devices }, got ${String(config)}`)
  const { settings, wiring, devices } = config as Record<string, unknown>
  const parsed = parseSettings(settings)
  if (parsed === null) throw new TypeError('the dashboard host got settings out of range (see parseSettings)')
  if (!Array.isArray(devices) || !devices.every((device) => typeof device === 'string')) throw new TypeError('the dashboard host needs its devices as an array of ids')
  return { settings: parsed, wiring: parseWiring(wiring), devices }
}
