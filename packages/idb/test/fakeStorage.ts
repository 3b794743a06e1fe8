import type { IDBFactory } from 'fake-indexeddb'
import { IDBObjectStore as FakeObjectStore } from 'fake-indexeddb'
import { type IDBPDatabase, wrap } from 'idb'
import { vi } from 'vitest'
import type { Persistence } from '../src/index.ts'

/** A raw connection for inspecting or damaging what a persistence stored. */
export async function raw(factory: IDBFactory, name: string): Promise<IDBPDatabase> {
  const db = await wrap(factory.open(name))
  if (db === undefined) throw new Error('open failed')
  return db
}

/** Flips the bits of one byte of a stored record, as a bad disk sector would. */
export async function damage(factory: IDBFactory, name: string, store: string, key: number, at: (bytes: Uint8Array) => number) {
  const db = await raw(factory, name)
  const bytes = new Uint8Array((await db.get(store, key)) as ArrayBuffer)
  const position = at(bytes)
  bytes[position] = (bytes[position] as number) ^ 0xff
  await db.put(store, bytes.buffer, key)
  db.close()
}

export type Quirk = (store: IDBObjectStore, request: IDBRequest) => void

/** What Chromium does on a full disk: the transaction aborts with QuotaExceededError, the request only sees AbortError. */
export const abortWithQuota: Quirk = (store) => {
  ;(store.transaction as unknown as { _abort(name: string): void })._abort('QuotaExceededError')
}

/** Makes the next write to `storeName` fail like a full disk would. */
export function failNextWrite(method: 'add' | 'put', storeName: string, quirk: Quirk | 'throw'): void {
  const original = FakeObjectStore.prototype[method]
  vi.spyOn(FakeObjectStore.prototype, method).mockImplementation(function (this: IDBObjectStore, ...args: [unknown, IDBValidKey?]) {
    if (this.name !== storeName) return original.apply(this, args)
    vi.mocked(FakeObjectStore.prototype[method]).mockRestore()
    if (quirk === 'throw') throw new DOMException('The quota has been exceeded.', 'QuotaExceededError')
    const request = original.apply(this, args)
    quirk(this, request)
    return request
  })
}

/**
 * Fills the disk: every write to `stores` (the log and the checkpoints unless told) aborts with
 * QuotaExceededError until the returned function frees space again.
 */
export function fillDisk(stores: readonly string[] = ['wal', 'checkpoints']): () => void {
  let full = true
  for (const method of ['add', 'put'] as const) {
    const original = FakeObjectStore.prototype[method]
    vi.spyOn(FakeObjectStore.prototype, method).mockImplementation(function (this: IDBObjectStore, ...args: [unknown, IDBValidKey?]) {
      const request = original.apply(this, args)
      if (full && stores.includes(this.name)) abortWithQuota(this, request)
      return request
    })
  }
  return () => {
    full = false
  }
}

/**
 * Every checkpoint write `persistence` starts from now on, in order: the very promise the
 * write-ahead log waits on, so a test can await the write it is about instead of polling.
 */
export function checkpointWrites(persistence: Persistence): Promise<void>[] {
  const writes: Promise<void>[] = []
  const checkpoint = persistence.checkpoint.bind(persistence)
  vi.spyOn(persistence, 'checkpoint').mockImplementation((record) => {
    const written = checkpoint(record)
    writes.push(written)
    return written
  })
  return writes
}
