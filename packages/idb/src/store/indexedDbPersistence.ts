import type { WalOp, WindowResult } from '@tidemark/engine'
import { checkpointPolicy } from '../checkpoint/checkpointPolicy.ts'
import { committed, requested } from './idbRequests.ts'
import { FencedError } from './fencedError.ts'
import { checkIndexedDbOptions, type IndexedDbPersistenceOptions } from './indexedDbOptions.ts'
import { archiveWrites, errorName, type LogStore, type LogWrite, laneWrites, openDatabase, WRITER_EPOCH_KEY } from './indexedDbSchema.ts'
import type {
  ArchivedChange,
  ArchiveQuery,
  Checkpoint,
  CheckpointPolicy,
  CorruptRecord,
  Persistence,
  PersistenceStats,
  RecoveredLog,
} from './persistence.ts'
import { markClosed, markOpen } from './openDatabases.ts'
import { isQuotaExceeded, QuotaError } from './quotaError.ts'
import { encodeWalRecord } from '../wal/walCodec.ts'
import { WalCatalog } from '../wal/walCatalog.ts'
import { readCheckpoint } from '../wal/walRecovery.ts'

/** An encoded record waiting for its transaction. */
interface PendingAppend {
  readonly lsn: number
  readonly bytes: Uint8Array<ArrayBuffer>
  resolve(lsn: number): void
  reject(error: unknown): void
}

/**
 * A `Persistence` over IndexedDB (docs/durability.md). Each journal operation is one columnar
 * record; `append` resolves only after its transaction committed; a checkpoint, the
 * truncation behind it, the late lane and the staged final-window archive (when there is one) commit together;
 * `open()` skips and reports corrupt records.
 *
 * Key ranges need `IDBKeyRange` as a global: browsers have it; in Node,
 * `import 'fake-indexeddb/auto'`.
 *
 * @example
 * const claim = await claimSource({ prefix: 'dashboard' })
 * const persistence = indexedDbPersistence({ name: claim.database, claim, archive: finalArchive() })
 * const engine = await openEngine({ windows: tumbling(60_000), persistence })
 * const history = await persistence.archive({ key: 'temp' }) // final windows, also past retention
 */
export function indexedDbPersistence(options: IndexedDbPersistenceOptions): Persistence {
  checkIndexedDbOptions(options)
  const factory = options.indexedDB ?? globalThis.indexedDB
  if (factory === undefined) {
    throw new Error(
      `indexedDbPersistence("${options.name}"): no IndexedDB here; pass options.indexedDB (in Node, new IDBFactory() from fake-indexeddb) or use memoryPersistence() from @tidemark/idb/memory`,
    )
  }
  if (typeof IDBKeyRange === 'undefined') {
    throw new Error(`indexedDbPersistence("${options.name}"): IDBKeyRange is not a global here; in Node, import 'fake-indexeddb/auto' first`)
  }
  return new IndexedDbPersistence(options, factory, checkpointPolicy(options.checkpointEvery))
}

class IndexedDbPersistence implements Persistence {
  readonly checkpointEvery: CheckpointPolicy
  readonly #name: string
  readonly #factory: IDBFactory
  readonly #claim: { readonly held: boolean } | null
  /** The writer epoch every write transaction checks; null without a fencing claim. */
  readonly #epoch: number | null
  readonly #coalesce: boolean
  readonly #durability: IDBTransactionDurability
  readonly #catalog: WalCatalog
  /** Present only with an archive, so that openEngine stages final windows only then. */
  declare readonly archiveFinal?: (change: ArchivedChange) => void
  /** Encoded appends not yet handed to a transaction (coalescing). */
  #pending: PendingAppend[] = []
  #flushScheduled = false
  /** Commits under way, for `close()` to wait on. */
  readonly #inFlight = new Set<Promise<void>>()
  #state: 'closed' | 'opening' | 'open' = 'closed'
  #db: IDBDatabase | null = null
  /** Why the database went away without `close()`, for the next error message. */
  #lostReason: string | null = null

