/**
 * `pnpm bench:relay`: the Tidemark relay under a fleet's load, on localhost.
 *
 * Topology (the relay's): every device writes its own room `<fleet>/<device>`; relay A serves
 * every device, relay B every dashboard, and the two share rooms through Redis. Each dashboard
 * follows its fleet's directory `<fleet>/_directory` and all of the fleet's device rooms over
 * one socket, with a real engine bound read-only. Default: 10 fleets × 100 devices (1,000 rooms),
 * one update a second each (one engine batch of 3 readings through `bindDoc`), 2 dashboards per
 * fleet (20), a 10-minute steady phase.
 *
 * Processes: Redis, relay A and relay B (the `tidemark-relay` command, a PGlite store each, or
 * with `--store=postgres` one PostgreSQL server whose database both use), the device simulator
 * (deviceSimulator.ts) and the dashboards (dashboardFleet.ts), driven over IPC from this one,
 * which reads every process's CPU time and RSS from /proc.
 *
 * Phases: connect, warm-up, steady (latency, CPU per 1,000 updates, RSS every 10 s with a row a
 * minute), every device socket dropped at once (reconnects jittered over 5 s), relay A restarted
 * (SIGTERM, a new process on the same port and store), then the devices leave, A's rooms
 * unload (compacting) and A's store is read per room. Writes bench/results/relay-latest.{md,json}.
 *
 *   pnpm bench:relay                      # the full run (~30 min)
 *   pnpm bench:relay --minutes=1 --no-write
 *   pnpm bench:relay --store=postgres     # both relays on one PostgreSQL database
 */
import { randomBytes } from 'node:crypto'
import { openPglite, openPostgres } from '@tidemark/relay'
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, setPriority, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type PostgresServer, startPostgres } from '../../packages/relay/scripts/postgresServer.ts'
import { freePort, type RedisServer, startRedisServer } from '../../packages/relay/scripts/redisServer.ts'
import { parseBenchFlags, profileFlags, STORE_NAMES } from './benchFlags.ts'
import type { ArrivalFigures, ChildConfig, DeviceCounters, FromDashboards, FromDevices, ToDashboards, ToDevices } from './benchMessages.ts'
import { ChildChannel } from './childChannel.ts'
import { machineCpu } from './machineCpu.ts'
import { type ProcessUsage, processTreeUsage, processUsage } from './processUsage.ts'
import { type MinuteRow, outsideHeapSlope, type ProcessCpu, type ReconnectRun, type RelayBenchResult } from './relayBenchResult.ts'
import { killRelays, type RelayExit, type RelayProcess, relayMetrics, spawnRelay } from './relayProcess.ts'
import { renderRelayReport } from './relayReport.ts'
import { leastSquaresSlope } from './leastSquaresSlope.ts'
import { redisStats } from './redisStats.ts'
import { readStoredRooms } from './storedRooms.ts'

const REPO = fileURLToPath(new URL('../..', import.meta.url))
const RESULTS = join(REPO, 'bench', 'results')
const SAMPLE_MS = 10_000
/** Scheduling priority of the device simulator (nice 10: served after the processes it measures). */
const SIMULATOR_NICE = 10
const MB = 1024 * 1024
const TIMERS = 'nodejs_active_resources{type="Timeout"}'
/** Changes of the other relay (through Redis) a relay did not write: that relay said its store wrote them. */
const RELAYED_CONFIRMED = 'tidemark_relay_relayed_confirmed_total'
/** Changes of the other relay a relay wrote itself (on a store of its own, every one). */
const RELAYED_WRITTEN = 'tidemark_relay_relayed_written_total'
const mb = (bytes: number): number => Number((bytes / MB).toFixed(1))

const flags = parseBenchFlags(process.argv.slice(2).filter((arg) => arg !== '--'))
const { layout } = flags
const deviceCount = layout.fleets * layout.devicesPerFleet
/** Node flags of a process named `name`: with `--cpu-prof`, a CPU profile per thread in bench/results/relay-profiles/<name>/. */
const profiled = (name: string): string[] => profileFlags(flags, name, RESULTS)

