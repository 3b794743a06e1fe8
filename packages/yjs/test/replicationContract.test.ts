/**
 * Sentences of docs/replication.md and this package's README that no other test pinned, each
 * checked on real engines and real Y.Docs (the sentence quoted in the test's name or comment).
 */
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { createEngine, everyElement, manual, quantiles, type ReplicaState, type StreamEvent, sliding, type TidemarkEngine, tumbling, type WindowChange } from '@tidemark/engine'
import { applyPeerUpdate } from '../src/binding/applyPeerUpdate.ts'
import { bindDoc } from '../src/binding/bindDoc.ts'
import { isConfigurationMismatchError } from '../src/schema/configurationMismatchError.ts'
import { DOC_SCHEMA, META_NAME, replicaArrayName } from '../src/schema/docEntry.ts'
import { BroadcastChannelProvider, type OpenTabChannel } from '../src/transport/broadcastChannelProvider.ts'
import { syncStatusTracker } from '../src/transport/syncStatusTracker.ts'
import { rawGroup, withField } from './fakePort.ts'

const W = 'tumbling:60000'
const T0 = 1_700_000_040_000 - (1_700_000_040_000 % 60_000)

function events(source: string, from: number, n: number, at = T0): StreamEvent[] {
  return Array.from({ length: n }, (_, i) => ({ id: `${source}-${from + i}`, source, seq: from + i, ts: at + (from + i) * 1000, key: 'temp', value: from + i }))
}

/** An update in which replica `id` (configured like `configuration`) pushed `entries` raw into its log. */
function peerUpdate(id: string, configuration: string, entries: unknown[]): Uint8Array {
  const doc = new Y.Doc()
  doc.transact(() => {
    doc.getMap(META_NAME).set(id, [DOC_SCHEMA, configuration])
    doc.getArray(replicaArrayName(id)).push(entries)
  })
  return Y.encodeStateAsUpdate(doc)
}

/** A writer engine bound to a doc of its own: what it ingests is in `doc`. */
function writer(replicaId: string, options: Parameters<typeof createEngine>[0] = { windows: tumbling(60_000), watermark: manual() }) {
  const doc = new Y.Doc()
  const engine = createEngine({ ...options, replicaId })
  bindDoc(engine, doc)
  return { engine, doc }
}

describe('bindDoc options and binding lifetime (README, bindDoc)', () => {
  it('onError: a peer of another configuration is reported there and kept in stats().replicationError', () => {
    const errors: Error[] = []
    const other = writer('other', { windows: tumbling(30_000), watermark: manual() })
    other.engine.ingest(events('s1', 1, 1))
    const mine = new Y.Doc()
    const reader = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'reader' })
    bindDoc(reader, mine, { onError: (error) => errors.push(error) })
    expect(applyPeerUpdate(mine, Y.encodeStateAsUpdate(other.doc), 'peer')).toBe(true)
    expect(errors).toHaveLength(1)
    expect(isConfigurationMismatchError(errors[0])).toBe(true)
    expect(reader.stats().replicationError).toBe((errors[0] as Error).message)
    expect(reader.results()).toEqual([])
  })

  it('destroy(): the doc keeps its content; the engine writes nothing more there and merges nothing more from it', () => {
    const doc = new Y.Doc()
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'me' })
    const binding = bindDoc(engine, doc)
    engine.ingest(events('d1', 1, 2))
    const before = Y.encodeStateAsUpdate(doc)
    binding.destroy()
    expect(Y.encodeStateAsUpdate(doc)).toEqual(before)
    engine.ingest(events('d1', 3, 1))
    expect(Y.encodeStateAsUpdate(doc)).toEqual(before)
    const w = writer('w2')
    w.engine.ingest(events('w1', 1, 1))
    applyPeerUpdate(doc, Y.encodeStateAsUpdate(w.doc), 'peer')
    expect(engine.results().map((r) => r.count)).toEqual([3])
  })

  it('closing the engine destroys its binding: a peer update that lands later is neither merged nor reported', async () => {
    const doc = new Y.Doc()
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'me' })
    const errors: Error[] = []
    bindDoc(engine, doc, { onError: (error) => errors.push(error) })
    await engine.close()
    const w = writer('w')
    w.engine.ingest(events('w1', 1, 1))
    expect(applyPeerUpdate(doc, Y.encodeStateAsUpdate(w.doc), 'peer')).toBe(true)
    expect(errors).toEqual([])
  })

  it('measureEvery: the encoded doc is measured for stats().docBytes as found at bind, then at most this often, on the binding\'s now', () => {
    let now = T0
    const doc = new Y.Doc()
    // A peer's state already in the doc (a persisted doc loaded): measured before first contact merges it.
    const peer = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'peer', now: () => now })
    bindDoc(peer, doc, { now: () => now })
    peer.ingest(events('p1', 1, 3))
    const found = Y.encodeStateAsUpdate(doc).byteLength
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'me', now: () => now })
    bindDoc(engine, doc, { now: () => now, measureEvery: 5000 })
    const atBind = engine.stats().docBytes
    expect(atBind).toBe(found)
    expect(engine.stats().cells).toBe(peer.stats().cells)
    now = T0 + 4999
    engine.ingest(events('d1', 1, 1))
    expect(engine.stats().docBytes).toBe(atBind)
    now = T0 + 5000
    engine.ingest(events('d1', 2, 1))
    expect(engine.stats().docBytes).toBe(Y.encodeStateAsUpdate(doc).byteLength)
    expect(engine.stats().docBytes).toBeGreaterThan(atBind)
  })
})

