import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { applyPeerUpdate } from '../src/binding/applyPeerUpdate.ts'
import { bindDoc } from '../src/binding/bindDoc.ts'
import { isConfigurationMismatchError } from '../src/schema/configurationMismatchError.ts'
import { DOC_SCHEMA, META_NAME, replicaArrayName } from '../src/schema/docEntry.ts'
import { readGroupEntry } from '../src/schema/docEntry.ts'
import { createEngine, distinct, type EngineOptions, groupCell, manual, quantiles, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { boundReplicas, cellOf, cellTable, clockOf, fakePort, rawGroup, withField } from './fakePort.ts'

/** State-vector exchange both ways, as a provider does on (re)connect. */
function exchange(a: Y.Doc, b: Y.Doc): void {
  applyPeerUpdate(b, Y.encodeStateAsUpdate(a, Y.encodeStateVector(b)), 'peer')
  applyPeerUpdate(a, Y.encodeStateAsUpdate(b, Y.encodeStateVector(a)), 'peer')
}

/** A doc in which replica `id` wrote `entries` raw, as a hostile or buggy peer could. */
function peerDoc(id: string, entries: unknown[], configuration = 'tumbling:60000'): Y.Doc {
  const doc = new Y.Doc()
  doc.transact(() => {
    doc.getMap(META_NAME).set(id, [DOC_SCHEMA, configuration])
    doc.getArray(replicaArrayName(id)).push(entries)
  })
  return doc
}

const T0 = 1_700_000_040_000

describe('bindDoc: local writes', () => {
  it('publishes each local write in one transaction and replaces superseded entries', () => {
    const doc = new Y.Doc()
    const port = fakePort('a')
    bindDoc(port, doc)
    let updates = 0
    doc.on('update', () => updates++)
    for (let n = 1; n <= 50; n++) {
      port.write([cellOf('d1', 'temp', T0, n), cellOf('d1', 'hum', T0, n)], [clockOf('d1', 'a', T0 + n, n)])
    }
    expect(updates).toBe(50)
    // one group (both keys of the window) and one clock live; every older entry deleted
    expect(doc.getArray(replicaArrayName('a')).length).toBe(2)
  })

  it('publishes a cell that the engine mutates in place between writes', () => {
    const doc = new Y.Doc()
    const port = fakePort('a')
    bindDoc(port, doc)
    const live = cellOf('d1', 'temp', T0, 1)
    const cell = live.cell as { count: number; sum: number; version: number }
    port.write([live])
    cell.count = 2
    cell.sum = 2
    cell.version = 2
    port.write([live])
    const log = doc.getArray<unknown[]>(replicaArrayName('a')).toArray()
    expect(log).toHaveLength(1)
    const group = readGroupEntry(log[0])
    expect(typeof group === 'string' ? group : groupCell(group, 0).count).toBe(2)
  })

  it('keeps the encoded doc flat under overwrites (key-value log, not a Y.Map)', () => {
    const doc = new Y.Doc()
    const port = fakePort('a')
    bindDoc(port, doc)
    const sizeAfter = (rounds: number, from: number): number => {
      for (let n = from; n < from + rounds; n++) {
        port.write(
          Array.from({ length: 100 }, (_, k) => cellOf('d1', `k${k}`, T0, n)),
          [clockOf('d1', 'a', T0 + n, n)],
        )
      }
      return Y.encodeStateAsUpdate(doc).byteLength
    }
    const after100 = sizeAfter(100, 1)
    const after1000 = sizeAfter(900, 101)
    expect(after1000).toBeLessThan(after100 * 1.2)
  }, 30_000)

  it('appends a small change to a large window as a delta entry and compacts the deltas later', () => {
    const doc = new Y.Doc()
    const port = fakePort('a')
    bindDoc(port, doc)
    const log = doc.getArray<unknown[]>(replicaArrayName('a'))
    const groups = (): number => log.toArray().filter((e) => e[0] === 'g').length
    port.write(
      Array.from({ length: 100 }, (_, k) => cellOf('d1', `k${k}`, T0, 1)),
      [clockOf('d1', 'a', T0, 1)],
    )
    expect(groups()).toBe(1)
    let updateBytes = 0
    const onUpdate = (update: Uint8Array): void => {
      updateBytes += update.byteLength
    }
    doc.on('update', onUpdate)
    port.write([cellOf('d1', 'k7', T0, 2)], [clockOf('d1', 'a', T0, 2)])
    doc.off('update', onUpdate)
    // one delta of one cell next to the full entry, and its update is a small fraction of the window
    expect(groups()).toBe(2)
    expect(updateBytes).toBeLessThan(400)
    // a replica joining now sees the join of both entries
    const joined = new Y.Doc()
    const reader = fakePort('r')
    bindDoc(reader, joined)
    applyPeerUpdate(joined, Y.encodeStateAsUpdate(doc), 'peer')
    expect(cellTable(reader)).toEqual(cellTable(port))
    expect(reader.cells.get(JSON.stringify(['tumbling:60000', 'k7', T0, 'd1']))?.cell.count).toBe(2)
    // deltas pile up to a bound (32 entries, or half the full entry's cells), then the group is one entry again
    const counts: number[] = []
    for (let n = 3; n < 80; n++) {
      port.write([cellOf('d1', `k${n % 100}`, T0, n)], [clockOf('d1', 'a', T0, n)])
      counts.push(groups())
    }
    expect(Math.max(...counts)).toBe(32)
    expect(counts.filter((c) => c === 1).length).toBeGreaterThanOrEqual(2)
    applyPeerUpdate(joined, Y.encodeStateAsUpdate(doc, Y.encodeStateVector(joined)), 'peer')
    expect(cellTable(reader)).toEqual(cellTable(port))
  })

  it('removes expired cells from the doc but never retracts them from a peer', () => {
    const { docA, docB, a, b } = boundReplicas()
    a.write([cellOf('d1', 'temp', T0, 3), cellOf('d1', 'temp', T0 + 60_000, 1)], [clockOf('d1', 'a', T0 + 60_001, 4)])
    exchange(docA, docB)
    expect(Object.keys(cellTable(b))).toHaveLength(2)
    a.write([], [], [cellOf('d1', 'temp', T0, 3).address])
    exchange(docA, docB)
    expect(docA.getArray(replicaArrayName('a')).length).toBe(2)
    expect(Object.keys(cellTable(b))).toHaveLength(2)
  })

  it('publishes only its own sources on bind, and merges what the doc already holds in one call', () => {
    const docA = new Y.Doc()
    const a = fakePort('a')
    bindDoc(a, docA)
    a.write([cellOf('d1', 'temp', T0, 2)], [clockOf('d1', 'a', T0 + 2, 2)])

    const docB = new Y.Doc()
    exchange(docA, docB)
    const b = fakePort('b')
    // b already holds a peer's cell (merged earlier) and one of its own
    b.cells.set('x', cellOf('d9', 'temp', T0, 1))
    b.write([cellOf('d2', 'temp', T0, 5)], [clockOf('d2', 'b', T0 + 5, 5)])
    bindDoc(b, docB)
    expect(b.merges).toHaveLength(1)
    expect(b.merges[0]?.cells).toHaveLength(1)
    const bLog = docB.getArray<unknown[]>(replicaArrayName('b')).toArray()
    expect(bLog.map((e) => e[0]).sort()).toEqual(['g', 'k'])
    expect(bLog.find((e) => e[0] === 'g')?.[3]).toBe('d2')
  })

  it('merges back the entries of an earlier session of the same replica', () => {
    const doc = new Y.Doc()
    const first = fakePort('a')
    const binding = bindDoc(first, doc)
    first.write([cellOf('d1', 'temp', T0, 7)], [clockOf('d1', 'a', T0 + 7, 7)])
    binding.destroy()
    const second = fakePort('a')
    bindDoc(second, doc)
    expect(second.cells.size).toBe(1)
    expect(second.clocks.get('d1')?.version).toBe(7)
  })

  it.each([
    ['without aggregates', {}],
    ['with aggregates', { aggregates: { p: quantiles({ at: [0.5] }), devices: distinct({ of: (e: { source: string }) => e.source }) } }],
  ])('a reload retires what left live state while no doc was bound and writes the rest: a new peer holds what the reloaded engine holds (%s)', (_, extra) => {
    const now = () => T0
    const options: EngineOptions = { windows: tumbling(60_000), watermark: manual(), allowedLateness: 0, retention: 0, replicaId: 'a', now, ...extra }
    const readings = (source: string, from: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({ id: `${source}-${from + i}`, source, seq: from + i, ts: T0 + (from + i) * 1000, key: `k${(from + i) % 3}`, value: from + i }))
    const first = createEngine(options) as TidemarkEngine
    for (let s = 0; s < 12; s++) first.ingest(readings(`d${s}`, 1, 90))
    const firstDoc = new Y.Doc()
    bindDoc(first, firstDoc, { now })
    const checkpoint = first.checkpoint()
    type Results = { results(): readonly { key: string; start: number; count: number; sum: number }[] }
    const totals = (engine: Results) => engine.results().map((r) => `${r.key}@${(r.start - T0) / 60_000}: ${r.count}/${r.sum}`).sort()
    const minutes = (engine: Results) => new Set(engine.results().map((r) => (r.start - T0) / 60_000))
    expect(minutes(first)).toEqual(new Set([0, 1]))

    // Reloaded (its engine from its checkpoint, its persisted doc in a new Y.Doc): two more
    // readings of d0, and minute 0 final and gone (retention 0) while no doc was bound.
    const more = createEngine(options) as TidemarkEngine
    more.restore(checkpoint)
    more.ingest(readings('d0', 91, 2))
    more.advanceWatermark(T0 + 60_000)
    const moreDoc = new Y.Doc()
    Y.applyUpdate(moreDoc, Y.encodeStateAsUpdate(firstDoc), 'persistence')
    bindDoc(more, moreDoc, { now })

    // A peer that binds the reloaded doc (what a relay would hand it) holds the windows the reloaded engine does, and no other.
    const peer = createEngine({ ...options, replicaId: 'p' })
    const peerDoc = new Y.Doc()
    Y.applyUpdate(peerDoc, Y.encodeStateAsUpdate(moreDoc), 'peer')
    bindDoc(peer, peerDoc, { now })
    expect(minutes(more)).toEqual(new Set([1]))
    expect(totals(peer)).toEqual(totals(more))
    expect(totals(more)).not.toEqual(totals(first).filter((t) => t.includes('@1:')))
  })
})

describe('bindDoc: remote updates', () => {
  it('merges one remote update batch with one mergeRemote call', () => {
    const { docA, docB, a, b } = boundReplicas()
    const before = Y.encodeStateVector(docB)
    for (let n = 1; n <= 5; n++) a.write([cellOf('d1', 'temp', T0, n), cellOf('d1', 'hum', T0, n)], [clockOf('d1', 'a', T0 + n, n)])
    applyPeerUpdate(docB, Y.encodeStateAsUpdate(docA, before), 'peer')
    expect(b.merges).toHaveLength(1)
    expect(cellTable(b)).toEqual(cellTable(a))
    expect(b.clocks.get('d1')?.version).toBe(5)
  })

  it('does not merge its own writes back', () => {
    const doc = new Y.Doc()
    const a = fakePort('a')
    bindDoc(a, doc)
    a.write([cellOf('d1', 'temp', T0, 1)])
    expect(a.merges).toHaveLength(0)
  })

  it('converges whatever the delivery order, with duplicates', () => {
    const docs = [new Y.Doc(), new Y.Doc(), new Y.Doc()]
    const ports = ['a', 'b', 'c'].map((id) => fakePort(id))
    const updates: Uint8Array[] = []
    for (const doc of docs) {
      doc.on('update', (u: Uint8Array, origin: unknown) => {
        if (origin !== 'peer') updates.push(u)
      })
    }
    docs.forEach((doc, i) => {
      bindDoc(ports[i] as ReturnType<typeof fakePort>, doc)
    })
    ports.forEach((port, i) => {
      for (let n = 1; n <= 4; n++) port.write([cellOf(`d${i}`, 'temp', T0, n)], [clockOf(`d${i}`, port.replicaId, T0 + n, n)])
    })
    // reversed and doubled
    const target = new Y.Doc()
    const observer = fakePort('z')
    bindDoc(observer, target)
    for (const u of [...updates].reverse()) applyPeerUpdate(target, u, 'peer')
    for (const u of updates) applyPeerUpdate(target, u, 'peer')
    const union = fakePort('u')
    for (const port of ports) union.mergeRemote([...port.cells.values()], [])
    expect(cellTable(observer)).toEqual(cellTable(union))
  })

  it('waits for a replica meta entry before merging its log', () => {
    const peer = peerDoc('p', [rawGroup('d1', T0, [['temp', 1, 1, 1, 1, T0, 1]])])
    const logOnly = new Y.Doc()
    logOnly.getArray(replicaArrayName('p')).push([rawGroup('d1', T0, [['temp', 1, 1, 1, 1, T0, 1]])])
    const doc = new Y.Doc()
    const port = fakePort('a')
    bindDoc(port, doc)
    applyPeerUpdate(doc, Y.encodeStateAsUpdate(logOnly), 'peer')
    expect(port.cells.size).toBe(0)
    applyPeerUpdate(doc, Y.encodeStateAsUpdate(peer), 'peer')
    expect([...port.cells.values()]).toEqual([
      { address: { window: 'tumbling:60000', key: 'temp', start: T0, source: 'd1' }, cell: { count: 1, sum: 1, min: 1, max: 1, maxTs: T0, version: 1 } },
    ])
  })
})

describe('bindDoc: two bindings on one doc', () => {
  it('each takes the other as a peer: both merge both, and neither answers the other without end', () => {
    const doc = new Y.Doc()
    const reading = (source: string, seq: number) => ({ id: `${source}-${seq}`, source, seq, ts: T0 + seq, key: 'k', value: 1 })
    const errors: string[] = []
    const engines = ['a', 'b'].map((replicaId) => createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId }))
    const [a, b] = engines as [(typeof engines)[0], (typeof engines)[0]]
    bindDoc(a, doc, { onError: (error) => errors.push(error.message) })
    a.ingest([reading('sa', 1)])
    // A transaction of the other binding changes nothing of the schema for this one: it used to answer it with one of its own, and the two recursed until the stack overflowed.
    bindDoc(b, doc, { onError: (error) => errors.push(error.message) })
    b.ingest([reading('sb', 1)])
    a.ingest([reading('sa', 2)])
    expect(errors).toEqual([])
    expect(a.results().map((r) => r.count)).toEqual([3])
    expect(b.results().map((r) => r.count)).toEqual([3])
  })
})

