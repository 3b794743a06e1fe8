import 'fake-indexeddb/auto'
import { IDBDatabase as FakeDatabase, IDBFactory } from 'fake-indexeddb'
import { wrap } from 'idb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { StreamEvent } from '@tidemark/engine'
import {
  encodeCheckpoint,
  encodeWalRecord,
  FencedError,
  indexedDbPersistence,
  isFencedError,
  isQuotaError,
  type Persistence,
  QuotaError,
  SCHEMA_VERSION,
} from '../src/index.ts'
import { abortWithQuota, damage, failNextWrite, raw } from './fakeStorage.ts'
import { ingestOp } from './walOps.ts'

afterEach(() => {
  vi.restoreAllMocks()
  vi.unstubAllGlobals()
})

function events(from: number, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `e${from + i}`, source: 'd1', seq: from + i, ts: from + i, value: i }))
}

describe('indexedDbPersistence', () => {
  it('resolves append only after the transaction committed', async () => {
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'durable', indexedDB: factory })
    await persistence.open()
    const order: string[] = []
    const transaction = FakeDatabase.prototype.transaction
    vi.spyOn(FakeDatabase.prototype, 'transaction').mockImplementation(function (this: IDBDatabase, ...args) {
      const tx = transaction.apply(this, args)
      tx.addEventListener('complete', () => order.push('committed'))
      return tx
    })
    await persistence.append(ingestOp(events(1, 3))).then(() => order.push('resolved'))
    expect(order).toEqual(['committed', 'resolved'])
    const db = await raw(factory, 'durable')
    expect(await db.getAllKeys('wal')).toEqual([1])
  })

  it('recovers everything after a crash: a second handle opened without closing the first', async () => {
    const factory = new IDBFactory()
    const crashed = indexedDbPersistence({ name: 'crash', indexedDB: factory })
    await crashed.open()
    await crashed.append(ingestOp(events(1, 2)))
    await crashed.append(ingestOp(events(3, 2)))
    await crashed.checkpoint({ upToLsn: 1, state: new Uint8Array([7]) })
    await crashed.append(ingestOp(events(5, 2)))
    const reloaded = indexedDbPersistence({ name: 'crash', indexedDB: factory })
    const recovered = await reloaded.open()
    expect(recovered.checkpoint).toEqual({ upToLsn: 1, state: new Uint8Array([7]) })
    expect(recovered.tail).toEqual([
      { lsn: 2, op: ingestOp(events(3, 2)) },
      { lsn: 3, op: ingestOp(events(5, 2)) },
    ])
    expect(await reloaded.append(ingestOp(events(7, 1)))).toBe(4)
    // The stale handle must not overwrite the batch the new one wrote under its next lsn.
    await expect(crashed.append(ingestOp(events(99, 1)))).rejects.toThrow(/another handle/)
    expect((await indexedDbPersistence({ name: 'crash', indexedDB: factory }).open()).tail.at(-1)).toEqual({
      lsn: 4,
      op: ingestOp(events(7, 1)),
    })
  })

  it('keeps only the newest checkpoint', async () => {
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'checkpoints', indexedDB: factory })
    await persistence.open()
    for (let i = 0; i < 3; i++) {
      await persistence.append(ingestOp(events(i, 1)))
      await persistence.checkpoint({ upToLsn: i + 1, state: new Uint8Array([i]) })
    }
    const db = await raw(factory, 'checkpoints')
    expect(await db.getAllKeys('checkpoints')).toEqual([3])
    expect(await db.getAllKeys('wal')).toEqual([])
  })

  it('skips and reports a corrupt record in the middle, with the events lost', async () => {
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'corrupt', indexedDB: factory })
    await persistence.open()
    for (const count of [2, 3, 4, 5]) await persistence.append(ingestOp(events(10 * count, count)))
    await persistence.close()
    await damage(factory, 'corrupt', 'wal', 2, (bytes) => bytes.length - 1)
    await damage(factory, 'corrupt', 'wal', 3, () => 16)
    const reloaded = indexedDbPersistence({ name: 'corrupt', indexedDB: factory })
    const recovered = await reloaded.open()
    expect(recovered.tail.map((batch) => batch.lsn)).toEqual([1, 4])
    expect(recovered.tail[1]?.op).toEqual(ingestOp(events(50, 5)))
    expect(recovered.corrupt).toEqual([
      { store: 'wal', key: '2', reason: 'payload checksum mismatch', kind: 'ingest', lostEvents: 3 },
      { store: 'wal', key: '3', reason: 'header checksum mismatch' },
    ])
    expect(reloaded.stats()).toMatchObject({ corruptRecords: 2, walRecords: 4 })
    expect(await reloaded.append(ingestOp(events(60, 1)))).toBe(5)
  })

  it('reports stored values that are not records, or sit under the wrong lsn', async () => {
    const factory = new IDBFactory()
    await indexedDbPersistence({ name: 'foreign', indexedDB: factory }).open()
    const db = await raw(factory, 'foreign')
    await db.put('wal', 'hello', 1)
    await db.put('wal', encodeWalRecord(9, ingestOp(events(1, 2))).buffer, 2)
    await db.put('checkpoints', encodeCheckpoint({ upToLsn: 5, state: new Uint8Array(4) }).buffer, 1)
    db.close()
    const recovered = await indexedDbPersistence({ name: 'foreign', indexedDB: factory }).open()
    expect(recovered.checkpoint).toBeNull()
    expect(recovered.tail).toEqual([])
    expect(recovered.corrupt).toEqual([
      { store: 'checkpoints', key: '1', reason: 'envelope says upToLsn 5, stored under 1' },
      { store: 'wal', key: '1', reason: 'stored value is a string, not bytes' },
      { store: 'wal', key: '2', reason: 'record says lsn 9, stored under 2', kind: 'ingest', lostEvents: 2 },
    ])
  })

  it('reports a corrupt checkpoint and still returns the log after it', async () => {
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'bad-checkpoint', indexedDB: factory })
    await persistence.open()
    await persistence.append(ingestOp(events(1, 1)))
    await persistence.checkpoint({ upToLsn: 1, state: new Uint8Array(16) })
    await persistence.append(ingestOp(events(2, 1)))
    await persistence.close()
    await damage(factory, 'bad-checkpoint', 'checkpoints', 1, (bytes) => bytes.length - 1)
    const reloaded = indexedDbPersistence({ name: 'bad-checkpoint', indexedDB: factory })
    const recovered = await reloaded.open()
    expect(recovered.checkpoint).toBeNull()
    expect(recovered.corrupt).toEqual([{ store: 'checkpoints', key: '1', reason: 'payload checksum mismatch' }])
    expect(recovered.tail).toEqual([{ lsn: 2, op: ingestOp(events(2, 1)) }])
    expect(await reloaded.append(ingestOp(events(3, 1)))).toBe(3)
  })

  describe.each([
    ['throws from add()', 'throw' as const],
    ['aborts the transaction', abortWithQuota],
  ])('when a full quota %s', (_, quirk) => {
    it('rejects append with QuotaError and acknowledges nothing', async () => {
      const factory = new IDBFactory()
      const persistence = indexedDbPersistence({ name: 'quota', indexedDB: factory })
      await persistence.open()
      await persistence.append(ingestOp(events(1, 2)))
      const before = persistence.stats()
      failNextWrite('add', 'wal', quirk)
      const failure = await persistence.append(ingestOp(events(3, 2))).then(
        () => null,
        (error: unknown) => error,
      )
      expect(failure).toBeInstanceOf(QuotaError)
      expect(isQuotaError(failure)).toBe(true)
      expect((failure as Error).message).toMatch(/quota exceeded; record lsn 2 was not written/)
      expect(((failure as Error).cause as DOMException).name).toBe('QuotaExceededError')
      expect(persistence.stats()).toEqual(before)
      const next = await persistence.append(ingestOp(events(5, 1)))
      const recovered = await indexedDbPersistence({ name: 'quota', indexedDB: factory }).open()
      expect(recovered.tail).toEqual([
        { lsn: 1, op: ingestOp(events(1, 2)) },
        { lsn: next, op: ingestOp(events(5, 1)) },
      ])
    })
  })

  it('rejects a checkpoint with QuotaError and keeps the log it would have truncated', async () => {
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'quota-checkpoint', indexedDB: factory })
    await persistence.open()
    await persistence.append(ingestOp(events(1, 1)))
    await persistence.append(ingestOp(events(2, 1)))
    failNextWrite('put', 'checkpoints', abortWithQuota)
    await expect(persistence.checkpoint({ upToLsn: 2, state: new Uint8Array(8) })).rejects.toBeInstanceOf(QuotaError)
    expect(persistence.stats()).toMatchObject({ walRecords: 2, checkpoints: 0 })
    const recovered = await indexedDbPersistence({ name: 'quota-checkpoint', indexedDB: factory }).open()
    expect(recovered).toMatchObject({ checkpoint: null, tail: [{ lsn: 1 }, { lsn: 2 }] })
  })

  it('creates a new database at SCHEMA_VERSION with its five stores', async () => {
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'fresh', indexedDB: factory })
    await persistence.open()
    await persistence.close()
    const db = await raw(factory, 'fresh')
    expect(db.version).toBe(SCHEMA_VERSION)
    expect([...db.objectStoreNames].sort()).toEqual(['archive', 'checkpoints', 'lateLane', 'meta', 'wal'])
    db.close()
  })

  it('refuses a database of its version that lacks its stores, naming them', async () => {
    const factory = new IDBFactory()
    const request = factory.open('foreign', SCHEMA_VERSION)
    request.onupgradeneeded = () => request.result.createObjectStore('wal')
    ;(await wrap(request))?.close()
    await expect(indexedDbPersistence({ name: 'foreign', indexedDB: factory }).open()).rejects.toThrow(
      'indexedDbPersistence("foreign"): the database lacks the stores checkpoints, meta, lateLane, archive of schema 1: another program made it; use another name',
    )
  })

  it('explains a database written by a newer schema', async () => {
    const factory = new IDBFactory()
    ;(await wrap(factory.open('future', SCHEMA_VERSION + 1)))?.close()
    await expect(indexedDbPersistence({ name: 'future', indexedDB: factory }).open()).rejects.toThrow(/newer than 1/)
  })

  it('stops writing once another connection upgrades the schema', async () => {
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'upgraded', indexedDB: factory })
    await persistence.open()
    ;(await wrap(factory.open('upgraded', SCHEMA_VERSION + 1)))?.close()
    await expect(persistence.append(ingestOp(events(1, 1)))).rejects.toThrow(/upgraded the database schema/)
  })

  it('refuses writes once the source claim is no longer held', async () => {
    const claim = { held: true }
    const persistence = indexedDbPersistence({ name: 'claimed', indexedDB: new IDBFactory(), claim })
    await persistence.open()
    expect(await persistence.append(ingestOp(events(1, 1)))).toBe(1)
    claim.held = false
    await expect(persistence.append(ingestOp(events(2, 1)))).rejects.toThrow(/no longer holds its source claim/)
  })

  it('says what to do when there is no IndexedDB', () => {
    vi.stubGlobal('indexedDB', undefined)
    expect(() => indexedDbPersistence({ name: 'nowhere' })).toThrow(/no IndexedDB here; pass options.indexedDB/)
  })

  it('says what to do when IDBKeyRange is not a global (Node without fake-indexeddb/auto)', () => {
    vi.stubGlobal('IDBKeyRange', undefined)
    expect(() => indexedDbPersistence({ name: 'bare', indexedDB: new IDBFactory() })).toThrow(
      `indexedDbPersistence("bare"): IDBKeyRange is not a global here; in Node, import 'fake-indexeddb/auto' first`,
    )
  })
})

