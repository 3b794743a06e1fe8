import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import {
  type AggregateDefinitions,
  createEngine,
  manual,
  session,
  sliding,
  type EngineCheckpoint,
  type StreamEvent,
  type TidemarkEngine,
  tumbling,
  type WalOp,
  type WriteAheadLog,
} from '@tidemark/engine'
import {
  decodeEngineCheckpoint,
  encodeEngineCheckpoint,
  indexedDbPersistence,
  openEngine,
  type OpenEngineOptions,
  recoveryReport,
} from '@tidemark/idb'
import { visibleState, whenDurable } from '@tidemark/engine/testing'
import { assertSeeded, assertSeededAsync, extensive } from '@tidemark/seeded-random/property'
import { memoryPersistence } from '@tidemark/idb/memory'
import { AGGREGATE_MENU, runPlanOp, type StreamPlan, streamPlan } from '../src/model/streamPlan.ts'

const FILE = 'packages/testkit/test/recovery.test.ts'

/** A journal that keeps copies of every op, as a write-ahead log would. */
function memoryJournal(): WriteAheadLog & { ops: WalOp[] } {
  const ops: WalOp[] = []
  return {
    ops,
    blocked: null,
    record(op) {
      ops.push(structuredClone(op))
      return Promise.resolve()
    },
    stats: () => ({ walRecords: ops.length, walBytes: 0 }),
  }
}

function engineFor(plan: StreamPlan, clock: { now: number }): TidemarkEngine {
  return createEngine({ ...plan.config, now: () => clock.now, replicaId: 'r' }) as TidemarkEngine<AggregateDefinitions>
}

/** Every cell's aggregate states as bytes, by address: what must come back bit for bit. */
function sketches(engine: Pick<TidemarkEngine, 'replica'>): string[] {
  return engine.replica
    .exportState()
    .cells.map(({ address, cell, aggregates }) => JSON.stringify([address, cell.count, cell.version, aggregates?.map((bytes) => [...bytes]) ?? null]))
    .sort()
}

/** What a user can see, minus the log's own size, and every sketch. */
function visible(engine: TidemarkEngine) {
  const { walRecords: _r, walBytes: _b, ...stats } = engine.stats()
  return { results: engine.results(), late: engine.lateEvents(), watermark: engine.watermark(), stats, sketches: sketches(engine) }
}

