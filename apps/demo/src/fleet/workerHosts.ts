import { connectEngine } from '@tidemark/worker'
import { fleetAggregates } from './fleetAggregates.ts'
import type { FleetHosts } from './fleetHosts.ts'

/**
 * The fleet's hosts in workers (`@tidemark/worker`): a SharedWorker per host name where the
 * browser has them, so every page of the origin that opens a device reaches that device's one
 * worker; else a leader tab's dedicated Worker elected with Web Locks; else this tab's own. The
 * `new SharedWorker(new URL(...))` expressions are written out here so that Vite finds the two
 * worker files, bundles them and serves them from the app's origin.
 *
 * @example
 * const fleet = new Fleet({ wiring, hosts: workerHosts(), control })
 */
export function workerHosts(): FleetHosts {
  return {
    connect(host) {
      if (host.kind === 'device') {
        return connectEngine({
          name: host.name,
          config: host.config,
          aggregates: fleetAggregates,
          shared: (name) => new SharedWorker(new URL('./deviceHost.worker.ts', import.meta.url), { type: 'module', name }),
          dedicated: (name) => new Worker(new URL('./deviceHost.worker.ts', import.meta.url), { type: 'module', name }),
        })
      }
      return connectEngine({
        name: host.name,
        config: host.config,
        aggregates: fleetAggregates,
        shared: (name) => new SharedWorker(new URL('./dashboardHost.worker.ts', import.meta.url), { type: 'module', name }),
        dedicated: (name) => new Worker(new URL('./dashboardHost.worker.ts', import.meta.url), { type: 'module', name }),
      })
    },
  }
}
