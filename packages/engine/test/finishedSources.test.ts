import { describe, expect, it } from 'vitest'
import { boundedOutOfOrderness, createEngine, manual, type StreamEvent, tumbling, type WindowChange } from '../src/index.ts'
import type { TidemarkEngine } from '../src/core/engine.ts'
import type { LocalWrite } from '../src/replica/replicaPort.ts'
import { loggedEngine } from './loggedEngine.ts'

/** Reading `seq` of `source` at event time `ts` (value 1, no key). */
function reading(source: string, seq: number, ts: number): StreamEvent {
  return { id: `${source}-${seq}`, source, seq, ts, value: 1 }
}

/** One reading per second from each source, seqs from 1, event times `from`, `from + 1000`, … */
function seconds(source: string, count: number, from = 0): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => reading(source, i + 1, from + i * 1_000))
}

/** An engine of 10 s tumbling windows, bounded by 1 s of out-of-orderness, with every change it emits. */
function fleet(options: { idleTimeout?: number; replicaId?: string } = {}) {
  let now = 0
  const engine = createEngine({ windows: tumbling(10_000), watermark: boundedOutOfOrderness(1_000), now: () => now, ...options }) as TidemarkEngine
  const changes: WindowChange[] = []
  engine.subscribe((batch) => changes.push(...batch))
  return { engine, changes, at: (t: number) => (now = t) }
}

const onTime = (changes: readonly WindowChange[]) => changes.filter((c) => c.type === 'on_time').map((c) => ({ start: c.result.start, basis: c.result.basis }))

