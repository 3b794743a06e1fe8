import { MAX_NAME_LENGTH } from '@tidemark/engine'
import { messageOf } from '@tidemark/engine/adapter'

/** The part of the Web Locks `LockManager` a claim needs; `navigator.locks` fits. */
export interface SourceLocks {
  /** Web Locks' `request` with `ifAvailable`: the callback gets `null` when another context holds the lock, and the lock lasts until its promise settles. */
  request(name: string, options: { ifAvailable: true }, callback: (lock: unknown) => Promise<void> | undefined): Promise<unknown>
}

/** Where a tab remembers its source id across reloads; `sessionStorage` fits. */
export type SourceMemory = Pick<Storage, 'getItem' | 'setItem'>

/**
 * Options of `claimSource`: only `prefix` is required.
 *
 * @example
 * claimSource({ prefix: 'sensor', storage: null }) // a fresh id on every load
 */
export interface ClaimSourceOptions {
  /** New source ids are `${prefix}-${random}`. */
  readonly prefix: string
  /** Defaults to `navigator.locks`. */
  readonly locks?: SourceLocks
  /** Defaults to `sessionStorage`; `null` remembers nothing (every claim picks a new id). */
  readonly storage?: SourceMemory | null
  /** Ids tried before giving up; default 16. */
  readonly maxAttempts?: number
}

/** A source id this tab alone writes, held through a Web Lock. */
export interface SourceClaim {
  readonly source: string
  /** False once the lock ended: stop writing under `source` at once. */
  readonly held: boolean
  /** Resolves if the lock ends without `release()` (another context stole it, or the lock manager went away). */
  readonly lost: Promise<void>
  /** Lets the lock go; resolves once another tab could take it. */
  release(): Promise<void>
  /**
   * Why the id could not be recalled from or kept in the storage (a sandboxed frame, full or
   * disabled storage), or null. Correctness does not depend on it: the next load of this tab
   * then claims a fresh id instead of reusing this one.
   */
  readonly memoryError: string | null
}

/**
 * Claims a source id for this tab (docs/durability.md, tabs and sources): reuses the id remembered in
 * `sessionStorage` when no other tab holds it (a reload), otherwise picks a fresh one,
 * and holds a Web Lock named after it until `release()` or the tab goes away. Two tabs
 * of one device therefore never write the same source; a duplicated tab, which inherits
 * the session storage, finds the id held and takes another.
 *
 * @example
 * const claim = await claimSource({ prefix: 'dashboard' })
 * const persistence = indexedDbPersistence({ name: `tidemark-${claim.source}`, claim })
 * claim.lost.then(() => showBanner('This tab no longer owns its source'))
 */
export async function claimSource(options: ClaimSourceOptions): Promise<SourceClaim> {
  const { prefix } = options
  if (typeof prefix !== 'string' || prefix.length === 0 || prefix.length > MAX_NAME_LENGTH - 20) {
    throw new RangeError(`claimSource: prefix must be a non-empty string of at most ${MAX_NAME_LENGTH - 20} characters`)
  }
  const locks = options.locks ?? defaultLocks()
  if (locks === undefined) {
    throw new Error('claimSource: this environment has no Web Locks API (navigator.locks); pass options.locks')
  }
  const memory: Memory = { error: null }
  const storage = options.storage === undefined ? defaultStorage(memory) : options.storage
  const memoryKey = `tidemark:source:${prefix}`
  const remembered = recall(storage, memoryKey, memory)
  const maxAttempts = options.maxAttempts ?? 16
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const source =
      attempt === 0 && remembered !== null && remembered.startsWith(`${prefix}-`) && remembered.length <= MAX_NAME_LENGTH
        ? remembered
        : `${prefix}-${randomSuffix()}`
    const claim = await tryClaim(locks, source, memory)
    if (claim !== null) {
      remember(storage, memoryKey, source, memory)
      return claim
    }
  }
  throw new Error(`claimSource: every one of ${maxAttempts} source ids tried was held by another tab`)
}

/** What went wrong with the session storage, for `SourceClaim.memoryError`. */
interface Memory {
  error: string | null
}

/** Takes the lock for `source` if it is free; `null` when another context holds it. */
function tryClaim(locks: SourceLocks, source: string, memory: Memory): Promise<SourceClaim | null> {
  return new Promise((resolve, reject) => {
    let granted = false
    let held = false
    let released = false
    let ended: Promise<unknown> = Promise.resolve()
    let letGo = (): void => {}
    let markLost = (): void => {}
    const lost = new Promise<void>((settle) => {
      markLost = settle
    })
    const claim: SourceClaim = {
      source,
      get held() {
        return held
      },
      get memoryError() {
        return memory.error
      },
      lost,
      async release() {
        if (released) return
        released = true
        letGo()
        await ended.then(ignore, ignore)
      },
    }
    ended = locks.request(`tidemark:source:${source}`, { ifAvailable: true }, (lock) => {
      if (lock === null) {
        resolve(null)
        return undefined
      }
      granted = true
      held = true
      resolve(claim)
      // The lock lasts as long as this promise is pending.
      return new Promise<void>((settle) => {
        letGo = settle
      })
    })
    const end = (error?: unknown): void => {
      held = false
      if (!granted) reject(error)
      else if (!released) markLost()
    }
    ended.then(
      () => end(new Error(`claimSource: the lock request for ${source} ended without an answer`)),
      (error: unknown) => end(error),
    )
  })
}

function defaultLocks(): SourceLocks | undefined {
  return (globalThis as { navigator?: { locks?: SourceLocks } }).navigator?.locks
}

function defaultStorage(memory: Memory): SourceMemory | null {
  try {
    return (globalThis as { sessionStorage?: SourceMemory }).sessionStorage ?? null
  } catch (error) {
    // Sandboxed frames throw SecurityError on access; the tab then picks a fresh id each load.
    memory.error = `sessionStorage is not accessible: ${messageOf(error)}`
    return null
  }
}

function recall(storage: SourceMemory | null, key: string, memory: Memory): string | null {
  try {
    return storage?.getItem(key) ?? null
  } catch (error) {
    memory.error = `the remembered source id could not be read: ${messageOf(error)}`
    return null
  }
}

function remember(storage: SourceMemory | null, key: string, source: string, memory: Memory): void {
  try {
    storage?.setItem(key, source)
  } catch (error) {
    // Full or disabled storage only costs reuse after a reload, never correctness.
    memory.error = `the source id could not be remembered: ${messageOf(error)}`
  }
}


function randomSuffix(): string {
  const words = crypto.getRandomValues(new Uint32Array(2))
  return `${(words[0] as number).toString(36)}${(words[1] as number).toString(36)}`
}

function ignore(): void {}