/** One database that handles open one after the other, as two tabs of a claim made without locks (or given none) do. */
function sharedDatabase(name: string) {
  const factory = new IDBFactory()
  const handle = async (): Promise<Persistence> => {
    const persistence = indexedDbPersistence({ name, indexedDB: factory })
    await persistence.open()
    return persistence
  }
  const reopen = () => indexedDbPersistence({ name, indexedDB: factory }).open()
  return { handle, reopen }
}

/** What `promise` rejected with; fails the test when it resolved. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => expect.fail('resolved, but should have been refused'),
    (error: unknown) => error as Error,
  )
}

describe('indexedDbPersistence: another handle writing the same database', () => {
  it('stops writing for good once its lsn is taken: its checkpoint keeps the record the other handle acknowledged', async () => {
    const { handle, reopen } = sharedDatabase('shared')
    const a = await handle()
    expect(await a.append(ingestOp(events(1, 1)))).toBe(1)
    // b saw lsn 1 at open: its next lsn is a's next lsn too.
    const b = await handle()
    expect(await b.append(ingestOp(events(10, 2)))).toBe(2)
    const refused = await rejection(a.append(ingestOp(events(2, 1))))
    expect(refused).toBeInstanceOf(FencedError)
    expect(isFencedError(refused)).toBe(true)
    expect(refused).toMatchObject({ fencedBy: 'another-writer', epoch: undefined, current: undefined })
    expect(refused.message).toBe(
      'indexedDbPersistence("shared"): another handle writes to this database (lsn 2 is already in the log), so this handle writes no more; record lsn 2 was not written',
    )
    // Its retry, a checkpoint up to lsn 2, would truncate b's record: refused, as is every later write.
    for (const write of [a.checkpoint({ upToLsn: a.lastLsn, state: new Uint8Array([1]) }), a.append(ingestOp(events(3, 1))), a.putMeta('note', 'a')]) {
      expect(await rejection(write)).toMatchObject({ name: 'FencedError', message: expect.stringContaining('(lsn 2 is already in the log)') })
    }
    await a.close()
    await expect(a.open()).rejects.toThrow(/another handle writes to this database .*; open\(\) refused/)
    const recovered = await reopen()
    expect(recovered.checkpoint).toBeNull()
    expect(recovered.tail).toEqual([
      { lsn: 1, op: ingestOp(events(1, 1)) },
      { lsn: 2, op: ingestOp(events(10, 2)) },
    ])
  })

  it('refuses the checkpoint queued behind its colliding append, though it was asked for before the collision showed', async () => {
    const { handle, reopen } = sharedDatabase('queued')
    const a = await handle()
    const b = await handle()
    expect(await b.append(ingestOp(events(10, 2)))).toBe(1)
    // One task: the append's transaction, then the checkpoint's, both created before either ran.
    const appended = a.append(ingestOp(events(1, 1)))
    const checkpointed = a.checkpoint({ upToLsn: 1, state: new Uint8Array([1]) })
    expect(await rejection(appended)).toMatchObject({ name: 'FencedError', message: expect.stringContaining('lsn 1 is already in the log') })
    expect(await rejection(checkpointed)).toMatchObject({ name: 'FencedError', message: expect.stringMatching(/; checkpoint at lsn 1 was not written$/) })
    expect(await reopen()).toMatchObject({ checkpoint: null, tail: [{ lsn: 1, op: ingestOp(events(10, 2)) }] })
  })

  it('refuses an append behind a checkpoint it did not write, where recovery would never read it', async () => {
    const { handle, reopen } = sharedDatabase('behind')
    const a = await handle()
    const b = await handle()
    await b.append(ingestOp(events(10, 2)))
    await b.checkpoint({ upToLsn: 1, state: new Uint8Array([2]) })
    // lsn 1 is free again after b's truncation, but recovery reads only what follows b's checkpoint.
    const refused = await rejection(a.append(ingestOp(events(1, 1))))
    expect(refused).toMatchObject({ name: 'FencedError', fencedBy: 'another-writer' })
    expect(refused.message).toBe(
      'indexedDbPersistence("behind"): another handle writes to this database (lsn 1 is behind a checkpoint at lsn 1 that this handle did not write), so this handle writes no more; record lsn 1 was not written',
    )
    expect(await reopen()).toMatchObject({ checkpoint: { upToLsn: 1, state: new Uint8Array([2]) }, tail: [] })
  })

  describe.each([
    ['holds its record', false, "lsn 1, which this handle failed to write, holds another handle's record"],
    ['checkpointed past it', true, 'a checkpoint at lsn 1 that this handle did not write'],
  ])('after a failed append, when another handle wrote that lsn and %s', (_, checkpointed, found) => {
    it('refuses the checkpoint that would truncate it', async () => {
      const { handle, reopen } = sharedDatabase('hole')
      const a = await handle()
      const b = await handle()
      failNextWrite('add', 'wal', 'throw')
      await expect(a.append(ingestOp(events(1, 1)))).rejects.toBeInstanceOf(QuotaError)
      // No collision: a's lsn 1 was never written.
      expect(await b.append(ingestOp(events(10, 2)))).toBe(1)
      if (checkpointed) await b.checkpoint({ upToLsn: 1, state: new Uint8Array([2]) })
      const refused = await rejection(a.checkpoint({ upToLsn: 1, state: new Uint8Array([1]) }))
      expect(refused).toMatchObject({ name: 'FencedError', message: expect.stringContaining(`(${found})`) })
      const recovered = await reopen()
      if (checkpointed) expect(recovered).toMatchObject({ checkpoint: { upToLsn: 1, state: new Uint8Array([2]) }, tail: [] })
      else expect(recovered).toMatchObject({ checkpoint: null, tail: [{ lsn: 1, op: ingestOp(events(10, 2)) }] })
    })
  })
})
