/**
 * The steady phase of `pnpm bench:relay`: every device sending at its rate for `--minutes`. Every
 * 10 s the relays' RSS; every minute a row (latency, updates, CPU of every process and of the
 * machine, memory, loop delay, timers, rooms, stored bytes); at the end CPU per 1,000 updates,
 * RSS slopes and Redis traffic per update.
 */
import { cpus } from 'node:os'
import type { BenchFlags } from './benchFlags.ts'
import type { ArrivalFigures, DeviceCounters, LoopDelay } from './benchMessages.ts'
import { leastSquaresSlope } from './leastSquaresSlope.ts'
import { loadAverage, machineCpu } from './machineCpu.ts'
import { type ProcessUsage, processTreeUsage, processUsage } from './processUsage.ts'
import { redisStats } from './redisStats.ts'
import { type MinuteRow, outsideHeapSlope, type ProcessCpu, type RelayBenchResult } from './relayBenchResult.ts'
import { relayMetrics } from './relayProcess.ts'
import { MB, metric, pause, type RelayRig, scrape } from './relayRig.ts'

const SAMPLE_MS = 10_000
const TIMERS = 'nodejs_active_resources{type="Timeout"}'
/** Changes of the other relay (through Redis) a relay did not write: that relay said its store wrote them. */
const RELAYED_CONFIRMED = 'tidemark_relay_relayed_confirmed_total'
/** Changes of the other relay a relay wrote itself (on a store of its own, every one). */
const RELAYED_WRITTEN = 'tidemark_relay_relayed_written_total'

const mb = (bytes: number): number => Number((bytes / MB).toFixed(1))
/** A relay's event-loop delay since its previous scrape, p99 and max, in ms. */
const loopDelay = (values: Map<string, number>): LoopDelay => ({
  p99: Number((1000 * metric(values, 'nodejs_eventloop_lag_p99_seconds')).toFixed(1)),
  max: Number((1000 * metric(values, 'nodejs_eventloop_lag_max_seconds')).toFixed(1)),
})

/**
 * What the steady phase measured, as the record keeps it (but the dashboards' arrivals, which
 * they report with every phase's at the end of the run), and the highest load average seen.
 */
export interface SteadyRun {
  readonly steady: Omit<RelayBenchResult['steady'], 'arrivals'>
  /** Mean bytes of one device update over the phase. */
  readonly updateBytes: number
  readonly loadMax: number
}

/**
 * Runs the steady phase on a warmed-up rig, printing a row a minute.
 *
 * @example
 * const { steady, updateBytes, loadMax } = await measureSteady(rig, flags)
 */
