/**
 * A damaged record makes recovery replay fewer writes of a source than the engine made, so its
 * source versions come back lower than those its peers already hold (its writes went out once
 * durable), and a next write at one of them would tie with a peer's cell of other content. So
 * recovery raises a version floor (docs/durability.md, Corruption): later writes outrank every
 * earlier copy, recovered cells keep their versions (a peer's newer copy still comes back), the
 * floor is kept beside the log and raised again where replay reaches it, and a recovery that
 * lost nothing raises none.
 */
import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import * as Y from 'yjs'
import { bindDoc } from '@tidemark/yjs'
import { createEngine, type Engine, manual, tumbling } from '@tidemark/engine'
import { reading, whenDurable } from '@tidemark/engine/testing'
import { indexedDbPersistence, isQuotaError, openEngine, type OpenEngineOptions, recoveryReport } from '../src/index.ts'
import { damage, fillDisk, raw } from './fakeStorage.ts'

afterEach(() => {
  vi.restoreAllMocks()
})

const options = { windows: tumbling(10), watermark: manual(), allowedLateness: 0, now: () => 1_000 }

function sync(a: Y.Doc, b: Y.Doc): void {
  Y.applyUpdate(b, Y.encodeStateAsUpdate(a, Y.encodeStateVector(b)), 'peer')
  Y.applyUpdate(a, Y.encodeStateAsUpdate(b, Y.encodeStateVector(a)), 'peer')
}

const shown = (engine: Engine) => engine.results().map((r) => ({ count: r.count, sum: r.sum }))

/** Device `a` logs three readings of one window, each durable and synced to peer `b`; then `damageLog` harms its storage. */
async function deviceWithPeer(damageLog: (factory: IDBFactory, device: Engine) => Promise<void>) {
  const factory = new IDBFactory()
  const open = (extra: Partial<OpenEngineOptions> = {}) =>
    openEngine({ ...options, replicaId: 'a', persistence: indexedDbPersistence({ name: 'device', indexedDB: factory }), ...extra })
  const device = await open()
  const deviceDoc = new Y.Doc()
  bindDoc(device, deviceDoc)
  const peer = createEngine({ ...options, replicaId: 'b' })
  const peerDoc = new Y.Doc()
  bindDoc(peer, peerDoc)
  for (let seq = 1; seq <= 3; seq++) await device.ingest([reading('d1', seq, seq, 10 * seq)]).durable
  sync(deviceDoc, peerDoc)
  expect(shown(peer)).toEqual([{ count: 3, sum: 60 }])
  await damageLog(factory, device)
  return { open, peer, peerDoc, factory }
}

/** Damages the checkpoint the device's last close wrote. */
async function damageCheckpoint(factory: IDBFactory, name = 'device'): Promise<void> {
  const db = await raw(factory, name)
  const [key] = await db.getAllKeys('checkpoints')
  db.close()
  await damage(factory, name, 'checkpoints', key as number, (bytes) => bytes.length - 1)
}

describe('a reading acknowledged after a recovery that skipped a damaged record', () => {
  it.each([
    [
      'a damaged ingest record',
      async (factory: IDBFactory) => {
        await damage(factory, 'device', 'wal', 2, (bytes) => bytes.length - 1)
      },
    ],
    [
      'a damaged checkpoint',
      async (factory: IDBFactory, device: Engine) => {
        await device.close()
        await damageCheckpoint(factory)
      },
    ],
  ])('after %s, is shown by the device and its peer once they sync, and after a reload', async (_, damageLog) => {
    const { open, peer, peerDoc } = await deviceWithPeer(damageLog)
    const device = await open()
    expect(recoveryReport(device)?.corrupt).toHaveLength(1)
    // Bound to a doc that does not hold the earlier session's entries yet (a relay room that syncs after bind).
    const deviceDoc = new Y.Doc()
    bindDoc(device, deviceDoc)
    const seq = device.nextSeq('d1')
    await device.ingest([reading('d1', seq, 4, 1)]).durable
    sync(deviceDoc, peerDoc)
    // Whatever else survived, the acknowledged reading of value 1 is counted (sums are multiples of 10 otherwise).
    expect(shown(device)[0]?.sum).toBeDefined()
    expect((shown(device)[0]?.sum as number) % 10).toBe(1)
    expect(shown(peer)).toEqual(shown(device))
    await device.close()
    expect((shown(await open())[0]?.sum as number) % 10).toBe(1)
  })
})

