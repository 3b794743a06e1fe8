/**
 * The relay benchmark's dashboards (a child process of relayBench.ts, driven over IPC): each is
 * what the fleet dashboard runs, a real engine following its fleet's directory with
 * `followRooms`, every device room bound read-only (`bindDoc(…, { readOnly: true })`) and joined
 * over the dashboard's one socket.
 *
 * A reading counts as seen when the dashboard's engine has merged it: the engine's replica port
 * is observed around `mergeRemoteGroups`, and what each merge's clocks bring is read by
 * `arrivalsOf` (arrivals.ts): one arrival per source whose gap-free prefix moved, checked against
 * `engine.nextSeq(source)`, its latency the receiving `Date.now()` minus the newest reading's `ts`.
 */
import type { CellEntry, CellGroup, ClockEntry, Engine, MergeReport, ReplicaPort } from '@tidemark/engine'
import { createEngine } from '@tidemark/engine'
import { connectRelay, followRooms, type Relay, type RoomFollower } from '@tidemark/yjs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import WebSocket from 'ws'
import type { ArrivalFigures, ChildConfig, Convergence, DeviceResync, FromDashboards, ToDashboards } from './benchMessages.ts'
import { dashboardToken, secretBytes } from './benchTokens.ts'
import { arrivalsOf } from './arrivals.ts'
import { BENCH_ENGINE_OPTIONS, directoryOf, fleetName } from './fleetLayout.ts'
import { LatencyHistogram } from './latencyHistogram.ts'

interface Dashboard {
  readonly name: string
  readonly fleet: string
  readonly engine: Engine
  readonly relay: Relay
  follower: RoomFollower | undefined
  /** Per source: the gap-free prefix this dashboard's engine has merged. */
  readonly seen: Map<string, number>
  /** Per source: (prefix, time) of every arrival since a disruption began, while one is watched. */
  readonly arrivals: Map<string, [number, number][]>
  /** Per source: the target of a convergence still awaited, with the time it was met. */
  readonly awaited: Map<string, number>
  readonly met: Map<string, number>
}

/** Latencies and arrival counts of one phase or of the running interval. */
class Arrivals {
  readonly latency = new LatencyHistogram()
  arrivals = 0
  coalesced = 0

  figures(): ArrivalFigures {
    return { latency: this.latency.summary(), arrivals: this.arrivals, coalesced: this.coalesced }
  }
}

const dashboards: Dashboard[] = []
const phases = new Map<string, Arrivals>()
let phase = new Arrivals()
phases.set('connect', phase)
let interval = new Arrivals()
/**
 * This process's event-loop delay over the running interval: the twenty dashboards share one
 * loop here (in a deployment each has its own machine), so an update may wait behind the others'
 * merges, and that wait is part of the latency measured.
 */
const loopDelay = monitorEventLoopDelay({ resolution: 10 })
loopDelay.enable()
let recording = false
let unconfirmed = 0
let errors = 0
let ticking: ReturnType<typeof setInterval> | undefined
let convergence: { resync: DeviceResync; finish: () => void } | undefined
/** Devices send one update per period, on a fixed schedule. */
let periodMs = 1000

function send(message: FromDashboards): void {
  process.send?.(message)
}

function reportError(error: Error): void {
  errors++
  if (errors <= 5) process.stderr.write(`dashboards: ${error.message}\n`)
}

/** What the dashboard's engine saw of a merge's clocks: one arrival per source whose prefix moved (arrivals.ts). */
function observe(dashboard: Dashboard, clocks: readonly ClockEntry[]): void {
  const now = Date.now()
  const merged = arrivalsOf(dashboard.seen, clocks, (source) => dashboard.engine.nextSeq(source), now, periodMs)
  unconfirmed += merged.unconfirmed
  for (const { source, prefix, latencies } of merged.arrivals) {
    for (const into of [phase, interval]) {
      for (const latency of latencies) into.latency.add(latency)
      into.arrivals++
      if (latencies.length > 1) into.coalesced++
    }
    if (recording) {
      let list = dashboard.arrivals.get(source)
      if (list === undefined) {
        list = []
        dashboard.arrivals.set(source, list)
      }
      list.push([prefix, now])
    }
    const target = dashboard.awaited.get(source)
    if (target !== undefined && prefix >= target) {
      dashboard.awaited.delete(source)
      dashboard.met.set(source, now)
      if (convergence !== undefined && dashboards.every((d) => d.awaited.size === 0)) convergence.finish()
    }
  }
}