describe('bindDoc: cells that arrive after their window left live state', () => {
  /** Window [0, 10) of source s leaves live state here, and an earlier session's cell of it arrives before or after that. */
  function earlierSession(earlierId: string, earlierFirst: boolean): { log: unknown[]; joiner: unknown } {
    const engine = (replicaId: string) => createEngine({ windows: tumbling(10), retention: 0, replicaId })
    const earlierDoc = new Y.Doc()
    const earlier = engine(earlierId)
    bindDoc(earlier, earlierDoc)
    earlier.ingest([{ id: 'e1', source: 's', seq: 1, ts: 5, key: 'temp', value: 1 }])
    const doc = new Y.Doc()
    const current = engine('dev')
    bindDoc(current, doc)
    current.ingest([{ id: 'e2', source: 's', seq: 2, ts: 6, key: 'temp', value: 2 }])
    if (earlierFirst) applyPeerUpdate(doc, Y.encodeStateAsUpdate(earlierDoc), 'relay')
    current.ingest([{ id: 'e3', source: 's', seq: 3, ts: 100, key: 'temp', value: 3 }])
    if (!earlierFirst) applyPeerUpdate(doc, Y.encodeStateAsUpdate(earlierDoc), 'relay')
    current.ingest([{ id: 'e4', source: 's', seq: 4, ts: 200, key: 'temp', value: 4 }])
    const log = doc
      .getArray<unknown>(replicaArrayName(earlierId))
      .toArray()
      .map((entry) => readGroupEntry(entry))
      .filter((group) => typeof group !== 'string')
      .map((group) => group.start)
    // A dashboard joining later shows what the document holds.
    const dashboard = createEngine({ windows: tumbling(10), watermark: manual(), replicaId: 'dashboard' })
    const dashboardDoc = new Y.Doc()
    bindDoc(dashboard, dashboardDoc, { readOnly: true })
    applyPeerUpdate(dashboardDoc, Y.encodeStateAsUpdate(doc), 'peer')
    return { log, joiner: dashboard.results().map((r) => [r.start, r.count]) }
  }

  it.each([
    ['an earlier session under another replica id', 'z-old'],
    ['an earlier session of this replica', 'dev'],
  ])('%s: retired whether it arrives before or after, so a later joiner sees the same', (_, earlierId) => {
    for (const earlierFirst of [true, false]) {
      expect(earlierSession(earlierId, earlierFirst), `earlier first: ${earlierFirst}`).toEqual({ log: earlierId === 'dev' ? [200] : [], joiner: [[200, 1]] })
    }
  })
})

