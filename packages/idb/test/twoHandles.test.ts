import 'fake-indexeddb/auto'
import { IDBDatabase as FakeDatabase, IDBFactory } from 'fake-indexeddb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { StreamEvent } from '@tidemark/engine'
import { indexedDbPersistence, QuotaError } from '../src/index.ts'
import { failNextWrite, raw } from './fakeStorage.ts'
import { ingestOp } from './walOps.ts'

afterEach(() => vi.restoreAllMocks())

function events(from: number, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `e${from + i}`, source: 'd1', seq: from + i, ts: from + i, value: i }))
}

describe('two handles on one database', () => {
  it('a checkpoint queued behind its own colliding append never truncates the other handle’s acknowledged record, whenever the abort event arrives', async () => {
    const factory = new IDBFactory()
    const a = indexedDbPersistence({ name: 'race', indexedDB: factory })
    const b = indexedDbPersistence({ name: 'race', indexedDB: factory })
    await a.open()
    await b.open()
    // a acknowledges lsn 1 and 2; b, opened before, still hands out lsn 1 next.
    expect(await a.append(ingestOp(events(1, 1)))).toBe(1)
    expect(await a.append(ingestOp(events(2, 1)))).toBe(2)
    // Some other code of the page opens a transaction while b's colliding add reports its
    // error: the database then schedules its next transaction before b's abort event is fired
    // (fake-indexeddb marks the aborted transaction finished at once and fires `abort` later).
    const transaction = FakeDatabase.prototype.transaction
    const bystander = await raw(factory, 'race')
    vi.spyOn(FakeDatabase.prototype, 'transaction').mockImplementation(function (this: IDBDatabase, ...args) {
      const tx = transaction.apply(this, args)
      tx.addEventListener('error', () => {
        // A read of the log's meta store: unrelated work of the page (a stats view, say).
        void bystander.get('meta', 'replicaId')
      })
      return tx
    })
    const appended = b.append(ingestOp(events(100, 1))).then(
      () => 'committed',
      (error: Error) => error.name,
    )
    const checkpointed = b.checkpoint({ upToLsn: b.lastLsn, state: new Uint8Array([9]) }).then(
      () => 'committed',
      (error: Error) => error.name,
    )
    expect(await appended).toBe('FencedError')
    const outcome = await checkpointed
    vi.restoreAllMocks()
    const recovered = await indexedDbPersistence({ name: 'race', indexedDB: factory }).open()
    // a's two acknowledged records are still there for recovery: b's checkpoint must be refused.
    expect({ checkpoint: outcome, recovered: recovered.checkpoint?.upToLsn ?? null, tail: recovered.tail.map((r) => r.lsn) }).toEqual({
      checkpoint: 'FencedError',
      recovered: null,
      tail: [1, 2],
    })
  })
})

describe('a tab that reloaded after a failed write', () => {
  it('never truncates a record another tab wrote into the lsn its failed write left free', async () => {
    const factory = new IDBFactory()
    const handle = async () => {
      const persistence = indexedDbPersistence({ name: 'reloaded', indexedDB: factory })
      await persistence.open()
      return persistence
    }
    // Tab C opened the log while it was empty, like tab B: their lsns start at 1 both.
    const c = await handle()
    const b = await handle()
    // Tab B: its first write fails (a full disk), the next one commits, and then it reloads.
    failNextWrite('add', 'wal', 'throw')
    await expect(b.append(ingestOp(events(1, 1)))).rejects.toBeInstanceOf(QuotaError)
    expect(await b.append(ingestOp(events(2, 1)))).toBe(2)
    const reloaded = await handle()
    expect(reloaded.lastLsn).toBe(2)
    // Tab C's next lsn is 1, which nobody holds: its batch is acknowledged.
    expect(await c.append(ingestOp(events(100, 1)))).toBe(1)
    // The reloaded tab writes on and checkpoints: its state never held tab C's batch.
    expect(await reloaded.append(ingestOp(events(3, 1)))).toBe(3)
    const checkpointed = await reloaded.checkpoint({ upToLsn: 3, state: new Uint8Array([3]) }).then(
      () => 'committed',
      (error: Error) => error.name,
    )
    const recovered = await indexedDbPersistence({ name: 'reloaded', indexedDB: factory }).open()
    expect({ checkpointed, tail: recovered.tail.map((r) => r.lsn) }).toEqual({ checkpointed: 'FencedError', tail: [1, 2, 3] })
  })
})
