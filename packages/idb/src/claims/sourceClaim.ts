import { MAX_NAME_LENGTH } from '@tidemark/engine'
import { assertKnownOptions, messageOf } from '@tidemark/engine/adapter'
import { isSourceOf, type SourceRegistry, type SourceRegistryStorage, sourceDatabaseName, sourceRegistry } from './sourceRegistry.ts'
import { type SourceLocks, sourceLockName, sourceLocks } from './webLocks.ts'

/**
 * Where a tab remembers its source id across reloads; `sessionStorage` fits.
 *
 * @example
 * const memory: SourceMemory = sessionStorage
 */
export type SourceMemory = Pick<Storage, 'getItem' | 'setItem'>

/**
 * Options of `claimSource`; only `prefix` is required.
 *
 * @example
 * const options: ClaimSourceOptions = { prefix: 'dashboard' }
 */
export interface ClaimSourceOptions {
  /** New source ids are `${prefix}-${random}`; sources of other prefixes are never touched. */
  readonly prefix: string
  /** Defaults to `navigator.locks`. */
  readonly locks?: SourceLocks
  /** This tab's memory of its id across reloads. Defaults to `sessionStorage`; `null` remembers nothing. */
  readonly storage?: SourceMemory | null
  /**
   * The origin's registry of claimed sources, shared by its tabs. Defaults to `localStorage`;
   * `null` keeps none (every new tab session then makes a new source and database).
   */
  readonly registry?: SourceRegistryStorage | null
  /** New ids tried before giving up, after the remembered and registered ones; default 16. */
  readonly maxAttempts?: number
  /**
   * What to do where there are no Web Locks (a page on plain http from a LAN address is not a
   * secure context, and browsers give it no `navigator.locks`). Unset: `claimSource` throws an
   * error naming the cause and the fix. `'single-tab'`: claim without a lock, trusting that only
   * one tab of the page runs at a time. If a second tab runs anyway (or the tab is duplicated),
   * both write the same source into the same database: their seqs collide (one tab's events are
   * refused as duplicates of the other's) and both append to one log. Where Web Locks exist, the
   * option changes nothing.
   */
  readonly withoutLocks?: 'single-tab'
}

/**
 * A source id this tab alone writes, held through a Web Lock.
 *
 * @example
 * const claim: SourceClaim = await claimSource({ prefix: 'dashboard' })
 * claim.source // 'dashboard-k2j9x0', the same after a reload
 */
export interface SourceClaim {
  readonly source: string
  /** Its IndexedDB database name (`sourceDatabaseName(source)`): give it to `indexedDbPersistence`. */
  readonly database: string
  /**
   * How it was found: `'reload'` this tab's own id from before a reload (its log resumes),
   * `'takeover'` a registered source no tab held (the log of an earlier tab session resumes),
   * `'new'` a new one.
   */
  readonly reuse: 'reload' | 'takeover' | 'new'
  /** True when held through a Web Lock; false for a claim made with `withoutLocks: 'single-tab'`. */
  readonly exclusive: boolean
  /** False once the lock ended: stop writing under `source` at once. */
  readonly held: boolean
  /** Resolves if the lock ends without `release()` (another context stole it, or the lock manager went away). */
  readonly lost: Promise<void>
  /** Lets the lock go; resolves once another tab could take it. */
  release(): Promise<void>
  /**
   * Retires the source for good, once it is finished (`engine.finishSource(claim.source)`
   * resolved): no later claim, in any tab, hands it out again, neither as a takeover nor as this
   * tab's reload. `listSources` still lists it (`finished: true`) so that `deleteSource` can
   * remove its database once your server has its data. The claim stays held until `release()`.
   * `indexedDbPersistence` given this claim calls it itself when it commits the finish of
   * `claim.source` (before `finishSource` resolves), and when it opens a log holding one; so does
   * `connectEngine` of `@tidemark/worker` given it. Call it yourself where the engine logs
   * elsewhere (`memoryPersistence`). A registry or memory that cannot be written is reported in
   * `memoryError`.
   *
   * @example
   * await engine.finishSource(claim.source) // engine: created with memoryPersistence()
   * claim.retire()
   */
  retire(): void
  /**
   * Why the id could not be recalled from or kept in the session storage or the registry (a
   * sandboxed frame, full or disabled storage), or null. Correctness does not depend on it: the
   * next load of this tab cannot recall the id and claims as a new tab session does (a registered
   * source no tab holds, which may be this one, else a new id).
   */
  readonly memoryError: string | null
}

