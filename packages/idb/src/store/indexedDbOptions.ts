/** The options of `indexedDbPersistence`, and how they are checked before anything opens. */
import { assertKnownOptions } from '@tidemark/engine/adapter'
import { checkpointPolicy } from '../checkpoint/checkpointPolicy.ts'
import { type ArchivePort, checkArchive } from '../history/archivePort.ts'
import type { CheckpointPolicy } from '../persistence/persistence.ts'

/**
 * Options of `indexedDbPersistence`: only `name` is required.
 *
 * @example
 * indexedDbPersistence({ name: claim.database, claim, durability: 'strict', archive: finalArchive() })
 */
export interface IndexedDbPersistenceOptions {
  /** Database name; one per tab's source, so two tabs never share a log. */
  readonly name: string
  /** Defaults to `globalThis.indexedDB`; pass `new IDBFactory()` from fake-indexeddb in Node. */
  readonly indexedDB?: IDBFactory
  /** Cadence the engine should checkpoint at; defaults to `DEFAULT_CHECKPOINT_EVERY`. */
  readonly checkpointEvery?: Partial<CheckpointPolicy>
  /**
   * The tab's source claim (`claimSource`) or the log's claim (`claimLog`): once it is no
   * longer held, writes are refused at once. A claim with an `epoch` (from `claimLog`) also
   * fences: every write transaction first reads the log's writer epoch and aborts, with
   * `FencedError`, when a later writer raised it; `open()` refuses such a claim too. A source
   * claim is retired (`claim.retire()`: never handed out again) once a finish of `claim.source`
   * commits (before the append resolves), or when `open()` finds one in the log.
   */
  readonly claim?: {
    readonly held: boolean
    readonly epoch?: number
    /** The source of a source claim. */
    readonly source?: string
    /** Retires that source for good (`SourceClaim.retire()`). */
    retire?(): void
  }
  /**
   * Appends made in one synchronous run of code share one transaction (default true): one
   * commit instead of many when a caller ingests several batches in a row. An append after an
   * `await` starts another. Each append still resolves only after its commit.
   */
  readonly coalesce?: boolean
  /**
   * Transaction durability hint (default `'default'`, the browser's choice). `'strict'`
   * waits for the data to reach the disk before `complete`, surviving an OS crash or power
   * loss at the cost of an fsync per commit; `'relaxed'` survives a tab or browser crash.
   */
  readonly durability?: IDBTransactionDurability
  /**
   * The final-window archive, `finalArchive()` from `@tidemark/idb/archive`: final window
   * results kept past `retention`, read with `persistence.archive(query)`. Without it, no
   * history is kept and `archive(query)` rejects.
   */
  readonly archive?: ArchivePort
}

const OPTION_KEYS: readonly (keyof IndexedDbPersistenceOptions)[] = ['name', 'indexedDB', 'checkpointEvery', 'claim', 'coalesce', 'durability', 'archive']
const DURABILITIES: readonly IDBTransactionDurability[] = ['default', 'strict', 'relaxed']

/**
 * Throws a TypeError or RangeError naming the first bad option of `indexedDbPersistence`.
 *
 * @example
 * checkIndexedDbOptions({ name: 'fleet', durability: 'strict' }) // passes
 * checkIndexedDbOptions({ name: '' }) // TypeError: indexedDbPersistence: name must be a non-empty string ...
 */
export function checkIndexedDbOptions(options: IndexedDbPersistenceOptions): void {
  if (typeof options !== 'object' || options === null) throw new TypeError('indexedDbPersistence needs an options object with a name')
  assertKnownOptions('indexedDbPersistence', options, OPTION_KEYS)
  const { name, indexedDB, claim, coalesce, durability } = options
  if (typeof name !== 'string' || name.length === 0) throw new TypeError(`indexedDbPersistence: name must be a non-empty string (the database name), got ${String(name)}`)
  const where = `indexedDbPersistence("${name}")`
  if (indexedDB !== undefined && (typeof indexedDB !== 'object' || indexedDB === null || typeof indexedDB.open !== 'function')) {
    throw new TypeError(`${where}: indexedDB must be an IDBFactory (new IDBFactory() from fake-indexeddb in Node), got ${String(indexedDB)}`)
  }
  if (options.checkpointEvery !== undefined) checkpointPolicy(options.checkpointEvery, `${where}: checkpointEvery`)
  if (claim !== undefined && (typeof claim !== 'object' || claim === null || typeof claim.held !== 'boolean')) {
    throw new TypeError(`${where}: claim must be the SourceClaim from claimSource() or the LogClaim from claimLog(), got ${String(claim)}`)
  }
  if (claim?.epoch !== undefined && !(Number.isSafeInteger(claim.epoch) && claim.epoch >= 1)) {
    throw new RangeError(`${where}: claim.epoch must be an integer >= 1 (the LogClaim from claimLog()), got ${String(claim.epoch)}`)
  }
  if (coalesce !== undefined && typeof coalesce !== 'boolean') throw new TypeError(`${where}: coalesce must be true or false, got ${String(coalesce)}`)
  if (durability !== undefined && !DURABILITIES.includes(durability)) {
    throw new RangeError(`${where}: durability must be 'default', 'strict' or 'relaxed', got ${String(durability)}`)
  }
  checkArchive(options.archive, where)
}
