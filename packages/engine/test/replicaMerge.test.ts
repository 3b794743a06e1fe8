import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  afterProcessingTime,
  createEngine,
  type Engine,
  manual,
  never,
  type StreamEvent,
  session,
  sliding,
  tumbling,
  type WindowSpec,
} from '../src/index.ts'
import type { TidemarkEngine } from '../src/core/engine.ts'
import { packCellGroup } from '../src/lattice/cellGroup.ts'
import type { LocalWrite } from '../src/replica/replicaPort.ts'
import { assertSeeded, extensive } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/replicaMerge.test.ts'
const SPECS: readonly WindowSpec[] = [tumbling(10), sliding(20, 5), session(7)]

function values(engine: Engine) {
  return engine.results().map(({ window, key, start, end, count, sum, min, max }) => ({ window, key, start, end, count, sum, min, max }))
}

/** A fresh engine (of `windows`, by default the three kinds) plus every LocalWrite it publishes. */
function replica(id: string, windows: WindowSpec | readonly WindowSpec[] = SPECS): { engine: TidemarkEngine; writes: LocalWrite[] } {
  const engine = createEngine({ windows, watermark: manual(), replicaId: id, retention: Number.POSITIVE_INFINITY }) as TidemarkEngine
  const writes: LocalWrite[] = []
  // A write is only valid during the call (cells are live state): keep a copy, as a transport would.
  engine.replica.onLocalWrite((w) => writes.push(structuredClone(w)))
  return { engine, writes }
}

const event = fc.record({
  source: fc.constantFrom('s0', 's1', 's2', 's3'),
  ts: fc.integer({ min: 0, max: 80 }),
  key: fc.constantFrom('a', 'b', '__proto__'),
  value: fc.integer({ min: -50, max: 50 }),
})