describe('invalid peer state (replication.md, Merging peers\' state)', () => {
  it('counts refusals, not distinct cells: a binding that reads the document anew refuses and counts its invalid entries once more', () => {
    const doc = new Y.Doc()
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'me' })
    const hostile = withField(rawGroup('m1', T0, [['temp', 2, 10, 4, 6, T0 + 10, 1]], W), 1, 60_000)
    applyPeerUpdate(doc, peerUpdate('mallory', engine.replica.configuration, [hostile]), 'peer')
    const first = bindDoc(engine, doc)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(1)
    first.destroy()
    bindDoc(engine, doc)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(2)
    expect(engine.stats().remoteAnomalies).toHaveLength(2)
  })
})

describe("a peer's cell, by the state of the window it lands in (replication.md, the merge table)", () => {
  /** A reader that fired windows up to `watermark`, and the changes it announces from then on. */
  function readerAt(watermark: number, options: { windows: ReturnType<typeof tumbling> | ReturnType<typeof sliding>; allowedLateness: number }) {
    const doc = new Y.Doc()
    const engine = createEngine({ ...options, watermark: manual(), replicaId: 'reader', retention: Number.POSITIVE_INFINITY }) as TidemarkEngine
    bindDoc(engine, doc)
    engine.ingest([{ id: 'r1', source: 'local', seq: 1, ts: 0, key: 'temp', value: 1 }])
    engine.advanceWatermark(watermark)
    const changes: WindowChange[] = []
    engine.subscribe((batch) => changes.push(...batch))
    return { engine, doc, changes }
  }

  it('a window this replica never had, already past the firing frontier, is created fired: a correction with revision 1 and no previous', () => {
    const reader = readerAt(1_000, { windows: tumbling(100), allowedLateness: 10_000 })
    const peer = writer('peer', { windows: tumbling(100), watermark: manual(), allowedLateness: 10_000 })
    peer.engine.ingest([{ id: 'p1', source: 'p', seq: 1, ts: 250, key: 'temp', value: 7 }])
    applyPeerUpdate(reader.doc, Y.encodeStateAsUpdate(peer.doc), 'peer')
    expect(reader.changes).toHaveLength(1)
    const [change] = reader.changes as [WindowChange]
    expect(change).toMatchObject({ type: 'correction', result: { start: 200, count: 1, sum: 7, revision: 1, final: false } })
    expect(change.previous).toBeUndefined()
    expect(reader.engine.stats().finalityViolations).toBe(0)
    // Its history has no on-time pane (the getting-started dashboard looks for one rather than taking history[0]).
    expect(reader.engine.history('tumbling:100', 'temp', 200).map((r) => [r.status, r.revision])).toEqual([['corrected', 1]])
  })

  it('a window fired here, within lateness: a late pane, a correction with previous', () => {
    const reader = readerAt(1_000, { windows: tumbling(100), allowedLateness: 10_000 })
    const peer = writer('peer', { windows: tumbling(100), watermark: manual(), allowedLateness: 10_000 })
    peer.engine.ingest([{ id: 'p1', source: 'p', seq: 1, ts: 50, key: 'temp', value: 7 }])
    applyPeerUpdate(reader.doc, Y.encodeStateAsUpdate(peer.doc), 'peer')
    expect(reader.changes).toHaveLength(1)
    expect(reader.changes[0]).toMatchObject({ type: 'correction', result: { start: 0, count: 2, sum: 8, revision: 1 }, previous: { count: 1, sum: 1, revision: 0 } })
  })

  it('final windows: merged anyway, counted in finalityViolations once per cell and window; the same cell again is stale and counts nothing', () => {
    // sliding(20, 5): a slice is held by 4 windows, all final here once W passes end + lateness of the last.
    const reader = readerAt(1_000, { windows: sliding(20, 5), allowedLateness: 0 })
    const peer = writer('peer', { windows: sliding(20, 5), watermark: manual(), allowedLateness: 0 })
    peer.engine.ingest([{ id: 'p1', source: 'p', seq: 1, ts: 42, key: 'temp', value: 7 }])
    const update = Y.encodeStateAsUpdate(peer.doc)
    applyPeerUpdate(reader.doc, update, 'peer')
    expect(reader.engine.stats().finalityViolations).toBe(4)
    const corrections = reader.changes.filter((c) => c.type === 'correction').map((c) => [c.result.start, c.result.count, c.result.final])
    expect(corrections.sort((x, y) => (x[0] as number) - (y[0] as number))).toEqual([
      [25, 1, true],
      [30, 1, true],
      [35, 1, true],
      [40, 1, true],
    ])
    // The same state again (a second binding reading it, a relayed copy): stale, nothing changes.
    const report = reader.engine.replica.mergeRemote(peer.engine.replica.exportState().cells, peer.engine.replica.exportState().clocks)
    expect(report).toMatchObject({ applied: 0, stale: 1, finalityViolations: 0 })
    expect(reader.engine.stats().finalityViolations).toBe(4)
  })
})

