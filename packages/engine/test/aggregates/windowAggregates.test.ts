/**
 * Aggregates in windows: typed results, the same states whatever the batching, corrections with
 * `previous`, discarding panes, sessions, sliding and cumulating windows against the per-window
 * placement, checkpoints, and peers' states (hostile bytes refused cell by cell).
 */
import fc from 'fast-check'
import { describe, expect, expectTypeOf, it } from 'vitest'
import {
  type AggregateDefinitions,
  type CellEntry,
  createEngine,
  cumulating,
  defineAggregate,
  distinct,
  type Engine,
  type EngineOptions,
  groupCellEntries,
  histogram,
  latest,
  manual,
  quantiles,
  session,
  sliding,
  type StreamEvent,
  type TidemarkEngine,
  tumbling,
  type WindowChange,
  type WindowSpec,
} from '../../src/index.ts'
import { AggregateSet } from '../../src/aggregates/aggregateSet.ts'
import { createPerWindowEngine } from '../../src/testing/perWindowEngine.ts'
import { recordChanges } from '../../src/testing/index.ts'
import { assertSeeded } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/aggregates/windowAggregates.test.ts'

/** The aggregates of the docs, and small ones that collapse and switch to registers early. */
const FULL = {
  latency: quantiles({ at: [0.5, 0.95, 0.99], relativeAccuracy: 0.01 }),
  devices: distinct({ of: (event) => event.source }),
  reading: latest(),
  spread: histogram({ bounds: [10, 50, 100] }),
}
const SMALL = {
  p: quantiles({ at: [0, 0.25, 0.5, 0.9, 1], relativeAccuracy: 0.05, maxBuckets: 16 }),
  values: distinct({ precision: 4 }),
  last: latest({ of: (event) => event.value * 2 }),
  buckets: histogram({ bounds: [-20, 0, 20] }),
}

const SPECS: readonly (readonly WindowSpec[])[] = [
  [tumbling(10)],
  [sliding(20, 5), cumulating(30, 10)],
  [sliding(60, 10), session(6)],
  [cumulating(20, 5), tumbling(7)],
  // 18 and 20 slices per window: values and states from blocks' kept prefix and suffix folds.
  [sliding(90, 5), cumulating(100, 5)],
]

const event = fc.record({
  source: fc.constantFrom('a', 'b', 'c', '__proto__'),
  key: fc.constantFrom(undefined, 'k'),
  ts: fc.integer({ min: 0, max: 80 }),
  // Wide magnitudes (collapse at maxBuckets 16), both signs, zero.
  value: fc.oneof(fc.integer({ min: -50, max: 50 }), fc.constantFrom(0, 1e-300, 1e12, -1e9, 0.5)),
})

const plan = fc.record({
  specs: fc.nat(SPECS.length - 1),
  small: fc.boolean(),
  events: fc.array(event, { minLength: 1, maxLength: 80 }),
  cuts: fc.array(fc.nat(79), { maxLength: 6 }),
  lateness: fc.constantFrom(0, 15),
  advances: fc.array(fc.integer({ min: 0, max: 100 }), { maxLength: 3 }),
})

type Plan = typeof plan extends fc.Arbitrary<infer T> ? T : never

function eventsOf(p: Plan): StreamEvent[] {
  const seqs = new Map<string, number>()
  return p.events.map((e, i) => {
    const seq = (seqs.get(e.source) ?? 0) + 1
    seqs.set(e.source, seq)
    return { id: `${e.source}-${i}`, source: e.source, seq, ts: e.ts, value: e.value, ...(e.key === undefined ? {} : { key: e.key }) }
  })
}

function batchesOf(events: readonly StreamEvent[], cuts: readonly number[]): StreamEvent[][] {
  const out: StreamEvent[][] = []
  let from = 0
  for (const cut of [...new Set(cuts)].sort((a, b) => a - b).concat(events.length)) {
    if (cut <= from) continue
    out.push(events.slice(from, cut))
    from = cut
  }
  return out
}

function optionsOf(p: Plan, replicaId = 'r1'): EngineOptions<AggregateDefinitions> {
  return {
    windows: SPECS[p.specs] as readonly WindowSpec[],
    watermark: manual(),
    allowedLateness: p.lateness,
    retention: Number.POSITIVE_INFINITY,
    replicaId,
    now: () => 0,
    aggregates: p.small ? SMALL : FULL,
  }
}