let redis: RedisServer | undefined
let postgres: PostgresServer | undefined
let devices: ChildChannel<ToDevices, FromDevices> | undefined
let dashboards: ChildChannel<ToDashboards, FromDashboards> | undefined
const temporary: string[] = []

function say(line: string): void {
  process.stdout.write(`${line}\n`)
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))
const load1 = (): number => Number((loadavg()[0] as number).toFixed(2))
const metric = (values: Map<string, number>, name: string): number => values.get(name) ?? 0
/** A relay's event-loop delay since its previous scrape, p99 and max, in ms. */
const loopDelay = (values: Map<string, number>): { p99: number; max: number } => ({
  p99: Number((1000 * metric(values, 'nodejs_eventloop_lag_p99_seconds')).toFixed(1)),
  max: Number((1000 * metric(values, 'nodejs_eventloop_lag_max_seconds')).toFixed(1)),
})

/** A relay's metrics, or `previous` (said on stdout) when a relay too busy to answer leaves the scrapes unanswered. */
async function scrape(relay: RelayProcess, previous: Map<string, number>): Promise<Map<string, number>> {
  try {
    return await relayMetrics(relay.httpUrl)
  } catch (error) {
    say(`relay bench: relay ${relay.name} did not answer /metrics (${error instanceof Error ? error.message : error}); its previous figures stand`)
    return previous
  }
}

/** Everything this run started, stopped by PID; temporary directories removed. */
async function cleanUp(): Promise<void> {
  devices?.kill()
  dashboards?.kill()
  killRelays()
  await redis?.stop().catch(() => undefined)
  await postgres?.stop().catch(() => undefined)
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true })
}

