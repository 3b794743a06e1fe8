/**
 * Placement into shared slices. A tumbling window is one slice, so there the sliced engine must
 * show exactly what the per-window placement shows, float sums bit for bit, replicated writes
 * and all; a slice's cell adds its events one by one in batch order. A sliding or cumulating
 * window's value is one fixed fold of its slices, whoever computes it: after a checkpoint, on
 * a replica that merged the cells, or through the per-block folds shared by a batch's windows,
 * the same floats. Values are fractional (and include -0) so a sum added in another order would show.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  boundedOutOfOrderness,
  createEngine,
  cumulating,
  type Engine,
  type EngineOptions,
  manual,
  type StreamEvent,
  sliding,
  tumbling,
  type WindowSpec,
} from '../src/index.ts'
import type { LocalWrite } from '../src/replica/replicaPort.ts'
import type { TidemarkEngine } from '../src/core/engine.ts'
import { createPerWindowEngine } from '../src/testing/perWindowEngine.ts'
import { assertSeeded } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/placement.test.ts'

const SPEC_SETS: readonly (readonly WindowSpec[])[] = [
  [tumbling(10), sliding(60, 10)],
  [tumbling(25), sliding(30, 10)],
  [sliding(20, 5)],
  [tumbling(7), sliding(21, 3), tumbling(12)],
  [cumulating(60, 10), sliding(90, 5)],
]

const VALUES = fc.oneof(
  fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 0.1, 0.2, 0.3, 0.7, 1e16, -1e16, 1, 3),
)

const event = fc.record({
  source: fc.constantFrom('a', 'a', 'a', 'b', 'c', '__proto__'),
  key: fc.constantFrom(undefined, undefined, undefined, 'k', 'j'),
  // Mostly a narrow range, so a source's consecutive events often share a slice.
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
  /** Tight enough, at times, that events near the bound are refused. */
  maxWindows: fc.constantFrom(12, 40, 100_000),
  events: fc.array(event, { maxLength: 120 }),
  cuts: fc.array(fc.nat(119), { maxLength: 8 }),
  listen: fc.boolean(),
  /**
   * Each event followed by this many more of its source, key and time (new ids, values
   * shifted): cells that take many writes, which the engine keeps as objects, where few writes
   * per cell keep them as numbers; a plan that starts sparse and turns dense keeps both.
   */
  burst: fc.constantFrom(0, 0, 30),
  burstFrom: fc.nat(119),
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
    for (let b = 0; b <= (i >= p.burstFrom ? p.burst : 0); b++) {
      const seq = (seqs.get(e.source) ?? 0) + 1
      seqs.set(e.source, seq)
      const made: { -readonly [K in keyof StreamEvent]: StreamEvent[K] } = { id: `${e.source}-${i}-${b}`, source: e.source, ts: e.ts, value: e.value + b }
      if (e.withSeq) made.seq = seq
      if (e.key !== undefined) made.key = e.key
      all.push(made)
    }
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

function optionsOf(p: Plan, windows: readonly WindowSpec[]): EngineOptions {
  return {
    windows,
    watermark: boundedOutOfOrderness(p.outOfOrderness),
    allowedLateness: p.allowedLateness,
    retention: p.retention,
    replicaId: 'r1',
    limits: { maxLateEvents: p.maxLateEvents, maxWindows: p.maxWindows },
    now: () => 0,
  }
}

function trace(engine: Engine, p: Plan): string[] {
  const out: string[] = []
  engine.subscribe((changes) => out.push(exact(changes)))
  if (p.listen) (engine as TidemarkEngine).replica.onLocalWrite((write: LocalWrite) => out.push(exact(write)))
  for (const batch of batchesOf(p)) {
    out.push(exact(engine.ingest(batch)))
    out.push(exact(engine.results()))
  }
  out.push(exact(engine.lateEvents()))
  const { cells: _cells, ...stats } = engine.stats()
  out.push(exact(stats))
  return out
}

