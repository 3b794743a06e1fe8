/**
 * Listing an origin's sources and deleting the ones it no longer needs.
 *
 * `claimSource` reuses a registered source no tab holds before it makes a new one, so an
 * origin keeps as many sources as it had tabs open at once. Each keeps its database (its
 * write-ahead log) until the app deletes it: only the app knows when a source's data has
 * reached its server, and deleting earlier loses what is not there yet.
 */
import { assertKnownOptions, messageOf } from '@tidemark/engine/adapter'
import { claimedHere } from './sourceClaim.ts'
import { isOpenHere } from '../store/openDatabases.ts'
import { isSourceOf, type SourceRegistryStorage, sourceDatabaseName, sourceRegistry } from './sourceRegistry.ts'
import { type SourceLocks, sourceLockName, sourceLocks } from './webLocks.ts'

/**
 * Options of `listSources` and `deleteSource`; only `prefix` is required. Give the same
 * `locks` and `registry` as to `claimSource` when you pass those.
 *
 * @example
 * const options: SourceCleanupOptions = { prefix: 'dashboard' }
 */
export interface SourceCleanupOptions {
  /** The `prefix` the sources were claimed with; sources of other prefixes are never touched. */
  readonly prefix: string
  /** Defaults to `navigator.locks`. */
  readonly locks?: SourceLocks
  /** Defaults to `localStorage`. */
  readonly registry?: SourceRegistryStorage | null
  /** Defaults to `globalThis.indexedDB`. */
  readonly indexedDB?: IDBFactory
  /** As in `claimSource`: without Web Locks, only sources claimed in this page count as held. */
  readonly withoutLocks?: 'single-tab'
}

/**
 * One source of the origin, as `listSources` finds it.
 *
 * @example
 * const { source, database, held, finished, lastClaimed }: SourceListing = (await listSources({ prefix: 'dashboard' }))[0]
 */
export interface SourceListing {
  readonly source: string
  /** Its database name (`sourceDatabaseName(source)`). */
  readonly database: string
  /** True while a tab holds its Web Lock (a tab is writing it); such a source is never deleted. */
  readonly held: boolean
  /** In the registry, so a new tab session may take it over unless it is `finished`; false for a database found without a registry entry. */
  readonly registered: boolean
  /** When a tab last claimed it, ms since epoch (0 when unknown). */
  readonly lastClaimed: number
  /**
   * Finished and retired (`claim.retire()`, which the claim's persistence does once it logged
   * `engine.finishSource(claim.source)`): no tab session is handed it again. Delete it once your
   * server has its data. False also for a database found without a registry entry.
   *
   * @example
   * const retired = (await listSources({ prefix: 'dashboard' })).filter((s) => s.finished && !s.held)
   */
  readonly finished: boolean
}

const OPTION_KEYS: readonly (keyof SourceCleanupOptions)[] = ['prefix', 'locks', 'registry', 'indexedDB', 'withoutLocks']

/**
 * The origin's sources of `prefix`: every registered one, and (where the browser lists its
 * databases, `indexedDB.databases()`) every database named like one that the registry does
 * not know, such as those of tab sessions from before the registry. Most recently claimed
 * first; `held` says which a tab is writing now, `finished` which no tab session is handed again.
 *
 * @example
 * for (const { source, held, lastClaimed } of await listSources({ prefix: 'dashboard' })) {
 *   console.log(source, held ? 'in use' : `free since ${new Date(lastClaimed).toISOString()}`)
 * }
 */
export async function listSources(options: SourceCleanupOptions): Promise<SourceListing[]> {
  const { prefix, locks, registry, factory } = resolve(options, 'listSources')
  const listings = new Map<string, SourceListing>()
  for (const { source, lastClaimed, finished } of registry.list(prefix)) {
    listings.set(source, { source, database: sourceDatabaseName(source), held: false, registered: true, lastClaimed, finished })
  }
  if (registry.error !== null) throw new Error(`listSources: ${registry.error}`)
  for (const source of await databaseSources(factory, prefix)) {
    if (!listings.has(source)) listings.set(source, { source, database: sourceDatabaseName(source), held: false, registered: false, lastClaimed: 0, finished: false })
  }
  const held = await heldSources(locks, [...listings.keys()])
  return [...listings.values()].map((listing) => ({ ...listing, held: held.has(listing.source) }))
}

