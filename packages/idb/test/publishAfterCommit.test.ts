/**
 * Nothing reaches peers before it is durable here (found by the replica fuzz campaign: a
 * device published a batch through Yjs before its write-ahead log committed it, so a crash
 * in between left peers holding state the device itself had lost). `openEngine` now holds
 * each write for peers until the op that made it is durable: its record committed, or a
 * checkpoint covering it did.
 */
import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import * as Y from 'yjs'
import {
  createEngine,
  type Engine,
  type EngineOptions,
  manual,
  type StreamEvent,
  tumbling,
  type WalOp,
} from '@tidemark/engine'
import { indexedDbPersistence, openEngine, type Persistence, recoveryReport } from '../src/index.ts'
import { memoryPersistence } from '../src/memory.ts'
import { ManualTimers, reading } from '@tidemark/engine/testing'
import { DurableFrontier } from '../src/wal/durableFrontier.ts'
import { bindDoc } from '@tidemark/yjs'
import { checkpointWrites, fillDisk } from './fakeStorage.ts'

afterEach(() => {
  vi.restoreAllMocks()
})

const config: EngineOptions = { windows: tumbling(10), watermark: manual(), now: () => 1_000 }

function batch(from: number, count: number, value = 1): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => reading('device', from + i, from + i, value))
}

function count(engine: Engine): number {
  return engine.results().reduce((sum, r) => sum + r.count, 0)
}

/** Two docs that exchange every update at once, as a provider on a fast network would. */
function link(a: Y.Doc, b: Y.Doc): void {
  Y.applyUpdate(a, Y.encodeStateAsUpdate(b), 'wire')
  Y.applyUpdate(b, Y.encodeStateAsUpdate(a), 'wire')
  a.on('update', (update: Uint8Array, origin: unknown) => origin !== 'wire' && Y.applyUpdate(b, update, 'wire'))
  b.on('update', (update: Uint8Array, origin: unknown) => origin !== 'wire' && Y.applyUpdate(a, update, 'wire'))
}

/**
 * A persistence whose appends commit only when the test says so, and are lost by `crash()`
 * (the tab died before IndexedDB committed them). Everything else goes to `inner`.
 */
class HeldCommits implements Persistence {
  readonly inner: Persistence
  #held: (() => void)[] = []
  #last = 0

  constructor(inner: Persistence) {
    this.inner = inner
  }

  get lastLsn(): number {
    return Math.max(this.#last, this.inner.lastLsn)
  }

  async open() {
    const recovered = await this.inner.open()
    this.#last = this.inner.lastLsn
    return recovered
  }

  append(op: WalOp): Promise<number> {
    this.#last = this.lastLsn + 1
    const copy = structuredClone(op)
    return new Promise((resolve, reject) => {
      this.#held.push(() => {
        this.inner.append(copy).then(resolve, reject)
      })
    })
  }

  commit(): void {
    for (const write of this.#held.splice(0)) write()
  }

  crash(): void {
    this.#held = []
  }

  checkpoint = (checkpoint: Parameters<Persistence['checkpoint']>[0]) => this.inner.checkpoint(checkpoint)
  archive = (query?: Parameters<Persistence['archive']>[0]) => this.inner.archive(query)
  putMeta = (key: string, value: string) => this.inner.putMeta(key, value)
  stats = () => this.inner.stats()
  close = () => this.inner.close()
}

/**
 * A device whose first batch (2 readings) committed and whose second (3) waits for IndexedDB,
 * with no doc bound yet, and a peer on a doc linked to the device's future doc.
 */
async function deviceWithPendingBatch() {
  const inner = memoryPersistence({ checkpointEvery: { events: 1e9, ms: 1e12 } })
  const held = new HeldCommits(inner)
  const device = await openEngine({ ...config, persistence: held, replicaId: 'device-a', checkpointOnClose: false })
  const first = device.ingest(batch(1, 2))
  held.commit()
  await first.durable
  device.ingest(batch(3, 3))
  const deviceDoc = new Y.Doc()
  const peerDoc = new Y.Doc()
  link(deviceDoc, peerDoc)
  const peer = createEngine({ ...config, replicaId: 'peer-b' })
  bindDoc(peer, peerDoc)
  return { inner, held, device, deviceDoc, peerDoc, peer }
}

