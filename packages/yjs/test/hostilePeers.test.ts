/**
 * A real engine bound to a doc that receives hostile peer updates: random bytes, truncated
 * updates, and well-formed updates carrying hostile values. The engine counts them as
 * `invalid_remote_cell`, its results stay exactly what its own events and the valid peer
 * cells give, and it keeps ingesting and publishing.
 */
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { createEngine, latest, manual, packCellGroup, type StreamEvent, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { applyPeerUpdate } from '../src/binding/applyPeerUpdate.ts'
import { bindDoc } from '../src/binding/bindDoc.ts'
import { DOC_SCHEMA, META_NAME, replicaArrayName, writeGroupEntry } from '../src/schema/docEntry.ts'
import { rawGroup, withField } from './fakePort.ts'

const W = 'tumbling:60000'
const T0 = 1_700_000_040_000 - (1_700_000_040_000 % 60_000)

function engineOn(doc: Y.Doc, replicaId: string): TidemarkEngine {
  const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId }) as TidemarkEngine
  bindDoc(engine, doc)
  return engine
}

function events(source: string, n: number): StreamEvent[] {
  return Array.from({ length: n }, (_, i) => ({ id: `${source}-${i + 1}`, source, seq: i + 1, ts: T0 + i * 1000, key: 'temp', value: i }))
}

/** Two docs that pass each other every update, as a provider would. */
function linkDocs(a: Y.Doc, b: Y.Doc): void {
  Y.applyUpdate(b, Y.encodeStateAsUpdate(a), a)
  Y.applyUpdate(a, Y.encodeStateAsUpdate(b), b)
  a.on('update', (update: Uint8Array, origin: unknown) => {
    if (origin !== b) Y.applyUpdate(b, update, a)
  })
  b.on('update', (update: Uint8Array, origin: unknown) => {
    if (origin !== a) Y.applyUpdate(a, update, b)
  })
}

/** A peer (same configuration as the engine) that wrote `entries` raw into its log. */
function hostilePeer(configuration: string, entries: unknown[]): Uint8Array {
  const doc = new Y.Doc()
  doc.transact(() => {
    doc.getMap(META_NAME).set('mallory', [DOC_SCHEMA, configuration])
    doc.getArray(replicaArrayName('mallory')).push(entries)
  })
  return Y.encodeStateAsUpdate(doc)
}