/**
 * Deletes `source`'s database and its registry entry, once the app knows the source's data
 * has reached its server (what is only in this database is lost). Refuses, with an Error and
 * nothing deleted, a source some tab holds (its Web Lock is taken: that tab is writing it;
 * close its engine and `release()` its claim first), a source of another prefix, or a
 * database still open in this page. The source's lock is held while deleting, so no tab can
 * take it over half-deleted.
 *
 * @example
 * for (const { source, held } of await listSources({ prefix: 'dashboard' })) {
 *   if (!held && (await server.hasEverythingFrom(source))) await deleteSource(source, { prefix: 'dashboard' })
 * }
 */
export async function deleteSource(source: string, options: SourceCleanupOptions): Promise<void> {
  const { prefix, locks, registry, factory } = resolve(options, 'deleteSource')
  if (typeof source !== 'string' || !isSourceOf(prefix, source)) {
    throw new RangeError(`deleteSource: ${String(source)} is not a source claimed with prefix '${prefix}'`)
  }
  if (factory === undefined) throw new Error('deleteSource: no IndexedDB here; pass options.indexedDB')
  const database = sourceDatabaseName(source)
  if (isOpenHere(database)) {
    throw new Error(`deleteSource: the database ${database} is open in this page (an engine or persistence not closed); close it first`)
  }
  const erase = async (): Promise<void> => {
    await deleteDatabase(factory, database)
    registry.forget(source)
  }
  if (locks === null) {
    if (claimedHere.has(source)) throw heldError(source)
    await erase()
    return
  }
  let taken = false
  await locks.request(sourceLockName(source), { ifAvailable: true }, async (lock) => {
    if (lock === null) return
    taken = true
    await erase()
  })
  if (!taken) throw heldError(source)
}

function heldError(source: string): Error {
  return new Error(`deleteSource: ${source} is held by a tab (its Web Lock is taken), so it is being written: close that tab's engine and release its claim first`)
}

/** The checked options, with defaults; `locks` null means none, accepted with `withoutLocks: 'single-tab'`. */
function resolve(options: SourceCleanupOptions, where: string) {
  if (typeof options !== 'object' || options === null) throw new TypeError(`${where} needs an options object with a prefix`)
  assertKnownOptions(where, options, OPTION_KEYS)
  const { prefix } = options
  if (typeof prefix !== 'string' || prefix.length === 0) throw new RangeError(`${where}: prefix must be a non-empty string`)
  const locks = sourceLocks(options, where)
  const registry = sourceRegistry(options.registry)
  const factory = options.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB
  return { prefix, locks, registry, factory }
}

/** Sources of `prefix` whose database exists, where the browser can list databases. */
async function databaseSources(factory: IDBFactory | undefined, prefix: string): Promise<string[]> {
  if (factory === undefined || typeof factory.databases !== 'function') return []
  const named = sourceDatabaseName('')
  const sources: string[] = []
  for (const { name } of await factory.databases()) {
    if (name?.startsWith(named) && isSourceOf(prefix, name.slice(named.length))) sources.push(name.slice(named.length))
  }
  return sources
}

/** Which of `sources` a tab holds: from `locks.query()`, else by trying each lock (and letting it go at once). */
async function heldSources(locks: SourceLocks | null, sources: readonly string[]): Promise<Set<string>> {
  if (locks === null) return new Set(sources.filter((source) => claimedHere.has(source)))
  if (locks.query !== undefined) {
    const names = new Set(((await locks.query()).held ?? []).map((lock) => lock.name))
    return new Set(sources.filter((source) => names.has(sourceLockName(source))))
  }
  const held = new Set<string>()
  for (const source of sources) {
    let free = false
    await locks.request(sourceLockName(source), { ifAvailable: true }, (lock) => {
      free = lock !== null
      return undefined
    })
    if (!free) held.add(source)
  }
  return held
}

/** Deletes one database; a connection still open (in this page or another) refuses it. */
function deleteDatabase(factory: IDBFactory, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = factory.deleteDatabase(name)
    request.onsuccess = () => resolve()
    request.onerror = () => reject(new Error(`deleteSource: the database ${name} could not be deleted: ${messageOf(request.error)}`))
    request.onblocked = () => {
      reject(new Error(`deleteSource: the database ${name} is still open (an engine or persistence not closed); close it first, the deletion then completes`))
    }
  })
}