describe('checkpoint plus journal replay', () => {
  it('a crash at any point recovers exactly the state before it, dedup memory included', () => {
    const property = fc.property(streamPlan(), fc.nat(), (plan, cut) => {
      const clock = { now: 0 }
      const live = engineFor(plan, clock)
      const journal = memoryJournal()
      live.attachLog(journal)
      const at = cut % (plan.ops.length + 1)
      let checkpoint: EngineCheckpoint | null = null
      let logged = 0
      plan.ops.forEach((op, i) => {
        if (i === at) {
          checkpoint = structuredClone(live.checkpoint())
          logged = journal.ops.length
        }
        runPlanOp(live, clock, op)
      })
      if (checkpoint === null) {
        checkpoint = structuredClone(live.checkpoint())
        logged = journal.ops.length
      }
      // "Crash": a new engine from the checkpoint and the journal tail, with a clock that reads nonsense.
      const recoveredClock = { now: Number.NaN }
      const recovered = engineFor(plan, recoveredClock)
      recovered.restore(checkpoint)
      for (const op of journal.ops.slice(logged)) recovered.replay(op)
      expect(visible(recovered)).toEqual(visible(live))
      // Re-sending everything that was accepted counts nothing twice, on both.
      const everything = plan.ops.flatMap((op) => (op.kind === 'ingest' ? op.events : [])) as StreamEvent[]
      clock.now = 1e9
      recoveredClock.now = 1e9
      const a = live.ingest(everything)
      const b = recovered.ingest(everything)
      expect(b.accepted).toBe(a.accepted)
      expect(b.duplicates).toBe(a.duplicates)
      expect(recovered.results()).toEqual(live.results())
    })
    assertSeeded(property, FILE, 'a crash at any point recovers exactly the state before it', 150)
  }, extensive ? 600_000 : 30_000)

  it('a checkpoint from another window configuration is refused with a clear error', () => {
    const a = createEngine({ windows: tumbling(10) }) as TidemarkEngine
    a.ingest([{ id: '1', source: 'd', seq: 1, ts: 1, value: 1 }])
    const b = createEngine({ windows: tumbling(20) }) as TidemarkEngine
    expect(() => b.restore(a.checkpoint())).toThrow(/checkpoint was written with .*tumbling:10.*tumbling:20/)
  })

  it("a checkpoint of another replica is refused with a clear error: its sources are that replica's", () => {
    const a = createEngine({ windows: tumbling(10), replicaId: 'tab-a' }) as TidemarkEngine
    a.ingest([{ id: '1', source: 'd', seq: 1, ts: 1, value: 1 }])
    const b = createEngine({ windows: tumbling(10), replicaId: 'tab-b' }) as TidemarkEngine
    expect(() => b.restore(a.checkpoint())).toThrow("checkpoint was written by replica 'tab-a', this engine is replica 'tab-b'")
    const same = createEngine({ windows: tumbling(10), replicaId: 'tab-a' }) as TidemarkEngine
    same.restore(a.checkpoint())
    expect(same.ingest([{ id: '2', source: 'd', seq: 2, ts: 2, value: 2 }]).accepted).toBe(1)
  })

  it('restore refuses an engine that already holds state', () => {
    const a = createEngine({ windows: tumbling(10) }) as TidemarkEngine
    a.ingest([{ id: '1', source: 'd', seq: 1, ts: 1, value: 1 }])
    expect(() => a.restore(a.checkpoint())).toThrow(/fresh engine/)
  })

  it('a blocked journal refuses whole batches with overflow and a rejected durable promise', async () => {
    const a = createEngine({ windows: tumbling(10) }) as TidemarkEngine
    const full = new Error('QuotaExceededError: disk full')
    a.attachLog({ blocked: full, record: () => Promise.resolve(), stats: () => ({ walRecords: 0, walBytes: 0 }) })
    const receipt = a.ingest([{ id: '1', source: 'd', seq: 1, ts: 1, value: 1 }])
    expect(receipt).toMatchObject({ accepted: 0, rejected: 1 })
    expect(receipt.anomalies[0]).toMatchObject({ reason: 'overflow', detail: expect.stringContaining('disk full') })
    await expect(receipt.durable).rejects.toBe(full)
    expect(a.results()).toEqual([])
  })
})

