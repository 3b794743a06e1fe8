/**
 * What the page side uses of the platform, so tests can run it with fake locks and timers:
 * `navigator.locks`, `BroadcastChannel` and the timer functions fit.
 */

/**
 * The Web Locks calls leader election and liveness need; `navigator.locks` fits.
 *
 * @example
 * const locks: WorkerLocks = navigator.locks
 */
export interface WorkerLocks {
  /**
   * `LockManager.request`: `callback` gets the lock (or null with `ifAvailable` when it is
   * held); the lock lasts until the promise it returns settles; `steal` breaks another
   * holder's lock; `signal` withdraws a waiting request.
   */
  request(
    name: string,
    options: { readonly ifAvailable?: boolean; readonly steal?: boolean; readonly signal?: AbortSignal },
    callback: (lock: unknown) => Promise<void> | undefined,
  ): Promise<unknown>
  /** `LockManager.query`: the locks held and waited for in the origin (leader election asks who waits). */
  query?(): Promise<{ readonly pending?: readonly { readonly name?: string }[] }>
}

/**
 * The page's lifecycle as leader election follows it (`document` fits through `platformLifecycle`):
 * `freeze` comes just before the browser freezes a hidden page (its timers and workers stop,
 * its locks stay held), `resume` when it runs again, `visibility` when it is hidden or shown.
 *
 * @example
 * const lifecycle: PageLifecycle = { on: (type, listener) => document.addEventListener(type, () => listener()), hidden: () => document.hidden }
 */
export interface PageLifecycle {
  on(type: 'freeze' | 'resume' | 'visibilitychange', listener: () => void): void
  hidden(): boolean
}

/** The page's lifecycle from `document`, or null where there is none (a worker, a server). */
export function platformLifecycle(): PageLifecycle | null {
  const document = (globalThis as { document?: { hidden?: boolean; addEventListener?: (type: string, listener: () => void) => void } }).document
  if (document?.addEventListener === undefined) return null
  return {
    on: (type, listener) => document.addEventListener?.(type, listener),
    hidden: () => document.hidden === true,
  }
}

/**
 * Calls `listener` when this page goes away for good: `pagehide`, except into the back/forward
 * cache (`persisted`), from which the page may come back. Null where there is no page (a
 * worker, a server).
 *
 * @example
 * platformUnload()?.(() => engine.leave())
 */
export function platformUnload(): ((listener: () => void) => void) | null {
  const scope = globalThis as { document?: unknown; addEventListener?: (type: string, listener: (event: { persisted?: boolean }) => void) => void }
  if (scope.document === undefined || typeof scope.addEventListener !== 'function') return null
  return (listener) =>
    scope.addEventListener?.('pagehide', (event) => {
      if (event.persisted !== true) listener()
    })
}

/** Timers and the clock. */
export interface WorkerClock {
  now(): number
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
  setInterval(callback: () => void, ms: number): unknown
  clearInterval(handle: unknown): void
}

/** A channel every tab of the origin shares (`BroadcastChannel`). */
export interface TabChannel {
  postMessage(message: unknown): void
  addEventListener(type: 'message', listener: (event: { readonly data: unknown }) => void): void
  close(): void
}

/** The platform's clock and timers. */
export const platformClock: WorkerClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>),
  setInterval: (callback, ms) => globalThis.setInterval(callback, ms),
  clearInterval: (handle) => globalThis.clearInterval(handle as ReturnType<typeof setInterval>),
}

/** `navigator.locks`, or null where there are none (not a secure context, an old browser). */
export function platformLocks(): WorkerLocks | null {
  return (globalThis as { navigator?: { locks?: WorkerLocks } }).navigator?.locks ?? null
}

/** The lock names of one engine name. */
export const lockNames = {
  leader: (name: string) => `tidemark-worker:${name}:leader`,
  steal: (name: string) => `tidemark-worker:${name}:leader-steal`,
  tab: (name: string, tab: string) => `tidemark-worker:${name}:tab:${tab}`,
  host: (name: string, instance: string) => `tidemark-worker:${name}:host:${instance}`,
}