/** The versions of the sources an engine knows, by name. */
function versions(engine: Engine): Record<string, number> {
  return Object.fromEntries(engine.replica.exportState().clocks.map((clock) => [clock.source, clock.version]))
}

async function storedFloor(factory: IDBFactory, name: string): Promise<unknown> {
  const db = await raw(factory, name)
  const stored = (await db.get('meta', 'versionFloor')) as string | undefined
  db.close()
  return stored === undefined ? undefined : JSON.parse(stored)
}

describe('the version floor a recovery that lost records raises', () => {
  it('is not raised when recovery lost nothing: a crash replays the log, and versions go on from where they were', async () => {
    const factory = new IDBFactory()
    const open = () => openEngine({ ...options, replicaId: 'a', persistence: indexedDbPersistence({ name: 'clean', indexedDB: factory }) })
    const first = await open()
    for (let seq = 1; seq <= 3; seq++) await first.ingest([reading('d1', seq, seq, 10)]).durable
    // The tab crashes: no checkpoint on close.
    const again = await open()
    expect(recoveryReport(again)).toMatchObject({ replayedRecords: 3, corrupt: [] })
    expect(again.replica.exportState()).toEqual(first.replica.exportState())
    await again.ingest([reading('d1', 4, 4, 10)]).durable
    expect(versions(again)).toEqual({ d1: 4 })
    expect(await storedFloor(factory, 'clean')).toBeUndefined()
  })

  it('leaves the cells their versions: bound to a doc that holds the earlier session, the device takes its lost reading back, and its new reading outranks it', async () => {
    const { open, peer, peerDoc } = await deviceWithPeer(async (factory) => {
      await damage(factory, 'device', 'wal', 2, (bytes) => bytes.length - 1)
    })
    const device = await open()
    expect(recoveryReport(device)).toMatchObject({ lostEvents: 1 })
    // Seqs 1 and 3 replayed; their cell went out at version 3 with seq 2 in it.
    expect(shown(device)).toEqual([{ count: 2, sum: 40 }])
    // A relay room that syncs before bind: the cell comes back with the earlier session's entries.
    const deviceDoc = new Y.Doc()
    Y.applyUpdate(deviceDoc, Y.encodeStateAsUpdate(peerDoc), 'peer')
    bindDoc(device, deviceDoc)
    expect(shown(device)).toEqual([{ count: 3, sum: 60 }])
    await device.ingest([reading('d1', device.nextSeq('d1'), 4, 1)]).durable
    sync(deviceDoc, peerDoc)
    expect(shown(device)).toEqual([{ count: 4, sum: 61 }])
    expect(shown(peer)).toEqual(shown(device))
    expect(versions(device).d1).toBe(2 + 2 ** 40 + 1)
  })

  it('is kept beside the log: a crash after the recovery replays the writes made above it, of a source first written then too', async () => {
    const factory = new IDBFactory()
    const open = () => openEngine({ ...options, replicaId: 'a', persistence: indexedDbPersistence({ name: 'replayed-floor', indexedDB: factory }) })
    const first = await open()
    await first.ingest([reading('d1', 1, 1, 10)]).durable
    await first.close()
    await damage(factory, 'replayed-floor', 'checkpoints', 1, (bytes) => bytes.length - 1)
    const recovered = await open()
    expect(recoveryReport(recovered)).toMatchObject({ lossUnknown: true })
    const floor = 2 ** 40
    expect(await storedFloor(factory, 'replayed-floor')).toEqual([{ floor, afterLsn: 1 }])
    // d1 was only in the damaged checkpoint: taken up again, it starts at the floor, as a new source does.
    await recovered.ingest([reading('d1', 1, 2, 10), reading('d2', 1, 2, 10)]).durable
    expect(versions(recovered)).toEqual({ d1: floor + 1, d2: floor + 1 })
    // The tab crashes before any checkpoint covers that batch.
    const replayed = await open()
    expect(recoveryReport(replayed)).toMatchObject({ replayedRecords: 1, corrupt: [] })
    expect(replayed.replica.exportState()).toEqual(recovered.replica.exportState())
    expect(await storedFloor(factory, 'replayed-floor')).toEqual([{ floor, afterLsn: 1 }])
  })

  it('raised again by a second damaged checkpoint, outranks what the device wrote above the first one', async () => {
    const { open, peer, peerDoc, factory } = await deviceWithPeer(async (factory, device) => {
      await device.close()
      await damageCheckpoint(factory)
    })
    const second = await open()
    const secondDoc = new Y.Doc()
    bindDoc(second, secondDoc)
    for (let seq = 1; seq <= 2; seq++) await second.ingest([reading('d1', seq, seq, 20)]).durable
    sync(secondDoc, peerDoc)
    expect(shown(peer)).toEqual([{ count: 2, sum: 40 }])
    await second.close()
    await damageCheckpoint(factory)
    // This checkpoint held d1 at 2^40 + 2: only the floor kept beside the log says so.
    const third = await open()
    expect(recoveryReport(third)).toMatchObject({ lossUnknown: true })
    const thirdDoc = new Y.Doc()
    bindDoc(third, thirdDoc)
    await third.ingest([reading('d1', third.nextSeq('d1'), 4, 1)]).durable
    sync(thirdDoc, peerDoc)
    expect(shown(third)).toEqual([{ count: 1, sum: 1 }])
    expect(shown(peer)).toEqual(shown(third))
    expect(versions(third).d1).toBe(2 * 2 ** 40 + 1)
  })

  it('when the checkpoint at open fails, the next open finds the damage again, replays the writes made meanwhile as they were, and raises the floor above them', async () => {
    const { open, peer, peerDoc } = await deviceWithPeer(async (factory) => {
      await damage(factory, 'device', 'wal', 2, (bytes) => bytes.length - 1)
    })
    // The disk refuses checkpoints (appends still commit), and the retry never comes.
    fillDisk(['checkpoints'])
    const timers = { setTimeout: () => 0, clearTimeout: () => {} }
    const first = await open({ timers })
    const firstDoc = new Y.Doc()
    bindDoc(first, firstDoc)
    await first.ingest([reading('d1', first.nextSeq('d1'), 4, 1)]).durable
    sync(firstDoc, peerDoc)
    expect(shown(peer)).toEqual([{ count: 3, sum: 41 }])
    // The tab crashes; the disk has room again.
    vi.restoreAllMocks()
    const second = await open()
    // The damaged record is still there: no checkpoint removed it.
    expect(recoveryReport(second)?.corrupt).toEqual(recoveryReport(first)?.corrupt)
    expect(second.replica.exportState().cells).toEqual(first.replica.exportState().cells)
    expect(versions(second).d1).toBe((versions(first).d1 as number) + 2 ** 40)
    const secondDoc = new Y.Doc()
    bindDoc(second, secondDoc)
    await second.ingest([reading('d1', second.nextSeq('d1'), 5, 2)]).durable
    sync(secondDoc, peerDoc)
    expect(shown(second)).toEqual([{ count: 4, sum: 43 }])
    expect(shown(peer)).toEqual(shown(second))
  })

  it('stored in a form it does not read (the store edited by hand) is reported, and raised again above what replay gave back', async () => {
    const factory = new IDBFactory()
    const open = () => openEngine({ ...options, replicaId: 'a', persistence: indexedDbPersistence({ name: 'edited-floor', indexedDB: factory }) })
    const first = await open()
    await first.ingest([reading('d1', 1, 1, 10)]).durable
    await first.close()
    const db = await raw(factory, 'edited-floor')
    await db.put('meta', 'high', 'versionFloor')
    db.close()
    const reopened = await open()
    expect(recoveryReport(reopened)).toMatchObject({
      corrupt: [{ store: 'meta', key: 'versionFloor', reason: 'not a version floor: high' }],
      lostEvents: 0,
      lossUnknown: false,
    })
    expect(versions(reopened)).toEqual({ d1: 1 + 2 ** 40 })
    expect(await storedFloor(factory, 'edited-floor')).toEqual([{ floor: 1 + 2 ** 40, afterLsn: 1 }])
  })
})