describe('bindDoc: expiry in other logs', () => {
  it("retires expired entries of its own sources from another replica's log, and nobody else's", () => {
    // An earlier session of this device (replica a0) left d1's cells; a peer (b) writes d9.
    const doc = new Y.Doc()
    const earlier = fakePort('a0')
    const first = bindDoc(earlier, doc)
    earlier.write([cellOf('d1', 'temp', T0, 2)], [clockOf('d1', 'a0', T0 + 2, 2)])
    first.destroy()
    const b = fakePort('b')
    const peer = new Y.Doc()
    bindDoc(b, peer)
    b.write([cellOf('d9', 'temp', T0, 1)], [clockOf('d9', 'b', T0 + 1, 1)])
    exchange(doc, peer)

    const a = fakePort('a')
    bindDoc(a, doc)
    a.write([cellOf('d1', 'temp', T0, 3)], [clockOf('d1', 'a', T0 + 3, 3)])
    const groupsOf = (id: string) => doc.getArray<unknown[]>(replicaArrayName(id)).toArray().filter((e) => e[0] === 'g').map((e) => e[3])
    expect([groupsOf('a0'), groupsOf('b')]).toEqual([['d1'], ['d9']])
    // Both windows leave a's live state; only d1 is a source a writes.
    a.write([], [], [cellOf('d1', 'temp', T0, 3).address, cellOf('d9', 'temp', T0, 1).address])
    expect([groupsOf('a'), groupsOf('a0'), groupsOf('b')]).toEqual([[], [], ['d9']])
  })
})

