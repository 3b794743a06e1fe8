/**
 * The origin's registry of the source ids `claimSource` has handed out, kept in
 * `localStorage` (shared by every tab of the origin, kept across sessions). A new tab
 * session takes over a registered source no tab holds before it makes a new one, so an
 * origin has as many sources (and databases) as it ever had tabs open at once, not one per
 * tab session.
 *
 * One key per source (`tidemark:registry:<source>`, value `{"lastClaimed": ms}`), so tabs
 * registering at the same moment never overwrite each other's entries. A finished source's
 * entry says so (`"finished": true`): it stays listed, for `deleteSource`, and is never claimed.
 */
import { messageOf } from '@tidemark/engine/adapter'

/**
 * Where the registry lives; `localStorage` fits.
 *
 * @example
 * const registry: SourceRegistryStorage = localStorage
 */
export type SourceRegistryStorage = Pick<Storage, 'getItem' | 'setItem' | 'removeItem' | 'key' | 'length'>

/** One registered source. */
export interface RegisteredSource {
  readonly source: string
  /** When a tab last claimed it, ms since epoch (0 when unknown); a later claim always has a larger value. */
  readonly lastClaimed: number
  /** Retired once its source was finished: never claimed again. */
  readonly finished: boolean
}

const KEY_PREFIX = 'tidemark:registry:'

/**
 * The IndexedDB database of `source`: the name to give `indexedDbPersistence`, so that a tab
 * that takes the source over reopens its log, and `deleteSource` finds it.
 *
 * @example
 * sourceDatabaseName('dashboard-k2j9x0') // 'tidemark-dashboard-k2j9x0'
 * indexedDbPersistence({ name: sourceDatabaseName(claim.source), claim }) // the same as name: claim.database
 */
export function sourceDatabaseName(source: string): string {
  return `tidemark-${source}`
}

/** True when `source` is an id `claimSource` makes for `prefix`: `${prefix}-` and a random suffix. */
export function isSourceOf(prefix: string, source: string): boolean {
  return source.startsWith(`${prefix}-`) && /^[0-9a-z]+$/.test(source.slice(prefix.length + 1))
}

/** Reads and writes the registry; every storage failure is kept in `error`, never thrown. */
export class SourceRegistry {
  readonly #storage: SourceRegistryStorage | null
  /** Why the registry could not be read or written, or null. */
  error: string | null = null

  constructor(storage: SourceRegistryStorage | null, error: string | null = null) {
    this.#storage = storage
    this.error = error
  }

  /** The registered sources of `prefix`, most recently claimed first. */
  list(prefix: string): RegisteredSource[] {
    const storage = this.#storage
    if (storage === null) return []
    const found: RegisteredSource[] = []
    try {
      for (let i = 0; i < storage.length; i++) {
        const key = storage.key(i)
        if (key === null || !key.startsWith(KEY_PREFIX)) continue
        const source = key.slice(KEY_PREFIX.length)
        if (isSourceOf(prefix, source)) found.push({ source, ...entryOf(storage.getItem(key)) })
      }
    } catch (error) {
      this.error = `the source registry could not be read: ${messageOf(error)}`
      return []
    }
    return found.sort((a, b) => b.lastClaimed - a.lastClaimed || (a.source < b.source ? -1 : 1))
  }

  /**
   * Whether `source` may be claimed: registered and not finished (never deleted, never retired);
   * null when there is no registry, or it cannot be read.
   */
  claimable(source: string): boolean | null {
    const storage = this.#storage
    if (storage === null) return null
    try {
      const value = storage.getItem(`${KEY_PREFIX}${source}`)
      return value !== null && !entryOf(value).finished
    } catch (error) {
      this.error = `the source registry could not be read: ${messageOf(error)}`
      return null
    }
  }

  /**
   * Records that `source` was claimed at `now`; `finished`, that it is retired (kept for
   * `listSources`, never claimed again).
   */
  record(source: string, now: number, finished?: true): void {
    try {
      this.#storage?.setItem(`${KEY_PREFIX}${source}`, JSON.stringify({ lastClaimed: now, finished }))
    } catch (error) {
      // Full or disabled storage costs reuse by later tab sessions, never correctness; a retirement
      // not kept hands the finished source out again (its events are then refused as finished_source).
      this.error = `the source could not be ${finished ? 'retired' : 'registered'}: ${messageOf(error)}`
    }
  }

  /** Removes `source` from the registry; throws what the storage threw. */
  forget(source: string): void {
    this.#storage?.removeItem(`${KEY_PREFIX}${source}`)
  }
}

function entryOf(value: string | null): { lastClaimed: number; finished: boolean } {
  try {
    const { lastClaimed, finished } = JSON.parse(value ?? '{}') as { lastClaimed?: unknown; finished?: unknown }
    return { lastClaimed: typeof lastClaimed === 'number' && Number.isFinite(lastClaimed) ? lastClaimed : 0, finished: finished === true }
  } catch {
    return { lastClaimed: 0, finished: false }
  }
}

/** The registry over `storage`; when it is undefined, over `localStorage`, or none with the reason where that cannot be used (a sandboxed frame, Node). */
export function sourceRegistry(storage: SourceRegistryStorage | null | undefined): SourceRegistry {
  if (storage !== undefined) return new SourceRegistry(storage)
  try {
    return new SourceRegistry((globalThis as { localStorage?: SourceRegistryStorage }).localStorage ?? null)
  } catch (error) {
    return new SourceRegistry(null, `localStorage is not accessible: ${messageOf(error)}`)
  }
}