  constructor(options: IndexedDbPersistenceOptions, factory: IDBFactory, checkpointEvery: CheckpointPolicy) {
    this.#name = options.name
    const archive = options.archive ?? null
    this.#catalog = new WalCatalog(this.#label(), archive)
    if (archive !== null) this.archiveFinal = (change) => archive.stage(change)
    this.#factory = factory
    this.#claim = options.claim ?? null
    this.#epoch = options.claim?.epoch ?? null
    this.#coalesce = options.coalesce ?? true
    this.#durability = options.durability ?? 'default'
    this.checkpointEvery = checkpointEvery
  }

  async open(): Promise<RecoveredLog> {
    if (this.#state !== 'closed') throw new Error(`${this.#label()}: already ${this.#state}; close() it first`)
    this.#state = 'opening'
    this.#lostReason = null
    this.#catalog.reset()
    let db: IDBDatabase
    try {
      db = await openDatabase(this.#factory, this.#name)
    } catch (error) {
      this.#state = 'closed'
      throw error
    }
    // Another tab upgrading the schema (or deleting the database) needs this connection gone; later writes then fail clearly.
    db.addEventListener('versionchange', (event) =>
      this.#lose(db, event.newVersion === null ? 'another connection deleted the database' : 'another connection upgraded the database schema'),
    )
    db.addEventListener('close', () => this.#lose(db, 'the browser closed the database'))
    try {
      const recovered = await this.#recover(db)
      if (this.#lostReason !== null) throw new Error(`${this.#label()}: ${this.#lostReason} while opening`)
      this.#db = db
      this.#state = 'open'
      markOpen(this.#name)
      return recovered
    } catch (error) {
      db.close()
      this.#state = 'closed'
      throw error
    }
  }

  async append(op: WalOp): Promise<number> {
    const db = this.#requireOpen('append')
    const lsn = this.#catalog.nextLsn()
    const bytes = encodeWalRecord(lsn, op)
    const committed = new Promise<number>((resolve, reject) => {
      this.#pending.push({ lsn, bytes, resolve, reject })
    })
    if (!this.#coalesce) this.#flush(db)
    else if (!this.#flushScheduled) {
      this.#flushScheduled = true
      queueMicrotask(() => this.#flush(db))
    }
    return committed
  }

  async checkpoint(checkpoint: Checkpoint): Promise<void> {
    const db = this.#requireOpen('checkpoint')
    // Taken now, with the state: the late lane and the staged archive changes belong to this checkpoint.
    const write = this.#catalog.planCheckpoint(checkpoint)
    const { upToLsn, bytes, lane, archive } = write
    // Appends made before this call get their transaction first: transactions over one store run in creation order.
    this.#flush(db)
    const stores: LogStore[] = ['checkpoints', 'wal']
    const writes: LogWrite[] = [
      (tx) => tx.objectStore('checkpoints').put(bytes.buffer, upToLsn),
      (tx) => tx.objectStore('checkpoints').delete(IDBKeyRange.upperBound(upToLsn, true)),
      (tx) => tx.objectStore('wal').delete(IDBKeyRange.upperBound(upToLsn)),
    ]
    if (lane !== null) {
      stores.push('lateLane')
      writes.push(...laneWrites(lane))
    }
    if (archive !== null) {
      stores.push('archive', 'meta')
      writes.push(...archiveWrites(archive))
    }
    await this.#commit(db, stores, writes, `checkpoint at lsn ${upToLsn} was not written`)
    this.#catalog.checkpointed(write)
  }

  async archive(query?: ArchiveQuery): Promise<readonly WindowResult[]> {
    return this.#catalog.readArchive(query, (keys) => {
      const store = this.#requireOpen('archive').transaction('archive', 'readonly').objectStore('archive')
      return Promise.all(keys.map((key) => requested(store.get([...key]))))
    })
  }

  async putMeta(key: string, value: string): Promise<void> {
    if (key === WRITER_EPOCH_KEY) throw new RangeError(`${this.#label()}: meta key '${WRITER_EPOCH_KEY}' belongs to claimLog; use another key`)
    const db = this.#requireOpen('putMeta')
    await this.#commit(db, ['meta'], [(tx) => tx.objectStore('meta').put(value, key)], `meta ${key} was not written`)
  }

  get lastLsn(): number {
    return this.#catalog.lastLsn
  }

  stats(): PersistenceStats {
    return this.#catalog.stats()
  }

  async close(): Promise<void> {
    const db = this.#db
    if (db !== null) {
      this.#flush(db)
      markClosed(this.#name)
    }
    this.#db = null
    this.#state = 'closed'
    // Transactions already started still commit; IndexedDB closes after them.
    db?.close()
    await Promise.all(this.#inFlight)
  }

  /** Hands every pending append to one transaction; each resolves with its lsn once it committed. */
  #flush(db: IDBDatabase): void {
    this.#flushScheduled = false
    const batch = this.#pending
    if (batch.length === 0) return
    this.#pending = []
    const first = (batch[0] as PendingAppend).lsn
    const last = (batch[batch.length - 1] as PendingAppend).lsn
    const what = first === last ? `record lsn ${first} was` : `records lsn ${first}-${last} were`
    let commit: Promise<void>
    try {
      // The claim or the connection may have gone since append() was called.
      if (this.#requireOpen('append') !== db) throw new Error(`${this.#label()}: the database was reopened; ${what} not written`)
      // add, not put: an lsn already present means a second writer, which must not be overwritten.
      const writes = batch.map((p): LogWrite => (tx) => tx.objectStore('wal').add(p.bytes.buffer, p.lsn))
      commit = this.#commit(db, ['wal'], writes, `${what} not written`)
    } catch (error) {
      commit = Promise.reject(error)
    }
    const settled = commit.then(
      () => {
        for (const p of batch) this.#catalog.recordStored(p.lsn, p.bytes.length)
        for (const p of batch) p.resolve(p.lsn)
      },
      (error: unknown) => {
        const reported =
          errorName(error) === 'ConstraintError'
            ? new Error(`${this.#label()}: an lsn in ${first}-${last} is already in the log, so another handle writes to this database`, {
                cause: error,
              })
            : error
        for (const p of batch) p.reject(reported)
      },
    )
    this.#inFlight.add(settled)
    settled.then(() => this.#inFlight.delete(settled))
  }

  async #recover(db: IDBDatabase): Promise<RecoveredLog> {
    const tx = db.transaction(['checkpoints', 'wal', 'meta', 'lateLane', 'archive'], 'readonly')
    const done = committed(tx)
    const checkpoints = tx.objectStore('checkpoints')
    const corrupt: CorruptRecord[] = []
    let checkpoint: Checkpoint | null = null
    const checkpointKeys = await requested(checkpoints.getAllKeys())
    for (let k = checkpointKeys.length - 1; k >= 0 && checkpoint === null; k--) {
      const key = checkpointKeys[k] as number
      this.#catalog.observeLsn(key)
      const read = readCheckpoint({ key, value: await requested(checkpoints.get(key)) })
      if (read.ok) checkpoint = read.checkpoint
      else corrupt.push(read.corrupt)
    }
    const wal = tx.objectStore('wal')
    const metaStore = tx.objectStore('meta')
    const laneStore = tx.objectStore('lateLane')
    const [keys, metaValues, metaKeys, laneKeys, laneValues, archiveKeys] = await Promise.all([
      requested(wal.getAllKeys(IDBKeyRange.lowerBound(checkpoint?.upToLsn ?? 0, true))),
      requested(metaStore.getAll()),
      requested(metaStore.getAllKeys()),
      requested(laneStore.getAllKeys()),
      requested(laneStore.getAll()),
      this.#catalog.archiving ? requested(tx.objectStore('archive').getAllKeys()) : [],
    ])
    // One get per record, all in flight at once: in Chromium about twice as fast as one getAll over tens of MB.
    const values = await Promise.all(keys.map((key) => requested(wal.get(key))))
    await done
    const meta = new Map<string, string>()
    let storedEpoch: unknown
    metaKeys.forEach((key, i) => {
      const value = metaValues[i]
      if (key === WRITER_EPOCH_KEY) storedEpoch = value
      else if (typeof key === 'string' && typeof value === 'string') meta.set(key, value)
    })
    if (this.#epoch !== null && storedEpoch !== this.#epoch) throw new FencedError(this.#label(), this.#epoch, storedEpoch, 'open() refused')
    const records = (storedKeys: IDBValidKey[], stored: unknown[]) => storedKeys.map((key, i) => ({ key: key as number, value: stored[i] }))
    return this.#catalog.recovered({ checkpoint, wal: records(keys, values), lateLane: records(laneKeys, laneValues), archiveKeys, meta }, corrupt)
  }

  /**
   * Runs the writes in one readwrite transaction and resolves only once it committed.
   * A quota failure may surface as a thrown request, a request error or a transaction
   * abort (the request then only says AbortError); all of them become `QuotaError`.
   */
  async #commit(db: IDBDatabase, stores: LogStore[], writes: readonly LogWrite[], what: string): Promise<void> {
    const epoch = this.#epoch
    const scope: LogStore[] = epoch === null || stores.includes('meta') ? stores : [...stores, 'meta']
    const tx = db.transaction(scope, 'readwrite', { durability: this.#durability })
    const done = committed(tx)
    let failure: { readonly error: unknown } | null = null
    let fencedBy: { readonly epoch: unknown } | null = null
    const write = (): void => {
      try {
        for (const write of writes) write(tx)
      } catch (error) {
        failure = { error }
        abortQuietly(tx)
      }
    }
    try {
      if (epoch === null) write()
      else {
        // The check and the writes share the transaction: a writer that claimed the log since
        // cannot commit in between, and one that claims it later waits for this commit.
        const check = tx.objectStore('meta').get(WRITER_EPOCH_KEY)
        check.onsuccess = () => {
          if (check.result === epoch) write()
          else {
            fencedBy = { epoch: check.result }
            abortQuietly(tx)
          }
        }
      }
      await done
    } catch (error) {
      abortQuietly(tx)
      await done.catch(ignore)
      const fenced = fencedBy as { readonly epoch: unknown } | null
      if (fenced !== null) throw new FencedError(this.#label(), epoch as number, fenced.epoch, what)
      const thrown = (failure as { readonly error: unknown } | null)?.error ?? error
      if (isQuotaExceeded(tx.error) || isQuotaExceeded(thrown)) {
        throw new QuotaError(`${this.#label()}: storage quota exceeded; ${what}`, { cause: tx.error ?? thrown })
      }
      throw thrown
    }
  }

  #requireOpen(operation: string): IDBDatabase {
    if (this.#claim?.held === false) throw new Error(`${this.#label()}: this tab no longer holds its source claim; ${operation}() refused`)
    if (this.#db !== null) return this.#db
    const why = this.#lostReason === null ? `call open() before ${operation}()` : `${this.#lostReason}; open() again`
    throw new Error(`${this.#label()}: ${why}`)
  }

  #lose(db: IDBDatabase, reason: string): void {
    db.close()
    if (this.#state === 'opening') this.#lostReason = reason
    if (this.#db !== db) return
    markClosed(this.#name)
    this.#db = null
    this.#state = 'closed'
    this.#lostReason = reason
  }

  #label(): string {
    return `indexedDbPersistence("${this.#name}")`
  }
}

function ignore(): void {}

function abortQuietly(tx: IDBTransaction): void {
  try {
    tx.abort()
  } catch {
    // Already aborted or finished: nothing was committed, or the error came after commit.
  }
}