describe('bindDoc: read-only', () => {
  it('merges what peers write and never writes to the doc', () => {
    const { docA, a } = boundReplicas()
    a.write([cellOf('d1', 'temp', T0, 2)], [clockOf('d1', 'a', T0 + 2, 2)])
    const doc = new Y.Doc()
    let updates = 0
    doc.on('update', (_update: Uint8Array, origin: unknown) => {
      if (origin !== 'peer') updates++
    })
    const wall = fakePort('wall')
    bindDoc(wall, doc, { readOnly: true })
    exchange(docA, doc)
    expect(cellTable(wall)).toEqual(cellTable(a))
    // Its own ingest, an expiry, a peer overwriting its (absent) meta entry: still nothing written.
    wall.write([cellOf('w1', 'temp', T0, 1)], [clockOf('w1', 'wall', T0 + 1, 1)], [cellOf('d1', 'temp', T0, 2).address])
    applyPeerUpdate(doc, metaUpdate('wall', 'tumbling:1'), 'peer')
    expect(updates).toBe(0)
    expect(doc.getMap(META_NAME).get('wall')).toEqual([DOC_SCHEMA, 'tumbling:1'])
    expect(doc.getArray(replicaArrayName('wall')).length).toBe(0)
    expect(doc.getArray(replicaArrayName('a')).length).toBe(2)
    a.write([cellOf('d1', 'temp', T0, 5)], [clockOf('d1', 'a', T0 + 5, 5)])
    exchange(docA, doc)
    // a's cells (the wall also holds its own local w1)
    expect(cellTable(wall)).toMatchObject(cellTable(a))
    expect(updates).toBe(0)
  })
})

