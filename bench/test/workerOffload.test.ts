/**
 * bench/README.md, "worker-offload": its command line (`--seconds=10`, `--only=`, `--json`; a
 * full run is the record), the load of each scenario (20 readings per device per second in one
 * message for the fleet every 100 ms; 10^6 events in batches of 10,000, one per task on the page
 * and four in flight to a worker, every window live; a minute of 200 devices, 12,000 windows),
 * the fleets and the floor, the control's time per batch, the main-thread figures read from a
 * Chrome trace between two marks, and the targets the report marks. On fake timers; no browser.
 */
import { readFileSync } from 'node:fs'
import { createEngine, type StreamEvent } from '@tidemark/engine'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { controlSpinMs, DEVICE_LOADS, MILLION, parseOffloadArgs, SCENARIOS, TAKEOVER_TRIALS } from '../browser/offloadPlan.ts'
import { type MainThread, mainThread, type OffloadReport, report, type TraceEvent } from '../browser/offloadReport.ts'
import { feedBatches, FILL_ENGINE, fill, MILLION_ENGINE, millionBatches, scenarioEngine, simulate } from '../browser/worker-offload/fleetLoad.ts'
import type { OffloadResult } from '../browser/worker-offload/result.ts'

/** bench/README.md, which describes the worker-offload scenarios. */
const OFFLOAD_README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

afterEach(() => {
  vi.useRealTimers()
})

describe('worker-offload.ts: the command line', () => {
  it('runs every scenario for 10 s by default, and only such a run is the record written to bench/results', () => {
    expect(parseOffloadArgs([])).toEqual({ only: ['devices', 'million', 'memory', 'takeover'], seconds: 10, json: false, full: true })
    expect(parseOffloadArgs(['--only=million,devices', '--json'])).toEqual({ only: ['devices', 'million'], seconds: 10, json: true, full: false })
    expect(parseOffloadArgs(['--seconds=10']).full).toBe(false)
    expect(parseOffloadArgs(['--seconds=2.5']).seconds).toBe(2.5)
  })

  it('refuses an unknown scenario and a length that is not a positive number', () => {
    expect(() => parseOffloadArgs(['--only=devices,milion'])).toThrow('--only takes devices, million, memory, takeover (comma-separated), not milion')
    for (const bad of ['--seconds=abc', '--seconds=0', '--seconds=-1', '--seconds=']) expect(() => parseOffloadArgs([bad]), bad).toThrow(/--seconds must be a number > 0/)
  })
})

