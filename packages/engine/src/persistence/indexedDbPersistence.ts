import { type DBSchema, type IDBPDatabase, type IDBPTransaction, wrap } from 'idb'
import type { StreamEvent } from '../event.ts'
import { checkpointPolicy } from './checkpointPolicy.ts'
import type { Checkpoint, CheckpointPolicy, CorruptRecord, Persistence, PersistenceStats, RecoveredLog } from './persistence.ts'
import { isQuotaExceeded, QuotaError } from './quotaError.ts'
import { encodeCheckpoint, encodeWalBatch } from './walCodec.ts'
import { WalLedger } from './walLedger.ts'
import { readCheckpoint, readTail } from './walRecovery.ts'

/**
 * IndexedDB schema version. v1 held the log alone (`wal`, `checkpoints`, `meta`);
 * v2 added `lateLane` and `archive` (final windows). Record formats are versioned
 * separately, inside each record (see walCodec.ts).
 */
export const SCHEMA_VERSION = 2

/** Stores keyed out of line: log records by lsn, checkpoints by their upToLsn. Values are bytes. */
interface TidemarkSchema extends DBSchema {
  wal: { key: number; value: unknown }
  checkpoints: { key: number; value: unknown }
  lateLane: { key: IDBValidKey; value: unknown }
  archive: { key: IDBValidKey; value: unknown }
  meta: { key: string; value: unknown }
}

type LogStore = 'wal' | 'checkpoints'
type LogWrite = IDBPTransaction<TidemarkSchema, LogStore[], 'readwrite'>

export interface IndexedDbPersistenceOptions {
  /** Database name; one per tab's source, so two tabs never share a log. */
  readonly name: string
  /** Defaults to `globalThis.indexedDB`; pass `new IDBFactory()` from fake-indexeddb in Node. */
  readonly indexedDB?: IDBFactory
  /** Cadence the engine should checkpoint at; defaults to `DEFAULT_CHECKPOINT_EVERY`. */
  readonly checkpointEvery?: Partial<CheckpointPolicy>
  /** The tab's source claim: once it is no longer held, writes are refused at once. */
  readonly claim?: { readonly held: boolean }
}

/**
 * A `Persistence` over IndexedDB (DESIGN §5). Each batch is one columnar record;
 * `append` resolves only after its transaction committed; a checkpoint and the
 * truncation behind it commit together; `open()` skips and reports corrupt records.
 *
 * The `idb` wrapper needs the IndexedDB interfaces as globals (`IDBDatabase`,
 * `IDBKeyRange`, ...): browsers have them; in Node, `import 'fake-indexeddb/auto'`.
 *
 * @example
 * const persistence = indexedDbPersistence({ name: `tidemark-${claim.source}` })
 * const { checkpoint, tail, corrupt } = await persistence.open()
 * const lsn = await persistence.append(batch) // committed once this resolves
 */
export function indexedDbPersistence(options: IndexedDbPersistenceOptions): Persistence {
  const factory = options.indexedDB ?? globalThis.indexedDB
  if (factory === undefined) {
    throw new Error(
      `indexedDbPersistence("${options.name}"): no IndexedDB here; pass options.indexedDB (in Node, new IDBFactory() from fake-indexeddb) or use memoryPersistence()`,
    )
  }
  if (typeof IDBDatabase === 'undefined' || typeof IDBKeyRange === 'undefined') {
    throw new Error(
      `indexedDbPersistence("${options.name}"): the idb package needs the IndexedDB interfaces (IDBDatabase, IDBKeyRange, ...) as globals; in Node, import 'fake-indexeddb/auto' first`,
    )
  }
  return new IndexedDbPersistence(options.name, factory, checkpointPolicy(options.checkpointEvery), options.claim ?? null)
}

class IndexedDbPersistence implements Persistence {
  readonly checkpointEvery: CheckpointPolicy
  readonly #name: string
  readonly #factory: IDBFactory
  readonly #claim: { readonly held: boolean } | null
  readonly #ledger = new WalLedger()
  #state: 'closed' | 'opening' | 'open' = 'closed'
  #db: IDBPDatabase<TidemarkSchema> | null = null
  /** Why the database went away without `close()`, for the next error message. */
  #lostReason: string | null = null