describe('lattice state merged through the replica port', () => {
  it('replicas that exchange their writes in any order, with repeats, show what one engine that saw every event shows', () => {
    const property = fc.property(
      fc.array(fc.array(event, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 8 }),
      fc.integer(),
      (batches, shuffleSeed) => {
        const single = createEngine({ windows: SPECS, watermark: manual(), retention: Number.POSITIVE_INFINITY })
        const owners = ['r0', 'r1', 'r2'].map((id) => replica(id))
        const seqs = new Map<string, number>()
        for (const batch of batches) {
          const events: StreamEvent[] = batch.map((e) => {
            const seq = (seqs.get(e.source) ?? 0) + 1
            seqs.set(e.source, seq)
            return { id: `${e.source}-${seq}`, seq, ...e }
          })
          single.ingest(events)
          // Source s<i> is written by replica r<i % 3>.
          owners.forEach((o, i) => {
            o.engine.ingest(events.filter((e) => Number(e.source.slice(1)) % 3 === i))
          })
        }
        // Deliver every write to every other replica, shuffled and repeated.
        let state = shuffleSeed >>> 0
        const random = () => {
          state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0
          return state / 2 ** 32
        }
        owners.forEach((target, t) => {
          const inbox = owners.flatMap((o, i) => (i === t ? [] : [...o.writes, ...o.writes.filter(() => random() < 0.3)]))
          for (let i = inbox.length - 1; i > 0; i--) {
            const j = Math.floor(random() * (i + 1))
            ;[inbox[i], inbox[j]] = [inbox[j] as LocalWrite, inbox[i] as LocalWrite]
          }
          for (const write of inbox) target.engine.replica.mergeRemote(write.cells, write.clocks)
        })
        const expected = values(single)
        for (const o of owners) expect(values(o.engine)).toEqual(expected)
      },
    )
    assertSeeded(property, FILE, 'replicas that exchange their writes', 100)
  }, extensive ? 600_000 : 30_000)

  it('a replica listened to now and then writes its cells the same, and a peer fed its writes then its full state agrees', () => {
    // Unheard, a replica keeps its own cells as numbers; heard, as objects the outbox knows. Its
    // cells change from one to the other between and within slices, never losing a write.
    const property = fc.property(
      fc.array(fc.record({ events: fc.array(event, { minLength: 1, maxLength: 12 }), heard: fc.boolean() }), { minLength: 1, maxLength: 8 }),
      (batches) => {
        const unheard = createEngine({ windows: SPECS, watermark: manual(), retention: Number.POSITIVE_INFINITY })
        const owner = createEngine({ windows: SPECS, watermark: manual(), replicaId: 'r0', retention: Number.POSITIVE_INFINITY }) as TidemarkEngine
        const peer = replica('r1').engine
        const seqs = new Map<string, number>()
        for (const { events: batch, heard } of batches) {
          const events: StreamEvent[] = batch.map((e) => {
            const seq = (seqs.get(e.source) ?? 0) + 1
            seqs.set(e.source, seq)
            return { id: `${e.source}-${seq}`, seq, ...e }
          })
          unheard.ingest(events)
          const writes: LocalWrite[] = []
          const stop = heard ? owner.replica.onLocalWrite((w) => writes.push(structuredClone(w))) : () => {}
          owner.ingest(events)
          stop()
          for (const w of writes) peer.replica.mergeRemote(w.cells, w.clocks)
          expect(values(owner)).toEqual(values(unheard))
        }
        const state = structuredClone(owner.replica.exportState())
        peer.replica.mergeRemote(state.cells, state.clocks)
        expect(values(peer)).toEqual(values(unheard))
      },
    )
    assertSeeded(property, FILE, 'a replica listened to now and then writes its cells the same, and a peer fed its writes then its full state agrees', 100)
  })

  it('a peer clock for a source this replica writes is a source_conflict; the smaller replica id keeps the source', () => {
    const a = replica('a')
    const b = replica('b')
    a.engine.ingest([{ id: '1', source: 'dev', seq: 1, ts: 1, value: 1 }])
    b.engine.ingest([{ id: '1', source: 'dev', seq: 1, ts: 1, value: 1 }])
    const fromA = a.writes.at(-1) as LocalWrite
    const fromB = b.writes.at(-1) as LocalWrite
    expect(a.engine.replica.mergeRemote(fromB.cells, fromB.clocks).conflicts).toBe(1)
    expect(b.engine.replica.mergeRemote(fromA.cells, fromA.clocks).conflicts).toBe(1)
    expect(b.engine.stats().anomalies.source_conflict).toBe(1)
    // b lost the source: its next event for it is refused; a still writes it.
    const refused = b.engine.ingest([{ id: '2', source: 'dev', seq: 2, ts: 2, value: 1 }])
    expect(refused.anomalies.map((x) => x.reason)).toEqual(['source_conflict'])
    expect(a.engine.ingest([{ id: '2', source: 'dev', seq: 2, ts: 2, value: 1 }]).accepted).toBe(1)
    const next = a.writes.at(-1) as LocalWrite
    b.engine.replica.mergeRemote(next.cells, next.clocks)
    // Both replicas resolve the colliding cells alike.
    expect(values(b.engine)).toEqual(values(a.engine))
    expect(values(a.engine)[0]).toMatchObject({ count: 2 })
  })

  it('after a conflict, the keeper of the source outranks what the loser wrote: every replica converges on its next write', () => {
    const a = replica('a')
    const b = replica('b')
    const c = replica('c')
    a.engine.ingest([{ id: 'a1', source: 'dev', seq: 1, ts: 1, value: 1 }])
    // b wrote the same source further: its cell has a higher version than a's.
    b.engine.ingest([1, 2, 3, 4, 5].map((seq) => ({ id: `b${seq}`, source: 'dev', seq, ts: seq, value: 100 })))
    const fromA = a.writes.at(-1) as LocalWrite
    const fromB = b.writes.at(-1) as LocalWrite
    for (const [to, from] of [[c, fromA], [c, fromB], [a, fromB], [b, fromA]] as const) to.engine.replica.mergeRemote(from.cells, from.clocks)
    expect(a.engine.ingest([{ id: 'a2', source: 'dev', seq: 2, ts: 2, value: 1 }]).accepted).toBe(1)
    const next = a.writes.at(-1) as LocalWrite
    b.engine.replica.mergeRemote(next.cells, next.clocks)
    c.engine.replica.mergeRemote(next.cells, next.clocks)
    // a's write is not stale anywhere: all three show it, and all three name a as the writer.
    expect(values(a.engine)).toContainEqual(expect.objectContaining({ count: 6, sum: 501 }))
    expect(values(b.engine)).toEqual(values(a.engine))
    expect(values(c.engine)).toEqual(values(a.engine))
    const writer = (r: typeof a) => r.engine.replica.exportState().clocks.find((clock) => clock.source === 'dev')?.writer
    expect([writer(a), writer(b), writer(c)]).toEqual(['a', 'a', 'a'])
  })

  it('a replica that keeps a source against one peer and gives it up to another in one merge publishes no clock of it', () => {
    const a = replica('a')
    const b = replica('b')
    const c = replica('c')
    for (const r of [a, b, c]) r.engine.ingest([{ id: `${r.engine.replica.replicaId}1`, source: 'dev', seq: 1, ts: 1, value: 1 }])
    // c wrote the source further: b, keeping it against c, would raise its clock to c's version.
    c.engine.ingest([2, 3, 4].map((seq) => ({ id: `c${seq}`, source: 'dev', seq, ts: seq, value: 1 })))
    const fromA = a.writes.at(-1) as LocalWrite
    const fromC = c.writes.at(-1) as LocalWrite
    const before = b.writes.length
    expect(b.engine.replica.mergeRemote([...fromC.cells, ...fromA.cells], [...fromC.clocks, ...fromA.clocks]).conflicts).toBe(2)
    // b gave the source up to a: a clock of it in b's log would name a, which every peer refuses there.
    const published = b.writes.slice(before).flatMap((w) => w.clocks)
    expect(published.filter((clock) => clock.writer !== 'b')).toEqual([])
    expect(b.engine.replica.exportState().clocks.find((clock) => clock.source === 'dev')?.writer).toBe('a')
  })

  it('a cell for a window spec this replica does not have is counted invalid_remote_cell and ignored', () => {
    const a = replica('a')
    a.engine.replica.mergeRemote(
      [{ address: { window: 'tumbling:999', key: '', start: 0, source: 'x' }, cell: { count: 1, sum: 1, min: 1, max: 1, maxTs: 0, version: 1 } }],
      [],
    )
    expect(a.engine.stats().anomalies.invalid_remote_cell).toBe(1)
    expect(a.engine.results()).toEqual([])
  })

  it('a full-state exchange carries session tombstones, so anti-entropy never counts an absorbed fragment twice', () => {
    const mk = (id: string) => replica(id, session(15))
    const owner = mk('r0')
    const peer = mk('r1')
    owner.engine.ingest([{ id: 'a', source: 's0', seq: 1, ts: 0, value: 1 }])
    owner.engine.ingest([{ id: 'b', source: 's0', seq: 2, ts: -1, value: 1 }])
    const first = owner.writes[0] as LocalWrite
    peer.engine.replica.mergeRemote(first.cells, first.clocks)
    const full = structuredClone(owner.engine.replica.exportState())
    peer.engine.replica.mergeRemote(full.cells, full.clocks)
    const back = structuredClone(peer.engine.replica.exportState())
    owner.engine.replica.mergeRemote(back.cells, back.clocks)
    expect(values(peer.engine)).toEqual(values(owner.engine))
    expect(values(owner.engine)[0]).toMatchObject({ count: 2 })
  })

  it('exportState({ writer }) takes only the sources that replica writes, and such exports from every writer rebuild the whole state', () => {
    const r0 = replica('r0')
    const r1 = replica('r1')
    const at = (source: string, seq: number, ts: number, key = 'a'): StreamEvent => ({ id: `${source}-${seq}`, source, seq, ts, key, value: seq })
    // Sessions that grow into each other leave tombstones; events behind fired windows reach slice parts.
    r0.engine.ingest([at('s0', 1, 0), at('s0', 2, 30), at('s1', 1, 12, 'b')])
    r0.engine.ingest([at('s0', 3, -1), at('s1', 2, 3, 'b')])
    r0.engine.advanceWatermark(16)
    r0.engine.ingest([at('s1', 3, 13, 'b')])
    r1.engine.ingest([at('s2', 1, 5), at('s2', 2, 40, 'b')])
    const full0 = structuredClone(r0.engine.replica.exportState())
    r1.engine.replica.mergeRemote(full0.cells, full0.clocks)
    r1.engine.ingest([at('s2', 3, 8)])

    const full = structuredClone(r1.engine.replica.exportState())
    expect(full.cells.some((entry) => entry.address.window === 'session:7' && entry.cell.count === 0)).toBe(true)
    expect(full.cells.some((entry) => entry.address.window.startsWith('sliding:20:5@'))).toBe(true)
    for (const writer of ['r0', 'r1']) {
      const sources = new Set(full.clocks.filter((clock) => clock.writer === writer).map((clock) => clock.source))
      const mine = structuredClone(r1.engine.replica.exportState({ writer }))
      expect(mine.clocks).toEqual(full.clocks.filter((clock) => clock.writer === writer))
      expect(mine.cells).toEqual(full.cells.filter((entry) => sources.has(entry.address.source)))
      expect(mine.cells.length).toBeGreaterThan(0)
    }
    expect(r1.engine.replica.exportState({ writer: 'r9' })).toEqual({ cells: [], clocks: [] })

    const r2 = replica('r2')
    for (const writer of ['r1', 'r0']) {
      const mine = structuredClone(r1.engine.replica.exportState({ writer }))
      r2.engine.replica.mergeRemote(mine.cells, mine.clocks)
    }
    expect(values(r2.engine)).toEqual(values(r1.engine))
    const delivered: string[][] = []
    r1.engine.replica.exportDurableState((state) => delivered.push(state.clocks.map((clock) => clock.source)), { writer: 'r1' })
    expect(delivered).toEqual([['s2']])
  })

  it('a session that a peer tombstone shrinks fires once the watermark passes its new end', () => {
    const mk = (id: string) => replica(id, session(10))
    const r0 = mk('r0')
    const r1 = mk('r1')
    const reader = mk('reader')
    // r0's source: a reading at 12, then one at 5, whose fragment absorbs the first (a tombstone at 12).
    r0.engine.ingest([{ id: 'b', source: 's0', seq: 1, ts: 12, value: 1 }])
    r0.engine.ingest([{ id: 'a', source: 's0', seq: 2, ts: 5, value: 1 }])
    r1.engine.ingest([{ id: 'c', source: 's1', seq: 1, ts: 3, value: 1 }])
    const [first, second] = r0.writes as [LocalWrite, LocalWrite]
    const other = r1.writes[0] as LocalWrite
    // The reader first sees the session end at 22, then with s1's fragment at [3, 13) too.
    reader.engine.replica.mergeRemote(first.cells, first.clocks)
    reader.engine.replica.mergeRemote(other.cells, other.clocks)
    expect(values(reader.engine)).toMatchObject([{ start: 3, end: 22, count: 2 }])
    // Then only the tombstone arrives (a transport split r0's second write): the session is [3, 13).
    const tombstones = second.cells.filter((c) => c.cell.count === 0)
    expect(tombstones).toHaveLength(1)
    reader.engine.replica.mergeRemote(tombstones, [])
    expect(values(reader.engine)).toMatchObject([{ start: 3, end: 13, count: 1 }])
    const fired: string[] = []
    reader.engine.subscribe((changes) => {
      for (const change of changes) fired.push(`${change.type} ${change.result.start}-${change.result.end}`)
    })
    reader.engine.advanceWatermark(14)
    expect(fired).toContain('on_time 3-13')
    expect(reader.engine.results()[0]).toMatchObject({ start: 3, end: 13, status: 'on_time' })
  })

  it('peer cells and clocks with impossible numbers are refused by the engine itself, whatever the transport', () => {
    const a = replica('a')
    a.engine.ingest([{ id: '1', source: 'dev', seq: 1, ts: 2, value: 1 }])
    const before = values(a.engine)
    const address = { window: 'tumbling:10', key: '', start: 0, source: 'peer' }
    const cell = { count: 1, sum: 1, min: 1, max: 1, maxTs: 1, version: 1 }
    const report = a.engine.replica.mergeRemote(
      [
        { address, cell: { ...cell, count: -3 } },
        { address, cell: { ...cell, sum: Number.NaN } },
        { address, cell: { ...cell, count: 2, sum: 1e6 } },
        { address, cell: { ...cell, count: 2 ** 41 } },
      ],
      [{ source: 'peer', writer: 'b', maxTs: Number.NaN, prefix: 1, prefixTs: 1, provable: true, version: 1 }],
    )
    expect(report.applied).toBe(0)
    expect(a.engine.stats().anomalies.invalid_remote_cell).toBe(5)
    expect(a.engine.stats().remoteAnomalies.at(-1)).toMatch(/clock: maxTs/)
    expect(values(a.engine)).toEqual(before)
    expect(a.engine.stats().sources).toBe(1)
  })

  it('a peer cell for a window this replica already declared final is merged and flagged as a finality violation', () => {
    const a = replica('a')
    const b = replica('b')
    b.engine.ingest([{ id: '1', source: 'late-device', seq: 1, ts: 3, value: 5 }])
    a.engine.ingest([{ id: '1', source: 'dev', seq: 1, ts: 2, value: 1 }])
    a.engine.advanceWatermark(100)
    const report = a.engine.replica.mergeRemote((b.writes[0] as LocalWrite).cells, (b.writes[0] as LocalWrite).clocks)
    // Once per cell and window (docs/replication.md): b's one reading lands in 6 of a's final windows (1 tumbling, 4 sliding, 1 session).
    expect(b.engine.results().length).toBe(6)
    expect(report.finalityViolations).toBe(6)
    expect(a.engine.stats().finalityViolations).toBe(report.finalityViolations)
    expect(a.engine.results({ window: 'tumbling:10' })[0]).toMatchObject({ count: 2, sum: 6, final: true, status: 'corrected' })
  })

  it.each([
    ['never()', never()],
    ['afterProcessingTime(1000)', afterProcessingTime(1_000)],
  ])('with late: %s, a peer cell for a final window shows at once in a final correction (no finality is left to wait for)', (_, late) => {
    const now = 0
    const a = createEngine({ windows: tumbling(10), watermark: manual(), replicaId: 'a', now: () => now, trigger: { late } })
    const b = replica('b', tumbling(10))
    const changes: string[] = []
    a.subscribe((batch) => changes.push(...batch.map((c) => `${c.type} ${c.result.count}${c.result.final ? ' final' : ''}`)))
    b.engine.ingest([{ id: '1', source: 'late-device', seq: 1, ts: 3, value: 5 }])
    a.ingest([{ id: '1', source: 'dev', seq: 1, ts: 2, value: 1 }])
    a.advanceWatermark(100)
    changes.length = 0
    const report = a.replica.mergeRemote((b.writes[0] as LocalWrite).cells, (b.writes[0] as LocalWrite).clocks)
    expect(report.finalityViolations).toBe(1)
    expect(changes).toEqual(['correction 2 final'])
    expect(a.results()[0]).toMatchObject({ count: 2, sum: 6, final: true, status: 'corrected', revision: 1 })
    expect(a.stats().timers).toBe(0)
  })
})