describe('hostile peers against a real engine', () => {
  it('ignores and counts hostile cells, merges the valid one, and keeps serving', () => {
    const doc = new Y.Doc()
    const engine = engineOn(doc, 'honest')
    engine.ingest(events('d1', 5))
    const configuration = engine.replica.configuration
    const valid = rawGroup('m1', T0, [['temp', 2, 10, 4, 6, T0 + 10, 1]], W)
    const hostile = [
      rawGroup('m1', T0, [['temp', Number.NaN, 10, 4, 6, T0, 2]], W),
      rawGroup('m2', T0, [['temp', 2 ** 45, 10, 4, 6, T0, 1]], W),
      rawGroup('m3', T0, [['temp', -3, 10, 4, 6, T0, 1]], W),
      rawGroup('m4', T0, [['temp', 2, Number.NEGATIVE_INFINITY, 4, 6, T0, 1]], W),
      withField(rawGroup('m5', T0, [['temp', 2, 10, 4, 6, T0, 1]], W), 5, [2, 10, 4, 6, T0, '1']),
      rawGroup('m6', T0, [['temp', 2, 10, 40, 6, T0, 1]], W),
      Array.from({ length: 50_000 }, () => 0),
      { __proto__: { polluted: true } },
      'constructor',
      new Uint8Array(8),
      ['k', 'd1', 'honest', T0 + 999_999, 999, T0, 1, 999],
    ]
    expect(applyPeerUpdate(doc, hostilePeer(configuration, [valid, ...hostile]), 'peer')).toBe(true)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(hostile.length)

    const window = engine.results({ window: W, key: 'temp' })
    expect(window).toHaveLength(1)
    expect(window[0]).toMatchObject({ count: 5 + 2, sum: 10 + 10, min: 0, max: 6 })
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()

    // still ingesting and publishing
    engine.ingest(events('d1', 6).slice(5))
    expect(engine.results({ window: W, key: 'temp' })[0]?.count).toBe(8)
    const peer = new Y.Doc()
    const reader = engineOn(peer, 'reader')
    applyPeerUpdate(peer, Y.encodeStateAsUpdate(doc), 'peer')
    expect(reader.results({ window: W, key: 'temp' })[0]?.count).toBe(8)
  })

  it('one update listing 6,000 new replicas (within maxReplicas) is applied, and the doc keeps syncing both ways', () => {
    const configuration = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'x' }).replica.configuration
    const shared = new Y.Doc()
    shared.transact(() => {
      for (let i = 0; i < 6_000; i++) shared.getMap(META_NAME).set(`tab-${i}`, [DOC_SCHEMA, configuration])
    })
    const writer = engineOn(shared, 'writer')
    writer.ingest(events('w1', 2))
    const doc = new Y.Doc()
    const engine = engineOn(doc, 'reader')
    // Each new log was opened in a transaction of its own, cleaned up one stack frame each: past
    // about 4,000 the stack overflowed, the update was reported as not applied, and Yjs ran no
    // cleanup again (no merge, no update event) on that doc.
    expect(applyPeerUpdate(doc, Y.encodeStateAsUpdate(shared), 'provider')).toBe(true)
    expect(engine.results({ window: W }).map((r) => r.count)).toEqual([2])
    writer.ingest(events('w1', 3).slice(2))
    expect(applyPeerUpdate(doc, Y.encodeStateAsUpdate(shared, Y.encodeStateVector(doc)), 'provider')).toBe(true)
    expect(engine.results({ window: W }).map((r) => r.count)).toEqual([3])
    let updates = 0
    doc.on('update', () => updates++)
    engine.ingest(events('r1', 1))
    expect(updates).toBe(1)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(0)
  })

  it("a cell pushed into a replica's own log that every engine refuses does not outrank the replica's own cell when it rewrites the group", () => {
    const a = new Y.Doc()
    const b = new Y.Doc()
    linkDocs(a, b)
    const writer = engineOn(a, 'A')
    const reader = engineOn(b, 'B')
    writer.ingest(events('s1', 1))
    // Well formed, values impossible (count NaN), version far ahead: refused by both engines.
    const bad = packCellGroup(W, T0, 's1', ['temp'], [{ count: Number.NaN, sum: 0, min: 0, max: 0, maxTs: T0, version: 2 ** 50 }])
    b.getArray(replicaArrayName('A')).push([writeGroupEntry(bad)])
    expect([writer.stats().anomalies.invalid_remote_cell, reader.stats().anomalies.invalid_remote_cell]).toEqual([1, 1])
    writer.ingest(events('s1', 4).slice(1))
    const shown = (engine: TidemarkEngine) => engine.results({ window: W }).map((r) => [r.count, r.sum])
    expect(shown(writer)).toEqual([[4, 6]])
    expect(shown(reader)).toEqual(shown(writer))
    const fresh = new Y.Doc()
    Y.applyUpdate(fresh, Y.encodeStateAsUpdate(a))
    expect(shown(engineOn(fresh, 'C'))).toEqual(shown(writer))
  })

  it('an earlier session of this replica under another configuration, delivered after binding, does not break its writes', () => {
    const server = new Y.Doc()
    const old = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'A', aggregates: { last: latest() } })
    bindDoc(old, server)
    old.ingest([
      { id: 'e1', source: 's1', seq: 1, ts: T0 + 5, key: 'temp', value: 1 },
      { id: 'e2', source: 's1', seq: 2, ts: T0 + 6, key: 'hum', value: 1 },
    ])
    const doc = new Y.Doc()
    const errors: Error[] = []
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'A' }) as TidemarkEngine
    bindDoc(engine, doc, { onError: (error) => errors.push(error) })
    engine.ingest([{ id: 'n1', source: 's1', seq: 11, ts: T0 + 10, key: 'temp', value: 5 }])
    // The provider's state arrives after the binding, as the README orders it.
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(server, Y.encodeStateVector(doc)), 'provider')
    engine.ingest([{ id: 'n2', source: 's1', seq: 12, ts: T0 + 20, key: 'temp', value: 50 }])
    expect(errors).toEqual([])
    const fresh = new Y.Doc()
    Y.applyUpdate(fresh, Y.encodeStateAsUpdate(doc))
    const shown = (e: TidemarkEngine) => e.results({ window: W }).map((r) => [r.count, r.sum])
    expect(shown(engineOn(fresh, 'B'))).toEqual(shown(engine))
  })

  it('replicas that left no trace (meta entry deleted, log empty) stop counting against maxReplicas', () => {
    const doc = new Y.Doc()
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'A' }) as TidemarkEngine
    bindDoc(engine, doc, { maxReplicas: 20, onError: () => {} })
    const burst = new Y.Doc()
    Y.applyUpdate(burst, Y.encodeStateAsUpdate(doc))
    const configuration = engine.replica.configuration
    burst.transact(() => {
      for (let i = 0; i < 19; i++) burst.getMap(META_NAME).set(`ghost-${i}`, [DOC_SCHEMA, configuration])
    })
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(burst, Y.encodeStateVector(doc)), 'peer')
    burst.transact(() => {
      for (let i = 0; i < 19; i++) burst.getMap(META_NAME).delete(`ghost-${i}`)
    })
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(burst, Y.encodeStateVector(doc)), 'peer')
    // An honest replica joins later: merged, as a fresh binding of the same doc would.
    const other = new Y.Doc()
    engineOn(other, 'B').ingest(events('b1', 1))
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(other), 'peer')
    expect(engine.results({ window: W }).map((r) => r.count)).toEqual([1])
    expect(engine.stats().remoteAnomalies.filter((detail) => detail.includes('more than'))).toEqual([])
  })

  it('a replica refused for maxReplicas is merged once replicas that left no trace free a slot, whether or not its meta entry changes again', () => {
    const doc = new Y.Doc()
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'A' }) as TidemarkEngine
    bindDoc(engine, doc, { maxReplicas: 3, onError: () => {} })
    const server = new Y.Doc()
    Y.applyUpdate(server, Y.encodeStateAsUpdate(doc))
    const configuration = engine.replica.configuration
    server.transact(() => {
      for (const ghost of ['ghost-1', 'ghost-2']) server.getMap(META_NAME).set(ghost, [DOC_SCHEMA, configuration])
    })
    const sync = (): void => Y.applyUpdate(doc, Y.encodeStateAsUpdate(server, Y.encodeStateVector(doc)), 'peer')
    sync()
    // L joins while the doc is full: refused.
    const other = new Y.Doc()
    const late = engineOn(other, 'L')
    late.ingest(events('l1', 4))
    Y.applyUpdate(server, Y.encodeStateAsUpdate(other))
    sync()
    expect(engine.results({ window: W })).toEqual([])
    // The ghosts leave; L's meta entry does not change again, its log does.
    server.transact(() => {
      for (const ghost of ['ghost-1', 'ghost-2']) server.getMap(META_NAME).delete(ghost)
    })
    sync()
    late.ingest(events('l1', 6).slice(4))
    Y.applyUpdate(server, Y.encodeStateAsUpdate(other, Y.encodeStateVector(server)))
    sync()
    expect(engine.results({ window: W }).map((r) => r.count)).toEqual([6])
    // As a fresh binding of the same doc shows it.
    const fresh = new Y.Doc()
    Y.applyUpdate(fresh, Y.encodeStateAsUpdate(doc))
    const shown = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'F' }) as TidemarkEngine
    bindDoc(shown, fresh, { maxReplicas: 3, onError: () => {} })
    expect(shown.results({ window: W }).map((r) => r.count)).toEqual([6])
  })

  it('survives random and truncated updates, counts them, and merges the intact update', () => {
    const doc = new Y.Doc()
    const engine = engineOn(doc, 'honest')
    engine.ingest(events('d1', 3))
    let state = 0x2545f491
    const random = (): number => {
      state ^= state << 13
      state ^= state >>> 17
      state ^= state << 5
      return (state >>> 0) / 2 ** 32
    }
    let rejected = 0
    for (let i = 0; i < 100; i++) {
      const bytes = Uint8Array.from({ length: 1 + Math.floor(random() * 120) }, () => Math.floor(random() * 256))
      if (!applyPeerUpdate(doc, bytes, 'peer')) rejected++
    }
    const source = new Y.Doc()
    const writer = engineOn(source, 'writer')
    writer.ingest(events('d2', 4))
    const full = Y.encodeStateAsUpdate(source)
    for (let cut = 1; cut < full.byteLength; cut += 7) if (!applyPeerUpdate(doc, full.slice(0, cut), 'peer')) rejected++
    expect(rejected).toBeGreaterThan(0)
    expect(engine.stats().anomalies.invalid_remote_cell).toBeGreaterThanOrEqual(rejected)

    applyPeerUpdate(doc, full, 'peer')
    expect(engine.results({ window: W, key: 'temp' })[0]).toMatchObject({ count: 3 + 4 })
    engine.ingest(events('d1', 4).slice(3))
    expect(engine.results({ window: W, key: 'temp' })[0]).toMatchObject({ count: 8 })
  })
})