describe('a finish in a damaged record', () => {
  it.each([
    ['a doc that holds the earlier session at bind', true],
    ['a doc that syncs after bind', false],
  ])('comes back from the earlier session’s clock, bound to %s, and holds on the peer', async (_, before) => {
    const factory = new IDBFactory()
    const open = () => openEngine({ ...options, replicaId: 'a', persistence: indexedDbPersistence({ name: 'finished', indexedDB: factory }) })
    const device = await open()
    const deviceDoc = new Y.Doc()
    bindDoc(device, deviceDoc)
    const peer = createEngine({ ...options, replicaId: 'b' })
    const peerDoc = new Y.Doc()
    bindDoc(peer, peerDoc)
    for (let seq = 1; seq <= 2; seq++) await device.ingest([reading('d1', seq, seq, 10)]).durable
    await device.finishSource('d1')
    sync(deviceDoc, peerDoc)
    expect(peer.isFinished('d1')).toBe(true)
    // The tab crashes, and the finish record is damaged.
    const db = await raw(factory, 'finished')
    const lsns = (await db.getAllKeys('wal')) as number[]
    db.close()
    await damage(factory, 'finished', 'wal', lsns[lsns.length - 1] as number, (bytes) => bytes.length - 1)
    const recovered = await open()
    expect(recoveryReport(recovered)?.corrupt).toMatchObject([{ kind: 'finish' }])
    expect(recovered.isFinished('d1')).toBe(false)
    const recoveredDoc = new Y.Doc()
    if (before) Y.applyUpdate(recoveredDoc, Y.encodeStateAsUpdate(peerDoc), 'peer')
    bindDoc(recovered, recoveredDoc)
    sync(recoveredDoc, peerDoc)
    // The finish taken back goes to peers once the merge that made it is durable.
    await whenDurable(recovered)
    sync(recoveredDoc, peerDoc)
    expect(recovered.isFinished('d1')).toBe(true)
    expect(peer.isFinished('d1')).toBe(true)
    expect(recovered.ingest([reading('d1', 3, 3, 10)]).anomalies.map((a) => a.reason)).toEqual(['finished_source'])
    expect(recovered.replica.exportState().clocks).toEqual(peer.replica.exportState().clocks)
  })
})