describe('expired and batched (replication.md, the merge table; README, Remote changes)', () => {
  it('a cell whose windows are all past end + allowedLateness + retention here is ignored as expired: counted, nothing shown changes', () => {
    const options = { windows: tumbling(100), watermark: manual(), allowedLateness: 0, retention: 0 }
    const reader = createEngine({ ...options, replicaId: 'reader' })
    reader.ingest([{ id: 'r1', source: 'local', seq: 1, ts: 500, key: 'temp', value: 1 }])
    reader.advanceWatermark(1_000)
    const shown = reader.results()
    const changes: WindowChange[] = []
    reader.subscribe((batch) => changes.push(...batch))
    const peer = createEngine({ ...options, replicaId: 'peer' })
    peer.ingest([{ id: 'p1', source: 'p', seq: 1, ts: 50, key: 'temp', value: 7 }])
    const { cells, clocks } = peer.replica.exportState()
    const report = reader.replica.mergeRemote(cells, clocks)
    expect(report).toMatchObject({ applied: 0, expired: 1, finalityViolations: 0 })
    expect(changes).toEqual([])
    expect(reader.results()).toEqual(shown)
    expect(reader.stats().finalityViolations).toBe(0)
  })

  it('one remote update carrying several writers and windows is one merge: one notification with every change', () => {
    const doc = new Y.Doc()
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'reader' })
    bindDoc(engine, doc)
    const notifications: number[] = []
    engine.subscribe((batch) => notifications.push(batch.length))
    const updates = ['wa', 'wb'].map((id, i) => {
      const w = writer(id)
      w.engine.ingest(events(`s${i}`, 1, 1, T0))
      w.engine.ingest(events(`s${i}`, 2, 1, T0 + 60_000))
      return Y.encodeStateAsUpdate(w.doc)
    })
    applyPeerUpdate(doc, Y.mergeUpdates(updates), 'peer')
    expect(engine.results()).toHaveLength(2)
    expect(notifications).toEqual([2])
  })
})