describe('recovery through the write-ahead log and its codecs', () => {
  it('round-trips checkpoints of engines driven by random streams', () => {
    assertSeeded(
      fc.property(streamPlan(), (plan) => {
        const clock = { now: 0 }
        const engine = createEngine({ ...plan.config, now: () => clock.now, replicaId: 'r' }) as TidemarkEngine<AggregateDefinitions>
        for (const op of plan.ops) runPlanOp(engine, clock, op)
        const checkpoint = engine.checkpoint()
        expect(decodeEngineCheckpoint(encodeEngineCheckpoint(checkpoint))).toStrictEqual(structuredClone(checkpoint))
      }),
      FILE,
      'round-trips checkpoints of engines driven by random streams',
      100,
    )
  })

  it('recovers the state before any crash point, from a checkpoint plus the log tail', async () => {
    const property = fc.asyncProperty(
      streamPlan(),
      fc.nat(),
      fc.integer({ min: 1, max: 40 }),
      fc.array(fc.boolean(), { maxLength: 60 }),
      async (plan, cut, every, yields) => {
        const factory = new IDBFactory()
        const liveClock = { now: 0 }
        const options = (now: () => number): OpenEngineOptions => ({
          ...plan.config,
          now,
          persistence: indexedDbPersistence({ name: 'plan', indexedDB: factory }),
          checkpointEvery: { events: every },
        })
        const live = await openEngine(options(() => liveClock.now))
        const at = cut % (plan.ops.length + 1)
        for (const [i, op] of plan.ops.slice(0, at).entries()) {
          runPlanOp(live, liveClock, op)
          // Sometimes let commits and checkpoints happen between operations.
          if (yields[i % Math.max(1, yields.length)] === true) await new Promise((resolve) => setImmediate(resolve))
        }
        await whenDurable(live)
        // "Crash": the live engine is dropped as it is; the recovered one has a clock that reads nonsense.
        const recoveredClock = { now: Number.NaN }
        const recovered = await openEngine(options(() => recoveredClock.now))
        expect(recoveryReport(recovered)?.corrupt).toEqual([])
        expect(visibleState(recovered)).toEqual(visibleState(live))
        expect(sketches(recovered)).toEqual(sketches(live))
        const everything = plan.ops.flatMap((op) => (op.kind === 'ingest' ? op.events : [])) as StreamEvent[]
        liveClock.now = 1e9
        recoveredClock.now = 1e9
        const a = live.ingest(everything)
        const b = recovered.ingest(everything)
        expect([b.accepted, b.duplicates]).toEqual([a.accepted, a.duplicates])
        expect(recovered.results()).toEqual(live.results())
        // Timers armed before the crash (and by the re-sent events) fire the same panes on both.
        liveClock.now = 2e9
        recoveredClock.now = 2e9
        live.tick()
        recovered.tick()
        expect(recovered.results()).toEqual(live.results())
        expect(recovered.stats().timers).toBe(live.stats().timers)
      },
    )
    await assertSeededAsync(property, FILE, 'recovers the state before any crash point', 100)
  }, 120_000)

  it('openEngine over memoryPersistence and IndexedDB restores every sketch exactly: peers merged, panes pending, after a crash', async () => {
    const aggregates = { ...AGGREGATE_MENU }
    const memory = memoryPersistence()
    const factory = new IDBFactory()
    // A crash: the memory store is closed under the live engine (no last checkpoint); IndexedDB is opened again beside it.
    const stores = [
      { open: () => memory, crash: () => memory.close() },
      { open: () => indexedDbPersistence({ name: 'sketches', indexedDB: factory }), crash: () => Promise.resolve() },
    ]
    for (const store of stores) {
      const engineOptions = { windows: [tumbling(10), sliding(20, 5), session(4)], watermark: manual(), allowedLateness: 30, accumulation: 'discarding' as const, aggregates, now: () => 0 }
      const options = () => ({ ...engineOptions, persistence: store.open(), checkpointEvery: { events: 7 }, checkpointOnClose: false })
      const live = await openEngine(options())
      const peer = createEngine({ ...engineOptions, replicaId: 'peer' })
      let seq = 0
      for (let step = 0; step < 6; step++) {
        const batch = Array.from({ length: 5 }, (_, i) => ({ id: `d${i}-${step}`, source: `d${i % 3}`, seq: ++seq, ts: (step * 7 + i * 3) % 40, value: (step * 31 + i * 17) % 90 - 40 }))
        live.ingest(batch.map(({ seq: _seq, ...e }) => ({ ...e, id: `live-${e.id}` })))
        peer.ingest(batch.map((e) => ({ ...e, source: `p${e.source}` })))
        const state = peer.replica.exportState()
        live.replica.mergeRemote(state.cells, state.clocks)
        if (step === 3) live.advanceWatermark(20)
      }
      await whenDurable(live)
      await store.crash()
      const reopened = await openEngine(options())
      expect(recoveryReport(reopened)?.corrupt).toEqual([])
      expect(sketches(reopened)).toEqual(sketches(live))
      // Quantile sketches (format byte 0x51 = 81) of own and peers' cells are among them.
      expect(sketches(live).filter((cell) => cell.includes('[81,')).length).toBeGreaterThan(10)
      expect(reopened.results()).toEqual(live.results())
      // Both go on alike, discarding states pending included.
      const more = [{ id: 'more', source: 'd9', ts: 39, value: 13.5 }]
      live.ingest(more)
      reopened.ingest(more)
      live.advanceWatermark(100)
      reopened.advanceWatermark(100)
      expect(reopened.results()).toEqual(live.results())
      await reopened.close()
    }
  })

})