describe('a source the damaged checkpoint held, taken up again from a peer that holds an older copy of it', () => {
  it('is written above the floor: the reading acknowledged after the recovery outranks the copy another peer holds of the earlier session', async () => {
    const factory = new IDBFactory()
    const open = () => openEngine({ ...options, replicaId: 'a', persistence: indexedDbPersistence({ name: 'taken-up', indexedDB: factory }) })
    const device = await open()
    const deviceDoc = new Y.Doc()
    bindDoc(device, deviceDoc)
    const [early, late] = ['b', 'c'].map((replicaId) => {
      const peer = createEngine({ ...options, replicaId })
      const doc = new Y.Doc()
      bindDoc(peer, doc)
      return { peer, doc }
    }) as [{ peer: Engine; doc: Y.Doc }, { peer: Engine; doc: Y.Doc }]
    for (let seq = 1; seq <= 3; seq++) await device.ingest([reading('d1', seq, seq, 10 * seq)]).durable
    sync(deviceDoc, early.doc)
    // A fourth reading reaches peer c only.
    await device.ingest([reading('d1', 4, 4, 40)]).durable
    sync(deviceDoc, late.doc)
    expect(shown(late.peer)).toEqual([{ count: 4, sum: 100 }])
    await device.close()
    await damageCheckpoint(factory, 'taken-up')
    const recovered = await open()
    expect(recoveryReport(recovered)).toMatchObject({ lossUnknown: true })
    // A relay room that holds what peer b holds: d1 comes back as the earlier session left it at b.
    const recoveredDoc = new Y.Doc()
    Y.applyUpdate(recoveredDoc, Y.encodeStateAsUpdate(early.doc), 'peer')
    bindDoc(recovered, recoveredDoc)
    expect(shown(recovered)).toEqual([{ count: 3, sum: 60 }])
    await recovered.ingest([reading('d1', recovered.nextSeq('d1'), 5, 1)]).durable
    sync(recoveredDoc, early.doc)
    sync(recoveredDoc, late.doc)
    // Only the reading the damaged checkpoint held is lost; the one acknowledged afterwards holds everywhere.
    expect(shown(recovered)).toEqual([{ count: 4, sum: 61 }])
    expect(shown(early.peer)).toEqual(shown(recovered))
    expect(shown(late.peer)).toEqual(shown(recovered))
  })
})