const CLAIM_OPTION_KEYS: readonly (keyof ClaimSourceOptions)[] = ['prefix', 'locks', 'storage', 'registry', 'maxAttempts', 'withoutLocks']

/** Sources claimed in this page and not released: the only ones a lock-less page knows are in use. */
export const claimedHere = new Set<string>()

/**
 * Claims a source id for this tab (docs/durability.md, tabs and sources) and holds a Web Lock named after it until
 * `release()` or the tab goes away, so two tabs never write the same source. In order:
 *
 * 1. the id this tab remembered in `sessionStorage` (a reload), when no other tab holds it and
 *    its source was neither deleted (`deleteSource`) nor finished since: it is still in the
 *    registry, not retired (without a registry, the memory is trusted);
 * 2. a source in the origin's registry (`localStorage`) that no tab holds, the most recently
 *    claimed first: a new tab session takes over the source, and so the database, of a tab
 *    session that ended, and its log and `seq` resume (`engine.nextSeq`). A finished source
 *    (`claim.retire()`) is never taken over;
 * 3. a new id `${prefix}-${random}`, added to the registry.
 *
 * A duplicated tab, which inherits the session storage, finds its id held and goes on to 2.
 * Sources no longer needed are removed with `deleteSource` (see `listSources`).
 * Without Web Locks (plain http on a LAN address: not a secure context) it throws an error
 * naming the cause and the fix, unless `withoutLocks: 'single-tab'` accepts the risk.
 *
 * @example
 * const claim = await claimSource({ prefix: 'dashboard' })
 * const persistence = indexedDbPersistence({ name: claim.database, claim })
 * claim.lost.then(() => showBanner('This tab no longer owns its source'))
 */
export async function claimSource(options: ClaimSourceOptions): Promise<SourceClaim> {
  if (typeof options !== 'object' || options === null) throw new TypeError('claimSource needs an options object with a prefix')
  assertKnownOptions('claimSource', options, CLAIM_OPTION_KEYS)
  const { prefix } = options
  if (typeof prefix !== 'string' || prefix.length === 0 || prefix.length > MAX_NAME_LENGTH - 20) {
    throw new RangeError(`claimSource: prefix must be a non-empty string of at most ${MAX_NAME_LENGTH - 20} characters`)
  }
  const maxAttempts = options.maxAttempts ?? 16
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1) throw new RangeError(`claimSource: maxAttempts must be an integer >= 1, got ${String(maxAttempts)}`)
  // Last: every option's value is checked before the environment is.
  const locks = sourceLocks(options, 'claimSource')
  const memory: Memory = { error: null }
  const storage = options.storage === undefined ? defaultStorage(memory) : options.storage
  const registry = sourceRegistry(options.registry)
  const memoryKey = `tidemark:source:${prefix}`
  const remembered = recall(storage, memoryKey, memory)
  const mine = remembered !== null && isSourceOf(prefix, remembered) && remembered.length <= MAX_NAME_LENGTH ? remembered : null
  const reloaded = mine !== null && reclaimable(mine, registry) ? mine : null
  const listed = registry.list(prefix)
  const registered = listed.filter((r) => !r.finished && r.source !== reloaded).map((r) => r.source)
  // Strictly after every claim listed, so claims made within one millisecond keep their order.
  const stamp = Math.max(Date.now(), (listed[0]?.lastClaimed ?? 0) + 1)
  const finish = (claim: BareClaim): SourceClaim => {
    const { source } = claim
    remember(storage, memoryKey, source, memory)
    registry.record(source, stamp)
    memory.error ??= registry.error
    return Object.assign(claim, {
      // Finished in the registry, and no longer this tab's remembered id.
      retire() {
        registry.record(source, stamp, true)
        memory.error ??= registry.error
        if (recall(storage, memoryKey, memory) === source) remember(storage, memoryKey, '', memory)
      },
    })
  }
  if (locks === null) {
    // withoutLocks: 'single-tab': this tab's id after a reload, else the last tab session's.
    const mine = reloaded !== null && !claimedHere.has(reloaded) ? reloaded : null
    const source = mine ?? registered.find((s) => !claimedHere.has(s)) ?? `${prefix}-${randomSuffix()}`
    return finish(unlockedClaim(source, source === mine ? 'reload' : registered.includes(source) ? 'takeover' : 'new', memory))
  }
  const known: [string, SourceClaim['reuse']][] = [
    ...(reloaded === null ? [] : [[reloaded, 'reload'] as [string, SourceClaim['reuse']]]),
    ...registered.map((source): [string, SourceClaim['reuse']] => [source, 'takeover']),
  ]
  for (const [source, reuse] of known) {
    const claim = await tryClaim(locks, source, reuse, memory)
    if (claim === null) continue
    // Read again under its lock: the tab that held it may have finished (or deleted) it since it was listed.
    if (registry.claimable(source) !== false) return finish(claim)
    await claim.release()
  }
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const claim = await tryClaim(locks, `${prefix}-${randomSuffix()}`, 'new', memory)
    if (claim !== null) return finish(claim)
  }
  throw new Error(`claimSource: every one of ${maxAttempts} source ids tried was held by another tab`)
}

