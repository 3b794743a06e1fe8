import type { RemoteEngine } from '@tidemark/worker'
import type { FleetAggregates } from './fleetAggregates.ts'
import type { DashboardHostConfig } from './dashboardHost.ts'
import type { DeviceHostConfig } from './deviceHost.ts'

/**
 * How the fleet's pages reach its engines' hosts: `connect` resolves once the host named `name`
 * welcomed the page (starting it when none runs). In the browser the hosts are workers
 * (`workerHosts`); tests run the same host options in Node.
 *
 * @example
 * const engine = await hosts.connect({ kind: 'device', name: deviceHostName(wiring, epoch, 'd07'), config: { index: 6, settings, wiring } })
 * await engine.command('offline')
 */
export interface FleetHosts {
  /** The engine of the host, typed by the fleet's aggregates (every engine of the fleet has them). */
  connect(host: HostRequest): Promise<RemoteEngine<FleetAggregates>>
}

/** Which host to reach, and the config it starts with when this page is the first. */
export type HostRequest =
  | { readonly kind: 'device'; readonly name: string; readonly config: DeviceHostConfig }
  | { readonly kind: 'dashboard'; readonly name: string; readonly config: DashboardHostConfig }
