/**
 * bench/README.md, "Relay": the commands of its table and their flags, the topology (10 fleets ×
 * 100 devices each in its own room `<fleet>/<device>`, 2 dashboards per fleet following the
 * fleet's directory), what a device sends (one engine batch of temp, humidity and battery
 * stamped `Date.now()`, that passes the relay's per-source authorization; send times spread
 * evenly over the second), when a dashboard has seen a reading and its latency, the warm-up that
 * fills the devices' live state, what the steady phase reads from /proc (a PostgreSQL server with
 * its backends), the store the relays use (`--store`) as the report names it, and the targets
 * the report marks. No relay, Redis or timing: the pieces the run is made of, on their own.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type ClockEntry, createEngine } from '@tidemark/engine'
import { authorizeUpdate, TokenVerifier } from '@tidemark/relay'
import { bindDoc } from '@tidemark/yjs'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { REPO_DIR, RESULTS_DIR } from '../harness/child.ts'
import { arrivalsOf } from '../relay/arrivals.ts'
import { LIVE_STATE_FILL_SECONDS, parseBenchFlags, profileFlags } from '../relay/benchFlags.ts'
import { dashboardToken, deviceToken, secretBytes } from '../relay/benchTokens.ts'
import { allDevices, BENCH_ENGINE_OPTIONS, deviceIdentity, deviceUpdate, directoryOf, sendOffsetMs } from '../relay/fleetLayout.ts'
import { leastSquaresSlope } from '../relay/leastSquaresSlope.ts'
import { machineCpu } from '../relay/machineCpu.ts'
import { processTreeUsage, processUsage } from '../relay/processUsage.ts'
import { outsideHeapSlope, type RelayBenchResult } from '../relay/relayBenchResult.ts'
import { renderRelayReport } from '../relay/relayReport.ts'

const DEFAULT_LAYOUT = { fleets: 10, devicesPerFleet: 100, dashboardsPerFleet: 2, updatesPerSecond: 1 }

describe('pnpm bench:relay: the commands', () => {
  it.each([
    ['the full run: 10 fleets × 100 devices, 2 dashboards each, 15 min of warm-up, 10 steady, reconnects, results written', [], { layout: DEFAULT_LAYOUT, minutes: 10, warmupSeconds: 900, reconnectSpreadMs: 5_000, reconnect: true, out: 'bench/results/relay-latest', store: 'pglite', cpuProf: false }],
    ['a quick run, nothing written', ['--minutes=1', '--warmup=10', '--no-write'], { minutes: 1, warmupSeconds: 10, out: null }],
    ['smaller fleets, no reconnect phases', ['--fleets=2', '--devices=10', '--no-reconnect'], { layout: { ...DEFAULT_LAYOUT, fleets: 2, devicesPerFleet: 10 }, reconnect: false }],
    ['dashboards per fleet, updates per device per second', ['--dashboards=3', '--rate=0.5'], { layout: { ...DEFAULT_LAYOUT, dashboardsPerFleet: 3, updatesPerSecond: 0.5 } }],
    ['CPU profiles too', ['--cpu-prof'], { cpuProf: true }],
    ['both relays on one PostgreSQL database', ['--store=postgres'], { store: 'postgres' }],
    ['each relay on a PGlite directory of its own, as by default', ['--store=pglite'], { store: 'pglite' }],
  ])('%s', (_, argv, expected) => {
    expect(parseBenchFlags(argv as string[])).toMatchObject(expected)
  })

  it('refuses an unknown flag, a malformed number, an --out without a path and an unknown store, with the usage line', () => {
    for (const [argv, message] of [
      [['--devics=10'], 'unknown flag --devics'],
      [['--minutes=abc'], '--minutes must be a number >= 0.1, got abc'],
      [['--fleets=1.5'], '--fleets must be an integer >= 1, got 1.5'],
      [['--rate=0'], '--rate must be a number >= 0.01, got 0'],
      [['--out'], '--out takes the path prefix of the results'],
      [['--out='], '--out takes the path prefix of the results'],
      [['--store=sqlite'], '--store must be one of pglite, postgres, got sqlite'],
      [['--store'], '--store must be one of pglite, postgres, got true'],
    ] as const) {
      expect(() => parseBenchFlags(argv), argv.join(' ')).toThrow(message)
      expect(() => parseBenchFlags(argv), argv.join(' ')).toThrow('usage: pnpm bench:relay')
    }
  })

  it('with --cpu-prof, profiles every process in results/relay-profiles/<process>/, which git ignores', () => {
    expect(profileFlags(parseBenchFlags([]), 'A', RESULTS_DIR)).toEqual([])
    const flags = profileFlags(parseBenchFlags(['--cpu-prof']), 'simulator', RESULTS_DIR)
    expect(flags).toEqual(['--cpu-prof', `--cpu-prof-dir=${join(RESULTS_DIR, 'relay-profiles', 'simulator')}`])
    const ignored = spawnSync('git', ['check-ignore', '-q', join(RESULTS_DIR, 'relay-profiles', 'simulator', 'CPU.20261206.000000.1.0.001.cpuprofile')], { cwd: REPO_DIR })
    expect(ignored.status).toBe(0)
  })
})

describe('pnpm bench:relay: the fleet', () => {
  it('10 fleets × 100 devices, each device its own room <fleet>/<device>, replica and source; a fleet’s dashboards follow <fleet>/_directory', () => {
    const devices = allDevices(DEFAULT_LAYOUT)
    expect(devices).toHaveLength(1_000)
    expect(new Set(devices.map((d) => d.room)).size).toBe(1_000)
    expect(new Set(devices.map((d) => d.source)).size).toBe(1_000)
    expect(new Set(devices.map((d) => d.fleet)).size).toBe(10)
    for (const d of devices) expect(d.room.startsWith(`${d.fleet}/`) && !d.room.slice(d.fleet.length + 1).includes('/')).toBe(true)
    expect(deviceIdentity(3, 42, 100)).toMatchObject({ fleet: 'fleet-03', room: 'fleet-03/d042' })
    expect(directoryOf('fleet-03')).toBe('fleet-03/_directory')
  })

  it('spreads the devices’ send times evenly over each second', () => {
    const devices = allDevices(DEFAULT_LAYOUT)
    const offsets = devices.map((d) => sendOffsetMs(d, devices.length, 1_000))
    expect(offsets.slice(1).map((o, i) => o - (offsets[i] as number))).toEqual(Array(999).fill(1))
    expect(Math.min(...offsets)).toBe(0)
    expect(Math.max(...offsets)).toBeLessThan(1_000)
  })

  it('sends one update a second as one engine batch of 3 readings (temp, humidity, battery) stamped with the send time, which the relay’s per-source authorization admits', async () => {
    const secret = secretBytes('0123456789abcdef0123456789abcdef0123456789abcdef')
    const device = deviceIdentity(0, 7, 100)
    const grant = await new TokenVerifier({ secret }).verify(await deviceToken(device, secret))
    if (!('replicas' in grant)) throw new Error(`token refused: ${grant.text}`)
    expect(grant.rooms).toEqual([device.room])

    const now = 1_700_000_000_000
    const engine = createEngine({ ...BENCH_ENGINE_OPTIONS, replicaId: device.replica, now: () => now })
    const doc = new Y.Doc()
    const room = new Y.Doc()
    const origin = { device: device.source }
    bindDoc(engine, doc, { origin, measureEvery: Number.POSITIVE_INFINITY })
    Y.applyUpdate(room, Y.encodeStateAsUpdate(doc))
    const updates: Uint8Array[] = []
    doc.on('update', (update: Uint8Array, from: unknown) => {
      if (from === origin) updates.push(update)
    })
    const batch = deviceUpdate(device, engine.nextSeq(device.source), now)
    expect(batch.map((e) => [e.key, e.source, e.seq, e.ts])).toEqual([
      ['temp', device.source, 1, now],
      ['humidity', device.source, 2, now],
      ['battery', device.source, 3, now],
    ])
    expect(engine.ingest(batch)).toMatchObject({ accepted: 3, rejected: 0 })
    expect(updates).toHaveLength(1)
    expect(authorizeUpdate(room, updates[0] as Uint8Array, grant)).toMatchObject({ ok: true })
    Y.applyUpdate(room, updates[0] as Uint8Array)

    // Another device's readings in this device's doc: the relay refuses them.
    const other = deviceIdentity(0, 8, 100)
    engine.ingest(deviceUpdate(other, 1, now))
    expect(updates).toHaveLength(2)
    expect(authorizeUpdate(room, updates[1] as Uint8Array, grant)).toMatchObject({ ok: false, missing: false })
    // A dashboard's token reads its fleet's rooms and writes none.
    const dashboard = await new TokenVerifier({ secret }).verify(await dashboardToken('fleet-00', 'fleet-00-dash-0', secret))
    expect(dashboard).toMatchObject({ role: 'dashboard', rooms: ['fleet-00/*'] })
  })
})

describe('pnpm bench:relay: what it measures', () => {
  const clock = (source: string, prefix: number, prefixTs: number) => ({ source, prefix, prefixTs }) as ClockEntry

  it('counts a reading seen when the dashboard’s engine has merged it (confirmed by nextSeq), its latency that moment − its ts', () => {
    const seen = new Map<string, number>()
    const merged = new Map([['d1', 4]])
    const nextSeq = (source: string) => merged.get(source) ?? 1
    const first = arrivalsOf(seen, [clock('d1', 3, 1_000), clock('d2', 3, 1_000)], nextSeq, 1_040, 1_000)
    expect(first).toEqual({ arrivals: [{ source: 'd1', prefix: 3, latencies: [40] }], unconfirmed: 1 })
    expect(seen).toEqual(new Map([['d1', 3]]))
    // A clock that moves nothing is no arrival.
    expect(arrivalsOf(seen, [clock('d1', 3, 1_000)], nextSeq, 1_100, 1_000).arrivals).toEqual([])
    // Two updates in one merge: the older one was sent a period before the newest.
    merged.set('d1', 10)
    expect(arrivalsOf(seen, [clock('d1', 9, 3_000)], nextSeq, 3_025, 1_000).arrivals).toEqual([{ source: 'd1', prefix: 9, latencies: [25, 1_025] }])
  })

  it('warms up 900 s by default: a device’s document holds a window’s cells until its end + allowed lateness + retention, 12 min with the fleet’s options', () => {
    const device = deviceIdentity(0, 0, 1)
    const t0 = 1_700_000_040_000 // a minute's start
    let now = t0
    const engine = createEngine({ ...BENCH_ENGINE_OPTIONS, replicaId: device.replica, now: () => now })
    bindDoc(engine, new Y.Doc(), { measureEvery: Number.POSITIVE_INFINITY })
    const cells: number[] = []
    for (let second = 0; second <= LIVE_STATE_FILL_SECONDS; second += 5) {
      now = t0 + second * 1_000
      engine.ingest(deviceUpdate(device, engine.nextSeq(device.source), now))
      if (second % 60 === 0) cells.push(engine.stats().cells)
    }
    // Minute by minute: growing until 12 min, then as many leave as arrive.
    expect(cells.slice(0, 13)).toEqual(Array.from({ length: 13 }, (_, minute) => 3 * (minute + 1)))
    expect(new Set(cells.slice(12))).toEqual(new Set([39]))
    // The bench's warm-up outlasts the fill: its steady phase starts with the live state full.
    expect(LIVE_STATE_FILL_SECONDS).toBeGreaterThanOrEqual(cells.indexOf(39) * 60)
  })

  it('reads CPU time and RSS of a process from /proc, the machine’s CPU from /proc/stat, and the RSS slope by least squares', () => {
    const usage = processUsage(process.pid)
    expect(usage.cpuMs).toBeGreaterThan(0)
    expect(usage.rssBytes / process.memoryUsage.rss()).toBeGreaterThan(0.8)
    expect(usage.rssBytes / process.memoryUsage.rss()).toBeLessThan(1.25)
    expect(machineCpu().busyMs).toBeGreaterThan(0)
    expect(leastSquaresSlope([[0, 300], [1, 302], [2, 301], [3, 303]])).toBeCloseTo(0.8, 10)
  })

  it('reads the CPU time of a server with the processes it forked (PostgreSQL’s backends), those it reaped included', () => {
    const before = processTreeUsage(process.pid).cpuMs - processUsage(process.pid).cpuMs
    // A child that spends 300 ms of CPU, then is reaped: its time moves to this process's children's.
    const child = spawnSync(process.execPath, ['-e', 'while (process.cpuUsage().user < 300_000);'])
    expect(child.status).toBe(0)
    const after = processTreeUsage(process.pid)
    expect(after.cpuMs - processUsage(process.pid).cpuMs - before).toBeGreaterThanOrEqual(290)
    // RSS is the server's own: its children map its shared memory again.
    expect(after.rssBytes / processUsage(process.pid).rssBytes).toBeGreaterThan(0.9)
    expect(after.rssBytes / processUsage(process.pid).rssBytes).toBeLessThan(1.1)
  })
})

describe('pnpm bench:relay: the report', () => {
  const latest = JSON.parse(readFileSync(join(RESULTS_DIR, 'relay-latest.json'), 'utf8')) as RelayBenchResult
  const targets = (r: RelayBenchResult) => renderRelayReport(r).split('\n').filter((line) => line.startsWith('| ') && /[✓✗] \|$/.test(line))
  const withSteady = (steady: Partial<RelayBenchResult['steady']>, reconnects = latest.reconnects): RelayBenchResult => ({ ...latest, steady: { ...latest.steady, ...steady }, reconnects })

  for (const name of ['relay-latest', 'relay-postgres-latest']) {
    it(`is the committed results/${name}.md, rendered from ${name}.json, and states the load`, () => {
      const result = JSON.parse(readFileSync(join(RESULTS_DIR, `${name}.json`), 'utf8')) as RelayBenchResult
      expect(renderRelayReport(result)).toBe(readFileSync(join(RESULTS_DIR, `${name}.md`), 'utf8'))
      expect(renderRelayReport(result)).toContain(`load average (1 min) ${result.load.start} at start → ${result.load.end} at end, max ${result.load.max}`)
    })
  }

  it('names the store the relays used: their own PGlite directories, or one PostgreSQL database (its CPU and B’s relayed counts shown)', () => {
    const own = renderRelayReport({ ...latest, store: 'pglite', steady: { ...latest.steady, relayedB: { confirmed: 0, written: 0 } } })
    expect(own).toContain('each relay is the `tidemark-relay` command with its own PGlite store')
    expect(own).toContain('| **0** dropped as stored by A, **0** written by B itself (held, A not having said it stored them in time); on a PGlite store of its own B writes every change of A as a copy (merged per room, within ten write windows), which neither counter counts |')
    expect(own).not.toContain('PostgreSQL database')
    const cpu = [...latest.steady.cpu, { name: 'postgres', cpuMs: 12_000, percentOfCore: 2, rssMb: 40 }]
    const minutes = latest.steady.minutes.map((m) => ({ ...m, cpuPercent: { ...m.cpuPercent, postgres: 2.5 } }))
    const shared = renderRelayReport({
      ...latest,
      store: 'postgres',
      relayRssMb: { ...latest.relayRssMb, afterInit: null },
      steady: { ...latest.steady, cpu, minutes, relayedB: { confirmed: 1_200, written: 34 } },
      reconnects: latest.reconnects.map((run) => ({ ...run, description: run.description.replace('PGlite directory', 'PostgreSQL database') })),
    })
    expect(shared).not.toContain('PGlite')
    expect(shared).toContain('on **one PostgreSQL database** (`DATABASE_URL`')
    expect(shared).toContain(`\`pnpm bench:relay --minutes=${latest.minutes} --store=postgres\``)
    expect(shared).toContain(`; the PostgreSQL server both write to ${((1000 * 12_000) / latest.steady.updates).toFixed(0)} ms (2.0% of one core) |`)
    expect(shared).toContain('| **1,200** dropped as stored by A, **34** written by B itself (held, A not having said it stored them in time) |')
    expect(shared).toContain('| CPU redis | CPU postgres | CPU simulator |')
    expect(shared).toContain('| rooms A / B | stored in the shared database |')
    if (latest.storage !== null) expect(shared).toContain('then the PostgreSQL database both relays write (the sizes are the database\'s, not A\'s share of it) was read per room')
    const header = shared.split('\n').find((line) => line.startsWith('| minute |')) ?? ''
    const row = shared.split('\n').find((line) => line.startsWith(`| ${latest.steady.minutes[0]?.minute.toFixed(1)} |`)) ?? ''
    expect(row.split('|').length).toBe(header.split('|').length)
    expect(row).toContain(' | 2.5% | ')
  })

  it('splits the RSS slope: the part outside the JS heap (RSS − V8 heap size, a sample a minute), when the record read the heap’s size', () => {
    // B's RSS grows 3 MB a minute, its JS heap 1: 2 MB a minute outside it; A's grows with its heap.
    const minutes = latest.steady.minutes.map((m, i) => ({ ...m, minute: i + 1, rssMb: { A: 600 + i, B: 600 + 3 * i }, heapTotalMb: { A: 100 + i, B: 100 + i } }))
    expect(outsideHeapSlope(minutes, 'A')).toBe(0)
    expect(outsideHeapSlope(minutes, 'B')).toBe(2)
    expect(Number.isNaN(outsideHeapSlope(latest.steady.minutes.map(({ heapTotalMb: _, ...m }) => m), 'A'))).toBe(true)
    const rssRow = (r: RelayBenchResult) => targets(r).find((line) => line.startsWith('| relay RSS')) ?? ''
    expect(rssRow(withSteady({ outsideHeapSlope: { A: 0.1, B: 2.5 } }))).toContain('; of it outside the JS heap (RSS − V8 heap size, a sample a minute): slope A 0.10, B 2.50 MB/min |')
    const { outsideHeapSlope: _, ...without } = latest.steady
    expect(rssRow({ ...latest, steady: without })).not.toContain('outside the JS heap')
  })

  it('shows the dashboards’ process’s event-loop delay beside the relays’ when the rows carry it (records before it render as they were)', () => {
    const minutes = latest.steady.minutes.map((m, i) => ({ ...m, loopDelayMs: { ...m.loopDelayMs, dashboards: { p99: 40 + i, max: 90.5 } } }))
    const report = renderRelayReport(withSteady({ minutes }))
    const header = report.split('\n').find((line) => line.startsWith('| minute |')) ?? ''
    const row = report.split('\n').find((line) => line.startsWith(`| ${latest.steady.minutes[0]?.minute.toFixed(1)} |`)) ?? ''
    expect(header).toContain('| event-loop delay p99 / max ms, A · B · dashboards |')
    const first = latest.steady.minutes[0] as (typeof latest.steady.minutes)[number]
    expect(row).toContain(`| ${first.loopDelayMs.A.p99} / ${first.loopDelayMs.A.max} · ${first.loopDelayMs.B.p99} / ${first.loopDelayMs.B.max} · 40 / 90.5 |`)
    expect(row.split('|').length).toBe(header.split('|').length)
    expect(report).toContain("the dashboards' event-loop delay is their one process's")
    const before = renderRelayReport(withSteady({ minutes: latest.steady.minutes.map(({ loopDelayMs: { dashboards: _, ...relays }, ...m }) => ({ ...m, loopDelayMs: relays })) }))
    expect(before).toContain('| event-loop delay p99 / max ms, A · B |')
    expect(before).not.toContain("the dashboards' event-loop delay")
  })

  it('marks each target ✓/✗: p99 < 100 ms, RSS slope ≤ 1 MB/min, timers and rooms loaded flat, every dashboard converged < 10 s', () => {
    const met = withSteady(
      { arrivals: { ...latest.steady.arrivals, latency: { ...latest.steady.arrivals.latency, p99: 99 } }, rssSlopeMbPerMinute: { A: 1, B: -2 } },
      latest.reconnects.map((r) => ({ ...r, convergence: { ...r.convergence, ms: 9_999 } })),
    )
    expect(targets(met).map((line) => line.at(-3))).toEqual(['✓', '✓', '✓', '✓', '✓'])
    const growing = latest.steady.minutes.map((m, i) => ({ ...m, timers: { A: m.timers.A + 100 * i, B: m.timers.B } }))
    const missed = withSteady(
      { arrivals: { ...latest.steady.arrivals, latency: { ...latest.steady.arrivals.latency, p99: 100 } }, rssSlopeMbPerMinute: { A: 0.2, B: 1.01 }, minutes: growing },
      latest.reconnects.map((r) => ({ ...r, convergence: { ...r.convergence, ms: 10_000 } })),
    )
    expect(targets(missed).map((line) => line.at(-3))).toEqual(['✗', '✗', '✗', '✗', '✗'])
    expect(targets(missed)[0]).toContain('p99 < 100 ms ✗')
    expect(targets(missed)[1]).toContain('growth ≤ 1 MB/min ✗')
    expect(targets(missed)[3]).toContain('< 10 s ✗')
  })
})