/** Runs the plan: its batches, with the watermark advances spread among them. */
function run(engine: Engine<AggregateDefinitions>, p: Plan, cuts = p.cuts): WindowChange<AggregateDefinitions>[][] {
  const changes: WindowChange<AggregateDefinitions>[][] = []
  engine.subscribe((batch) => changes.push([...batch]))
  const batches = batchesOf(eventsOf(p), cuts)
  batches.forEach((batch, i) => {
    engine.ingest(batch)
    const advance = p.advances[i]
    if (advance !== undefined) engine.advanceWatermark(advance)
  })
  return changes
}

/** What each window holds: its value fields and aggregates, without its pane. */
/**
 * The changes split in two: everything but the sums and means of sliding and cumulating windows,
 * which must be equal, and those sums and means, which must be close. Such a window's sum is one
 * fixed fold of its slices' sums (docs/semantics.md), which can differ in its last bits from the
 * per-window placement's, which adds each source's events (a reading of 1e-300 beside 14 and -6
 * is lost in one order and kept in the other). Counts, extremes and every aggregate are exact.
 */
function splitFolds(changes: readonly (readonly WindowChange<AggregateDefinitions>[])[]): { exact: unknown[]; folded: number[] } {
  const folded: number[] = []
  const result = (r: WindowChange<AggregateDefinitions>['result']) => {
    if (!r.window.startsWith('sliding:') && !r.window.startsWith('cumulating:')) return r
    folded.push(r.sum, r.mean)
    return { ...r, sum: 0, mean: 0 }
  }
  const exact = changes.map((batch) =>
    batch.map((change) => (change.previous === undefined ? { ...change, result: result(change.result) } : { ...change, result: result(change.result), previous: result(change.previous) })),
  )
  return { exact, folded }
}

/** What the sliced placement shows equals the per-window placement's, folded sums to 1e-9 (relative, or absolute below 1). */
function expectSameAsPerWindow(sliced: readonly (readonly WindowChange<AggregateDefinitions>[])[], reference: readonly (readonly WindowChange<AggregateDefinitions>[])[]): void {
  const a = splitFolds(sliced)
  const b = splitFolds(reference)
  expect(a.exact).toEqual(b.exact)
  expect(a.folded.length).toBe(b.folded.length)
  a.folded.forEach((x, i) => {
    const y = b.folded[i] as number
    expect(Math.abs(x - y), `folded sum ${i}: ${x} vs ${y}`).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(x), Math.abs(y)))
  })
}

function values(engine: Engine<AggregateDefinitions>): unknown[] {
  return engine.results().map(({ window, key, start, end, count, sum, min, max, aggregates }) => [window, key, start, end, count, sum, min, max, aggregates])
}

/** Every live cell's encoded states, by cell address (session tombstones apart: where a fragment starts can depend on the batching). */
function cellStates(engine: Engine<AggregateDefinitions>, windows: 'all' | 'fixed' = 'all'): Map<string, string> {
  const out = new Map<string, string>()
  for (const { address, cell, aggregates } of engine.replica.exportState().cells) {
    if (windows === 'fixed' && address.window.startsWith('session:')) continue
    if (cell.count > 0) out.set(JSON.stringify(address), JSON.stringify(aggregates?.map((bytes) => [...bytes])))
  }
  return out
}