/**
 * Whether the source this tab remembers was neither deleted nor finished since: it is still
 * registered (`deleteSource` forgets a source once its database is gone) and not retired. A
 * deleted source must not come back as a reload: its seqs would start again at 1 in a fresh
 * database, and peers that hold its old events would drop the new ones as duplicates; a finished
 * one would refuse every event. Without a registry to ask, the memory is trusted: a page may name
 * its source before the source has a database (`registry: null`, a remembered id given through
 * `storage`); a finished source is forgotten from the memory instead.
 */
function reclaimable(source: string, registry: SourceRegistry): boolean {
  return registry.claimable(source) ?? true
}

/** A claim before `claimSource` gives it its `retire()`. */
type BareClaim = Omit<SourceClaim, 'retire'>

/** What went wrong with the session storage, for `SourceClaim.memoryError`. */
interface Memory {
  error: string | null
}

/** A claim with no lock behind it (`withoutLocks: 'single-tab'`): held until released, never lost. */
function unlockedClaim(source: string, reuse: SourceClaim['reuse'], memory: Memory): BareClaim {
  let held = true
  claimedHere.add(source)
  return {
    source,
    database: sourceDatabaseName(source),
    reuse,
    exclusive: false,
    get held() {
      return held
    },
    get memoryError() {
      return memory.error
    },
    lost: new Promise<void>(() => {}),
    async release() {
      held = false
      claimedHere.delete(source)
    },
  }
}

/** Takes the lock for `source` if it is free; `null` when another context holds it. */
function tryClaim(locks: SourceLocks, source: string, reuse: SourceClaim['reuse'], memory: Memory): Promise<BareClaim | null> {
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
    const claim: BareClaim = {
      source,
      database: sourceDatabaseName(source),
      reuse,
      exclusive: true,
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
        claimedHere.delete(source)
        letGo()
        await ended.then(ignore, ignore)
      },
    }
    ended = locks.request(sourceLockName(source), { ifAvailable: true }, (lock) => {
      if (lock === null) {
        resolve(null)
        return undefined
      }
      granted = true
      held = true
      claimedHere.add(source)
      resolve(claim)
      // The lock lasts as long as this promise is pending.
      return new Promise<void>((settle) => {
        letGo = settle
      })
    })
    const end = (error?: unknown): void => {
      held = false
      claimedHere.delete(source)
      if (!granted) reject(error)
      else if (!released) markLost()
    }
    ended.then(
      () => end(new Error(`claimSource: the lock request for ${source} ended without an answer`)),
      (error: unknown) => end(error),
    )
  })
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
