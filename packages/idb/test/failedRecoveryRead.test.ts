/**
 * A read that fails while `openEngine` recovers the log (Chromium's "Failed to read large
 * IndexedDB value", a database closed by the browser under the open) aborts the recovery's
 * transaction. The open rejects with the read's error, and nothing else: found by the relay's
 * chaos test (a device crashing again while it reopened), where the aborted transaction's own
 * promise was left rejected with nobody listening, an unhandled rejection (in Node, by default,
 * one that ends the process, even though the app handled the open's rejection).
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

it('a log record that cannot be read rejects the open with its error and leaves no unhandled rejection', async () => {
  const factory = new IDBFactory()
  const persistence = () => indexedDbPersistence({ name: 'unreadable', indexedDB: factory })
  const first = await openEngine({ ...config, persistence: persistence(), checkpointOnClose: false })
  await first.ingest([reading('d1', 1, 5, 1), reading('d1', 2, 7, 2)]).durable
  await first.close()

  // Reading a log record fails: its request errors and its transaction aborts, as in Chromium.
  const get = FakeObjectStore.prototype.get
  vi.spyOn(FakeObjectStore.prototype, 'get').mockImplementation(function (this: IDBObjectStore, key: IDBValidKey | IDBKeyRange) {
    const request = get.call(this, key)
    if (this.name === 'wal') (this.transaction as unknown as { _abort(name: string): void })._abort('UnknownError')
    return request
  })
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason)
  }
  process.on('unhandledRejection', onUnhandled)
  try {
    await expect(openEngine({ ...config, persistence: persistence() })).rejects.toThrow()
    // Node reports an unhandled rejection once the microtasks of the task that rejected it have run.
    await new Promise((resolve) => setImmediate(resolve))
    await new Promise((resolve) => setImmediate(resolve))
  } finally {
    process.off('unhandledRejection', onUnhandled)
  }
  expect(unhandled).toEqual([])
})

it('a writer epoch that cannot be read rejects claimLog with its error and leaves no unhandled rejection', async () => {
  const factory = new IDBFactory()
  const first = await claimLog({ name: 'unreadable-epoch', indexedDB: factory, withoutLocks: 'single-tab' })
  await first.release()

  // Reading the writer epoch fails: its request errors and its transaction aborts, as in Chromium.
  const get = FakeObjectStore.prototype.get
  vi.spyOn(FakeObjectStore.prototype, 'get').mockImplementation(function (this: IDBObjectStore, key: IDBValidKey | IDBKeyRange) {
    const request = get.call(this, key)
    if (this.name === 'meta') (this.transaction as unknown as { _abort(name: string): void })._abort('UnknownError')
    return request
  })
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason)
  }
  process.on('unhandledRejection', onUnhandled)
  try {
    await expect(claimLog({ name: 'unreadable-epoch', indexedDB: factory, withoutLocks: 'single-tab' })).rejects.toThrow()
    await new Promise((resolve) => setImmediate(resolve))
    await new Promise((resolve) => setImmediate(resolve))
  } finally {
    process.off('unhandledRejection', onUnhandled)
  }
  expect(unhandled).toEqual([])
})
