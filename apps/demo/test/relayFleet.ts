/**
 * A fleet through a real relay, its hosts run in this process (`inProcessHosts`) on a fake clock,
 * and the waits of the tests that drive it: the relay's traffic is real, so each step waits
 * (bounded) until the documents have travelled.
 */
import type { Engine } from '@tidemark/engine'
import WebSocket from 'ws'
import type { DeviceStatus } from '../src/fleet/deviceStatus.ts'
import { Fleet } from '../src/fleet/fleet.ts'
import { DEFAULT_SETTINGS, type FleetSettings, windowIdOf } from '../src/fleet/fleetSettings.ts'
import type { FleetWiring, LinkTransports, RelayConfig } from '../src/fleet/fleetWiring.ts'
import { inProcessHosts } from './inProcessHosts.ts'
import { memoryPages } from './memoryPages.ts'

const T0 = 1_800_000_000_000
const fleets: Fleet[] = []
const worlds: ReturnType<typeof inProcessHosts>[] = []

/** Closes every fleet `relayFleet` made, then stops their hosts (an `afterEach`). */
export async function closeRelayFleets(): Promise<void> {
  await Promise.all(fleets.splice(0).map((fleet) => fleet.close()))
  await Promise.all(worlds.splice(0).map((world) => world.shutdown()))
}

/** Polls `done` every 10 ms of real time (the relay's traffic is real) until it holds; fails naming `what` after 20 s. */
export async function eventually(done: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`never happened within 20 s: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** `(key, start) → count` of every window in `engines`, summed. */
export function countsOf(engines: readonly Pick<Engine, 'results'>[], window: string): Map<string, number> {
  const counts = new Map<string, number>()
  for (const engine of engines) {
    for (const r of engine.results({ window })) counts.set(`${r.key}@${r.start}`, (counts.get(`${r.key}@${r.start}`) ?? 0) + r.count)
  }
  return counts
}

export const same = (a: Map<string, number>, b: Map<string, number>): boolean => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v)

/** What `relayFleet` takes besides the relay: settings over the defaults (3 devices), a wiring patch, the dashboard's own transports, the hosts' seed. */
export interface RelayFleetOptions {
  readonly settings?: Partial<FleetSettings>
  readonly wiring?: Partial<FleetWiring>
  readonly dashboardTransports?: LinkTransports
  readonly seed?: number
}

/** A fleet through the relay `relay` (fake clock, hosts in this process), with `advance(ms)` and the waits of these tests. */
export async function relayFleet(relay: RelayConfig, options: RelayFleetOptions = {}) {
  const clock = { now: T0 }
  const pages = memoryPages(`relay-${fleets.length}-${Date.now()}`)
  const wiring: FleetWiring = { ...pages.wiring, fleet: `f${Date.now().toString(36)}`, relay, ...options.wiring }
  const { dashboardTransports, seed } = options
  const world = inProcessHosts({
    now: () => clock.now,
    indexedDB: pages.indexedDB,
    transports: { WebSocket },
    ...(dashboardTransports === undefined ? {} : { dashboardTransports }),
    ...(seed === undefined ? {} : { seed }),
  })
  worlds.push(world)
  const all = { ...DEFAULT_SETTINGS, deviceCount: 3, ...options.settings }
  const fleet = new Fleet({ wiring, hosts: world.hosts, settings: all, now: () => clock.now, intro: false, control: pages.openControl() })
  fleets.push(fleet)
  await fleet.ready()
  /** Each device's status straight from its live host. */
  const statuses = (): DeviceStatus[] =>
    fleet
      .snapshot()
      .devices.map((row) => world.call(fleet.slot(row.id)?.name ?? '', 'status') as DeviceStatus | undefined)
      .filter((s): s is DeviceStatus => s !== undefined)
  /** A device host has accepted readings not yet committed to its log. */
  const uncommitted = (): boolean => statuses().some((s) => s.durable < s.accepted)
  const extra: (() => void)[] = []
  /** Ticks every 100 ms of fake time, letting each tick's log commits land. */
  const advance = async (ms: number): Promise<void> => {
    for (const end = clock.now + ms; clock.now < end; ) {
      clock.now += 100
      world.tick(clock.now)
      fleet.tick(clock.now)
      for (const tick of extra) tick()
      await pages.settle(uncommitted)
    }
  }
  const engines = (): Engine[] => fleet.snapshot().devices.map((row) => world.host(fleet.slot(row.id)?.name ?? '')?.engine) as Engine[]
  const dashboard = () => {
    const engine = fleet.snapshot().dashboard
    if (engine === null) throw new Error('the dashboard engine has no host')
    return engine
  }
  const window = windowIdOf(all)
  /** Every device's room in sync (nothing pending) and the dashboard showing exactly what the devices' engines hold. */
  const settled = (): boolean =>
    engines().every((engine) => engine !== undefined && engine.syncStatus().state === 'connected' && engine.syncStatus().pendingLocalUpdates === 0) &&
    same(countsOf([dashboard()], window), countsOf(engines(), window))
  return { fleet, clock, pages, wiring, world, advance, engines, dashboard, window, settled, statuses, extra }
}
