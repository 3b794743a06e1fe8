/**
 * The Web Locks a source claim is held with, and what to say where there are none.
 *
 * Browsers expose `navigator.locks` only in a secure context: a page served over https, or
 * from `localhost` / `127.0.0.1`. A page on a plain-http LAN address (`http://192.168.1.20:5173`)
 * is not one, so it has no Web Locks at all, and tabs cannot tell which of them writes which
 * source.
 */

/**
 * The part of the Web Locks `LockManager` a claim needs; `navigator.locks` fits.
 *
 * @example
 * const locks: SourceLocks = navigator.locks
 */
export interface SourceLocks {
  /** `LockManager.request` with `ifAvailable`: `callback` gets the lock, or null when another context holds it; the lock lasts until the promise it returns settles. */
  request(name: string, options: { ifAvailable: true }, callback: (lock: unknown) => Promise<void> | undefined): Promise<unknown>
  /** The origin's held locks (`LockManager.query`); without it, `listSources` probes each lock instead. */
  query?(): Promise<{ readonly held?: readonly { readonly name?: string }[] }>
}

/** The name of the lock that holds `source`. */
export function sourceLockName(source: string): string {
  return `tidemark:source:${source}`
}

/**
 * The locks of `options` (`where` names the function): the given ones, else `navigator.locks`;
 * null where there are none and `withoutLocks: 'single-tab'` accepts that, else it throws the
 * error that names the cause and the fixes. Throws a RangeError for a bad `withoutLocks`.
 */
export function sourceLocks(options: { readonly locks?: SourceLocks; readonly withoutLocks?: 'single-tab' }, where: string): SourceLocks | null {
  const { withoutLocks } = options
  if (withoutLocks !== undefined && withoutLocks !== 'single-tab') {
    throw new RangeError(`${where}: withoutLocks must be 'single-tab' (or left out), got ${String(withoutLocks)}`)
  }
  const locks = options.locks ?? (globalThis as { navigator?: { locks?: SourceLocks } }).navigator?.locks ?? null
  if (locks === null && withoutLocks === undefined) throw noWebLocksError(where)
  return locks
}

/**
 * The error for a page without Web Locks: names the cause (no secure context: plain http on a
 * LAN address; or a browser or runtime without the API) and the fixes.
 *
 * @example
 * throw noWebLocksError('claimSource') // Error: claimSource: this page has no Web Locks (navigator.locks) because it is not a secure context ...
 */
export function noWebLocksError(where: string): Error {
  const scope = globalThis as { isSecureContext?: boolean; location?: { origin?: string } }
  const fallback = "or accept the risk of one tab at a time with withoutLocks: 'single-tab' (two tabs of this page would then write one source)"
  if (scope.isSecureContext === false) {
    const origin = scope.location?.origin ?? 'this origin'
    return new Error(
      `${where}: this page has no Web Locks (navigator.locks) because it is not a secure context: ${origin} is plain http on an address other than localhost. ` +
        `Serve the page over https, or open it from http://localhost or http://127.0.0.1; ${fallback}`,
    )
  }
  return new Error(
    `${where}: this environment has no Web Locks API (navigator.locks): an old browser, or a runtime without it. ` +
      `Use a browser with Web Locks, or pass options.locks; ${fallback}`,
  )
}
