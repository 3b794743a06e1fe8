/**
 * A read that fails while `openEngine` recovers the log or `claimLog` raises the writer epoch
 * (Chromium's "Failed to read large IndexedDB value", a database closed by the browser under the
 * open) aborts its transaction. The call rejects with the read's error, and nothing else: found
 * by the relay's chaos test (a device crashing again while it reopened), where the aborted
 * transaction's own promise was left rejected with nobody listening, an unhandled rejection (in
 * Node, by default, one that ends the process, even though the app handled the call's rejection).
 */
import 'fake-indexeddb/auto'
import { IDBObjectStore as FakeObjectStore, IDBFactory } from 'fake-indexeddb'
import { afterEach, expect, it, vi } from 'vitest'
import { reading } from '@tidemark/engine/testing'
import { type EngineOptions, tumbling } from '@tidemark/engine'
import { indexedDbPersistence, openEngine } from '@tidemark/idb'
import { claimLog } from '@tidemark/idb/log'

afterEach(() => {
  vi.restoreAllMocks()
})

const config: EngineOptions = { windows: tumbling(10), now: () => 1_000 }

/** From now on, every read of `store` errors and aborts its transaction, as in Chromium. */
function failReadsOf(store: string): void {
  const get = FakeObjectStore.prototype.get
  vi.spyOn(FakeObjectStore.prototype, 'get').mockImplementation(function (this: IDBObjectStore, key: IDBValidKey | IDBKeyRange) {
    const request = get.call(this, key)
    if (this.name === store) (this.transaction as unknown as { _abort(name: string): void })._abort('UnknownError')
    return request
  })
}

/**
 * Expects `call` to reject with the failed read's error (fake-indexeddb gives a read whose
 * transaction aborted an `AbortError`), not another, and no promise to be left rejected
 * unhandled once it has.
 */
async function rejectsAlone(call: () => Promise<unknown>): Promise<void> {
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason)
  }
  process.on('unhandledRejection', onUnhandled)
  try {
    await expect(call()).rejects.toMatchObject({ name: 'AbortError' })
    // Node reports an unhandled rejection once the microtasks of the task that rejected it have run.
    await new Promise((resolve) => setImmediate(resolve))
    await new Promise((resolve) => setImmediate(resolve))
  } finally {
    process.off('unhandledRejection', onUnhandled)
  }
  expect(unhandled).toEqual([])
}

it('a log record that cannot be read rejects the open with its error and leaves no unhandled rejection', async () => {
  const factory = new IDBFactory()
  const persistence = () => indexedDbPersistence({ name: 'unreadable', indexedDB: factory })
  const first = await openEngine({ ...config, persistence: persistence(), checkpointOnClose: false })
  await first.ingest([reading('d1', 1, 5, 1), reading('d1', 2, 7, 2)]).durable
  await first.close()
  failReadsOf('wal')
  await rejectsAlone(() => openEngine({ ...config, persistence: persistence() }))
})

it('a writer epoch that cannot be read rejects claimLog with its error and leaves no unhandled rejection', async () => {
  const factory = new IDBFactory()
  const first = await claimLog({ name: 'unreadable-epoch', indexedDB: factory, withoutLocks: 'single-tab' })
  await first.release()
  failReadsOf('meta')
  await rejectsAlone(() => claimLog({ name: 'unreadable-epoch', indexedDB: factory, withoutLocks: 'single-tab' }))
})