/** The engine's replica port, observed after every merge (everything else passes through). */
function observedPort(dashboard: Dashboard): ReplicaPort {
  const port = dashboard.engine.replica
  return new Proxy(port, {
    get(target, property) {
      if (property === 'mergeRemoteGroups') {
        return (groups: readonly CellGroup[], clocks: readonly ClockEntry[]): MergeReport => {
          const report = target.mergeRemoteGroups(groups, clocks)
          observe(dashboard, clocks)
          return report
        }
      }
      if (property === 'mergeRemote') {
        return (cells: readonly CellEntry[], clocks: readonly ClockEntry[]): MergeReport => {
          const report = target.mergeRemote(cells, clocks)
          observe(dashboard, clocks)
          return report
        }
      }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

async function start(config: ChildConfig): Promise<void> {
  const secret = secretBytes(config.secret)
  const { layout } = config
  periodMs = 1000 / layout.updatesPerSecond
  for (let f = 0; f < layout.fleets; f++) {
    const fleet = fleetName(f)
    for (let k = 0; k < layout.dashboardsPerFleet; k++) {
      const name = `${fleet}-dash-${k}`
      const token = await dashboardToken(fleet, name, secret)
      const engine = createEngine({ ...BENCH_ENGINE_OPTIONS, replicaId: name })
      const relay = connectRelay({ url: config.relayUrl, token, WebSocket, onError: reportError })
      const dashboard: Dashboard = { name, fleet, engine, relay, follower: undefined, seen: new Map(), arrivals: new Map(), awaited: new Map(), met: new Map() }
      dashboard.follower = followRooms({ replica: observedPort(dashboard) }, relay, {
        directory: directoryOf(fleet),
        bind: { measureEvery: Number.POSITIVE_INFINITY, onError: reportError },
      })
      dashboards.push(dashboard)
    }
  }
  // A dashboard re-checks idle sources every second, as the fleet dashboard does.
  ticking = setInterval(() => {
    for (const dashboard of dashboards) dashboard.engine.tick()
  }, 1000)
  const ready = (): boolean => dashboards.every((d) => (d.follower?.rooms().size ?? 0) === layout.devicesPerFleet && d.seen.size === layout.devicesPerFleet)
  while (!ready()) await new Promise((resolve) => setTimeout(resolve, 200))
  send({ type: 'ready', rooms: dashboards.map((d) => d.follower?.rooms().size ?? 0), sourcesSeen: dashboards.map((d) => d.seen.size) })
}

function startPhase(name: string): void {
  phase = phases.get(name) ?? new Arrivals()
  phases.set(name, phase)
  recording = name.startsWith('disrupted')
  if (recording) for (const dashboard of dashboards) dashboard.arrivals.clear()
}

/**
 * Waits until every dashboard shows, for every device of its fleet, the seq that device had
 * recorded when it was back in sync; answers with the time from the disruption.
 */
function converge(resync: DeviceResync, timeoutMs: number): void {
  for (const dashboard of dashboards) {
    dashboard.awaited.clear()
    dashboard.met.clear()
    for (const [source, target] of Object.entries(resync.targets)) {
      if (!source.startsWith(`${dashboard.fleet}-`)) continue
      const arrived = dashboard.arrivals.get(source)?.find(([prefix]) => prefix >= target)
      if (arrived !== undefined) dashboard.met.set(source, arrived[1])
      // Nothing recorded since the disruption, and the dashboard had it before.
      else if ((dashboard.seen.get(source) ?? 0) >= target) dashboard.met.set(source, resync.disruptedAt)
      else dashboard.awaited.set(source, target)
    }
  }
  let timer: ReturnType<typeof setTimeout> | undefined
  const finish = (): void => {
    if (convergence === undefined) return
    convergence = undefined
    clearTimeout(timer)
    recording = false
    const pending = dashboards.reduce((n, d) => n + d.awaited.size, 0)
    const perDashboardMs = dashboards.map((d) => (d.awaited.size > 0 ? Number.NaN : Math.max(resync.disruptedAt, ...d.met.values()) - resync.disruptedAt))
    const result: Convergence = { ms: pending > 0 ? Number.NaN : Math.max(...perDashboardMs), perDashboardMs, pending }
    for (const dashboard of dashboards) dashboard.awaited.clear()
    send({ type: 'converged', convergence: result })
  }
  convergence = { resync, finish }
  timer = setTimeout(finish, timeoutMs)
  if (dashboards.every((d) => d.awaited.size === 0)) finish()
}

function totals(): void {
  const figures: Record<string, ArrivalFigures> = {}
  for (const [name, arrivals] of phases) figures[name] = arrivals.figures()
  let refusals = 0
  let engineAnomalies = 0
  for (const dashboard of dashboards) {
    if (dashboard.engine.syncStatus().refusal !== null) refusals++
    engineAnomalies += dashboard.engine.stats().anomalies.invalid_remote_cell + dashboard.engine.stats().anomalies.source_conflict
  }
  if (unconfirmed > 0) reportError(new Error(`${unconfirmed} merged clocks were not reflected by engine.nextSeq`))
  send({ type: 'totals', phases: figures, refusals, errors, engineAnomalies })
}

process.on('message', (message: ToDashboards) => {
  switch (message.type) {
    case 'start':
      start(message.config).catch((error: unknown) => send({ type: 'error', message: String(error) }))
      break
    case 'phase':
      startPhase(message.name)
      break
    case 'interval':
      send({ type: 'interval', figures: interval.figures(), loopDelayMs: { p99: Number((loopDelay.percentile(99) / 1e6).toFixed(1)), max: Number((loopDelay.max / 1e6).toFixed(1)) } })
      interval = new Arrivals()
      loopDelay.reset()
      break
    case 'converge':
      converge(message.resync, message.timeoutMs)
      break
    case 'totals':
      totals()
      break
    case 'stop':
      clearInterval(ticking)
      for (const dashboard of dashboards) {
        dashboard.follower?.destroy()
        dashboard.relay.destroy()
      }
      process.exit(0)
  }
})
process.on('disconnect', () => process.exit(0))