  constructor(name: string, factory: IDBFactory, checkpointEvery: CheckpointPolicy, claim: { readonly held: boolean } | null) {
    this.#name = name
    this.#factory = factory
    this.#claim = claim
    this.checkpointEvery = checkpointEvery
  }

  async open(): Promise<RecoveredLog> {
    if (this.#state !== 'closed') throw new Error(`${this.#label()}: already ${this.#state}; close() it first`)
    this.#state = 'opening'
    this.#lostReason = null
    this.#ledger.reset()
    let db: IDBPDatabase<TidemarkSchema>
    try {
      db = await openDatabase(this.#factory, this.#name)
    } catch (error) {
      this.#state = 'closed'
      throw error
    }
    // Another tab upgrading the schema needs this connection gone; later writes then fail clearly.
    db.addEventListener('versionchange', () => this.#lose(db, 'another connection upgraded the database schema'))
    db.addEventListener('close', () => this.#lose(db, 'the browser closed the database'))
    try {
      const recovered = await this.#recover(db)
      if (this.#lostReason !== null) throw new Error(`${this.#label()}: ${this.#lostReason} while opening`)
      this.#db = db
      this.#state = 'open'
      return recovered
    } catch (error) {
      db.close()
      this.#state = 'closed'
      throw error
    }
  }

  async append(events: readonly StreamEvent[]): Promise<number> {
    const db = this.#requireOpen('append')
    const lsn = this.#ledger.nextLsn()
    const bytes = encodeWalBatch(lsn, events)
    try {
      // add, not put: an lsn already present means a second writer, which must not be overwritten.
      await this.#commit(db, ['wal'], [(tx) => tx.objectStore('wal').add(bytes.buffer, lsn)], `batch lsn ${lsn}`)
    } catch (error) {
      if (errorName(error) === 'ConstraintError') {
        throw new Error(`${this.#label()}: lsn ${lsn} is already in the log, so another handle writes to this database`, {
          cause: error,
        })
      }
      throw error
    }
    this.#ledger.recordStored(lsn, bytes.length)
    return lsn
  }

  async checkpoint(checkpoint: Checkpoint): Promise<void> {
    const db = this.#requireOpen('checkpoint')
    const { upToLsn } = checkpoint
    this.#ledger.requireCheckpointAt(upToLsn)
    const bytes = encodeCheckpoint(checkpoint)
    await this.#commit(
      db,
      ['checkpoints', 'wal'],
      [
        (tx) => tx.objectStore('checkpoints').put(bytes.buffer, upToLsn),
        (tx) => tx.objectStore('checkpoints').delete(IDBKeyRange.upperBound(upToLsn, true)),
        (tx) => tx.objectStore('wal').delete(IDBKeyRange.upperBound(upToLsn)),
      ],
      `checkpoint at lsn ${upToLsn}`,
    )
    this.#ledger.recordCheckpoint(upToLsn)
  }

  stats(): PersistenceStats {
    return this.#ledger.stats()
  }

  async close(): Promise<void> {
    const db = this.#db
    this.#db = null
    this.#state = 'closed'
    // Transactions already started still commit; IndexedDB closes after them.
    db?.close()
  }

  async #recover(db: IDBPDatabase<TidemarkSchema>): Promise<RecoveredLog> {
    const tx = db.transaction(['checkpoints', 'wal'], 'readonly')
    const checkpoints = tx.objectStore('checkpoints')
    const corrupt: CorruptRecord[] = []
    let checkpoint: Checkpoint | null = null
    const checkpointKeys = await checkpoints.getAllKeys()
    for (let k = checkpointKeys.length - 1; k >= 0 && checkpoint === null; k--) {
      const key = checkpointKeys[k] as number
      this.#ledger.observeLsn(key)
      const read = readCheckpoint({ key, value: await checkpoints.get(key) })
      if (read.ok) checkpoint = read.checkpoint
      else corrupt.push(read.corrupt)
    }
    if (checkpoint !== null) this.#ledger.observeCheckpoint(checkpoint.upToLsn)
    const wal = tx.objectStore('wal')
    const after = IDBKeyRange.lowerBound(checkpoint?.upToLsn ?? 0, true)
    const [values, keys] = await Promise.all([wal.getAll(after), wal.getAllKeys(after)])
    await tx.done
    const records = keys.map((key, i) => ({ key, value: values[i] }))
    for (const { key, value } of records) this.#ledger.recordStored(key, byteLength(value))
    const tail = readTail(records, corrupt)
    this.#ledger.recordCorrupt(corrupt.length)
    return { checkpoint, tail, corrupt }
  }

  /**
   * Runs the writes in one readwrite transaction and resolves only once it committed.
   * A quota failure may surface as a thrown request, a request error or a transaction
   * abort (the request then only says AbortError); all of them become `QuotaError`.
   */
  async #commit(
    db: IDBPDatabase<TidemarkSchema>,
    stores: LogStore[],
    writes: readonly ((tx: LogWrite) => Promise<unknown>)[],
    what: string,
  ): Promise<void> {
    const tx = db.transaction(stores, 'readwrite')
    const pending: Promise<unknown>[] = [tx.done]
    try {
      for (const write of writes) pending.push(write(tx))
      await Promise.all(pending)
    } catch (error) {
      // A write that threw leaves earlier requests to fail with AbortError; nobody awaits them now.
      for (const request of pending) request.catch(ignore)
      try {
        tx.abort()
      } catch {
        // Already aborted or finished: nothing was committed, or the error came after commit.
      }
      await tx.done.catch(ignore)
      if (isQuotaExceeded(tx.error) || isQuotaExceeded(error)) {
        throw new QuotaError(`${this.#label()}: storage quota exceeded; ${what} was not written`, { cause: tx.error ?? error })
      }
      throw error
    }
  }

  #requireOpen(operation: string): IDBPDatabase<TidemarkSchema> {
    if (this.#claim?.held === false) throw new Error(`${this.#label()}: this tab no longer holds its source claim; ${operation}() refused`)
    if (this.#db !== null) return this.#db
    const why = this.#lostReason === null ? `call open() before ${operation}()` : `${this.#lostReason}; open() again`
    throw new Error(`${this.#label()}: ${why}`)
  }

  #lose(db: IDBPDatabase<TidemarkSchema>, reason: string): void {
    db.close()
    if (this.#state === 'opening') this.#lostReason = reason
    if (this.#db !== db) return
    this.#db = null
    this.#state = 'closed'
    this.#lostReason = reason
  }

  #label(): string {
    return `indexedDbPersistence("${this.#name}")`
  }
}

function openDatabase(factory: IDBFactory, name: string): Promise<IDBPDatabase<TidemarkSchema>> {
  // idb's openDB always opens through the global indexedDB; opening through the given
  // factory and wrapping the request keeps an injected IDBFactory working.
  const request = factory.open(name, SCHEMA_VERSION)
  request.addEventListener('upgradeneeded', (event) => {
    upgradeSchema(wrap(request.result) as unknown as IDBPDatabase<TidemarkSchema>, event.oldVersion)
  })
  return wrap(request).then(
    (db) => db as unknown as IDBPDatabase<TidemarkSchema>,
    (error: unknown) => {
      if (errorName(error) === 'VersionError') {
        throw new Error(`indexedDbPersistence("${name}"): the database has a schema newer than ${SCHEMA_VERSION}`, {
          cause: error,
        })
      }
      throw error
    },
  )
}

/** Brings any older schema up to SCHEMA_VERSION, one step per version, keeping stored records. */
function upgradeSchema(db: IDBPDatabase<TidemarkSchema>, oldVersion: number): void {
  if (oldVersion < 1) {
    db.createObjectStore('wal')
    db.createObjectStore('checkpoints')
    db.createObjectStore('meta')
  }
  if (oldVersion < 2) {
    db.createObjectStore('lateLane')
    db.createObjectStore('archive')
  }
}

function byteLength(value: unknown): number {
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) return value.byteLength
  return 0
}

function errorName(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { name?: unknown }).name : undefined
}

function ignore(): void {}