describe('the version floors of two recoveries whose checkpoints failed', () => {
  it('are both raised again where they were: a third open replays every write with the version it was made at', async () => {
    const { open, factory } = await deviceWithPeer(async (factory) => {
      await damage(factory, 'device', 'wal', 2, (bytes) => bytes.length - 1)
    })
    // The disk refuses checkpoints (appends still commit) through every open, and no retry comes.
    fillDisk(['checkpoints'])
    const timers = { setTimeout: () => 0, clearTimeout: () => {} }
    const first = await open({ timers })
    // Written above the first floor, in a window of its own.
    await first.ingest([reading('d1', first.nextSeq('d1'), 14, 1)]).durable
    // The tab crashes; the next open finds the damage again and raises a second floor.
    const second = await open({ timers })
    expect(second.replica.exportState().cells).toEqual(first.replica.exportState().cells)
    await second.ingest([reading('d1', second.nextSeq('d1'), 24, 2)]).durable
    // It crashes too: the third open replays the writes of both sessions.
    const third = await open({ timers })
    expect(third.replica.exportState().cells).toEqual(second.replica.exportState().cells)
    expect(await storedFloor(factory, 'device')).toMatchObject([{ afterLsn: 3 }, { afterLsn: 4 }, { afterLsn: 5 }])
  })

  it('keep only those a replay from the checkpoint still reaches: the last one behind it, and the ones after', async () => {
    const factory = new IDBFactory()
    const open = () => openEngine({ ...options, replicaId: 'a', persistence: indexedDbPersistence({ name: 'pruned', indexedDB: factory }) })
    let seq = 0
    // Three times: a reading logged, the tab crashes, and that record is damaged; the recovery's checkpoint commits.
    for (let crash = 1; crash <= 3; crash++) {
      const device = await open()
      await device.ingest([reading('d1', ++seq, seq, 10)]).durable
      const db = await raw(factory, 'pruned')
      const lsns = (await db.getAllKeys('wal')) as number[]
      db.close()
      await damage(factory, 'pruned', 'wal', lsns[lsns.length - 1] as number, (bytes) => bytes.length - 1)
    }
    const device = await open()
    expect(recoveryReport(device)).toMatchObject({ lostEvents: 1 })
    const floors = (await storedFloor(factory, 'pruned')) as { floor: number; afterLsn: number }[]
    expect(floors.map((floor) => floor.floor)).toEqual([2 * 2 ** 40, 3 * 2 ** 40])
    // The floor of the last recovery holds after a crash: a new source starts above it.
    await device.ingest([reading('d2', 1, 1, 10)]).durable
    const replayed = await open()
    expect(versions(replayed)).toEqual({ d2: 3 * 2 ** 40 + 1 })
  })

  it('that cannot be stored (a full disk) rejects the open, which takes nothing; opened again once there is room, it is raised', async () => {
    const { open, factory } = await deviceWithPeer(async (factory) => {
      await damage(factory, 'device', 'wal', 2, (bytes) => bytes.length - 1)
    })
    const freeSpace = fillDisk(['wal', 'checkpoints', 'meta', 'lateLane'])
    const refused = await open().then(
      () => null,
      (error: unknown) => error,
    )
    expect(isQuotaError(refused)).toBe(true)
    expect(await storedFloor(factory, 'device')).toBeUndefined()
    freeSpace()
    const device = await open()
    expect(recoveryReport(device)).toMatchObject({ lostEvents: 1 })
    expect(shown(device)).toEqual([{ count: 2, sum: 40 }])
    expect(await storedFloor(factory, 'device')).toEqual([{ floor: 2 + 2 ** 40, afterLsn: 3 }])
  })
})
