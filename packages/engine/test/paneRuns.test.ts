/**
 * Placement by pane runs (fixed specs) must be indistinguishable from placing each event on
 * its own: same receipts and anomalies, same change stream in the same order, same cells
 * (float sums bit for bit, versions), late lane, stats, checkpoint and replicated writes.
 * Values are fractional (and include -0) so a sum added in another order would show.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { placementReference } from '../src/windows/batchPlacement.ts'
import { LARGE_BATCH, PaneRuns } from '../src/windows/paneRuns.ts'
import { SourceClock } from '../src/time/sourceClock.ts'
import {
  boundedOutOfOrderness,
  createEngine,
  type Engine,
  type StreamEvent,
  sliding,
  tumbling,
  type WindowSpec,
} from '../src/index.ts'
import type { LocalWrite } from '../src/replica/replicaPort.ts'
import type { TidemarkEngine } from '../src/core/engine.ts'
import { assertSeeded } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/paneRuns.test.ts'

const SPEC_SETS: readonly (readonly WindowSpec[])[] = [
  [tumbling(10), sliding(60, 10)],
  [tumbling(25), sliding(30, 10)],
  [sliding(20, 5)],
  [tumbling(7), sliding(21, 3), tumbling(12)],
]

const VALUES = fc.oneof(
  fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 0.1, 0.2, 0.3, 0.7, 1e16, -1e16, 1, 3),
)

const event = fc.record({
  source: fc.constantFrom('a', 'a', 'a', 'b', 'c', '__proto__'),
  key: fc.constantFrom(undefined, undefined, undefined, 'k', 'j'),
  // Mostly a narrow range, so a source's consecutive events often share a pane (runs longer than one).
  ts: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 12 }) }, { weight: 1, arbitrary: fc.integer({ min: -40, max: 200 }) }),
  value: VALUES,
  withSeq: fc.boolean(),
  /** Re-send an earlier event of this batch plan (a duplicate), by distance back. */
  copyOf: fc.oneof({ weight: 7, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.nat(15) }),
})

const plan = fc.record({
  specs: fc.nat(SPEC_SETS.length - 1),
  outOfOrderness: fc.nat(30),
  allowedLateness: fc.nat(20),
  retention: fc.constantFrom(0, 10, 1000),
  maxLateEvents: fc.constantFrom(3, 10_000),
  /** Tight enough, at times, that batches near the bound are placed one by one (and some refused). */
  maxWindows: fc.constantFrom(12, 40, 100_000),
  events: fc.array(event, { maxLength: 120 }),
  cuts: fc.array(fc.nat(119), { maxLength: 8 }),
  listen: fc.boolean(),
})

type Plan = typeof plan extends fc.Arbitrary<infer T> ? T : never

function batchesOf(p: Plan): StreamEvent[][] {
  const seqs = new Map<string, number>()
  const all: StreamEvent[] = []
  p.events.forEach((e, i) => {
    const earlier = e.copyOf === undefined ? undefined : all[i - 1 - e.copyOf]
    if (earlier !== undefined) {
      all.push(earlier)
      return
    }
    const seq = (seqs.get(e.source) ?? 0) + 1
    seqs.set(e.source, seq)
    const made: { -readonly [K in keyof StreamEvent]: StreamEvent[K] } = { id: `${e.source}-${i}`, source: e.source, ts: e.ts, value: e.value }
    if (e.withSeq) made.seq = seq
    if (e.key !== undefined) made.key = e.key
    all.push(made)
  })
  const cuts = [...new Set(p.cuts)].sort((x, y) => x - y)
  const batches: StreamEvent[][] = []
  let from = 0
  for (const cut of [...cuts, all.length]) {
    if (cut <= from) continue
    batches.push(all.slice(from, cut))
    from = cut
  }
  return batches
}

/** JSON that tells -0 from 0 and keeps infinities. */
function exact(value: unknown): string {
  return JSON.stringify(value, (_, v) => (typeof v === 'number' && (Object.is(v, -0) || !Number.isFinite(v)) ? `#${String(Object.is(v, -0) ? '-0' : v)}` : v))
}

function run(p: Plan, placeEach: boolean): string[] {
  placementReference.placeEach = placeEach
  let engine: Engine
  try {
    engine = createEngine({
      windows: SPEC_SETS[p.specs] as readonly WindowSpec[],
      watermark: boundedOutOfOrderness(p.outOfOrderness),
      allowedLateness: p.allowedLateness,
      retention: p.retention,
      replicaId: 'r1',
      limits: { maxLateEvents: p.maxLateEvents, maxWindows: p.maxWindows },
      now: () => 0,
    })
  } finally {
    placementReference.placeEach = false
  }
  const trace: string[] = []
  engine.subscribe((changes) => trace.push(exact(changes)))
  if (p.listen) (engine as TidemarkEngine).replica.onLocalWrite((write: LocalWrite) => trace.push(exact(write)))
  for (const batch of batchesOf(p)) {
    trace.push(exact(engine.ingest(batch)))
    trace.push(exact(engine.results()))
  }
  trace.push(exact(engine.lateEvents()))
  trace.push(exact({ ...engine.stats() }))
  trace.push(exact((engine as TidemarkEngine).checkpoint()))
  return trace
}

