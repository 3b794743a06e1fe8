import type { WindowChange } from '@tidemark/engine'
import type { RemoteEngine, WorkerConnection } from '@tidemark/worker'
import type { ActivityLog } from './activityLog.ts'
import type { FollowedRooms } from './dashboardLinks.ts'
import type { LinksReport } from './dashboardHost.ts'
import type { FleetAggregates } from './fleetAggregates.ts'
import type { FleetHosts } from './fleetHosts.ts'
import type { FleetSettings } from './fleetSettings.ts'
import { dashboardHostName, deviceOfRoom, type FleetWiring } from './fleetWiring.ts'
import type { RefillReport } from '@tidemark/yjs'

/** The dashboard's links are asked how they follow the fleet at most this often. */
const LINKS_POLL_MS = 500

/**
 * What a `DashboardConnection` works with and whom it tells.
 *
 * @example
 * new DashboardConnection({ hosts, wiring, log, now: Date.now, onChanges, changed: () => publish(), closed: () => false })
 */
export interface DashboardConnectionOptions {
  readonly hosts: FleetHosts
  readonly wiring: FleetWiring
  readonly log: ActivityLog
  readonly now: () => number
  /** The current dashboard engine's changes. */
  readonly onChanges: (changes: readonly WindowChange[]) => void
  /** The dashboard engine, or this page's link to its host, changed: the snapshot is stale. */
  readonly changed: () => void
  /** The page closed: an engine whose host answers after that is let go at once. */
  readonly closed: () => boolean
}

/**
 * This page's link to the dashboard engine: a host of the current settings (the previous one
 * retired, so its worker ends), the page's mirror of its engine once the host welcomed it, and
 * what the host last said of its links to the fleet (polled, at most every 500 ms). A host that
 * answers after newer settings asked for another is let go.
 *
 * @example
 * const dashboard = new DashboardConnection(options)
 * dashboard.connect(settings, ['d00', 'd01'])
 * await dashboard.ready
 * dashboard.engine?.results({ window: 'tumbling:2000', key: 'temp' })
 */
export class DashboardConnection {
  readonly #options: DashboardConnectionOptions
  #generation = 0
  #engine: RemoteEngine<FleetAggregates> | null = null
  #host: WorkerConnection | null = null
  #ready: Promise<void> = Promise.resolve()
  #stopChanges: () => void = () => {}
  #links: LinksReport | null = null
  #linksAt = Number.NEGATIVE_INFINITY
  #linksPolling = false
  /** Why the last `links` poll of the current host failed; a poll failing the same way again is not logged again. */
  #linksError: string | null = null
  /** The current host's refill ended and the activity feed said how. */
  #refillNoted = false

  constructor(options: DashboardConnectionOptions) {
    this.#options = options
  }

  /** Bumped whenever the dashboard engine is replaced (new settings). */
  get generation(): number {
    return this.#generation
  }

  /** The dashboard engine as this page reads it; null while its host starts. */
  get engine(): RemoteEngine<FleetAggregates> | null {
    return this.#engine
  }

  /** This page's link to the dashboard engine's host; null while it starts. */
  get host(): WorkerConnection | null {
    return this.#host
  }

  /** Settles once the latest host welcomed this page (or failed to start). */
  get ready(): Promise<void> {
    return this.#ready
  }

  /** What the dashboard's host last said of its links; null before its first answer. */
  get links(): LinksReport | null {
    return this.#links
  }

  /** A host for the dashboard engine of `settings`, following `devices`; the previous one is retired. */
  connect(settings: FleetSettings, devices: readonly string[]): void {
    const generation = ++this.#generation
    const old = this.#engine
    this.#stopChanges()
    this.#stopChanges = () => {}
    this.#engine = null
    this.#host = null
    this.#links = null
    this.#linksError = null
    this.#refillNoted = false
    const { hosts, wiring, log, now } = this.#options
    if (old !== null) void retireDashboard(old, (message) => log.add(now(), 'bad', message))
    const ready = hosts.connect({
      kind: 'dashboard',
      name: dashboardHostName(wiring, settings),
      config: { settings, wiring, devices },
    })
    this.#ready = ready.then(
      (remote) => {
        if (generation !== this.#generation || this.#options.closed()) {
          void remote.close().catch(() => {})
          return
        }
        this.#engine = remote
        this.#host = remote.connection()
        this.#stopChanges = remote.subscribe((changes) => this.#options.onChanges(changes))
        remote.onConnection((connection) => {
          if (remote !== this.#engine) return
          this.#host = connection
          this.#options.changed()
        })
        this.#options.changed()
      },
      (error: unknown) => {
        log.add(now(), 'bad', `The dashboard engine's host did not start: ${error instanceof Error ? error.message : String(error)}`)
      },
    )
  }