describe('worker-offload: the scenarios', () => {
  it('the scenarios and device loads are those bench/README.md describes: 48 and 200 devices at 20 readings per second, 200 at 100, and the floor of 200 tiles', () => {
    // The worker-offload section: its bullets name the scenarios, its table's rows the device loads.
    const section = OFFLOAD_README.slice(OFFLOAD_README.indexOf('- **devices**'), OFFLOAD_README.indexOf('| 10^6 events |'))
    expect(SCENARIOS).toEqual([...section.matchAll(/^- \*\*(\w+)\*\*:/gm)].map((m) => m[1]))
    const rate = section.match(/devices send (\d+) readings per second each/)?.[1]
    const rows = [...section.matchAll(/^\| (floor, (\d+) tiles, no readings|(\d+) devices(?:, (\d+) readings\/s)?) \|/gm)]
    expect(DEVICE_LOADS).toEqual(rows.map((m) => (m[2] !== undefined ? { devices: Number(m[2]), rate: 0 } : { devices: Number(m[3]), rate: Number(m[4] ?? rate) })))
  })

  it('devices: the fleet sends one message every 100 ms with every device’s readings, 20 per device per second, each device its own source and key', async () => {
    vi.useFakeTimers({ now: 1_700_000_000_000 })
    const messages: { at: number; events: StreamEvent[] }[] = []
    const sent = simulate((events) => messages.push({ at: Date.now(), events }), { devices: 48, rate: 20, seconds: 10 })
    await vi.advanceTimersByTimeAsync(10_000)
    expect(await sent).toBe(48 * 2 * messages.length)
    expect(messages.length).toBeGreaterThanOrEqual(99)
    expect(messages.slice(1).map((m, i) => m.at - (messages[i] as { at: number }).at)).toEqual(Array(messages.length - 1).fill(100))
    for (const { events } of messages) {
      expect(events).toHaveLength(96)
      expect(events.every((e) => e.key === e.source)).toBe(true)
      expect(new Set(events.map((e) => e.source)).size).toBe(48)
    }
  })

  it('million: 10^6 events in batches of 10,000, made one batch at a time; every window stays live (manual watermark)', () => {
    expect(MILLION).toEqual({ events: 1_000_000, batch: 10_000 })
    expect(scenarioEngine('million')).toBe(MILLION_ENGINE)
    let batches = 0
    let events = 0
    const engine = createEngine(MILLION_ENGINE)
    for (const batch of millionBatches(MILLION.events, MILLION.batch)) {
      expect(batch).toHaveLength(10_000)
      batches++
      events += batch.length
      // Two batches through the engine: every window stays live.
      if (batches <= 2) engine.ingest(batch)
    }
    expect({ batches, events }).toEqual({ batches: 100, events: 1_000_000 })
    const results = engine.results()
    expect(results.length).toBeGreaterThan(0)
    expect(engine.stats().watermark, 'a manual watermark, never moved').toBe(Number.NEGATIVE_INFINITY)
    expect(engine.stats().openWindows).toBe(results.length)
  })

  it('million: one batch per task on the page, four batches in flight to a worker', async () => {
    const batches = [...millionBatches(100_000, 10_000)]
    let tasks = 0
    const page = await feedBatches(batches, () => undefined, async () => {
      tasks++
    })
    expect({ page, tasks }).toEqual({ page: 100_000, tasks: 10 })

    // A worker answers each batch once it has ingested it: here on the next microtask.
    let inFlight = 0
    let most = 0
    const fed = await feedBatches(
      batches,
      () => {
        inFlight++
        most = Math.max(most, inFlight)
        return Promise.resolve().then(() => {
          inFlight--
        })
      },
      async () => {
        throw new Error('a worker is not fed one batch per task')
      },
    )
    expect(fed).toBe(100_000)
    expect(most).toBe(4)
  })

  it("million: the control spends the host's measured time per batch on each", () => {
    expect(controlSpinMs(4_790)).toBe(48)
    expect(controlSpinMs(20)).toBe(1)
  })

  it('memory: a minute of 200 devices is 12,000 windows', () => {
    expect(scenarioEngine('fill')).toBe(FILL_ENGINE)
    const engine = createEngine({ ...FILL_ENGINE, now: () => 1_700_000_060_000 })
    const events = fill((batch) => engine.ingest(batch), 200)
    expect(events).toBe(200 * 60 * 10)
    expect(engine.results()).toHaveLength(12_000)
  })

  it('takeover: as many trials as bench/README.md says (the leader closed; frozen with the `freeze` event and as many without)', () => {
    const closed = OFFLOAD_README.match(/the leader closed\s+\((\d+) trials\)/)?.[1]
    const frozen = OFFLOAD_README.match(/\((\d+) trials with the\s+`freeze` event the browser fires, (\d+) with it swallowed/)
    expect(frozen?.[1]).toBe(frozen?.[2])
    expect(TAKEOVER_TRIALS).toEqual({ closed: Number(closed), frozen: Number(frozen?.[1]) })
  })
})

describe('worker-offload: what it reads and reports', () => {
  const thread = { pid: 1, tid: 7 }
  const task = (ts: number, dur: number, tdur = dur, at = thread): TraceEvent => ({ name: 'ThreadControllerImpl::RunTask', ph: 'X', ...at, ts, dur, tdur })
  const mark = (name: string, ts: number): TraceEvent => ({ name, cat: 'blink.user_timing', ph: 'R', ...thread, ts })
  const result: OffloadResult = { scenario: 'devices', engine: 'worker', mode: 'shared', runMs: 2_000, events: 42, frameIntervals: [16.6, 16.7, 33.4, 16.7], windows: 0, span: [0, 2_000] }

  it("takes the main thread's busy and CPU time per second, the longest task and those over 16 ms from the tasks of the marks' thread between the marks", () => {
    const events = [
      task(500, 50_000), // before run:start
      mark('run:start', 1_000_000),
      task(1_100_000, 20_000, 5_000),
      task(1_105_000, 2_000), // nested in the previous task's run loop
      task(1_500_000, 10_000),
      task(1_600_000, 30_000, undefined, { pid: 1, tid: 8 }), // another thread
      mark('run:end', 3_000_000),
      task(3_100_000, 40_000), // after run:end
    ]
    const figures = mainThread(events, result)
    expect(figures).toMatchObject({ busyMsPerSecond: 15, cpuMsPerSecond: 7.5, longestTaskMs: 20, longestTaskCpuMs: 10, tasksOver16ms: 1, frameMaxMs: 33.4, runMs: 2_000, events: 42 })
    expect(() => mainThread([task(1, 1)], result)).toThrow('trace has no run:start/run:end marks')
  })

  const figures = (busy: number, frameP95Ms = 16.7, longestTaskMs = 10): MainThread => ({
    runMs: 10_000,
    busyMsPerSecond: busy,
    cpuMsPerSecond: busy,
    longestTaskMs,
    longestTaskCpuMs: longestTaskMs,
    tasksOver16ms: 0,
    frameP50Ms: 16.7,
    frameP95Ms,
    frameMaxMs: 16.8,
    events: 1,
    mode: 'shared',
  })
  const run = (worker: MainThread, millionWorker: MainThread): OffloadReport => ({
    browser: 'Chromium 156',
    loadAverage: [1.5, 2.9],
    devices: [
      { devices: 200, rate: 0, page: figures(40), worker: figures(40) },
      { devices: 200, rate: 20, page: figures(120), worker },
    ],
    million: { page: figures(900, 200, 470), worker: millionWorker, control: { ...figures(160, 16.8, 27), spinMs: 48 } },
    memory: null,
    takeover: null,
  })

  it('marks the targets: busy <= 25% of the page engine’s and p95 frame interval <= 16.7 ms at 200 devices, longest task < 16 ms with 10^6 events', () => {
    const met = report(run(figures(30, 16.7), figures(250, 16.8, 15.9)))
    expect(met).toContain('[target <= 25%: PASS]')
    expect(met).toContain('[target <= 16.7 ms, one 60 Hz frame: PASS]')
    expect(met).toContain('[target < 16 ms: PASS]')
    const missed = report(run(figures(31, 17.1), figures(250, 16.8, 16)))
    expect(missed).toContain('[target <= 25%: FAIL]')
    expect(missed).toContain('[target <= 16.7 ms, one 60 Hz frame: FAIL]')
    expect(missed).toContain('[target < 16 ms: FAIL]')
  })

  it('sets each fleet above the floor of the same dashboard with no reading', () => {
    expect(report(run(figures(70), figures(250)))).toContain('above the floor of 200 tiles with no reading: worker 30.0 ms/s, page 80.0 ms/s (38%)')
  })
})
