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
import { parseBenchFlags, profileFlags } from './benchFlags.ts'
import type { ArrivalFigures, ChildConfig, FromDashboards, FromDevices, ToDashboards, ToDevices } from './benchMessages.ts'
import { ChildChannel } from './childChannel.ts'
import { loadAverage } from './machineCpu.ts'
import { processUsage } from './processUsage.ts'
import { measureReconnects } from './reconnectPhases.ts'
import type { RelayBenchResult } from './relayBenchResult.ts'
import { killRelays, type RelayExit, spawnRelay } from './relayProcess.ts'
import { renderRelayReport } from './relayReport.ts'
import { MB, metric, pause, type RelayRig, scrape } from './relayRig.ts'
import { measureSteady } from './steadyPhase.ts'
import { readStoredRooms } from './storedRooms.ts'

const REPO = fileURLToPath(new URL('../..', import.meta.url))
const RESULTS = join(REPO, 'bench', 'results')
/** Scheduling priority of the device simulator (nice 10: served after the processes it measures). */
const SIMULATOR_NICE = 10

const flags = parseBenchFlags(process.argv.slice(2).filter((arg) => arg !== '--'))
const { layout } = flags
const deviceCount = layout.fleets * layout.devicesPerFleet
/** The steady phase's arrivals when the dashboards reported none. */
const NO_ARRIVALS: ArrivalFigures = { latency: { count: 0, p50: Number.NaN, p90: Number.NaN, p99: Number.NaN, max: Number.NaN, mean: Number.NaN }, arrivals: 0, coalesced: 0 }
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
  const loadStart = loadAverage()
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
  const [a, b] = await Promise.all([spawnRelay('A', relayEnv(storeA, portA), profiled('A')), spawnRelay('B', relayEnv(storeB, 0), profiled('B'))])
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
  await pause(flags.warmupSeconds * 1000)

  const rig: RelayRig = {
    a,
    b,
    earlierA: [],
    redis,
    postgres,
    sim,
    dash,
    respawnA: (profile) => spawnRelay('A', relayEnv(storeA, portA), profiled(profile)),
    say,
  }
  const steadyRun = await measureSteady(rig, flags)
  loadMax = Math.max(loadMax, steadyRun.loadMax)
  const reconnectRuns = flags.reconnect ? await measureReconnects(rig, flags) : undefined
  const reconnects = reconnectRuns?.reconnects ?? []

  // The devices leave; A's rooms unload (compacting) once idle; A's store is read per room.
  say('')
  sim.send({ type: 'stop' })
  const final = await sim.next('final')
  await sim.exited()
  const unloadDeadline = Date.now() + 120_000
  let roomsLoaded = Number.POSITIVE_INFINITY
  while (Date.now() < unloadDeadline) {
    roomsLoaded = metric(await scrape(rig, rig.a, new Map([['tidemark_relay_rooms_loaded', Number.NaN]])), 'tidemark_relay_rooms_loaded')
    if (roomsLoaded <= layout.fleets) break
    await pause(2000)
  }
  say(`relay bench: devices gone; relay A holds ${roomsLoaded} rooms loaded (its ${layout.fleets} directories may stay)`)
  dash.send({ type: 'totals' })
  const totals = await dash.next('totals')
  dash.send({ type: 'stop' })
  await dash.exited()
  const finalA = await scrape(rig, rig.a, new Map())
  const finalB = await scrape(rig, b, new Map())
  const relayRefusals: Record<string, number> = {}
  for (const [relay, values] of [['A', finalA], ['B', finalB], ['A before restart', reconnectRuns?.beforeRestart]] as const) {
    for (const [name, value] of values ?? []) if (name.startsWith('tidemark_relay_refusals_total') && value > 0) relayRefusals[`${relay} ${name}`] = value
  }
  const unhandled = metric(finalA, 'tidemark_relay_unhandled_rejections_total') + metric(finalB, 'tidemark_relay_unhandled_rejections_total') + metric(reconnectRuns?.beforeRestart ?? new Map(), 'tidemark_relay_unhandled_rejections_total')
  const exits: Record<string, string> = {}
  const describeExit = (exit: RelayExit): string => (exit.signal !== null ? exit.signal : `exit ${exit.code}`)
  exits.B = describeExit(await b.stop('SIGTERM'))
  exits.A = describeExit(await rig.a.stop('SIGTERM'))
  for (const [i, earlier] of rig.earlierA.entries()) exits[`A (instance ${i + 1})`] = describeExit(await earlier.exited)
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
  for (const relay of [...rig.earlierA.map((r, i) => ({ r, name: `A (instance ${i + 1})` })), { r: rig.a, name: 'A' }, { r: b, name: 'B' }]) {
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
    load: { start: loadStart, end: loadAverage(), max: Math.max(loadMax, loadAverage()) },
    layout,
    store: flags.store,
    relayRssMb: { afterInit: initRssMb, atStart: startRss },
    minutes: flags.minutes,
    warmupSeconds: flags.warmupSeconds,
    reconnectSpreadMs: flags.reconnectSpreadMs,
    updateBytes: steadyRun.updateBytes,
    steady: { ...steadyRun.steady, arrivals: phaseFigures.steady ?? NO_ARRIVALS },
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
