import { MAX_NAME_LENGTH } from '@tidemark/engine'
import { assertKnownOptions } from '@tidemark/engine/adapter'
import { committed, requested } from '../store/idbRequests.ts'
import { openDatabase, WRITER_EPOCH_KEY } from '../store/indexedDbSchema.ts'
import { noWebLocksError } from './webLocks.ts'

/**
 * The part of the Web Locks `LockManager` a log claim needs; `navigator.locks` fits.
 *
 * @example
 * const locks: LogLocks = navigator.locks
 */
export interface LogLocks {
  /**
   * `LockManager.request`: `callback` runs once the lock is granted (at once with `steal`,
   * which breaks another holder's lock); the lock lasts until the promise it returns settles.
   */
  request(
    name: string,
    options: { readonly steal?: boolean; readonly signal?: AbortSignal },
    callback: (lock: unknown) => Promise<void>,
  ): Promise<unknown>
}

/**
 * Options of `claimLog`; only `name` is required.
 *
 * @example
 * const options: ClaimLogOptions = { name: 'fleet', steal: true }
 */
export interface ClaimLogOptions {
  /** The log's name, the same in every context that may write it; its database is `logDatabaseName(name)`. */
  readonly name: string
  /**
   * Take the log from its holder instead of waiting for it (default false): for a writer that
   * replaces one that stopped answering (a frozen tab). The old writer's later writes are then
   * refused with `FencedError`, whenever it runs again.
   */
  readonly steal?: boolean
  /** Defaults to `navigator.locks`. */
  readonly locks?: LogLocks
  /** Defaults to `globalThis.indexedDB`. */
  readonly indexedDB?: IDBFactory
  /**
   * Where there are no Web Locks: unset, `claimLog` throws an error naming the cause and the
   * fix; `'single-tab'` claims without a lock. The writer epoch still fences: a second writer
   * that claims the log makes the first one's writes fail instead of interleaving with its own.
   */
  readonly withoutLocks?: 'single-tab'
  /** Gives up waiting for the lock (the claim rejects with the signal's reason). */
  readonly signal?: AbortSignal
}

/**
 * The right to write one log, held through a Web Lock and fenced by a writer epoch: give it to
 * `indexedDbPersistence({ name: claim.database, claim })`, which then checks the epoch inside
 * every write transaction, so a writer that lost the log (its lock stolen while it was frozen)
 * cannot append a single record after the new writer claimed it.
 *
 * @example
 * const claim: LogClaim = await claimLog({ name: 'fleet' })
 * claim.epoch // 1 for the first writer of this log, 2 for the next, ...
 */
export interface LogClaim {
  readonly name: string
  /** Its IndexedDB database (`logDatabaseName(name)`). */
  readonly database: string
  /** This writer's epoch: one more than the writer before it. */
  readonly epoch: number
  /** True when held through a Web Lock; false for `withoutLocks: 'single-tab'`. */
  readonly exclusive: boolean
  /** True when the lock was taken from another holder (`steal`). */
  readonly stolen: boolean
  /** False once the lock ended (stolen by a later writer, or released). */
  readonly held: boolean
  /** Resolves if the lock ends without `release()`. */
  readonly lost: Promise<void>
  /** Lets the lock go; resolves once another context could take it. */
  release(): Promise<void>
}

const CLAIM_LOG_OPTION_KEYS: readonly (keyof ClaimLogOptions)[] = ['name', 'steal', 'locks', 'indexedDB', 'withoutLocks', 'signal']

/**
 * The IndexedDB database of the log `name`.
 *
 * @example
 * logDatabaseName('fleet') // 'tidemark-log-fleet'
 */
export function logDatabaseName(name: string): string {
  return `tidemark-log-${name}`
}

/** The Web Lock a log's writer holds. */
export function logLockName(name: string): string {
  return `tidemark:log:${name}`
}

/**
 * Claims the log `name` for one writer: waits for its Web Lock (or takes it, with `steal`),
 * then raises the writer epoch stored in the log's database by one. Unlike `claimSource`,
 * the name is fixed and nothing is read from `localStorage` or `sessionStorage`, so it works
 * in a worker: it is how one engine per origin (a SharedWorker, or a leader tab's worker)
 * holds the origin's log. Raising the epoch waits for write transactions already under way on
 * the log, so everything a former writer committed is there for the new writer to recover, and
 * nothing it tries later is.
 *
 * @example
 * const claim = await claimLog({ name: 'fleet' })
 * const engine = await openEngine({
 *   windows: tumbling(60_000),
 *   persistence: indexedDbPersistence({ name: claim.database, claim }),
 * })
 * claim.lost.then(() => console.warn('another writer took the log'))
 */
