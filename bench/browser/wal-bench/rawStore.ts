/**
 * The baseline: batches stored as they are, one record (an array of event objects) per
 * batch and one readwrite transaction per put, with no codec and no engine.
 */

const STORE = 'batches'

export function openRawStore(name: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(name, 1)
    request.onupgradeneeded = () => request.result.createObjectStore(STORE)
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })
}

/** Puts one batch in its own transaction; resolves on commit. */
export function putBatch(db: IDBDatabase, key: number, batch: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, 'readwrite')
    tx.objectStore(STORE).put(batch, key)
    tx.oncomplete = () => resolve()
    tx.onerror = () => reject(tx.error)
    tx.onabort = () => reject(tx.error)
  })
}

/** Puts every batch, keyed by position, in one transaction; resolves on commit. */
export function putBatches(db: IDBDatabase, batches: readonly unknown[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, 'readwrite')
    const store = tx.objectStore(STORE)
    batches.forEach((batch, i) => {
      store.put(batch, i)
    })
    tx.oncomplete = () => resolve()
    tx.onerror = () => reject(tx.error)
    tx.onabort = () => reject(tx.error)
  })
}

/** Reads every batch back, in key order. */
export function readAllBatches<T>(db: IDBDatabase): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const request = db.transaction(STORE, 'readonly').objectStore(STORE).getAll()
    request.onsuccess = () => resolve(request.result as T[])
    request.onerror = () => reject(request.error)
  })
}

/** Resolves once every readwrite transaction on `store` created before this call has finished. */
export function settled(db: IDBDatabase, store: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = db.transaction(store, 'readonly').objectStore(store).count()
    request.onsuccess = () => resolve()
    request.onerror = () => reject(request.error)
  })
}

export function deleteDatabase(name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(name)
    request.onsuccess = () => resolve()
    request.onerror = () => reject(request.error)
    // `blocked` only means a closed connection still finishes its transactions; the delete waits for them.
  })
}