  /** Asks the dashboard's host how its links follow the fleet (last heard per device, rooms, errors). */
  pollLinks(now: number): void {
    const dashboard = this.#engine
    if (dashboard === null || this.#linksPolling || now - this.#linksAt < LINKS_POLL_MS) return
    this.#linksAt = now
    this.#linksPolling = true
    void this.#askLinks(dashboard).finally(() => {
      this.#linksPolling = false
    })
  }

  async #askLinks(dashboard: RemoteEngine<FleetAggregates>): Promise<void> {
    const instance = dashboard.connection().instance
    let report: unknown
    try {
      report = await dashboard.command('links')
    } catch (error) {
      // Its host went away mid-call (the connection says so) or newer settings let it go: the next poll asks the next one.
      const connection = dashboard.connection()
      if (dashboard !== this.#engine || connection.state !== 'connected' || connection.instance !== instance) return
      this.#linksFailed(`The dashboard engine's host did not say how its links follow the fleet: ${messageOf(error)}`)
      return
    }
    if (dashboard !== this.#engine) return
    if (!isLinksReport(report)) {
      this.#linksFailed(`The dashboard engine's host answered a links report that is not one: ${describe(report)}`)
      return
    }
    const links = report
    this.#linksError = null
    for (const error of links.errors) this.#options.log.add(this.#options.now(), 'bad', `Replication: ${error}`)
    this.#links = { ...links, followed: sameFollowed(this.#links?.followed ?? null, links.followed) }
    this.#noteRefill(links.followed?.refill ?? null)
  }

  /** Once per host: how its engine's refill from the rooms ended (nothing for an empty directory). */
  #noteRefill(refill: RefillReport | null): void {
    if (refill === null || refill.state === 'waiting' || this.#refillNoted) return
    this.#refillNoted = true
    const { log, now } = this.#options
    const took = refill.tookMs === null ? '' : ` after ${(refill.tookMs / 1000).toFixed(1)} s`
    if (refill.state === 'timedOut') {
      const missing = refill.missing.map(deviceOfRoom).join(', ')
      log.add(
        now(),
        'bad',
        `The dashboard engine stopped waiting for ${refill.missing.length} of ${refill.rooms} rooms${took} (${missing}) and took the ${refill.synced} that synced: windows fire without ${missing}, whose state may change final windows when it lands (finality violations)`,
      )
    } else if (refill.rooms > 0) {
      log.add(now(), 'info', `The dashboard engine took its ${refill.rooms} rooms together once each had synced${took}: no window fired on part of the fleet`)
    }
  }

  #linksFailed(message: string): void {
    if (message === this.#linksError) return
    this.#linksError = message
    this.#options.log.add(this.#options.now(), 'bad', message)
    this.#options.changed()
  }

  /** Stops listening to the dashboard engine's changes (the page is closing). */
  stopChanges(): void {
    this.#stopChanges()
  }
}

/** Retires the dashboard engine's host of earlier settings (its worker ends), then disconnects; `refused` hears of a host still there that did not retire. */
async function retireDashboard(engine: RemoteEngine<FleetAggregates>, refused: (message: string) => void): Promise<void> {
  const { state, instance } = engine.connection()
  try {
    if (state === 'connected') await engine.command('retire')
  } catch (error) {
    // Gone already: nothing left to stop. A host still there that refused keeps running: say so.
    const now = engine.connection()
    if (now.state === 'connected' && now.instance === instance) refused(`The dashboard engine's host of earlier settings refused to retire: ${messageOf(error)}`)
  }
  await engine.close().catch(() => {})
}

/** A `links` answer the page can read: `lastHeard` an object, `errors` an array, `followed` present. */
function isLinksReport(value: unknown): value is LinksReport {
  if (typeof value !== 'object' || value === null) return false
  const report = value as Partial<LinksReport>
  return typeof report.lastHeard === 'object' && report.lastHeard !== null && Array.isArray(report.errors) && report.followed !== undefined
}

/** What came instead of a report, for the message: its fields, or the value. */
function describe(value: unknown): string {
  if (typeof value !== 'object' || value === null) return String(value)
  const fields = Object.keys(value)
  return fields.length === 0 ? 'an object with no fields' : `an object with ${fields.join(', ')}`
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** `next`, or `previous` itself when it says the same (an unchanged slice does not render). */
function sameFollowed(previous: FollowedRooms | null, next: FollowedRooms | null): FollowedRooms | null {
  if (previous === null || next === null) return next
  const same =
    previous.rooms === next.rooms &&
    previous.refill.state === next.refill.state &&
    previous.refill.synced === next.refill.synced &&
    previous.refill.rooms === next.refill.rooms &&
    previous.refused.length === next.refused.length &&
    previous.awaiting.join() === next.awaiting.join() &&
    previous.refused.every((r, i) => r.room === next.refused[i]?.room && r.refusal === next.refused[i]?.refusal)
  return same ? previous : next
}