describe('peer cells that fit no window here', () => {
  it('are counted and described in stats().remoteAnomalies, as the replication docs say', () => {
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'a' })
    const cell = { count: 1, sum: 1, min: 1, max: 1, maxTs: 1, version: 1 }
    // An unknown window spec, and a start off the spec's grid.
    engine.replica.mergeRemoteGroups([packCellGroup('tumbling:99', 0, 'd1', ['k'], [cell]), packCellGroup('tumbling:60000', 7, 'd1', ['k'], [cell])], [])
    const stats = engine.stats()
    expect(stats.anomalies.invalid_remote_cell).toBe(2)
    expect(stats.remoteAnomalies).toEqual([expect.stringMatching(/^invalid_remote_cell: 2 cell\(s\) fit no window here$/)])
    expect(engine.results()).toEqual([])
  })
})

describe("a peer's clock of a new source past limits.maxSources", () => {
  /** Readings of `source`, seqs `from`..`to`, one per second of event time from `(from - 1)` s. */
  const readings = (source: string, from: number, to: number): StreamEvent[] =>
    Array.from({ length: to - from + 1 }, (_, i) => ({ id: `${source}-${from + i}`, source, seq: from + i, ts: (from + i - 1) * 1_000, value: 1 }))

  it('is left out as overflow, and the proof frontier never passes what it proved: a source it cannot track is not proven complete', async () => {
    const phone = createEngine({ windows: tumbling(10_000), watermark: manual(), replicaId: 'phone' })
    const writes: LocalWrite[] = []
    phone.replica.onLocalWrite((w) => writes.push(structuredClone(w)))
    // One upload of three sources: a dashboard with room for two takes d1's and d2's clocks, not d3's.
    phone.ingest([...readings('d1', 1, 25), ...readings('d2', 1, 25), ...readings('d3', 1, 5)])
    await phone.finishSource('d1')
    await phone.finishSource('d2')
    phone.ingest(readings('d3', 6, 31))
    const engine = (maxSources: number) => {
      const e = createEngine({ windows: tumbling(10_000), watermark: manual(), replicaId: 'dash', limits: { maxSources } }) as TidemarkEngine
      for (const w of writes) e.replica.mergeRemote(w.cells, w.clocks)
      e.advanceWatermark(25_000)
      return e
    }
    const roomy = engine(3)
    const full = engine(2)
    // With room, d3 holds P at its gap-free prefix (30 s); both other sources finished.
    expect(roomy.stats().proofFrontier).toBe(30_000)
    // Without room for d3, P stays at what d3's first clock proved (4 s), not at Infinity.
    expect(full.stats().sources).toBe(2)
    expect(full.stats().finishedSources).toBe(2)
    expect(full.stats().proofFrontier).toBe(4_000)
    expect(full.stats().anomalies.overflow).toBe(2)
    expect(full.stats().remoteAnomalies.at(-1)).toBe("overflow: 1 clock(s) of new sources, first 'd3': limits.maxSources (2) reached; P stays at or below 4000")
    // Its cells still merge: the same counts, judged by the watermark alone past P.
    expect(values(full)).toEqual(values(roomy))
    expect(roomy.results().map((r) => r.basis)).toEqual(['proven', 'proven', 'proven', 'unknown'])
    expect(full.results().map((r) => r.basis)).toEqual(['derived', 'derived', 'unknown', 'unknown'])
    // A checkpoint keeps the bound.
    const restored = createEngine({ windows: tumbling(10_000), watermark: manual(), replicaId: 'dash', limits: { maxSources: 2 } }) as TidemarkEngine
    restored.restore(structuredClone(full.checkpoint()))
    expect(restored.stats().proofFrontier).toBe(4_000)
    expect(roomy.checkpoint().frontiers).not.toHaveProperty('untrackedProof')
  })
})