/** An update of another doc that sets `id`'s meta entry. */
function metaUpdate(id: string, configuration: string): Uint8Array {
  const other = new Y.Doc()
  other.getMap(META_NAME).set(id, [DOC_SCHEMA, configuration])
  return Y.encodeStateAsUpdate(other)
}

describe('bindDoc: validation of peers', () => {
  const valid = rawGroup('d1', T0, [['temp', 2, 3, 1, 2, T0 + 5, 2]])
  const cell = (values: readonly [number, number, number, number, number, number]): unknown[] => rawGroup('d1', T0, [['temp', ...values]])
  const hostile: [string, unknown][] = [
    ['NaN count', cell([Number.NaN, 3, 1, 2, T0, 2])],
    ['negative count', cell([-1, 3, 1, 2, T0, 2])],
    ['fractional count', cell([1.5, 3, 1, 2, T0, 2])],
    ['absurd count', cell([2 ** 41, 3, 1, 2, T0, 2])],
    ['infinite sum', cell([2, Number.POSITIVE_INFINITY, 1, 2, T0, 2])],
    ['min above max', cell([2, 3, 5, 2, T0, 2])],
    ['NaN maxTs', cell([2, 3, 1, 2, Number.NaN, 2])],
    ['negative version', cell([2, 3, 1, 2, T0, -2])],
    ['NaN start', withField(valid, 2, Number.NaN)],
    ['string start', withField(valid, 2, String(T0))],
    ['null window', withField(valid, 1, null)],
    ['empty source', withField(valid, 3, '')],
    ['huge key', withField(valid, 4, JSON.stringify(['k'.repeat(100_000)]))],
    ['keys not JSON', withField(valid, 4, '["temp"')],
    ['keys not strings', withField(valid, 4, '[1]')],
    ['more keys than cells', withField(valid, 4, '["temp","hum"]')],
    ['columns as numbers', withField(valid, 5, [2, 3, 1, 2, T0, 2])],
    ['columns cut short', withField(valid, 5, new Uint8Array(47))],
    ['no columns', withField(valid, 5, new Uint8Array(0))],
    ['huge array', Array.from({ length: 100_000 }, () => 1)],
    ['short array', ['g', 'tumbling:60000']],
    ['schema 1 cell entry', ['c', 'tumbling:60000', 'temp', T0, 'd1', 2, 3, 1, 2, T0 + 5, 2]],
    ['object', { key: 'temp', val: [1, 2, 3] }],
    ['number', 42],
    ['string', '__proto__'],
    ['null', null],
    ['bytes', new Uint8Array(48)],
    ['nested Y type', new Y.Map()],
    ['clock of another writer', ['k', 'd1', 'someone-else', T0, 1, T0, 1, 1]],
    ['clock with NaN prefix', ['k', 'd1', 'p', T0, Number.NaN, T0, 1, 1]],
    ['clock with flags 4', ['k', 'd1', 'p', T0, 1, T0, 4, 1]],
  ]

  it('reports each hostile entry as invalid_remote_cell, merges the valid ones, in one call', () => {
    const doc = new Y.Doc()
    const port = fakePort('a')
    bindDoc(port, doc)
    const protoKey = rawGroup('constructor', T0, [['__proto__', 1, 1, 1, 1, T0, 1]])
    const peer = peerDoc('p', [valid, ...hostile.map(([, v]) => v), protoKey])
    expect(() => applyPeerUpdate(doc, Y.encodeStateAsUpdate(peer), 'peer')).not.toThrow()
    expect(port.anomalies.filter((a) => a.reason === 'invalid_remote_cell')).toHaveLength(hostile.length)
    expect(port.merges).toHaveLength(1)
    expect(port.cells.size).toBe(2)
    // prototype keys are plain keys: nothing leaks onto Object.prototype
    expect(({} as Record<string, unknown>).constructor).toBe(Object)
    for (const anomaly of port.anomalies) expect(anomaly.detail.length).toBeLessThan(300)
  })

  it('survives random bytes and truncated updates, and merges the full update afterwards', () => {
    const doc = new Y.Doc()
    const port = fakePort('a')
    bindDoc(port, doc)
    let seed = 7
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return seed / 2 ** 31
    }
    let rejected = 0
    for (let i = 0; i < 150; i++) {
      const bytes = Uint8Array.from({ length: 1 + Math.floor(random() * 200) }, () => Math.floor(random() * 256))
      if (!applyPeerUpdate(doc, bytes, 'peer')) rejected++
    }
    expect(rejected).toBeGreaterThan(0)
    const peer = peerDoc('p', [valid])
    const full = Y.encodeStateAsUpdate(peer)
    for (let cut = 1; cut < full.byteLength; cut += 3) applyPeerUpdate(doc, full.slice(0, cut), 'peer')
    applyPeerUpdate(doc, full, 'peer')
    const undecodable = port.anomalies.filter((a) => a.detail.startsWith('peer update of'))
    expect(undecodable.length).toBeGreaterThanOrEqual(rejected)
    expect(port.cells.size).toBe(1)
    // the binding still publishes local writes
    port.write([cellOf('d7', 'temp', T0, 1)])
    expect(doc.getArray(replicaArrayName('a')).length).toBe(1)
  }, 30_000)

  it('refuses a replica with another window configuration with a typed error', () => {
    const doc = new Y.Doc()
    const port = fakePort('a', 'tumbling:60000')
    const errors: Error[] = []
    const binding = bindDoc(port, doc, { onError: (e) => errors.push(e) })
    applyPeerUpdate(doc, Y.encodeStateAsUpdate(peerDoc('p', [valid], 'tumbling:30000')), 'peer')
    expect(port.cells.size).toBe(0)
    expect(errors).toHaveLength(1)
    expect(isConfigurationMismatchError(errors[0])).toBe(true)
    expect(errors[0]?.message).toContain('tumbling:30000')
    expect(binding.mismatches().map((e) => e.replicaId)).toEqual(['p'])
  })

  it('refuses a mismatched replica already in the doc at bind time', () => {
    const doc = new Y.Doc()
    applyPeerUpdate(doc, Y.encodeStateAsUpdate(peerDoc('p', [valid], 'session:5000')), 'peer')
    const errors: Error[] = []
    const port = fakePort('a')
    bindDoc(port, doc, { onError: (e) => errors.push(e) })
    expect(errors.filter(isConfigurationMismatchError)).toHaveLength(1)
    expect(port.cells.size).toBe(0)
  })

  it('starts its own log afresh when this replica comes back with another configuration', () => {
    const doc = new Y.Doc()
    const old = fakePort('a', 'tumbling:60000')
    const first = bindDoc(old, doc)
    old.write([cellOf('d1', 'temp', T0, 3)], [clockOf('d1', 'a', T0, 3)])
    first.destroy()
    const renewed = fakePort('a', 'tumbling:30000')
    bindDoc(renewed, doc)
    expect(renewed.cells.size).toBe(0)
    expect(doc.getArray(replicaArrayName('a')).length).toBe(0)
  })

  it('reports two remote replicas writing one source once', () => {
    const doc = new Y.Doc()
    const port = fakePort('a')
    bindDoc(port, doc)
    applyPeerUpdate(doc, Y.encodeStateAsUpdate(peerDoc('p', [['k', 'd1', 'p', T0, 1, T0, 1, 1]])), 'peer')
    applyPeerUpdate(doc, Y.encodeStateAsUpdate(peerDoc('q', [['k', 'd1', 'q', T0, 2, T0, 1, 2]])), 'peer')
    applyPeerUpdate(doc, Y.encodeStateAsUpdate(peerDoc('q', [['k', 'd1', 'q', T0, 3, T0, 1, 3]])), 'peer')
    expect(port.anomalies.filter((a) => a.reason === 'source_conflict')).toHaveLength(1)
    // both clocks reach the engine, which resolves them with the same total order everywhere
    expect(port.clocks.get('d1')?.writer).toBe('q')
  })

  it('reports an engine that throws in mergeRemote through onError and keeps working', () => {
    const doc = new Y.Doc()
    const port = fakePort('a')
    const errors: Error[] = []
    bindDoc(port, doc, { onError: (e) => errors.push(e) })
    port.failMerges = true
    expect(() => applyPeerUpdate(doc, Y.encodeStateAsUpdate(peerDoc('p', [valid])), 'peer')).not.toThrow()
    expect(errors.map((e) => e.message)).toEqual(['engine bug'])
    port.failMerges = false
    applyPeerUpdate(doc, Y.encodeStateAsUpdate(peerDoc('q', [rawGroup('d2', T0, [['temp', 1, 1, 1, 1, T0, 1]])])), 'peer')
    expect(port.cells.size).toBe(1)
  })

  it('writes its meta entry back when a peer overwrites it', () => {
    const doc = new Y.Doc()
    const port = fakePort('a')
    bindDoc(port, doc)
    const evil = new Y.Doc()
    Y.applyUpdate(evil, Y.encodeStateAsUpdate(doc))
    evil.getMap(META_NAME).set('a', [DOC_SCHEMA, 'something else'])
    applyPeerUpdate(doc, Y.encodeStateAsUpdate(evil, Y.encodeStateVector(doc)), 'peer')
    expect(doc.getMap(META_NAME).get('a')).toEqual([DOC_SCHEMA, 'tumbling:60000'])
  })
})