describe('finishSource: a source that sends nothing more', () => {
  it('no longer holds the watermark or the proof frontier: the others fire its windows, proven', () => {
    const { engine, changes } = fleet()
    engine.ingest([...seconds('d1', 35), ...seconds('d2', 5)])
    // d2 stopped at 4 s: it holds W at 3 s and P at 4 s, and no window has fired.
    expect(engine.watermark()).toBe(3_000)
    expect(engine.stats().proofFrontier).toBe(4_000)
    expect(onTime(changes)).toEqual([])

    void engine.finishSource('d2')
    // d1 alone: W = 34 s - 1 s, P = 34 s (its gap-free prefix).
    expect(engine.watermark()).toBe(33_000)
    expect(engine.stats().proofFrontier).toBe(34_000)
    expect(onTime(changes)).toEqual([
      { start: 0, basis: 'proven' },
      { start: 10_000, basis: 'proven' },
      { start: 20_000, basis: 'proven' },
    ])
  })

  it('with idle timeouts, its windows fire proven where a silent source left them to fallback', () => {
    const silent = fleet({ idleTimeout: 5_000 })
    const finished = fleet({ idleTimeout: 5_000 })
    for (const { engine, at } of [silent, finished]) {
      engine.ingest([...seconds('d1', 5), ...seconds('d2', 5)])
      at(10_000)
      if (engine === finished.engine) void engine.finishSource('d2')
      engine.ingest(seconds('d1', 30).slice(5))
      engine.tick()
    }
    expect(onTime(silent.changes).map((c) => c.basis)).toEqual(['fallback', 'fallback'])
    expect(onTime(finished.changes).map((c) => c.basis)).toEqual(['proven', 'proven'])
    expect(silent.engine.stats()).toMatchObject({ sources: 2, finishedSources: 0, idleSources: 1 })
    expect(finished.engine.stats()).toMatchObject({ sources: 2, finishedSources: 1, idleSources: 0 })
  })

  it('with every other source idle, W goes on as far as the finished source reached, as it would had it not finished', () => {
    const run = (finish: boolean) => {
      const { engine, changes, at } = fleet({ idleTimeout: 5_000 })
      engine.ingest([reading('b', 1, 0)])
      at(4_000)
      engine.ingest(seconds('a', 50))
      if (finish) void engine.finishSource('a')
      // b turns idle: W follows a alone, finished or not.
      at(6_000)
      engine.tick()
      at(20_000)
      engine.tick()
      return { watermark: engine.watermark(), fired: onTime(changes) }
    }
    expect(run(true)).toEqual(run(false))
    expect(run(true).watermark).toBe(48_000)
  })

  it('refuses its later events as finished_source, while copies of what it sent stay duplicates', () => {
    const { engine } = fleet()
    engine.ingest(seconds('d1', 3))
    void engine.finishSource('d1')
    const receipt = engine.ingest([reading('d1', 2, 1_000), reading('d1', 4, 3_000), { ...reading('d1', 5, 4_000), id: 'late-id' }])
    expect(receipt).toMatchObject({ accepted: 0, duplicates: 1, rejected: 2 })
    expect(receipt.anomalies.map((a) => [a.reason, a.index, a.source])).toEqual([
      ['finished_source', 1, 'd1'],
      ['finished_source', 2, 'd1'],
    ])
    expect(receipt.anomalies[0]?.detail).toBe("source 'd1' was finished: it takes no more events")
    expect(engine.stats().anomalies.finished_source).toBe(2)
    expect(engine.results()[0]?.count).toBe(3)
  })

  it('refuses a later event stamped beyond maxFutureSkew as future_ts, as from any source, counted once', () => {
    const { engine } = fleet()
    engine.ingest(seconds('d1', 3))
    void engine.finishSource('d1')
    // now() is 0: a day and a millisecond ahead is future_ts before it is anything else.
    const receipt = engine.ingest([reading('d1', 4, 86_400_001), reading('d1', 5, 4_000)])
    expect(receipt).toMatchObject({ accepted: 0, rejected: 2 })
    expect(receipt.anomalies.map((a) => a.reason)).toEqual(['future_ts', 'finished_source'])
    expect(engine.stats().anomalies).toMatchObject({ future_ts: 1, finished_source: 1 })
  })

  it('once every known source finished, every window fires, proven, and W goes as far as the finished sources reached', () => {
    const { engine, changes } = fleet()
    engine.ingest([...seconds('d1', 15), ...seconds('d2', 12, 500)])
    void engine.finishSource('d1')
    // d2 alone: W = 11.5 s - 1 s, P = 11.5 s.
    expect(onTime(changes)).toEqual([{ start: 0, basis: 'proven' }])
    void engine.finishSource('d2')
    expect(engine.stats().proofFrontier).toBe(Number.POSITIVE_INFINITY)
    expect(onTime(changes)).toEqual([
      { start: 0, basis: 'proven' },
      { start: 10_000, basis: 'proven' },
    ])
    // W: as far as the furthest finished source reached (d1, 14 s), less the out-of-orderness.
    expect(engine.watermark()).toBe(13_000)
    // A source first seen afterwards is judged by W: its reading of the second window is a correction, not refused.
    const receipt = engine.ingest([reading('d3', 1, 15_000)])
    expect(receipt.accepted).toBe(1)
    expect(changes.at(-1)).toMatchObject({ type: 'correction', result: { start: 10_000, count: 8 } })
  })

  it('an unknown source can be finished (nothing is taken from it then); finishing twice changes nothing', async () => {
    const { engine } = fleet()
    await engine.finishSource('gone')
    expect(engine.stats().sources).toBe(1)
    expect(engine.ingest([reading('gone', 1, 1_000)]).anomalies[0]?.reason).toBe('finished_source')
    const writes: LocalWrite[] = []
    engine.replica.onLocalWrite((w) => writes.push(structuredClone(w)))
    await engine.finishSource('gone')
    expect(writes).toEqual([])
  })

  it('finishing a source its writer finished on a peer resolves at once, changing, logging and publishing nothing', async () => {
    const writer = createEngine({ windows: tumbling(10_000), watermark: manual(), replicaId: 'phone' })
    const { engine: dashboard, ops } = loggedEngine({ windows: tumbling(10_000), watermark: manual(), replicaId: 'dash' })
    writer.replica.onLocalWrite((w) => dashboard.replica.mergeRemote(w.cells, w.clocks))
    writer.ingest([reading('d1', 1, 1_000)])
    await writer.finishSource('d1')
    expect(dashboard.isFinished('d1')).toBe(true)
    const writes: LocalWrite[] = []
    dashboard.replica.onLocalWrite((w) => writes.push(structuredClone(w)))
    const logged = ops.length
    await dashboard.finishSource('d1')
    expect(writes).toEqual([])
    expect(ops.length).toBe(logged)
    expect(dashboard.replica.exportState().clocks).toMatchObject([{ source: 'd1', writer: 'phone', finished: true }])
  })

  it('throws for a name that is not one, a source another replica writes, a new source past maxSources, and a closed engine', async () => {
    const writer = createEngine({ windows: tumbling(10_000), watermark: manual(), replicaId: 'phone' })
    const dashboard = createEngine({ windows: tumbling(10_000), watermark: manual(), replicaId: 'dash', limits: { maxSources: 1 } })
    writer.replica.onLocalWrite((w) => dashboard.replica.mergeRemote(w.cells, w.clocks))
    writer.ingest([reading('d1', 1, 1_000)])
    expect(() => dashboard.finishSource('')).toThrow(TypeError)
    expect(() => dashboard.finishSource(7 as unknown as string)).toThrow(/a source name \(a non-empty string.*got number/)
    expect(() => dashboard.finishSource('x'.repeat(1025))).toThrow(TypeError)
    expect(() => dashboard.isFinished(7 as unknown as string)).toThrow('isFinished needs a source name (a string), got number')
    expect(() => dashboard.finishSource('d1')).toThrow("source 'd1' is written by replica 'phone': only its writer can finish it")
    expect(() => dashboard.finishSource('d2')).toThrow('limits.maxSources (1) reached')
    await writer.close()
    expect(() => writer.finishSource('d1')).toThrow()
  })

  it('reaches peers with the clock: a peer fires as the writer does, and an older copy of the clock does not undo it', () => {
    const device = createEngine({ windows: tumbling(10_000), watermark: boundedOutOfOrderness(1_000), replicaId: 'phone' })
    const other = createEngine({ windows: tumbling(10_000), watermark: boundedOutOfOrderness(1_000), replicaId: 'tablet' })
    const dashboard = createEngine({ windows: tumbling(10_000), watermark: boundedOutOfOrderness(1_000), replicaId: 'dash' })
    const writes: LocalWrite[] = []
    for (const peer of [device, other]) peer.replica.onLocalWrite((w) => writes.push(structuredClone(w)))
    device.ingest(seconds('d2', 5))
    other.ingest(seconds('d1', 35))
    void device.finishSource('d2')
    const finish = writes.at(-1) as LocalWrite
    expect(finish.cells).toEqual([])
    expect(finish.clocks).toEqual([expect.objectContaining({ source: 'd2', writer: 'phone', finished: true })])
    // Every write in order, then the one before the finish again (a stale copy, as a late relay would bring).
    for (const w of [...writes, writes[0] as LocalWrite]) dashboard.replica.mergeRemote(w.cells, w.clocks)
    expect(dashboard.stats().proofFrontier).toBe(34_000)
    expect(['d1', 'd2', 'never-seen'].map((s) => [device.isFinished(s), dashboard.isFinished(s)])).toEqual([
      [false, false],
      [true, true],
      [false, false],
    ])
    expect(dashboard.results().map((r) => [r.start, r.status, r.basis])).toEqual([
      [0, 'on_time', 'proven'],
      [10_000, 'on_time', 'proven'],
      [20_000, 'on_time', 'proven'],
      [30_000, 'provisional', 'unknown'],
    ])
  })

  it('a keeper that finished the source wins a conflict on every replica: it publishes the version it raised, since it never writes again', () => {
    const engines = ['a', 'b', 'c'].map((replicaId) => createEngine({ windows: tumbling(10_000), watermark: boundedOutOfOrderness(1_000), replicaId }))
    const [keeper, loser, dashboard] = engines as [TidemarkEngine, TidemarkEngine, TidemarkEngine]
    const fromKeeper: LocalWrite[] = []
    const fromLoser: LocalWrite[] = []
    keeper.replica.onLocalWrite((w) => fromKeeper.push(structuredClone(w)))
    loser.replica.onLocalWrite((w) => fromLoser.push(structuredClone(w)))
    // Two writers of 's' (one id given twice): the loser wrote more versions before the keeper finished it.
    loser.ingest(seconds('s', 10))
    keeper.ingest(seconds('s', 1))
    void keeper.finishSource('s')
    const merge = (into: TidemarkEngine, writes: readonly LocalWrite[]) => {
      for (const w of writes) into.replica.mergeRemote(w.cells, w.clocks)
    }
    merge(dashboard, [...fromKeeper, ...fromLoser])
    // Each writer hears of the other; the dashboard then hears whatever they wrote since.
    const [keeperBefore, loserBefore] = [fromKeeper.length, fromLoser.length]
    merge(keeper, fromLoser.slice(0, loserBefore))
    merge(loser, fromKeeper.slice(0, keeperBefore))
    merge(dashboard, [...fromKeeper.slice(keeperBefore), ...fromLoser.slice(loserBefore)])
    for (const engine of engines) {
      expect(engine.replica.exportState().clocks).toEqual([expect.objectContaining({ source: 's', writer: 'a', finished: true })])
      expect(engine.stats().proofFrontier).toBe(Number.POSITIVE_INFINITY)
    }
  })

  it('two writers that both finished the source: every replica holds one clock and one W, whichever copy it heard first', () => {
    // The loser (b) reached 19 s, the keeper (a) 2 s; c hears the loser first, d the keeper first.
    const replicas = ['a', 'b', 'c', 'd'].map((replicaId) => {
      const engine = createEngine({ windows: tumbling(10_000), watermark: boundedOutOfOrderness(1_000), now: () => 0, replicaId }) as TidemarkEngine
      const writes: LocalWrite[] = []
      engine.replica.onLocalWrite((w) => writes.push(structuredClone(w)))
      return { engine, writes }
    })
    const [a, b, c, d] = replicas as [(typeof replicas)[0], (typeof replicas)[0], (typeof replicas)[0], (typeof replicas)[0]]
    a.engine.ingest(seconds('s', 3))
    b.engine.ingest(seconds('s', 20))
    void a.engine.finishSource('s')
    void b.engine.finishSource('s')
    const hear = (into: TidemarkEngine, writes: readonly LocalWrite[]) => {
      for (const w of writes) into.replica.mergeRemote(w.cells, w.clocks)
    }
    const [fromA, fromB] = [a.writes.splice(0), b.writes.splice(0)]
    hear(a.engine, fromB)
    hear(b.engine, fromA)
    // Everything either writer wrote, the keeper's raised clock included, reaches the loser, and c and d in opposite orders.
    const [allA, allB] = [[...fromA, ...a.writes], [...fromB, ...b.writes]]
    hear(b.engine, a.writes)
    hear(c.engine, [...allB, ...allA])
    hear(d.engine, [...allA, ...allB])
    const clocks = replicas.map(({ engine }) => engine.replica.exportState().clocks)
    expect(clocks[0]).toEqual([expect.objectContaining({ source: 's', writer: 'a', finished: true, maxTs: 19_000 })])
    for (const held of clocks) expect(held).toEqual(clocks[0])
    expect(new Set(replicas.map(({ engine }) => engine.stats().watermark))).toEqual(new Set([18_000]))
    expect(new Set(replicas.map(({ engine }) => engine.stats().proofFrontier))).toEqual(new Set([Number.POSITIVE_INFINITY]))
  })

  it('is logged and replayed, and kept by a checkpoint', async () => {
    const options = { windows: tumbling(10_000), watermark: boundedOutOfOrderness(1_000), now: () => 0, replicaId: 'r1' }
    const { engine, ops } = loggedEngine(options)
    engine.ingest([...seconds('d1', 25), ...seconds('d2', 3)])
    await engine.finishSource('d2')
    engine.ingest([reading('d2', 4, 3_000)])
    expect(ops.map((op) => op.kind)).toEqual(['ingest', 'finish', 'ingest'])
    expect(ops[1]).toEqual({ kind: 'finish', source: 'd2', now: 0 })

    const replayed = createEngine(options) as TidemarkEngine
    for (const op of ops) replayed.replay(op)
    const restored = createEngine(options) as TidemarkEngine
    restored.restore(structuredClone(engine.checkpoint()))
    for (const copy of [replayed, restored]) {
      expect(copy.results()).toEqual(engine.results())
      expect(copy.stats()).toMatchObject({ proofFrontier: 24_000, finishedSources: 1 })
      expect([copy.isFinished('d1'), copy.isFinished('d2')]).toEqual([false, true])
      expect(copy.ingest([reading('d2', 5, 4_000)]).anomalies[0]?.reason).toBe('finished_source')
    }
  })

  it('finishing again answers with the durability of the first finish: pending until its record commits; a record that failed is written again', async () => {
    const engine = createEngine({ windows: tumbling(10_000), watermark: manual() }) as TidemarkEngine
    // A log whose writes commit, or fail, when the test says so.
    const writes: { resolve: () => void; reject: (error: Error) => void }[] = []
    engine.attachLog({ record: () => new Promise((resolve, reject) => writes.push({ resolve, reject })), blocked: null, stats: () => ({ walRecords: 0, walBytes: 0 }) })
    const pending = engine.finishSource('d1')
    // The first record is not committed yet (a crash now would lose the finish): finishing again answers with that record's promise.
    expect(engine.finishSource('d1')).toBe(pending)
    expect(writes).toHaveLength(1)
    writes[0]?.resolve()
    await pending
    await expect(engine.finishSource('d1')).resolves.toBeUndefined()
    const failed = new Error('write failed')
    const first = engine.finishSource('d2')
    writes[1]?.reject(failed)
    await expect(first).rejects.toBe(failed)
    // Finishing d1 again logged nothing; finishing d2 again writes its failed record again.
    expect(writes).toHaveLength(2)
    const retried = engine.finishSource('d2')
    expect(writes).toHaveLength(3)
    writes[2]?.resolve()
    await expect(retried).resolves.toBeUndefined()
    await expect(engine.finishSource('d2')).resolves.toBeUndefined()
    expect(writes).toHaveLength(3)
  })

  it('rejects, changing nothing, while the log refuses writes', async () => {
    const engine = createEngine({ windows: tumbling(10_000), watermark: manual() }) as TidemarkEngine
    const full = new Error('quota exceeded')
    engine.attachLog({ record: () => Promise.resolve(), blocked: full, stats: () => ({ walRecords: 0, walBytes: 0 }) })
    await expect(engine.finishSource('d1')).rejects.toBe(full)
    expect(engine.stats().sources).toBe(0)
  })
})