describe('placement by pane runs', () => {
  it('gives exactly what placing each event on its own gives', () => {
    const name = 'gives exactly what placing each event on its own gives'
    assertSeeded(
      fc.property(plan, (p) => {
        expect(run(p, false)).toEqual(run(p, true))
      }),
      FILE,
      `placement by pane runs ${name}`,
      300,
    )
  })

  it("adds a cell's values in event order when a source moves between panes within a batch", () => {
    // 1e16 + 1 rounds back to 1e16. The panes are 10 ms (the slide); the tumbling slice [0, 20)
    // spans two of them: its one cell adds in event order, 1e16 + 1 + -1e16 = 0. A sliding
    // window adds its slices' sums: [0, 20) is (1e16 + -1e16) + 1 = 1.
    const events: StreamEvent[] = [
      { id: '1', source: 'a', seq: 1, ts: 1, value: 1e16 },
      { id: '2', source: 'a', seq: 2, ts: 12, value: 1 },
      { id: '3', source: 'a', seq: 3, ts: 3, value: -1e16 },
    ]
    const engine = createEngine({ windows: [tumbling(20), sliding(20, 10)], now: () => 0 })
    engine.ingest(events)
    const sums = engine.results().map((r) => [r.window, r.start, r.sum])
    expect(sums).toEqual([
      ['sliding:20:10', -10, 1e16 + -1e16],
      ['sliding:20:10', 0, 1e16 + -1e16 + 1],
      ['sliding:20:10', 10, 1],
      ['tumbling:20', 0, 1e16 + 1 + -1e16],
    ])
    expect(1e16 + 1 + -1e16).not.toBe(1e16 + -1e16 + 1)
  })

  it("adds a run's values to the cell one by one, not as a subtotal", () => {
    const engine = createEngine({ windows: tumbling(10), now: () => 0 })
    engine.ingest([{ id: '1', source: 'a', seq: 1, ts: 1, value: 1 }])
    engine.ingest([
      { id: '2', source: 'a', seq: 2, ts: 2, value: 1e16 },
      { id: '3', source: 'a', seq: 3, ts: 3, value: -1e16 },
    ])
    expect(engine.results()[0]?.sum).toBe(1 + 1e16 + -1e16)
    expect(1 + 1e16 + -1e16).not.toBe(1 + (1e16 + -1e16))
  })

  it('releases the buffers a very large batch grew, and keeps working after', () => {
    const runs = new PaneRuns(10)
    const source = new SourceClock('a', 0, 0)
    const n = LARGE_BATCH + 10
    runs.begin(n)
    for (let i = 0; i < n; i++) runs.add(source, '', i * 10, 1, i + 1, i)
    expect(runs.count).toBe(n)
    expect(runs.values.length).toBeGreaterThanOrEqual(n)
    runs.release()
    expect(runs.values.length).toBeLessThan(LARGE_BATCH)
    expect(runs.runs.length).toBeLessThan(n)
    runs.begin(3)
    runs.add(source, '', 1, 2, n + 1, 0)
    runs.add(source, '', 5, 3, n + 2, 1)
    expect(runs.count).toBe(1)
    expect(runs.runs[0]?.count).toBe(2)
    expect(runs.runs[0]?.version).toBe(n + 2)
  })

  it('places a batch beyond the release size the same as event by event', () => {
    const events: StreamEvent[] = Array.from({ length: LARGE_BATCH + 100 }, (_, i) => ({
      id: `e${i}`,
      source: `s${i % 7}`,
      seq: Math.floor(i / 7) + 1,
      ts: Math.floor(i / 7) * 3,
      key: `k${i % 3}`,
      value: (i % 13) / 10,
    }))
    const traces = [false, true].map((placeEach) => {
      placementReference.placeEach = placeEach
      try {
        const engine = createEngine({ windows: [tumbling(1_000), sliding(3_000, 1_000)], replicaId: 'r', now: () => 0 })
        const receipt = engine.ingest(events)
        engine.ingest(events.slice(0, 10).map(({ seq: _seq, ...e }) => ({ ...e, id: `${e.id}b`, ts: e.ts + 1 })))
        return exact([receipt, engine.results(), engine.stats()])
      } finally {
        placementReference.placeEach = false
      }
    })
    expect(traces[0]).toBe(traces[1])
  })
})