describe('placement into slices', () => {
  it('tumbling windows: exactly what the per-window placement shows, sums bit for bit, replicated writes included', () => {
    const name = 'tumbling windows: exactly what the per-window placement shows, sums bit for bit, replicated writes included'
    const tumblingOnly: readonly (readonly WindowSpec[])[] = [[tumbling(10)], [tumbling(7), tumbling(12)]]
    assertSeeded(
      fc.property(plan, fc.nat(tumblingOnly.length - 1), (p, which) => {
        const windows = tumblingOnly[which] as readonly WindowSpec[]
        expect(trace(createEngine(optionsOf(p, windows)), p)).toEqual(trace(createPerWindowEngine(optionsOf(p, windows)), p))
      }),
      FILE,
      `placement into slices ${name}`,
      200,
    )
  })

  it('a window folds the same floats after a checkpoint and on a replica that merged its cells', () => {
    const name = 'a window folds the same floats after a checkpoint and on a replica that merged its cells'
    assertSeeded(
      fc.property(plan, (p) => {
        const options = { ...optionsOf(p, SPEC_SETS[p.specs] as readonly WindowSpec[]), limits: {} }
        const engine = createEngine(options) as TidemarkEngine
        for (const batch of batchesOf(p)) engine.ingest(batch)
        const values = (e: Engine) => exact(e.results().map(({ window, key, start, end, count, sum, min, max }) => [window, key, start, end, count, sum, min, max]))
        const restored = new (engine.constructor as typeof TidemarkEngine)(options)
        restored.restore(engine.checkpoint())
        expect(values(restored)).toBe(values(engine))
        expect(exact(restored.checkpoint())).toBe(exact(engine.checkpoint()))
        // A replica that merges every cell shows every window this one showed, with the same values.
        const replica = createEngine({ ...options, replicaId: 'r2' }) as TidemarkEngine
        const state = engine.replica.exportState()
        replica.replica.mergeRemote(structuredClone(state.cells), structuredClone(state.clocks))
        const shown = new Map(replica.results().map((r) => [exact([r.window, r.key, r.start, r.end]), exact([r.count, r.sum, r.min, r.max])]))
        for (const r of engine.results()) {
          const id = exact([r.window, r.key, r.start, r.end])
          expect(shown.get(id), id).toBe(exact([r.count, r.sum, r.min, r.max]))
        }
      }),
      FILE,
      `placement into slices ${name}`,
      200,
    )
  })

  it('a cell that became an object while a replica listened is written as one after, though an older cache entry still holds its row', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), replicaId: 'r0', now: () => 0 }) as TidemarkEngine
    let n = 0
    const reading = (source: string, ts: number): StreamEvent => ({ id: String(++n), source, seq: n, ts, value: 1 })
    engine.ingest([reading('w', 0)]) // the index's first cell, an object; those after it rows (few writes each)
    engine.ingest([reading('d', 25)]) // d's slice [20, 30): a row, remembered as d's current slice
    engine.ingest([reading('d', 5)]) // the older slice [0, 10): a row, remembered as a late slice
    const stop = engine.replica.onLocalWrite(() => {})
    engine.ingest([reading('d', 5)]) // heard: the row becomes an object, remembered as the other late slice
    stop()
    engine.ingest([reading('d', 5)]) // unheard: the first late entry, with the dead row, is found first
    expect(engine.results().find((r) => r.start === 0)?.count).toBe(4)
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

  it('places a batch beyond the size whose buffers are released the same as in smaller batches', () => {
    const events: StreamEvent[] = Array.from({ length: (1 << 16) + 100 }, (_, i) => ({
      id: `e${i}`,
      source: `s${i % 7}`,
      seq: Math.floor(i / 7) + 1,
      ts: Math.floor(i / 7) * 3,
      key: `k${i % 3}`,
      value: (i % 13) / 10,
    }))
    const whole = createEngine({ windows: [tumbling(1_000), sliding(3_000, 1_000)], replicaId: 'r', now: () => 0 })
    const pieces = createEngine({ windows: [tumbling(1_000), sliding(3_000, 1_000)], replicaId: 'r', now: () => 0 })
    const receipt = whole.ingest(events)
    let accepted = 0
    for (let i = 0; i < events.length; i += 1000) accepted += pieces.ingest(events.slice(i, i + 1000)).accepted
    expect(receipt.accepted).toBe(accepted)
    expect(exact(whole.results().map(({ count, sum }) => [count, sum]))).toBe(exact(pieces.results().map(({ count, sum }) => [count, sum])))
    // It keeps working after the buffers were released.
    const after = (events.at(-1) as StreamEvent).ts + 1
    expect(whole.ingest(Array.from({ length: 10 }, (_, i) => ({ id: `later${i}`, source: 'later', seq: i + 1, ts: after + i, value: i / 10 }))).accepted).toBe(10)
  })

  it('keeps nothing of an event no window admits any more: memory stays bounded however old the backlog', () => {
    const specs = [tumbling(10), sliding(30, 10), cumulating(40, 10)]
    const engine = createEngine({ windows: specs, watermark: manual(), limits: { maxLateEvents: 5 }, replicaId: 'r', now: () => 0 }) as TidemarkEngine
    engine.advanceWatermark(1_000_000)
    // A backlog older than every lateness, each event in a slice of its own.
    const backlog = Array.from({ length: 3_000 }, (_, i) => ({ id: `old${i}`, source: 'd1', ts: i * 10, key: `k${i % 3}`, value: 1 }))
    const receipt = engine.ingest(backlog)
    expect(receipt.beyondLateness).toBe(3_000)
    expect(engine.lateEvents()).toHaveLength(5)
    expect((engine.checkpoint().slices ?? []).map(({ window, slices }) => [window, slices.length])).toEqual(specs.map((spec) => [spec.id, 0]))
    // A slice an older engine made for such an event (holding no cell) is not restored.
    const checkpoint = engine.checkpoint()
    const withEmpty = { ...checkpoint, slices: (checkpoint.slices ?? []).map((index) => ({ ...index, slices: [['k0', 0, [[10, []]]] as const] })) }
    const restored = createEngine({ windows: specs, watermark: manual(), replicaId: 'r', now: () => 0 }) as TidemarkEngine
    restored.restore(withEmpty as typeof checkpoint)
    expect((restored.checkpoint().slices ?? []).map(({ slices }) => slices.length)).toEqual([0, 0, 0])
  })
})