describe('BroadcastChannelProvider options (README)', () => {
  function tabs() {
    const endpoints = new Set<(frame: Uint8Array) => void>()
    const queue: { from: (frame: Uint8Array) => void; frame: Uint8Array }[] = []
    const open: OpenTabChannel = (_name, receive) => {
      endpoints.add(receive)
      return { post: (frame) => queue.push({ from: receive, frame }), close: () => endpoints.delete(receive) }
    }
    const flush = (): void => {
      while (queue.length > 0) {
        const { from, frame } = queue.shift() as (typeof queue)[number]
        for (const receive of endpoints) if (receive !== from) receive(frame)
      }
    }
    return { open, flush }
  }

  it('connect: false waits for connect(): nothing is sent or synced before it', () => {
    const channel = tabs()
    const [a, b] = [new Y.Doc(), new Y.Doc()]
    a.getArray('x').push([1])
    const pa = new BroadcastChannelProvider(a, 'fleet', { channel: channel.open, connect: false })
    const pb = new BroadcastChannelProvider(b, 'fleet', { channel: channel.open })
    channel.flush()
    expect(pa.synced || pb.synced).toBe(false)
    expect(b.getArray('x').length).toBe(0)
    pa.connect()
    channel.flush()
    expect(pa.synced && pb.synced).toBe(true)
    expect(b.getArray('x').toArray()).toEqual([1])
    pa.destroy()
    pb.destroy()
  })

  it('trackStatus: false counts the provider in no sync status: the doc stays local while it syncs', () => {
    const channel = tabs()
    const [a, b] = [new Y.Doc(), new Y.Doc()]
    const pa = new BroadcastChannelProvider(a, 'fleet', { channel: channel.open, trackStatus: false })
    const pb = new BroadcastChannelProvider(b, 'fleet', { channel: channel.open })
    channel.flush()
    expect(pa.synced).toBe(true)
    expect(syncStatusTracker(a).status().state).toBe('local')
    expect(syncStatusTracker(b).status().state).toBe('connected')
    pa.destroy()
    pb.destroy()
  })
})

describe('what converges (replication.md, Cells)', () => {
  it('replicas that hold the same cells show bit-identical values whatever order they arrived in: sources are combined by name', () => {
    // 0.1 + 0.2 + 0.3 is 0.6000000000000001 added in this order, 0.6 in the reverse one.
    const writers = [
      ['wa', 'a', 0.1],
      ['wb', 'b', 0.2],
      ['wc', 'c', 0.3],
    ].map(([id, source, value]) => {
      const w = writer(id as string)
      w.engine.ingest([{ id: `${source}-1`, source: source as string, seq: 1, ts: T0 + 1000, key: 'temp', value: value as number }])
      return Y.encodeStateAsUpdate(w.doc)
    })
    const sums = [writers, [...writers].reverse(), [Y.mergeUpdates([...writers].reverse())]].map((updates, i) => {
      const doc = new Y.Doc()
      const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: `reader${i}` })
      bindDoc(engine, doc)
      for (const update of updates) applyPeerUpdate(doc, update, 'peer')
      return engine.results().map((r) => [r.count, r.sum])
    })
    expect(sums).toEqual([
      [[3, 0.1 + 0.2 + 0.3]],
      [[3, 0.1 + 0.2 + 0.3]],
      [[3, 0.1 + 0.2 + 0.3]],
    ])
  })
})

describe('bindDoc origin (README)', () => {
  it("every transaction the binding makes carries the origin given, so a provider can tell this replica's writes apart", () => {
    const doc = new Y.Doc()
    const origins: unknown[] = []
    doc.on('update', (_update: Uint8Array, origin: unknown) => origins.push(origin))
    const origin = { tab: 'mine' }
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'me' })
    bindDoc(engine, doc, { origin })
    engine.ingest(events('d1', 1, 2))
    engine.ingest(events('d1', 3, 1))
    expect(origins.length).toBeGreaterThanOrEqual(3)
    expect(origins.every((o) => o === origin)).toBe(true)
  })
})