export async function measureSteady(rig: RelayRig, flags: BenchFlags): Promise<SteadyRun> {
  const { sim, dash, b } = rig
  const say = rig.say
  let loadMax = loadAverage()
  const processes = (): Record<string, () => ProcessUsage> => {
    const server = rig.postgres
    return {
      'relay A': () => processUsage(rig.a.pid),
      'relay B': () => processUsage(b.pid),
      redis: () => processUsage(rig.redis.pid),
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
  const interval = async (): Promise<{ figures: ArrivalFigures; loopDelayMs: LoopDelay }> => {
    dash.send({ type: 'interval' })
    return await dash.next('interval')
  }
  dash.send({ type: 'phase', name: 'steady' })
  await interval()
  const steadyStart = Date.now()
  const cpuStart = cpuNow()
  const machineStart = machineCpu()
  const countersStart = await deviceCounters()
  let metricsA = await relayMetrics(rig.a.httpUrl)
  let metricsB = await relayMetrics(b.httpUrl)
  const redisStart = await redisStats(rig.redis.port)
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
    `minute | load | latency p50 / p99 / max ms (arrivals) | updates/s | CPU % of a core: A / B / redis${shared ? ' / postgres' : ''} / simulator / dashboards / other processes, iowait | RSS MB A / B | heap used MB A / B | loop delay ms p99 / max: A, B, dashboards | timers A / B | rooms A / B | stored MB ${shared ? '(shared database)' : 'A'}`,
  )
  for (let tick = 1; ; tick++) {
    const due = Math.min(steadyStart + tick * SAMPLE_MS, steadyStart + steadyMs)
    await pause(due - Date.now())
    const now = Date.now()
    const elapsed = now - steadyStart
    const rssA = processUsage(rig.a.pid).rssBytes / MB
    const rssB = processUsage(b.pid).rssBytes / MB
    rssSeries.push([Math.round(elapsed / 1000), Number(rssA.toFixed(1)), Number(rssB.toFixed(1))])
    loadMax = Math.max(loadMax, loadAverage())
    const last = elapsed >= steadyMs
    if (elapsed - (rowAt - steadyStart) >= 60_000 || last) {
      const cpu = cpuNow()
      const machine = machineCpu()
      metricsA = await scrape(rig, rig.a, metricsA)
      metricsB = await scrape(rig, b, metricsB)
      const { figures, loopDelayMs: dashboardsDelay } = await interval()
      const updates = metric(metricsA, 'tidemark_relay_updates_in_total')
      const wall = now - rowAt
      const cpuPercent: Record<string, number> = {}
      for (const name of Object.keys(cpu)) cpuPercent[name] = Number(((100 * ((cpu[name] as number) - (rowCpu[name] as number))) / wall).toFixed(1))
      const ours = Object.values(cpuPercent).reduce((n, v) => n + v, 0)
      cpuPercent['other processes'] = Number(Math.max(0, (100 * (machine.busyMs - rowMachine.busyMs)) / wall - ours).toFixed(1))
      cpuPercent.iowait = Number(((100 * (machine.iowaitMs - rowMachine.iowaitMs)) / wall).toFixed(1))
      const row: MinuteRow = {
        minute: Number((elapsed / 60_000).toFixed(2)),
        load: loadAverage(),
        latency: figures.latency,
        coalesced: figures.coalesced,
        updatesPerSecond: Number(((1000 * (updates - rowUpdates)) / wall).toFixed(1)),
        cpuPercent,
        rssMb: { A: Number(rssA.toFixed(1)), B: Number(rssB.toFixed(1)) },
        heapUsedMb: { A: mb(metric(metricsA, 'nodejs_heap_size_used_bytes')), B: mb(metric(metricsB, 'nodejs_heap_size_used_bytes')) },
        heapTotalMb: { A: mb(metric(metricsA, 'nodejs_heap_size_total_bytes')), B: mb(metric(metricsB, 'nodejs_heap_size_total_bytes')) },
        arrayBuffersMb: { A: mb(metric(metricsA, 'nodejs_array_buffers_bytes')), B: mb(metric(metricsB, 'nodejs_array_buffers_bytes')) },
        loopDelayMs: { A: loopDelay(metricsA), B: loopDelay(metricsB), dashboards: dashboardsDelay },
        timers: { A: metric(metricsA, TIMERS), B: metric(metricsB, TIMERS) },
        roomsLoaded: { A: metric(metricsA, 'tidemark_relay_rooms_loaded'), B: metric(metricsB, 'tidemark_relay_rooms_loaded') },
        storedBytesA: metric(metricsA, 'tidemark_relay_stored_bytes'),
      }
      minutes.push(row)
      say(
        `${row.minute.toFixed(1).padStart(6)} | ${row.load.toFixed(2)} | ${row.latency.p50} / ${row.latency.p99} / ${row.latency.max} (${figures.arrivals}) | ${row.updatesPerSecond} | ` +
          `${cpuPercent['relay A']} / ${cpuPercent['relay B']} / ${cpuPercent.redis}${shared ? ` / ${cpuPercent.postgres}` : ''} / ${cpuPercent['device simulator']} / ${cpuPercent.dashboards} / ${cpuPercent['other processes']}, ${cpuPercent.iowait} | ` +
          `${row.rssMb.A} / ${row.rssMb.B} | ${row.heapUsedMb.A} / ${row.heapUsedMb.B} | ${row.loopDelayMs.A.p99} / ${row.loopDelayMs.A.max}, ${row.loopDelayMs.B.p99} / ${row.loopDelayMs.B.max}, ${dashboardsDelay.p99} / ${dashboardsDelay.max} | ${row.timers.A} / ${row.timers.B} | ${row.roomsLoaded.A} / ${row.roomsLoaded.B} | ${(row.storedBytesA / 1e6).toFixed(2)}`,
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
  const redisEnd = await redisStats(rig.redis.port)
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
  const slope = (column: 1 | 2, fromSeconds = 0): number =>
    Number(
      leastSquaresSlope(rssSeries.filter((sample) => sample[0] >= fromSeconds).map((sample) => [sample[0] / 60, sample[column]])).toFixed(2),
    )
  dash.send({ type: 'phase', name: 'after steady' })
  return {
    loadMax,
    updateBytes: Math.round((countersEnd.bytes - countersStart.bytes) / Math.max(1, countersEnd.sent - countersStart.sent)),
    steady: {
      seconds: steadySeconds,
      updates: updatesSteady,
      updatesOutB: outSteady,
      relayedB,
      expectedArrivals: (countersEnd.sent - countersStart.sent) * flags.layout.dashboardsPerFleet,
      cpu,
      machine,
      cpuPerThousand: { A: perThousand(cpuOf('relay A')), B: perThousand(cpuOf('relay B')), total: perThousand(relaysCpu) },
      simulatorShare: { ofRelays: Number((cpuOf('device simulator') / relaysCpu).toFixed(3)), ofAll: Number((cpuOf('device simulator') / ourCpu).toFixed(3)) },
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
  }
}