describe('openEngine publishes to peers only what is durable', () => {
  it('a crash between apply and commit leaves peers without the batch, and the replicas agree afterwards', async () => {
    const inner = memoryPersistence({ checkpointEvery: { events: 1e9, ms: 1e12 } })
    const held = new HeldCommits(inner)
    const deviceDoc = new Y.Doc()
    const peerDoc = new Y.Doc()
    link(deviceDoc, peerDoc)
    const device = await openEngine({ ...config, persistence: held, replicaId: 'device-a', checkpointOnClose: false })
    bindDoc(device, deviceDoc)
    const replicationErrors: string[] = []
    const peer = createEngine({ ...config, replicaId: 'peer-b' })
    bindDoc(peer, peerDoc, { onError: (error) => replicationErrors.push(error.message) })

    const first = device.ingest(batch(1, 2))
    held.commit()
    await first.durable
    await Promise.resolve()
    expect(count(peer)).toBe(2)

    // Applied here (the device shows it), not committed yet: peers must not see it.
    device.ingest(batch(3, 3))
    expect(count(device)).toBe(5)
    await new Promise((resolve) => setImmediate(resolve))
    expect(count(peer)).toBe(2)

    // The tab dies before IndexedDB commits; the device comes back from its log and reconnects.
    held.crash()
    await inner.close()
    const reloadedDoc = new Y.Doc()
    link(reloadedDoc, peerDoc)
    const reloaded = await openEngine({ ...config, persistence: inner, replicaId: 'device-a' })
    bindDoc(reloaded, reloadedDoc)
    expect(count(reloaded)).toBe(2)
    expect(peer.results()).toEqual(reloaded.results())
    // Its producer goes on from what was acknowledged; both replicas show the same values.
    await reloaded.ingest(batch(3, 2, 7)).durable
    await new Promise((resolve) => setImmediate(resolve))
    expect(count(reloaded)).toBe(4)
    expect(peer.results()).toEqual(reloaded.results())
    expect(replicationErrors).toEqual([])
  })

  it('releases writes in order, each once its own record committed', async () => {
    const held = new HeldCommits(memoryPersistence())
    const deviceDoc = new Y.Doc()
    const peerDoc = new Y.Doc()
    link(deviceDoc, peerDoc)
    const device = await openEngine({ ...config, persistence: held, replicaId: 'device-a' })
    bindDoc(device, deviceDoc)
    const peer = createEngine({ ...config, replicaId: 'peer-b' })
    bindDoc(peer, peerDoc)
    const seen: number[] = []
    peer.subscribe(() => seen.push(count(peer)))
    device.ingest(batch(1, 1))
    device.ingest(batch(2, 2))
    device.ingest(batch(4, 3))
    held.commit()
    await new Promise((resolve) => setImmediate(resolve))
    expect(seen).toEqual([1, 3, 6])
  })

  it('a doc bound after a batch that is not durable yet publishes it only once it commits', async () => {
    const { held, device, deviceDoc, peer } = await deviceWithPendingBatch()
    // The app connects its doc while the second batch waits for IndexedDB.
    const binding = bindDoc(device, deviceDoc)
    expect(count(device)).toBe(5)
    expect(count(peer)).toBe(0)
    // A batch after binding waits behind the first publish.
    device.ingest(batch(6, 1))
    held.commit()
    await new Promise((resolve) => setImmediate(resolve))
    expect(count(peer)).toBe(6)
    // Panes are each replica's own emission (the peer merged the batches in other groupings): the rest is the same.
    const shown = (engine: typeof peer) => engine.results().map(({ pane: _pane, ...rest }) => rest)
    expect(shown(peer)).toEqual(shown(device))
    binding.destroy()
  })

  it('a device reopened from its log publishes what it recovered at once, with nothing new to log', async () => {
    const persistence = memoryPersistence({ checkpointEvery: { events: 1e9, ms: 1e12 } })
    const device = await openEngine({ ...config, persistence, replicaId: 'device-a', checkpointOnClose: false })
    await device.ingest(batch(1, 3)).durable
    await device.close()
    // Reopened on a fresh doc (its earlier doc is gone): a replay of 1 record, no new op.
    const deviceDoc = new Y.Doc()
    const peerDoc = new Y.Doc()
    link(deviceDoc, peerDoc)
    const peer = createEngine({ ...config, replicaId: 'peer-b' })
    bindDoc(peer, peerDoc)
    const reopened = await openEngine({ ...config, persistence, replicaId: 'device-a' })
    bindDoc(reopened, deviceDoc)
    expect(recoveryReport(reopened)?.replayedRecords).toBe(1)
    await new Promise((resolve) => setImmediate(resolve))
    expect(count(peer)).toBe(3)
    expect(peer.results()).toEqual(reopened.results())
  })

  it('a doc bound before a crash never shows the batch the crash lost', async () => {
    const { inner, held, device, deviceDoc, peerDoc, peer } = await deviceWithPendingBatch()
    bindDoc(device, deviceDoc)
    // The tab dies before IndexedDB commits the second batch; its producer re-sends it with other values.
    held.crash()
    await new Promise((resolve) => setImmediate(resolve))
    expect(count(peer)).toBe(0)
    await inner.close()
    const reloadedDoc = new Y.Doc()
    link(reloadedDoc, peerDoc)
    const reloaded = await openEngine({ ...config, persistence: inner, replicaId: 'device-a' })
    bindDoc(reloaded, reloadedDoc)
    await reloaded.ingest(batch(3, 3, 7)).durable
    await new Promise((resolve) => setImmediate(resolve))
    expect(count(reloaded)).toBe(5)
    expect(reloaded.results().reduce((sum, r) => sum + r.sum, 0)).toBe(2 + 21)
    expect(peer.results()).toEqual(reloaded.results())
  })

  it('holds the write of a watermark move (cells that left live state) until the advance is durable', async () => {
    const held = new HeldCommits(memoryPersistence())
    const device = await openEngine({ ...config, retention: 10, persistence: held, replicaId: 'device-a' })
    const writes: { cells: number; expired: number }[] = []
    device.replica.onLocalWrite((write) => writes.push({ cells: write.cells.length, expired: write.expired.length }))
    const first = device.ingest(batch(1, 3))
    held.commit()
    await first.durable
    expect(writes).toEqual([{ cells: 1, expired: 0 }])
    // The watermark passes the window's end plus retention: its cell leaves live state, and may leave the document.
    device.advanceWatermark(1_000)
    expect(device.results()).toEqual([])
    expect(writes).toHaveLength(1)
    held.commit()
    await new Promise((resolve) => setImmediate(resolve))
    expect(writes).toEqual([
      { cells: 1, expired: 0 },
      { cells: 0, expired: 1 },
    ])
  })

  it('holds writes behind a failed write until the retried checkpoint repairs the log', async () => {
    const timers = new ManualTimers()
    const deviceDoc = new Y.Doc()
    const peerDoc = new Y.Doc()
    link(deviceDoc, peerDoc)
    const persistence = indexedDbPersistence({ name: 'held-behind-hole', indexedDB: new IDBFactory() })
    const checkpoints = checkpointWrites(persistence)
    const device = await openEngine({
      ...config,
      persistence,
      replicaId: 'device-a',
      writeRetry: { firstMs: 1_000, maxMs: 1_000 },
      timers,
    })
    bindDoc(device, deviceDoc)
    const peer = createEngine({ ...config, replicaId: 'peer-b' })
    bindDoc(peer, peerDoc)
    await device.ingest(batch(1, 2)).durable
    expect(count(peer)).toBe(2)
    const free = fillDisk()
    await expect(device.ingest(batch(3, 2)).durable).rejects.toThrow(/quota/)
    // Applied here, in no committed record: peers wait.
    expect(count(device)).toBe(4)
    expect(count(peer)).toBe(2)
    free()
    timers.advance(1_000)
    expect(checkpoints).toHaveLength(1)
    // Still held while the checkpoint that covers them is being written.
    expect(count(peer)).toBe(2)
    await checkpoints[0]
    expect(count(peer)).toBe(4)
    expect(peer.results()).toEqual(device.results())
  })
})