describe('aggregates in windows', () => {
  it('types flow from the aggregates option to results, changes and history', () => {
    const engine = createEngine({ windows: tumbling(60_000), aggregates: FULL })
    const result = engine.results()[0]
    if (result !== undefined) {
      expectTypeOf(result.aggregates.latency).toEqualTypeOf<number[]>()
      expectTypeOf(result.aggregates.devices).toEqualTypeOf<number>()
      expectTypeOf(result.aggregates.reading).toEqualTypeOf<number | null>()
      expectTypeOf(result.aggregates.spread).toEqualTypeOf<number[]>()
    }
    engine.subscribe((changes) => {
      for (const change of changes) expectTypeOf(change.previous?.aggregates.latency).toEqualTypeOf<number[] | undefined>()
    })
    const plain = createEngine({ windows: tumbling(60_000) })
    expectTypeOf(plain.results()[0]).not.toHaveProperty('aggregates')
    // An engine with aggregates is an engine.
    const any: Engine = engine
    expect(any.results()).toEqual([])
  })

  it('shows each aggregate over the window’s events, in the order of `at`, [] and null for nothing', () => {
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), aggregates: FULL })
    engine.ingest([
      { id: '1', source: 'd1', ts: 1_000, value: 12 },
      { id: '2', source: 'd2', ts: 2_000, value: 48 },
      { id: '3', source: 'd1', ts: 3_000, value: 97 },
      { id: '4', source: 'd3', ts: 500, value: 200 },
    ])
    const result = engine.results()[0]
    expect(result?.aggregates.devices).toBe(3)
    expect(result?.aggregates.reading).toBe(97)
    expect(result?.aggregates.spread).toEqual([0, 2, 1, 1])
    // Ranks ⌊q·(n − 1)⌋ of 12, 48, 97, 200: 48, 97, 97, each within 1%.
    const [p50, p95, p99] = result?.aggregates.latency ?? []
    expect(Math.abs((p50 as number) - 48) / 48).toBeLessThanOrEqual(0.01)
    expect(Math.abs((p95 as number) - 97) / 97).toBeLessThanOrEqual(0.01)
    expect(p99).toBe(p95)
    // A window of discarding panes with nothing new shows the empty aggregates.
    const discarding = createEngine({ windows: tumbling(10), watermark: manual(), accumulation: 'discarding', aggregates: FULL })
    const seen = recordChanges(discarding)
    discarding.ingest([{ id: '1', source: 'd1', ts: 1, value: 5 }])
    discarding.advanceWatermark(10)
    const panes = seen.take().map((c) => c.result.aggregates)
    expect(panes).toEqual([
      { devices: 1, latency: [5, 5, 5], reading: 5, spread: [1, 0, 0, 0] },
      { devices: 0, latency: [], reading: null, spread: [0, 0, 0, 0] },
    ])
  })

  it('a late event corrects p95, and the correction carries the previous aggregates', () => {
    const latency = quantiles({ at: [0.5, 0.95] })
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), allowedLateness: 60_000, aggregates: { latency } })
    const seen = recordChanges(engine)
    engine.ingest(Array.from({ length: 20 }, (_, i) => ({ id: `a${i}`, source: 'd1', seq: i + 1, ts: i * 1000, value: 10 + i })))
    engine.advanceWatermark(60_000)
    const onTime = seen.take().find((c) => c.type === 'on_time')
    engine.ingest([{ id: 'late', source: 'd2', ts: 30_000, value: 5_000 }])
    const [correction] = seen.take()
    expect(correction?.type).toBe('correction')
    expect(correction?.previous).toEqual(onTime?.result)
    const before = onTime?.result.aggregates.latency ?? []
    const after = correction?.result.aggregates.latency ?? []
    expect(after[1]).toBeGreaterThan(before[1] as number)
    expect(Math.abs((after[1] as number) - 29) / 29).toBeLessThanOrEqual(0.01)
    expect(correction?.result.count).toBe(21)
  })

  it('discarding panes cover only their own events; a pane after a peer replaced a cell carries the whole window', () => {
    const options = { windows: tumbling(100), watermark: manual(), accumulation: 'discarding' as const, aggregates: FULL }
    const engine = createEngine({ ...options, replicaId: 'me' })
    const seen = recordChanges(engine)
    engine.ingest([
      { id: '1', source: 'd1', ts: 1, value: 5 },
      { id: '2', source: 'd2', ts: 2, value: 60 },
    ])
    engine.ingest([{ id: '3', source: 'd3', ts: 3, value: 500 }])
    const [first, second] = seen.take()
    expect(first?.result.aggregates).toMatchObject({ devices: 2, spread: [1, 0, 1, 0], reading: 60 })
    expect(second?.result.aggregates).toMatchObject({ devices: 1, spread: [0, 0, 0, 1], reading: 500, latency: [500, 500, 500] })
    const peer = createEngine({ ...options, replicaId: 'peer' }) as TidemarkEngine<typeof FULL>
    peer.ingest([{ id: 'p', source: 'p1', ts: 4, value: 20 }])
    const state = peer.replica.exportState()
    ;(engine as TidemarkEngine<typeof FULL>).replica.mergeRemote(state.cells, state.clocks)
    // A peer's new cell adds to what was shown; it is merged, never an increment: the whole window again.
    const [whole] = seen.take()
    expect(whole?.previous).toBeDefined()
    expect(whole?.result.aggregates).toMatchObject({ devices: 4, spread: [1, 1, 1, 1] })
  })

  it('sessions: a bridging event merges sessions and their aggregates; the absorbed one is retracted', () => {
    const engine = createEngine({ windows: session(10), watermark: manual(), aggregates: FULL })
    const seen = recordChanges(engine)
    engine.ingest([{ id: '1', source: 'd1', ts: 0, value: 1 }])
    engine.ingest([{ id: '2', source: 'd2', ts: 15, value: 70 }])
    seen.take()
    engine.ingest([{ id: '3', source: 'd3', ts: 8, value: 30 }])
    const changes = seen.take()
    expect(changes.map((c) => c.type).sort()).toEqual(['provisional', 'retract'])
    const merged = changes.find((c) => c.type === 'provisional')
    expect(merged?.result).toMatchObject({ start: 0, end: 25, count: 3, aggregates: { devices: 3, spread: [1, 1, 1, 0], reading: 70 } })
    expect(changes.find((c) => c.type === 'retract')?.result.aggregates).toMatchObject({ devices: 1, reading: 70 })
  })

  it('one engine fed the same events in any batching holds the same states and shows the same aggregates', () => {
    const name = 'one engine fed the same events in any batching holds the same states and shows the same aggregates'
    assertSeeded(
      fc.property(plan, fc.array(fc.nat(79), { maxLength: 10 }), (p, otherCuts) => {
        const still = { ...p, advances: [] }
        const a = createEngine(optionsOf(still))
        const b = createEngine(optionsOf(still))
        run(a, still)
        run(b, still, otherCuts)
        // A session's cells follow the order its events came in: a merge another source's event
        // makes keeps one source's two fragments apart until that source writes again (one batch
        // joined a@0, c@1 and a@6 into one fragment of a's; a@6 first, then c@1 and a@0, keeps
        // two). Fixed windows' cells are the same whatever the batching.
        expect(cellStates(b, 'fixed')).toEqual(cellStates(a, 'fixed'))
        a.advanceWatermark(200)
        b.advanceWatermark(200)
        // Panes differ with the batching (one early pane per batch); what the windows hold does not.
        expect(values(b)).toEqual(values(a))
      }),
      FILE,
      `aggregates in windows ${name}`,
      100,
    )
  })

  it('sliding, cumulating and session windows: every change equals the per-window placement’s', () => {
    const name = 'sliding, cumulating and session windows: every change equals the per-window placement’s'
    assertSeeded(
      fc.property(plan, (p) => {
        const sliced = run(createEngine(optionsOf(p)), p)
        const reference = run(createPerWindowEngine(optionsOf(p)) as Engine<AggregateDefinitions>, p)
        expectSameAsPerWindow(sliced, reference)
      }),
      FILE,
      `aggregates in windows ${name}`,
      150,
    )
  })

  it('a checkpoint restores every state exactly, and a replica that merged the cells shows the same aggregates', () => {
    const name = 'a checkpoint restores every state exactly, and a replica that merged the cells shows the same aggregates'
    assertSeeded(
      fc.property(plan, (p) => {
        const options = { ...optionsOf(p), accumulation: p.lateness > 0 ? ('discarding' as const) : ('accumulating' as const) }
        const engine = createEngine(options) as TidemarkEngine<AggregateDefinitions>
        run(engine, p)
        const restored = createEngine(options) as TidemarkEngine<AggregateDefinitions>
        restored.restore(structuredClone(engine.checkpoint()))
        expect(cellStates(restored)).toEqual(cellStates(engine))
        expect(restored.results()).toEqual(engine.results())
        // Both go on alike: discarding pending states and all.
        const more: StreamEvent[] = [{ id: 'more', source: 'z', ts: 79, value: 33 }]
        const after = (e: Engine<AggregateDefinitions>) => {
          const seen = recordChanges(e)
          e.ingest(more)
          e.advanceWatermark(300)
          // A restored engine queues its windows in another order: one operation's changes compare as a multiset.
          return seen
            .take()
            .map((change) => JSON.stringify(change))
            .sort()
        }
        expect(after(restored)).toEqual(after(engine))
        // A replica that merges every cell shows the whole windows an accumulating engine shows.
        const whole = createEngine(optionsOf(p)) as TidemarkEngine<AggregateDefinitions>
        run(whole, p)
        const replica = createEngine({ ...optionsOf(p), replicaId: 'r2' }) as TidemarkEngine<AggregateDefinitions>
        const state = whole.replica.exportState()
        replica.replica.mergeRemoteGroups(groupCellEntries(state.cells), state.clocks)
        expect(cellStates(replica)).toEqual(cellStates(whole))
        expect(values(replica)).toEqual(values(whole))
      }),
      FILE,
      `aggregates in windows ${name}`,
      80,
    )
  })

  it('replicas writing the same windows while each other’s cells arrive show what one replica merging every cell shows', () => {
    // A window's states are kept folded and added to by local events (exact aggregates); a
    // peer's cell landing between local adds must make the next pane fold the cells again.
    const name = 'replicas writing the same windows while each other’s cells arrive show what one replica merging every cell shows'
    assertSeeded(
      fc.property(plan, fc.array(fc.nat(10), { maxLength: 6 }), (p, exchanges) => {
        const still = { ...p, advances: [] }
        const first = (e: StreamEvent) => e.source === 'a' || e.source === 'b'
        const r1 = createEngine(optionsOf(still, 'r1')) as TidemarkEngine<AggregateDefinitions>
        const r2 = createEngine(optionsOf(still, 'r2')) as TidemarkEngine<AggregateDefinitions>
        const send = (from: TidemarkEngine<AggregateDefinitions>, to: TidemarkEngine<AggregateDefinitions>) => {
          const state = from.replica.exportState()
          to.replica.mergeRemoteGroups(groupCellEntries(state.cells), state.clocks)
        }
        batchesOf(eventsOf(still), still.cuts).forEach((batch, i) => {
          r1.ingest(batch.filter(first))
          r2.ingest(batch.filter((e) => !first(e)))
          if (exchanges.includes(i)) {
            send(r2, r1)
            send(r1, r2)
          }
        })
        send(r2, r1)
        send(r1, r2)
        const whole = createEngine(optionsOf(still, 'r3')) as TidemarkEngine<AggregateDefinitions>
        send(r1, whole)
        send(r2, whole)
        expect(values(r1)).toEqual(values(whole))
        expect(values(r2)).toEqual(values(whole))
      }),
      FILE,
      `aggregates in windows ${name}`,
      100,
    )
  })

  it('a peer’s hostile state is refused as invalid_remote_cell with its reason, and the rest of its group merges', () => {
    const options = { windows: tumbling(100), watermark: manual(), aggregates: FULL }
    const peer = createEngine({ ...options, replicaId: 'peer' }) as TidemarkEngine<typeof FULL>
    peer.ingest([
      { id: '1', source: 'p1', ts: 1, value: 5, key: 'a' },
      { id: '2', source: 'p1', ts: 2, value: 7, key: 'b' },
      { id: '3', source: 'p1', ts: 3, value: 9, key: 'c' },
    ])
    const [group] = groupCellEntries(peer.replica.exportState().cells)
    if (group?.aggregates === undefined) throw new Error('the peer exports its cells with their states')
    const latencyAt = ['devices', 'latency', 'reading', 'spread'].indexOf('latency')
    // Truncated sketch for key a, a sketch claiming 2^60 values for key b; key c is fine.
    const hostile = [(bytes: Uint8Array) => bytes.subarray(0, 3), () => new Uint8Array([0x51, 0, 0, 1, 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10])]
    const states = group.aggregates.map((cell, i) => cell.map((bytes, a) => (a === latencyAt ? (hostile[i]?.(bytes) ?? bytes) : bytes)))
    const engine = createEngine({ ...options, replicaId: 'me' }) as TidemarkEngine<typeof FULL>
    const report = engine.replica.mergeRemoteGroups([{ ...group, aggregates: states }], [])
    expect(report.applied).toBe(1)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(2)
    const details = engine.stats().remoteAnomalies
    expect(details[0]).toMatch(/^invalid_remote_cell: cell \["tumbling:100","a",0,"p1"\]: aggregate "latency": quantiles state: /)
    expect(details[1]).toMatch(/cell \["tumbling:100","b",0,"p1"\]: aggregate "latency": quantiles state: /)
    engine.advanceWatermark(100)
    expect(engine.results().map((r) => [r.key, r.aggregates.reading])).toEqual([['c', 9]])
    // A group without states, for an engine that keeps aggregates, is refused whole.
    const { aggregates: _dropped, ...bare } = group
    engine.replica.mergeRemoteGroups([bare], [])
    expect(engine.stats().remoteAnomalies.at(-1)).toMatch(/carries no aggregate states; this engine keeps 4/)
  })

  it('a peer’s state that disagrees with its cell is refused, naming the aggregate; honest cells of the group merge', () => {
    const options = { windows: tumbling(100), watermark: manual(), aggregates: FULL }
    const peer = createEngine({ ...options, replicaId: 'peer' }) as TidemarkEngine<typeof FULL>
    const keys = ['a', 'b', 'c', 'd', 'e']
    // Each key's cell holds two events, at 10 and 20: count 2, maxTs 20.
    peer.ingest(keys.flatMap((key, i) => [10, 20].map((ts, j) => ({ id: `${key}${j}`, source: 'p1', seq: 2 * i + j + 1, ts, value: 5, key }))))
    const [group] = groupCellEntries(peer.replica.exportState().cells)
    if (group?.aggregates === undefined) throw new Error('the peer exports its cells with their states')
    const at = (name: keyof typeof FULL) => ['devices', 'latency', 'reading', 'spread'].indexOf(name)
    const three = <S>(a: { init(): S; add(s: S, x: never, e: StreamEvent): S }, inputs: readonly unknown[]) =>
      inputs.reduce<S>((s, x, i) => a.add(s, x as never, { id: `x${i}`, source: 'p1', ts: 10, value: 5 }), a.init())
    // Key a: a latest far past the window (it would outrank every event of the window for good);
    // b: a histogram, c: a sketch, d: a distinct set holding three values of a two-event cell.
    const forged: Record<string, [number, Uint8Array]> = {
      a: [at('reading'), FULL.reading.encode({ ts: 1e12, source: 'p1', seq: 1, value: 666 })],
      b: [at('spread'), FULL.spread.encode([3, 0, 0, 0])],
      c: [at('latency'), FULL.latency.encode(three(FULL.latency, [5, 5, 5]))],
      d: [at('devices'), FULL.devices.encode(three(FULL.devices, ['x', 'y', 'z']))],
    }
    const states = group.aggregates.map((cell, i) => {
      const swap = forged[group.keys[i] as string]
      return cell.map((bytes, a) => (swap !== undefined && swap[0] === a ? swap[1] : bytes))
    })
    const engine = createEngine({ ...options, replicaId: 'me' }) as TidemarkEngine<typeof FULL>
    const report = engine.replica.mergeRemoteGroups([{ ...group, aggregates: states }], [])
    expect(report.applied).toBe(1)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(4)
    const cell = (key: string) => `invalid_remote_cell: cell \\["tumbling:100","${key}",0,"p1"\\]: aggregate`
    expect(engine.stats().remoteAnomalies).toEqual([
      expect.stringMatching(new RegExp(`^${cell('a')} "reading" \\(latest\\): event time 1000000000000 is past the cell's last event time 20$`)),
      expect.stringMatching(new RegExp(`^${cell('b')} "spread" \\(histogram\\): 3 values in a cell of 2 events$`)),
      expect.stringMatching(new RegExp(`^${cell('c')} "latency" \\(quantiles\\): 3 values in a cell of 2 events$`)),
      expect.stringMatching(new RegExp(`^${cell('d')} "devices" \\(distinct\\): 3 identities in a cell of 2 events$`)),
    ])
    // The forged latest never pinned the window: a later local event is the window's latest.
    engine.ingest([{ id: 'm', source: 'm', ts: 50, value: 9, key: 'a' }])
    engine.advanceWatermark(100)
    expect(engine.results().map((r) => [r.key, r.count, r.aggregates.reading, r.aggregates.spread])).toEqual([
      ['a', 1, 9, [1, 0, 0, 0]],
      ['e', 2, 5, [2, 0, 0, 0]],
    ])
  })

  it('each built-in aggregate’s state is held to its cell’s count, start and last event time; a user’s is not', () => {
    const sum = defineAggregate({
      name: 'sum',
      init: () => 0,
      add: (s: number, x: number) => s + x,
      merge: (a: number, b: number) => a + b,
      result: (s: number) => s,
      encode: (s: number) => new Uint8Array(new Float64Array([s]).buffer),
      decode: (bytes: Uint8Array) => new Float64Array(bytes.slice().buffer)[0] as number,
    })
    const set = new AggregateSet({ ...SMALL, sum })
    const states = (edit: Partial<Record<keyof typeof SMALL | 'sum', unknown>>) => set.names.map((name) => (name in edit ? edit[name as keyof typeof edit] : (set.list[set.names.indexOf(name)] as { init(): unknown }).init()))
    const cell = { count: 3, start: 100, maxTs: 150 }
    const reading = (ts: number) => ({ ts, source: 's', seq: 0, value: 1 })
    const fill = <S>(a: { init(): S; add(s: S, x: never, e: StreamEvent): S }, inputs: readonly unknown[]) =>
      inputs.reduce<S>((s, x, i) => a.add(s, x as never, { id: `x${i}`, source: 's', ts: 120, value: 1 }), a.init())
    expect(set.disagreement(states({ last: reading(150.5), buckets: [0, 1, 1, 1], values: fill(SMALL.values, [1, 2, 3]), sum: 1e300 }), cell)).toBeNull()
    expect(set.disagreement(states({ last: reading(99.5) }), cell)).toBeNull()
    expect(set.disagreement(states({ last: reading(151) }), cell)).toBe(`aggregate "last" (latest): event time 151 is past the cell's last event time 150`)
    expect(set.disagreement(states({ last: reading(99) }), cell)).toBe(`aggregate "last" (latest): event time 99 is before the cell's start 100`)
    expect(set.disagreement(states({ last: reading(120) }), { ...cell, count: 0 })).toBe('aggregate "last" (latest): an event in a cell of none')
    expect(set.disagreement(states({ buckets: [0, 2, 1, 1] }), cell)).toBe('aggregate "buckets" (histogram): 4 values in a cell of 3 events')
    expect(set.disagreement(states({ p: fill(SMALL.p, [1, -1, 0, 1e9]) }), cell)).toBe('aggregate "p" (quantiles): 4 values in a cell of 3 events')
    // precision 4: registers after 1 identity; 16 registers.
    const many = fill(SMALL.values, Array.from({ length: 200 }, (_, i) => i))
    expect(set.disagreement(states({ values: fill(SMALL.values, [1, 2]) }), { ...cell, count: 1 })).toBe('aggregate "values" (distinct): registers (more than 1 identities) in a cell of 1 events')
    expect(set.disagreement(states({ values: many }), { ...cell, count: 200 })).toBeNull()
    expect(set.disagreement(states({ values: many }), { ...cell, count: 5 })).toMatch(/^aggregate "values" \(distinct\): \d+ non-zero registers in a cell of 5 events$/)
  })

  it('a replica’s own cells, at fractional times next to slice and window edges, all merge into a peer that then shows the same', () => {
    const name = 'a replica’s own cells, at fractional times next to slice and window edges, all merge'
    const fraction = fc.constantFrom(0, 0.25, 0.999_999_999, -1e-12, 1e-12, -Number.EPSILON)
    assertSeeded(
      fc.property(plan, fc.array(fraction, { minLength: 80, maxLength: 80 }), (p, fractions) => {
        const still = { ...p, advances: [] }
        const events = eventsOf(still).map((e, i) => ({ ...e, ts: e.ts + (fractions[i] as number) }))
        const writer = createEngine(optionsOf(still, 'r1')) as TidemarkEngine<AggregateDefinitions>
        for (const batch of batchesOf(events, still.cuts)) writer.ingest(batch)
        const state = writer.replica.exportState()
        const reader = createEngine(optionsOf(still, 'r2')) as TidemarkEngine<AggregateDefinitions>
        reader.replica.mergeRemoteGroups(groupCellEntries(state.cells), state.clocks)
        expect(reader.stats().remoteAnomalies).toEqual([])
        expect(values(reader)).toEqual(values(writer))
      }),
      FILE,
      `aggregates in windows ${name}`,
      100,
    )
  })

  it('a peer’s fixed-window cell whose last event lies outside its window is refused, and its latest with it', () => {
    const options = { windows: [tumbling(100), sliding(200, 100)], watermark: manual(), aggregates: FULL }
    const peer = createEngine({ ...options, replicaId: 'peer' }) as TidemarkEngine<typeof FULL>
    peer.ingest([{ id: '1', source: 'p1', ts: 20, value: 5 }])
    const { cells, clocks } = peer.replica.exportState()
    const reading = ['devices', 'latency', 'reading', 'spread'].indexOf('reading')
    // Cell and latest agree, far past the window [0, 100): the cell is not this window's.
    const moved = cells.map((entry) => ({
      ...entry,
      cell: { ...entry.cell, maxTs: 1e12 },
      aggregates: (entry.aggregates ?? []).map((bytes, a) => (a === reading ? FULL.reading.encode({ ts: 1e12, source: 'p1', seq: 1, value: 666 }) : bytes)),
    }))
    const engine = createEngine({ ...options, replicaId: 'me' }) as TidemarkEngine<typeof FULL>
    const report = engine.replica.mergeRemote(moved, clocks)
    expect(report.applied).toBe(0)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(cells.length)
    engine.ingest([{ id: 'm', source: 'm', ts: 50, value: 9 }])
    engine.advanceWatermark(1_000)
    expect(engine.results().map((r) => [r.window, r.start, r.aggregates.reading])).toEqual([
      ['sliding:200:100', -100, 9],
      ['sliding:200:100', 0, 9],
      ['tumbling:100', 0, 9],
    ])
    // The same cells as the peer wrote them merge.
    const honest = createEngine({ ...options, replicaId: 'me' }) as TidemarkEngine<typeof FULL>
    expect(honest.replica.mergeRemote(cells, clocks).applied).toBe(cells.length)
  })

  it.each([
    ['without states', (entry: CellEntry): CellEntry => ({ address: entry.address, cell: entry.cell })],
    ['with null states', (entry: CellEntry): CellEntry => ({ ...entry, aggregates: null as never })],
    ['with states that are not bytes', (entry: CellEntry): CellEntry => ({ ...entry, aggregates: ['x'] as never })],
    [
      'with a hole among its states',
      (entry: CellEntry): CellEntry => {
        const states = [...(entry.aggregates ?? [])]
        delete states[1]
        return { ...entry, aggregates: states }
      },
    ],
  ])('a loose peer cell %s is refused alone: the cells of the same window, start and source merge', (_, damage) => {
    const options = { windows: tumbling(100), watermark: manual(), aggregates: FULL }
    const peer = createEngine({ ...options, replicaId: 'peer' }) as TidemarkEngine<typeof FULL>
    peer.ingest([
      { id: '1', source: 'p1', ts: 1, value: 5, key: 'a' },
      { id: '2', source: 'p1', ts: 2, value: 7, key: 'b' },
    ])
    const { cells, clocks } = peer.replica.exportState()
    const engine = createEngine({ ...options, replicaId: 'me' }) as TidemarkEngine<typeof FULL>
    const report = engine.replica.mergeRemote(cells.map((entry) => (entry.address.key === 'a' ? damage(entry) : entry)), clocks)
    expect(report.applied).toBe(1)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(1)
    expect(engine.stats().remoteAnomalies.at(-1)).toMatch(/^invalid_remote_cell: cell: (carries no aggregate states|aggregates must list)/)
    engine.advanceWatermark(100)
    expect(engine.results().map((r) => [r.key, r.count, r.aggregates.reading])).toEqual([['b', 1, 7]])
  })

  it('replicas with other aggregates have another configuration; a bad option is refused by name', () => {
    const a = createEngine({ windows: tumbling(10), aggregates: { p: quantiles({ at: [0.5] }) } })
    const b = createEngine({ windows: tumbling(10), aggregates: { p: quantiles({ at: [0.9], relativeAccuracy: 0.02 }) } })
    const c = createEngine({ windows: tumbling(10), aggregates: { p: quantiles({ at: [0.99] }) } })
    expect(a.replica.configuration).not.toBe(b.replica.configuration)
    // `at` only reads the state: the same sketches, one configuration.
    expect(a.replica.configuration).toBe(c.replica.configuration)
    expect(createEngine({ windows: tumbling(10), aggregates: {} }).replica.configuration).toBe(createEngine({ windows: tumbling(10) }).replica.configuration)
    expect(() => createEngine({ windows: tumbling(10), aggregates: { p: { name: 'p' } } as never })).toThrow(/aggregates\.p must be made by quantiles/)
    expect(() => createEngine({ windows: tumbling(10), aggregates: [] as never })).toThrow(/aggregates must be an object/)
    expect(() => createEngine({ windows: tumbling(10), aggregates: { '': latest() } })).toThrow(/aggregates: a name must be 1 to 100 characters, got 0/)
    expect(() => createEngine({ windows: tumbling(10), aggregates: { ['n'.repeat(101)]: latest() } })).toThrow(/a name must be 1 to 100 characters, got 101/)
  })

  it('a user aggregate whose merge rounds (a float sum) gives every path the same bits', () => {
    const energy = defineAggregate({
      name: 'energy',
      init: () => 0,
      add: (sum: number, x: number) => sum + x * x,
      merge: (a: number, b: number) => a + b,
      result: (sum: number) => sum,
      encode: (sum: number) => new Uint8Array(new Float64Array([sum]).buffer),
      decode: (bytes: Uint8Array) => {
        if (bytes.length !== 8) throw new RangeError(`expected 8 bytes, got ${bytes.length}`)
        return new Float64Array(bytes.slice().buffer)[0] as number
      },
    })
    const options = { windows: [sliding(40, 10), cumulating(40, 10)], watermark: manual(), aggregates: { energy } }
    const events: StreamEvent[] = Array.from({ length: 60 }, (_, i) => ({ id: `${i}`, source: `s${i % 3}`, ts: i % 40, value: 0.1 * (i + 1) }))
    const engine = createEngine({ ...options, replicaId: 'a' }) as TidemarkEngine<typeof options.aggregates>
    for (const batch of batchesOf(events, [7, 19, 33])) engine.ingest(batch)
    const restored = createEngine({ ...options, replicaId: 'a' }) as TidemarkEngine<typeof options.aggregates>
    restored.restore(engine.checkpoint())
    const replica = createEngine({ ...options, replicaId: 'b' }) as TidemarkEngine<typeof options.aggregates>
    const state = engine.replica.exportState()
    replica.replica.mergeRemote(state.cells, state.clocks)
    const bits = (e: Engine<typeof options.aggregates>) => e.results().map((r) => [r.window, r.start, r.end, r.aggregates.energy])
    expect(bits(restored)).toEqual(bits(engine))
    expect(bits(replica)).toEqual(bits(engine))
  })
})