async function main(): Promise<RelayBenchResult> {
  const startedAt = new Date()
  const loadStart = load1()
  let loadMax = loadStart
  const root = mkdtempSync(join(tmpdir(), 'tidemark-relay-bench-'))
  temporary.push(root)
  const secret = randomBytes(32).toString('hex')
  say(`relay bench: ${layout.fleets} fleets × ${layout.devicesPerFleet} devices = ${deviceCount} devices, each its own room <fleet>/<device>; ${layout.updatesPerSecond} update/s each`)
  say(`relay bench: devices on relay A, ${layout.fleets * layout.dashboardsPerFleet} dashboards (${layout.dashboardsPerFleet} per fleet, one socket each following the fleet's ${layout.devicesPerFleet} rooms) on relay B, A and B sharing rooms through Redis`)
  say(`relay bench: load average ${loadavg().map((n) => n.toFixed(2)).join(' ')} on ${cpus().length} cores`)

  redis = await startRedisServer()
  const portA = await freePort()
  const dirA = join(root, 'relay-a')
  const relayEnv = (store: Record<string, string>, port: number): Record<string, string> => ({
    PORT: String(port),
    ...store,
    TIDEMARK_AUTH_SECRET: secret,
    REDIS_URL: (redis as RedisServer).url,
    TIDEMARK_LOG: 'warn',
  })
  let storeA: Record<string, string>
  let storeB: Record<string, string>
  let initRssMb: number | null = null
  if (flags.store === 'postgres') {
    postgres = await startPostgres()
    storeA = { DATABASE_URL: postgres.url }
    storeB = storeA
    say(`relay bench: PostgreSQL started for the run (pid ${postgres.pid}); relays A and B both use its database (DATABASE_URL)`)
  } else {
    // A relay's first start initializes its PGlite directory (seconds of work, and memory the
    // relay returns only by reopening the directory on a new thread): the data directory is
    // initialized by a relay run beforehand, as on any relay deployed before, so the series start
    // from a relay that opened an existing store.
    const dirB = join(root, 'relay-b')
    storeA = { TIDEMARK_DATA_DIR: dirA }
    storeB = { TIDEMARK_DATA_DIR: dirB }
    const initStart = Date.now()
    const init = await spawnRelay('init', relayEnv(storeA, 0))
    initRssMb = Math.round(processUsage(init.pid).rssBytes / MB)
    await init.stop('SIGTERM')
    cpSync(dirA, dirB, { recursive: true })
    say(`relay bench: PGlite directory initialized in ${((Date.now() - initStart) / 1000).toFixed(1)} s by a first relay run (RSS ${initRssMb} MB right after initializing); copied for B`)
  }
  const relayStart = Date.now()
  let [a, b] = await Promise.all([spawnRelay('A', relayEnv(storeA, portA), profiled('A')), spawnRelay('B', relayEnv(storeB, 0), profiled('B'))])
  const earlierA: RelayProcess[] = []
  const startRss = { A: Math.round(processUsage(a.pid).rssBytes / MB), B: Math.round(processUsage(b.pid).rssBytes / MB) }
  say(`relay bench: relays up in ${((Date.now() - relayStart) / 1000).toFixed(1)} s (A ${a.url} pid ${a.pid} RSS ${startRss.A} MB, B ${b.url} pid ${b.pid} RSS ${startRss.B} MB, redis pid ${redis.pid})`)

  const config = (relayUrl: string): ChildConfig => ({ layout, relayUrl, secret, reconnectSpreadMs: flags.reconnectSpreadMs })
  dashboards = new ChildChannel<ToDashboards, FromDashboards>('dashboards', new URL('./dashboardFleet.ts', import.meta.url), profiled('dashboards'))
  devices = new ChildChannel<ToDevices, FromDevices>('device simulator', new URL('./deviceSimulator.ts', import.meta.url), profiled('simulator'))
  // The load generator yields the cores to what it measures (the relays, Redis, the
  // dashboards): in a deployment the devices are elsewhere. Its send lag shows what it cost it.
  setPriority(devices.pid, SIMULATOR_NICE)
  const sim = devices
  const dash = dashboards
  dash.send({ type: 'start', config: config(b.url) })
  sim.send({ type: 'start', config: config(a.url) })
  const { connectMs } = await sim.next('ready', 300_000)
  say(`relay bench: every device in sync after ${(connectMs / 1000).toFixed(1)} s (first connects jittered over ${flags.reconnectSpreadMs / 1000} s)`)
  await dash.next('ready', 300_000)
  say(`relay bench: every dashboard follows its fleet's ${layout.devicesPerFleet} rooms and sees every device; warming up ${flags.warmupSeconds} s`)
  dash.send({ type: 'phase', name: 'warmup' })
  await sleep(flags.warmupSeconds * 1000)

  // Steady phase.
  const processes = (): Record<string, () => ProcessUsage> => {
    const server = postgres
    return {
      'relay A': () => processUsage(a.pid),
      'relay B': () => processUsage(b.pid),
      redis: () => processUsage((redis as RedisServer).pid),
      // PostgreSQL serves each connection from a backend process of its own.
      ...(server === undefined ? {} : { postgres: () => processTreeUsage(server.pid) }),
      'device simulator': () => processUsage(sim.pid),
      dashboards: () => processUsage(dash.pid),
    }
  }
  const cpuNow = (): Record<string, number> => {
    const out: Record<string, number> = {}
    for (const [name, usage] of Object.entries(processes())) out[name] = usage().cpuMs
    const self = process.cpuUsage()
    out.orchestrator = (self.user + self.system) / 1000
    return out
  }
  const deviceCounters = async (): Promise<DeviceCounters> => {
    sim.send({ type: 'counters' })
    return (await sim.next('counters')).counters
  }
  const interval = async (): Promise<ArrivalFigures> => {
    dash.send({ type: 'interval' })
    return (await dash.next('interval')).figures
  }
  dash.send({ type: 'phase', name: 'steady' })
  await interval()
  const steadyStart = Date.now()
  const cpuStart = cpuNow()
  const machineStart = machineCpu()
  const countersStart = await deviceCounters()
  let metricsA = await relayMetrics(a.httpUrl)
  let metricsB = await relayMetrics(b.httpUrl)
  const redisStart = await redisStats((redis as RedisServer).port)
  const updatesStart = metric(metricsA, 'tidemark_relay_updates_in_total')
  const outStart = metric(metricsB, 'tidemark_relay_updates_out_total')
  const confirmedStart = metric(metricsB, RELAYED_CONFIRMED)
  const writtenStart = metric(metricsB, RELAYED_WRITTEN)
  const rssSeries: [number, number, number][] = []
  const minutes: MinuteRow[] = []
  const steadyMs = flags.minutes * 60_000
  let rowCpu = cpuStart
  let rowMachine = machineStart
  let rowAt = steadyStart
  let rowUpdates = updatesStart
  say('')
  const shared = flags.store === 'postgres'
  say(
    `minute | load | latency p50 / p99 / max ms (arrivals) | updates/s | CPU % of a core: A / B / redis${shared ? ' / postgres' : ''} / simulator / dashboards / other processes, iowait | RSS MB A / B | heap used MB A / B | loop delay ms p99 / max: A, B | timers A / B | rooms A / B | stored MB ${shared ? '(shared database)' : 'A'}`,
  )
  for (let tick = 1; ; tick++) {
    const due = Math.min(steadyStart + tick * SAMPLE_MS, steadyStart + steadyMs)
    await sleep(due - Date.now())
    const now = Date.now()
    const elapsed = now - steadyStart
    const rssA = processUsage(a.pid).rssBytes / MB
    const rssB = processUsage(b.pid).rssBytes / MB
    rssSeries.push([Math.round(elapsed / 1000), Number(rssA.toFixed(1)), Number(rssB.toFixed(1))])
    loadMax = Math.max(loadMax, load1())
    const last = elapsed >= steadyMs
    if (elapsed - (rowAt - steadyStart) >= 60_000 || last) {
      const cpu = cpuNow()
      const machine = machineCpu()
      metricsA = await scrape(a, metricsA)
      metricsB = await scrape(b, metricsB)
      const figures = await interval()
      const updates = metric(metricsA, 'tidemark_relay_updates_in_total')
      const wall = now - rowAt
      const cpuPercent: Record<string, number> = {}
      for (const name of Object.keys(cpu)) cpuPercent[name] = Number(((100 * ((cpu[name] as number) - (rowCpu[name] as number))) / wall).toFixed(1))
      const ours = Object.values(cpuPercent).reduce((n, v) => n + v, 0)
      cpuPercent['other processes'] = Number(Math.max(0, (100 * (machine.busyMs - rowMachine.busyMs)) / wall - ours).toFixed(1))
      cpuPercent.iowait = Number(((100 * (machine.iowaitMs - rowMachine.iowaitMs)) / wall).toFixed(1))
      const row: MinuteRow = {
        minute: Number((elapsed / 60_000).toFixed(2)),
        load: load1(),
        latency: figures.latency,
        coalesced: figures.coalesced,
        updatesPerSecond: Number(((1000 * (updates - rowUpdates)) / wall).toFixed(1)),
        cpuPercent,
        rssMb: { A: Number(rssA.toFixed(1)), B: Number(rssB.toFixed(1)) },
        heapUsedMb: { A: mb(metric(metricsA, 'nodejs_heap_size_used_bytes')), B: mb(metric(metricsB, 'nodejs_heap_size_used_bytes')) },
        heapTotalMb: { A: mb(metric(metricsA, 'nodejs_heap_size_total_bytes')), B: mb(metric(metricsB, 'nodejs_heap_size_total_bytes')) },
        arrayBuffersMb: { A: mb(metric(metricsA, 'nodejs_array_buffers_bytes')), B: mb(metric(metricsB, 'nodejs_array_buffers_bytes')) },
        loopDelayMs: { A: loopDelay(metricsA), B: loopDelay(metricsB) },
        timers: { A: metric(metricsA, TIMERS), B: metric(metricsB, TIMERS) },
        roomsLoaded: { A: metric(metricsA, 'tidemark_relay_rooms_loaded'), B: metric(metricsB, 'tidemark_relay_rooms_loaded') },
        storedBytesA: metric(metricsA, 'tidemark_relay_stored_bytes'),
      }
      minutes.push(row)
      say(
        `${row.minute.toFixed(1).padStart(6)} | ${row.load.toFixed(2)} | ${row.latency.p50} / ${row.latency.p99} / ${row.latency.max} (${figures.arrivals}) | ${row.updatesPerSecond} | ` +
          `${cpuPercent['relay A']} / ${cpuPercent['relay B']} / ${cpuPercent.redis}${shared ? ` / ${cpuPercent.postgres}` : ''} / ${cpuPercent['device simulator']} / ${cpuPercent.dashboards} / ${cpuPercent['other processes']}, ${cpuPercent.iowait} | ` +
          `${row.rssMb.A} / ${row.rssMb.B} | ${row.heapUsedMb.A} / ${row.heapUsedMb.B} | ${row.loopDelayMs.A.p99} / ${row.loopDelayMs.A.max}, ${row.loopDelayMs.B.p99} / ${row.loopDelayMs.B.max} | ${row.timers.A} / ${row.timers.B} | ${row.roomsLoaded.A} / ${row.roomsLoaded.B} | ${(row.storedBytesA / 1e6).toFixed(2)}`,
      )
      rowCpu = cpu
      rowMachine = machine
      rowAt = now
      rowUpdates = updates
    }
    if (last) break
  }
  const steadyEnd = Date.now()
  const cpuEnd = cpuNow()
  const machineEnd = machineCpu()
  const rssEnd: Record<string, number> = { orchestrator: process.memoryUsage.rss() / MB }
  for (const [name, usage] of Object.entries(processes())) rssEnd[name] = usage().rssBytes / MB
  const redisEnd = await redisStats((redis as RedisServer).port)
  const countersEnd = await deviceCounters()
  const updatesSteady = metric(metricsA, 'tidemark_relay_updates_in_total') - updatesStart
  const outSteady = metric(metricsB, 'tidemark_relay_updates_out_total') - outStart
  const relayedB = { confirmed: metric(metricsB, RELAYED_CONFIRMED) - confirmedStart, written: metric(metricsB, RELAYED_WRITTEN) - writtenStart }
  const steadySeconds = (steadyEnd - steadyStart) / 1000
  const cpu: ProcessCpu[] = Object.keys(cpuEnd).map((name) => {
    const cpuMs = (cpuEnd[name] as number) - (cpuStart[name] as number)
    return { name, cpuMs: Math.round(cpuMs), percentOfCore: Number(((100 * cpuMs) / (steadyEnd - steadyStart)).toFixed(1)), rssMb: Math.round(rssEnd[name] ?? Number.NaN) }
  })
  const ourCpu = cpu.reduce((n, entry) => n + entry.cpuMs, 0)
  const steadyWall = steadyEnd - steadyStart
  const machine = {
    cores: cpus().length,
    busyPercent: Number(((100 * (machineEnd.busyMs - machineStart.busyMs)) / steadyWall).toFixed(1)),
    othersPercent: Number(Math.max(0, (100 * (machineEnd.busyMs - machineStart.busyMs - ourCpu)) / steadyWall).toFixed(1)),
    iowaitPercent: Number(((100 * (machineEnd.iowaitMs - machineStart.iowaitMs)) / steadyWall).toFixed(1)),
    stealPercent: Number(((100 * (machineEnd.stealMs - machineStart.stealMs)) / steadyWall).toFixed(1)),
  }
  const cpuOf = (name: string): number => cpu.find((entry) => entry.name === name)?.cpuMs ?? 0
  const perThousand = (ms: number): number => Number(((1000 * ms) / updatesSteady).toFixed(1))
  const relaysCpu = cpuOf('relay A') + cpuOf('relay B')
  const allCpu = cpu.reduce((n, entry) => n + entry.cpuMs, 0)
  const slope = (column: 1 | 2, fromSeconds = 0): number =>
    Number(
      leastSquaresSlope(rssSeries.filter((sample) => sample[0] >= fromSeconds).map((sample) => [sample[0] / 60, sample[column]])).toFixed(2),
    )
  dash.send({ type: 'phase', name: 'after steady' })

  // Reconnects.
  const reconnects: ReconnectRun[] = []
  let refusalsBeforeRestart: Map<string, number> | undefined
  if (flags.reconnect) {
    say('')
    say(`reconnect 1: every device socket dropped at once; each device reconnects at a uniform random time within ${flags.reconnectSpreadMs / 1000} s`)
    dash.send({ type: 'phase', name: 'disrupted-drop' })
    sim.send({ type: 'drop', spreadMs: flags.reconnectSpreadMs })
    const dropResync = (await sim.next('resynced', 180_000)).resync
    dash.send({ type: 'converge', resync: dropResync, timeoutMs: 60_000 })
    const dropConvergence = (await dash.next('converged', 120_000)).convergence
    reconnects.push({
      name: 'device sockets dropped',
      description: `all ${deviceCount} device sockets closed at once, each reconnecting at a uniform random time within ${flags.reconnectSpreadMs / 1000} s; readings recorded meanwhile sent on reconnect`,
      convergence: dropConvergence,
      lastResyncMs: dropResync.lastResyncMs,
      devicesMissing: dropResync.missing.length,
      relayDowntimeMs: null,
      arrivals: null,
    })
    say(`  last device back in sync after ${(dropResync.lastResyncMs / 1000).toFixed(2)} s; every dashboard converged after ${(dropConvergence.ms / 1000).toFixed(2)} s (pending pairs: ${dropConvergence.pending})`)
    dash.send({ type: 'phase', name: 'after drop' })
    await sleep(20_000)

    say(`reconnect 2: relay A restarted (SIGTERM, then a new process on the same port and ${STORE_NAMES[flags.store]}); devices reconnect on their own jitter (base 0.5 s, cap ${flags.reconnectSpreadMs / 1000} s)`)
    dash.send({ type: 'phase', name: 'disrupted-restart' })
    const at = Date.now()
    sim.send({ type: 'watch-resync', at, timeoutMs: 180_000 })
    await sleep(200)
    earlierA.push(a)
    const beforeStop = await scrape(a, new Map())
    const exitA = await a.stop('SIGTERM')
    a = await spawnRelay('A', relayEnv(storeA, portA), profiled('A-restarted'))
    const downtime = Date.now() - at
    const restartResync = (await sim.next('resynced', 240_000)).resync
    dash.send({ type: 'converge', resync: restartResync, timeoutMs: 60_000 })
    const restartConvergence = (await dash.next('converged', 120_000)).convergence
    reconnects.push({
      name: 'relay A restarted',
      description: `SIGTERM to relay A (it stores every room and closes every socket), a new A on the same port and ${STORE_NAMES[flags.store]} (down ${(downtime / 1000).toFixed(1)} s); devices reconnect with their jitter (uniform within min(${flags.reconnectSpreadMs / 1000} s, 0.5 s × 2^attempt))`,
      convergence: restartConvergence,
      lastResyncMs: restartResync.lastResyncMs,
      devicesMissing: restartResync.missing.length,
      relayDowntimeMs: downtime,
      arrivals: null,
    })
    say(`  relay A exited ${exitA.code ?? exitA.signal}, new A ready after ${(downtime / 1000).toFixed(1)} s; last device back in sync after ${(restartResync.lastResyncMs / 1000).toFixed(2)} s; every dashboard converged after ${(restartConvergence.ms / 1000).toFixed(2)} s (pending pairs: ${restartConvergence.pending})`)
    refusalsBeforeRestart = beforeStop
    dash.send({ type: 'phase', name: 'after restart' })
    await sleep(10_000)
  }

  // The devices leave; A's rooms unload (compacting) once idle; A's store is read per room.
  say('')
  sim.send({ type: 'stop' })
  const final = await sim.next('final')
  await sim.exited()
  const unloadDeadline = Date.now() + 120_000
  let roomsLoaded = Number.POSITIVE_INFINITY
  while (Date.now() < unloadDeadline) {
    roomsLoaded = metric(await scrape(a, new Map([['tidemark_relay_rooms_loaded', Number.NaN]])), 'tidemark_relay_rooms_loaded')
    if (roomsLoaded <= layout.fleets) break
    await sleep(2000)
  }
  say(`relay bench: devices gone; relay A holds ${roomsLoaded} rooms loaded (its ${layout.fleets} directories may stay)`)
  dash.send({ type: 'totals' })
  const totals = await dash.next('totals')
  dash.send({ type: 'stop' })
  await dash.exited()
  const finalA = await scrape(a, new Map())
  const finalB = await scrape(b, new Map())
  const relayRefusals: Record<string, number> = {}
  for (const [relay, values] of [['A', finalA], ['B', finalB], ['A before restart', refusalsBeforeRestart]] as const) {
    for (const [name, value] of values ?? []) if (name.startsWith('tidemark_relay_refusals_total') && value > 0) relayRefusals[`${relay} ${name}`] = value
  }
  const unhandled = metric(finalA, 'tidemark_relay_unhandled_rejections_total') + metric(finalB, 'tidemark_relay_unhandled_rejections_total') + metric(refusalsBeforeRestart ?? new Map(), 'tidemark_relay_unhandled_rejections_total')
  const exits: Record<string, string> = {}
  const describeExit = (exit: RelayExit): string => (exit.signal !== null ? exit.signal : `exit ${exit.code}`)
  exits.B = describeExit(await b.stop('SIGTERM'))
  exits.A = describeExit(await a.stop('SIGTERM'))
  for (const [i, earlier] of earlierA.entries()) exits[`A (instance ${i + 1})`] = describeExit(await earlier.exited)
  await redis.stop()
  redis = undefined
  const server = postgres
  const storedRooms = await readStoredRooms(
    server === undefined ? () => openPglite(dirA) : () => openPostgres(server.url, (error) => say(`relay bench: reading the stored rooms: ${error.message}`)),
  )
  await server?.stop()
  postgres = undefined
  const stored = storedRooms.filter((room) => room.room in final.rawBytes)
  const mean = (values: number[]): number => (values.length === 0 ? Number.NaN : values.reduce((n, v) => n + v, 0) / values.length)
  const raw = Object.values(final.rawBytes)
  const warnings: Record<string, string[]> = {}
  for (const relay of [...earlierA.map((r, i) => ({ r, name: `A (instance ${i + 1})` })), { r: a, name: 'A' }, { r: b, name: 'B' }]) {
    const lines = relay.r.stderrLines().filter((line) => line.trim() !== '' && !line.includes('storing rooms and closing'))
    warnings[relay.name] = lines.slice(0, 20)
  }
  const phaseFigures = totals.phases
  for (const [i, run] of reconnects.entries()) reconnects[i] = { ...run, arrivals: phaseFigures[i === 0 ? 'disrupted-drop' : 'disrupted-restart'] ?? null }

  return {
    startedAt: startedAt.toISOString(),
    seconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
    node: process.version,
    cpu: `${cpus()[0]?.model.trim() ?? 'unknown cpu'} × ${cpus().length}`,
    load: { start: loadStart, end: load1(), max: Math.max(loadMax, load1()) },
    layout,
    store: flags.store,
    relayRssMb: { afterInit: initRssMb, atStart: startRss },
    minutes: flags.minutes,
    warmupSeconds: flags.warmupSeconds,
    reconnectSpreadMs: flags.reconnectSpreadMs,
    updateBytes: Math.round((countersEnd.bytes - countersStart.bytes) / Math.max(1, countersEnd.sent - countersStart.sent)),
    steady: {
      seconds: steadySeconds,
      updates: updatesSteady,
      updatesOutB: outSteady,
      relayedB,
      arrivals: phaseFigures.steady ?? { latency: { count: 0, p50: Number.NaN, p90: Number.NaN, p99: Number.NaN, max: Number.NaN, mean: Number.NaN }, arrivals: 0, coalesced: 0 },
      expectedArrivals: (countersEnd.sent - countersStart.sent) * layout.dashboardsPerFleet,
      cpu,
      machine,
      cpuPerThousand: { A: perThousand(cpuOf('relay A')), B: perThousand(cpuOf('relay B')), total: perThousand(relaysCpu) },
      simulatorShare: { ofRelays: Number((cpuOf('device simulator') / relaysCpu).toFixed(3)), ofAll: Number((cpuOf('device simulator') / allCpu).toFixed(3)) },
      sendLag: countersEnd.sendLag,
      minutes,
      rssSeries,
      rssSlopeMbPerMinute: { A: slope(1), B: slope(2) },
      rssSlopeSecondHalf: { A: slope(1, steadySeconds / 2), B: slope(2, steadySeconds / 2) },
      outsideHeapSlope: { A: outsideHeapSlope(minutes, 'A'), B: outsideHeapSlope(minutes, 'B') },
      redis: {
        commandsPerUpdate: Number(((redisEnd.commandsProcessed - redisStart.commandsProcessed) / updatesSteady).toFixed(2)),
        bytesInPerUpdate: Math.round((redisEnd.netInputBytes - redisStart.netInputBytes) / updatesSteady),
        bytesOutPerUpdate: Math.round((redisEnd.netOutputBytes - redisStart.netOutputBytes) / updatesSteady),
      },
    },
    reconnects,
    storage:
      stored.length === 0
        ? null
        : {
            rooms: stored.length,
            storedMean: Math.round(mean(stored.map((room) => room.snapshotBytes + room.rowBytes))),
            storedMax: Math.max(...stored.map((room) => room.snapshotBytes + room.rowBytes)),
            snapshotMean: Math.round(mean(stored.map((room) => room.snapshotBytes))),
            rowsMean: Number(mean(stored.map((room) => room.rows)).toFixed(2)),
            rawMean: Math.round(mean(raw)),
            updatesPerRoomMean: Math.round(mean(Object.values(final.updates))),
            roomsLoadedAtStop: roomsLoaded,
          },
    health: {
      deviceRefusals: final.counters.refusals,
      deviceErrors: final.counters.errors,
      deviceAnomalies: final.counters.anomalies,
      dashboardRefusals: totals.refusals,
      dashboardErrors: totals.errors,
      dashboardEngineAnomalies: totals.engineAnomalies,
      relayRefusals,
      relayUnhandledRejections: unhandled,
      relayWarnings: warnings,
      relayExits: exits,
    },
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    cleanUp().finally(() => process.exit(130))
  })
}

try {
  const result = await main()
  const report = renderRelayReport(result)
  say('')
  say(report)
  if (flags.out !== null) {
    const prefix = resolve(REPO, flags.out)
    mkdirSync(dirname(prefix), { recursive: true })
    writeFileSync(`${prefix}.json`, `${JSON.stringify(result, null, 2)}\n`)
    writeFileSync(`${prefix}.md`, report)
    say(`written: ${prefix}.md, ${prefix}.json`)
  }
  await cleanUp()
} catch (error) {
  process.stderr.write(`relay bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  await cleanUp()
  process.exit(1)
}