export async function claimLog(options: ClaimLogOptions): Promise<LogClaim> {
  if (typeof options !== 'object' || options === null) throw new TypeError('claimLog needs an options object with a name')
  assertKnownOptions('claimLog', options, CLAIM_LOG_OPTION_KEYS)
  const { name, steal, withoutLocks, signal } = options
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH) {
    throw new RangeError(`claimLog: name must be a non-empty string of at most ${MAX_NAME_LENGTH} characters, got ${String(name)}`)
  }
  if (steal !== undefined && typeof steal !== 'boolean') throw new TypeError(`claimLog: steal must be true or false, got ${String(steal)}`)
  if (withoutLocks !== undefined && withoutLocks !== 'single-tab') {
    throw new RangeError(`claimLog: withoutLocks must be 'single-tab' (or left out), got ${String(withoutLocks)}`)
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('claimLog: signal must be an AbortSignal')
  const factory = options.indexedDB ?? globalThis.indexedDB
  if (factory === undefined) throw new Error(`claimLog("${name}"): no IndexedDB here; pass options.indexedDB`)
  const locks = options.locks ?? (globalThis as { navigator?: { locks?: LogLocks } }).navigator?.locks ?? null
  if (locks === null && withoutLocks === undefined) throw noWebLocksError('claimLog')
  const database = logDatabaseName(name)
  const lock = locks === null ? unlocked() : await hold(locks, logLockName(name), steal === true, signal)
  let epoch: number
  try {
    epoch = await raiseEpoch(factory, database)
  } catch (error) {
    await lock.release()
    throw error
  }
  return {
    name,
    database,
    epoch,
    exclusive: locks !== null,
    stolen: steal === true && locks !== null,
    get held() {
      return lock.held()
    },
    lost: lock.lost,
    release: lock.release,
  }
}

interface HeldLock {
  held(): boolean
  readonly lost: Promise<void>
  release(): Promise<void>
}

function unlocked(): HeldLock {
  let held = true
  return {
    held: () => held,
    lost: new Promise<void>(() => {}),
    async release() {
      held = false
    },
  }
}

/** Waits for (or steals) the lock; resolves once granted, with what ends it. */
function hold(locks: LogLocks, name: string, steal: boolean, signal: AbortSignal | undefined): Promise<HeldLock> {
  return new Promise((resolve, reject) => {
    let granted = false
    let held = false
    let released = false
    let letGo = (): void => {}
    let markLost = (): void => {}
    const lost = new Promise<void>((settle) => {
      markLost = settle
    })
    const options = steal ? { steal: true } : signal === undefined ? {} : { signal }
    const ended = locks.request(name, options, () => {
      granted = true
      held = true
      resolve({
        held: () => held,
        lost,
        async release() {
          if (released) return
          released = true
          letGo()
          await ended.then(ignore, ignore)
        },
      })
      return new Promise<void>((settle) => {
        letGo = settle
      })
    })
    const end = (error: unknown): void => {
      held = false
      if (!granted) reject(error)
      else if (!released) markLost()
    }
    ended.then(
      () => end(new Error(`claimLog: the lock request for ${name} ended without a grant`)),
      (error: unknown) => end(error),
    )
  })
}

/** Raises the stored writer epoch by one in one transaction; resolves with the new epoch once committed. */
async function raiseEpoch(factory: IDBFactory, database: string): Promise<number> {
  const db = await openDatabase(factory, database)
  try {
    const tx = db.transaction('meta', 'readwrite', { durability: 'strict' })
    const done = committed(tx)
    const meta = tx.objectStore('meta')
    const stored = await requested(meta.get(WRITER_EPOCH_KEY))
    const epoch = (typeof stored === 'number' && Number.isSafeInteger(stored) && stored >= 0 ? stored : 0) + 1
    meta.put(epoch, WRITER_EPOCH_KEY)
    await done
    return epoch
  } finally {
    db.close()
  }
}

function ignore(): void {}
