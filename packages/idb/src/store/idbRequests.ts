/**
 * IndexedDB requests and transactions as promises: the few the persistence needs, on the
 * plain API (no wrapper library), so any `IDBFactory` works, an injected one included.
 */

/** Resolves with the request's result, rejects with its error. */
export function requested<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })
}

/**
 * Resolves once the transaction committed; rejects with its error (a failed request's, a full
 * quota's) when it aborted. Only `abort` is heard: a failed request aborts the transaction, and
 * its error is the transaction's only from then on. Its rejection is marked handled: a caller
 * that awaited a failed read first reports that read's error and leaves this promise behind,
 * which would otherwise be an unhandled rejection (in Node, by default, one that ends the
 * process whatever the app did with the call's rejection). Awaiting it still throws.
 */
export function committed(tx: IDBTransaction): Promise<void> {
  const done = new Promise<void>((resolve, reject) => {
    tx.oncomplete = () => resolve()
    tx.onabort = () => reject(tx.error ?? new DOMException('the transaction was aborted', 'AbortError'))
  })
  done.catch(() => {})
  return done
}

/**
 * Aborts the transaction, unless it already ended.
 *
 * @example
 * abortQuietly(tx) // after a write threw: nothing of it commits
 */
export function abortQuietly(tx: IDBTransaction): void {
  try {
    tx.abort()
  } catch {
    // Already aborted or finished: nothing was committed, or the error came after commit.
  }
}

/**
 * Does nothing: for a rejection already reported elsewhere.
 *
 * @example
 * await done.catch(ignore)
 */
export function ignore(): void {}