describe('local choices (replication.md, Merging peers\' state and What converges)', () => {
  it('replicas that differ in triggers, accumulation, retention, maxFutureSkew and quantiles\' at merge each other and hold the same state', () => {
    const shared = { windows: tumbling(60_000), watermark: manual(), allowedLateness: 60_000 }
    const errors: Error[] = []
    const replica = (replicaId: string, options: Parameters<typeof createEngine>[0]) => {
      const doc = new Y.Doc()
      const engine = createEngine({ ...options, replicaId })
      bindDoc(engine, doc, { onError: (error) => errors.push(error) })
      return { engine, doc }
    }
    const a = replica('a', { ...shared, trigger: { early: everyElement() }, retention: 0, maxFutureSkew: 5_000, aggregates: { p: quantiles({ at: [0.5] }) } })
    const b = replica('b', { ...shared, accumulation: 'discarding', aggregates: { p: quantiles({ at: [0.9, 0.99] }) } })
    const single = createEngine({ ...shared, replicaId: 'single', aggregates: { p: quantiles({ at: [0.5] }) } })
    // Each replica's updates reach the other as a provider would hand them over, after a first sync.
    applyPeerUpdate(b.doc, Y.encodeStateAsUpdate(a.doc), 'peer')
    applyPeerUpdate(a.doc, Y.encodeStateAsUpdate(b.doc), 'peer')
    a.doc.on('update', (update: Uint8Array, origin: unknown) => origin !== 'peer' && applyPeerUpdate(b.doc, update, 'peer'))
    b.doc.on('update', (update: Uint8Array, origin: unknown) => origin !== 'peer' && applyPeerUpdate(a.doc, update, 'peer'))
    for (const [w, source] of [
      [a, 'sa'],
      [b, 'sb'],
    ] as const) {
      w.engine.ingest(events(source, 1, 5))
      single.ingest(events(source, 1, 5))
    }
    const bPanes: [string, number, number][] = []
    b.engine.subscribe((changes) => {
      for (const change of changes) bPanes.push([change.type, change.result.count, change.result.sum])
    })
    b.engine.advanceWatermark(T0 + 60_000)
    a.engine.ingest(events('sa', 6, 3))
    single.ingest(events('sa', 6, 3))
    expect(errors).toEqual([])
    for (const w of [a, b]) expect(w.engine.stats().anomalies).toMatchObject({ invalid_remote_cell: 0, source_conflict: 0 })
    const state = (engine: { readonly replica: { exportState(): ReplicaState } }) => {
      const { cells, clocks } = engine.replica.exportState()
      return {
        cells: cells.map((c) => JSON.stringify([c.address, { ...c.cell }, c.aggregates?.map((state) => [...state])])).sort(),
        clocks: clocks.map((c) => JSON.stringify(c)).sort(),
      }
    }
    // Each cell carries its quantile sketch: the states, not only the numbers, are the same on both.
    expect(a.engine.replica.exportState().cells.map((c) => c.aggregates?.length)).toEqual([1, 1])
    expect(state(b.engine)).toEqual(state(a.engine))
    const values = (engine: { results(): readonly { count: number; sum: number }[] }) => engine.results().map((r) => [r.count, r.sum])
    expect(values(a.engine)).toEqual(values(single))
    // A discarding replica's results() show its last pane: after its on-time pane (nothing since its early panes),
    // the pane a's later cell caused, which carries the whole window (semantics.md, Accumulation).
    expect(bPanes).toEqual([
      ['on_time', 0, 0],
      ['correction', 13, 51],
    ])
    expect(values(b.engine)).toEqual([[13, 51]])
  })
})

describe('the lattice laws (replication.md): two cells of one version', () => {
  it('come from a conflict or from a replica whose versions restarted; every replica keeps the same one whatever the order, and counts no conflict', () => {
    // Session 1 of replica a, then session 2 started without its state: both write d1's cell at version 2, with other readings.
    const first = writer('a')
    first.engine.ingest(events('d1', 1, 2))
    const restarted = writer('a')
    restarted.engine.ingest(events('d1', 3, 2))
    const sessions = [Y.encodeStateAsUpdate(first.doc), Y.encodeStateAsUpdate(restarted.doc)]
    const kept = [sessions, [...sessions].reverse()].map((updates, i) => {
      const doc = new Y.Doc()
      const reader = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: `reader${i}` })
      bindDoc(reader, doc)
      for (const update of updates) applyPeerUpdate(doc, update, 'peer')
      expect(reader.stats().anomalies.source_conflict).toBe(0)
      const cell = reader.replica.exportState().cells.find((c) => c.address.source === 'd1')?.cell
      return { version: cell?.version, count: cell?.count, sum: cell?.sum }
    })
    expect(kept[0]).toEqual({ version: 2, count: 2, sum: expect.any(Number) as number })
    expect(kept[1]).toEqual(kept[0])
  })
})