describe('DurableFrontier', () => {
  it('releases in lsn order, never past a record that has not committed', () => {
    const released: string[] = []
    const frontier = new DurableFrontier<string>((item) => released.push(item))
    for (const lsn of [1, 2, 3]) frontier.recorded(lsn)
    frontier.hold(1, 'a')
    frontier.hold(2, 'b')
    frontier.hold(3, 'c')
    frontier.committed(2)
    expect(released).toEqual([])
    frontier.committed(1)
    expect(released).toEqual(['a', 'b'])
    expect(frontier.lsn).toBe(2)
    frontier.committed(3)
    expect(released).toEqual(['a', 'b', 'c'])
    frontier.hold(3, 'd')
    expect(released).toEqual(['a', 'b', 'c', 'd'])
  })

  it('starts durable up to the lsn the log was opened at', () => {
    const released: string[] = []
    const frontier = new DurableFrontier<string>((item) => released.push(item), 5)
    expect(frontier.lsn).toBe(5)
    frontier.hold(5, 'recovered')
    expect(released).toEqual(['recovered'])
    frontier.recorded(6)
    frontier.hold(6, 'new')
    expect(released).toEqual(['recovered'])
    frontier.committed(6)
    expect(released).toEqual(['recovered', 'new'])
  })

  it('lets a checkpoint cover a record that failed, and ignores commits it already covered', () => {
    const released: number[] = []
    const frontier = new DurableFrontier<number>((item) => released.push(item))
    for (const lsn of [1, 2, 3, 4]) {
      frontier.recorded(lsn)
      frontier.hold(lsn, lsn)
    }
    frontier.committed(1)
    // 2 failed (a hole); 3 committed; the checkpoint at 3 covers the hole.
    frontier.committed(3)
    expect(released).toEqual([1])
    frontier.checkpointed(3)
    expect(released).toEqual([1, 2, 3])
    frontier.committed(2)
    expect(frontier.lsn).toBe(3)
    frontier.committed(4)
    expect(released).toEqual([1, 2, 3, 4])
    expect(frontier.waiting).toBe(0)
  })
})
