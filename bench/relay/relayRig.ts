/**
 * The processes of one `pnpm bench:relay` run, as its phases share them, and how the
 * orchestrator reads them: relay A (replaced when the reconnect phase restarts it), relay B,
 * Redis, PostgreSQL when the relays share one, the device simulator and the dashboards.
 */
import type { PostgresServer } from '../../packages/relay/scripts/postgresServer.ts'
import type { RedisServer } from '../../packages/relay/scripts/redisServer.ts'
import type { FromDashboards, FromDevices, ToDashboards, ToDevices } from './benchMessages.ts'
import type { ChildChannel } from './childChannel.ts'
import { type RelayProcess, relayMetrics } from './relayProcess.ts'

export const MB = 1024 * 1024

/**
 * A run's processes once every one is up.
 *
 * @example
 * const rig: RelayRig = { a, b, earlierA: [], redis, postgres, sim, dash, respawnA, say }
 * await measureSteady(rig, flags)
 */
export interface RelayRig {
  /** Relay A, serving the devices: the process now running (the restart replaces it). */
  a: RelayProcess
  /** Relay B, serving the dashboards. */
  readonly b: RelayProcess
  /** The A processes the restart stopped, oldest first. */
  readonly earlierA: RelayProcess[]
  readonly redis: RedisServer
  /** The database both relays use (`--store=postgres`), else undefined (a PGlite directory each). */
  readonly postgres: PostgresServer | undefined
  readonly sim: ChildChannel<ToDevices, FromDevices>
  readonly dash: ChildChannel<ToDashboards, FromDashboards>
  /** Starts a new relay A on A's port and store (its CPU profile, with `--cpu-prof`, under `profile`). */
  readonly respawnA: (profile: string) => Promise<RelayProcess>
  /** Prints a line of the run's log. */
  readonly say: (line: string) => void
}

/**
 * Resolves after `ms` (at once when it is not positive): the phases run on the wall clock.
 *
 * @example
 * await pause(due - Date.now())
 */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))
}

/**
 * A sample of a relay's `/metrics`, 0 when it is absent.
 *
 * @example
 * metric(await scrape(rig, rig.a, new Map()), 'tidemark_relay_rooms_loaded') // 1010
 */
export function metric(values: ReadonlyMap<string, number>, name: string): number {
  return values.get(name) ?? 0
}

/**
 * A relay's metrics, or `previous` (said in the log) when a relay too busy to answer leaves the
 * scrape unanswered.
 *
 * @example
 * metricsA = await scrape(rig, rig.a, metricsA)
 */
export async function scrape(rig: RelayRig, relay: RelayProcess, previous: Map<string, number>): Promise<Map<string, number>> {
  try {
    return await relayMetrics(relay.httpUrl)
  } catch (error) {
    rig.say(`relay bench: relay ${relay.name} did not answer /metrics (${error instanceof Error ? error.message : error}); its previous figures stand`)
    return previous
  }
}
