import type { WalOp, WindowResult } from '@tidemark/engine'
import { checkpointPolicy } from '../checkpoint/checkpointPolicy.ts'
import { finishesClaimed, recoveredFinish, retireClaimed, withFinishMark } from './claimRetirement.ts'
import { abortQuietly, committed, ignore, requested } from './idbRequests.ts'
import { FencedError, isFencedError } from '../persistence/fencedError.ts'
import { checkIndexedDbOptions, type IndexedDbPersistenceOptions } from './indexedDbOptions.ts'
import { archiveWrites, errorName, type LogStore, type LogWrite, laneWrites, openDatabase, WRITER_EPOCH_KEY } from './indexedDbSchema.ts'
import type {
  ArchivedChange,
  ArchiveQuery,
  Checkpoint,
  CheckpointPolicy,
  Persistence,
  PersistenceStats,
  RecoveredLog,
} from '../persistence/persistence.ts'
import { markClosed, markOpen } from './openDatabases.ts'
import { isQuotaExceeded, QuotaError } from '../persistence/quotaError.ts'
import { encodeWalRecord } from '../wal/walCodec.ts'
import { WalCatalog } from './walCatalog.ts'
import { isLsn } from './walRecovery.ts'
import { readStoredLog, type StrayKey } from './storedLog.ts'

/** An encoded record waiting for its transaction. */
interface PendingAppend {
  readonly lsn: number
  readonly bytes: Uint8Array<ArrayBuffer>
  readonly finishes: boolean // of the claim's source: the claim is retired once it commits
  resolve(lsn: number): void
  reject(error: unknown): void
}

/**
 * Reads made inside a write transaction before its writes: resolves with the error that refuses
 * them (the transaction then aborts), or null to write.
 */
type WriteGuard = (tx: IDBTransaction) => Promise<Error | null>

/**
 * A `Persistence` over IndexedDB (docs/durability.md). Each journal operation is one columnar
 * record; `append` resolves only after its transaction committed; a checkpoint, the
 * truncation behind it, the late lane and the staged final-window archive (when there is one) commit together;
 * `open()` skips and reports corrupt records.
 *
 * A handle that finds another handle writing its database (an lsn already taken, a checkpoint
 * it did not write) refuses every later write with `FencedError`: its appends would land where
 * recovery never reads, and its checkpoints would truncate records the other acknowledged.
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
  readonly #claim: IndexedDbPersistenceOptions['claim'] | null
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
  /** What showed another handle writing this database; once set, this handle writes nothing more, ever. */
  #anotherWriter: string | null = null
  /** The newest checkpoint key this handle found at open or committed: a newer one is another writer's. */
  #newestCheckpoint = 0
  /** lsns this handle handed out but failed to write, not yet behind a checkpoint of its own: a refused checkpoint names them so. */
  readonly #holes = new Set<number>()
  /** The lsn of a finish of the claim's source whose record failed: durable with the first checkpoint past it, which retires the claim. */
  #failedFinish: number | null = null
  /** Records `open()` found where this library never leaves one (reported corrupt), by store: the next checkpoint deletes them by key. */
  #strays: readonly StrayKey[] = []

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
    if (this.#anotherWriter !== null) {
      throw this.#fence('open() refused; open a new persistence once one handle alone writes this database', this.#anotherWriter)
    }
    this.#state = 'opening'
    this.#lostReason = null
    this.#catalog.reset()
    this.#holes.clear()
    this.#strays = []
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
      if (recoveredFinish(this.#claim, recovered)) retireClaimed(this.#claim) // its tab closed (or its registry failed) before it could
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
    const db = this.#requireWritable('append')
    const lsn = this.#catalog.nextLsn()
    const bytes = encodeWalRecord(lsn, op)
    const committed = new Promise<number>((resolve, reject) => {
      this.#pending.push({ lsn, bytes, finishes: finishesClaimed(this.#claim, op), resolve, reject })
    })
    if (!this.#coalesce) this.#flush(db)
    else if (!this.#flushScheduled) {
      this.#flushScheduled = true
      queueMicrotask(() => this.#flush(db))
    }
    return committed
  }

  async checkpoint(checkpoint: Checkpoint): Promise<void> {
    let db = this.#requireWritable('checkpoint')
    // Taken now, with the state: the late lane and the staged archive changes belong to this checkpoint.
    const write = this.#catalog.planCheckpoint(checkpoint)
    const { upToLsn, bytes, lane, archive } = write
    // Appends made before it settle first: the truncation guard must know which failed or found another writer, however late their aborts fire.
    this.#flush(db)
    const what = `checkpoint at lsn ${upToLsn} was not written`
    await Promise.all(this.#inFlight)
    if (this.#anotherWriter !== null) throw this.#fence(what, this.#anotherWriter)
    db = this.#requireOpen('checkpoint')
    const stores: LogStore[] = ['checkpoints', 'wal']
    const writes: LogWrite[] = [
      (tx) => tx.objectStore('checkpoints').put(bytes.buffer, upToLsn),
      (tx) => tx.objectStore('checkpoints').delete(IDBKeyRange.upperBound(upToLsn, true)),
      (tx) => tx.objectStore('wal').delete(IDBKeyRange.upperBound(upToLsn)),
    ]
    const strays = this.#strays
    for (const { store, key } of strays) writes.push((tx) => tx.objectStore(store).delete(key))
    if (lane !== null) {
      stores.push('lateLane')
      writes.push(...laneWrites(lane))
    }
    if (archive !== null) {
      stores.push('archive', 'meta')
      writes.push(...archiveWrites(archive))
    }
    // The state holds a finish of the claim's source whose record failed: durable from this commit on, which retires the claim.
    const finishes = this.#failedFinish !== null && this.#failedFinish <= upToLsn
    const marked = withFinishMark(this.#claim, finishes, stores, writes)
    await this.#commit(db, marked.stores, marked.writes, what, (tx) => this.#truncationGuard(tx, upToLsn, what))
    if (finishes) {
      this.#failedFinish = null
      retireClaimed(this.#claim)
    }
    this.#catalog.checkpointed(write)
    if (this.#strays === strays) this.#strays = []
    this.#newestCheckpoint = Math.max(this.#newestCheckpoint, upToLsn)
    for (const lsn of this.#holes) if (lsn <= upToLsn) this.#holes.delete(lsn)
  }

  async archive(query?: ArchiveQuery): Promise<readonly WindowResult[]> {
    return this.#catalog.readArchive(query, (keys) => {
      const store = this.#requireOpen('archive').transaction('archive', 'readonly').objectStore('archive')
      return Promise.all(keys.map((key) => requested(store.get([...key]))))
    })
  }

  async putMeta(key: string, value: string): Promise<void> {
    if (key === WRITER_EPOCH_KEY) throw new RangeError(`${this.#label()}: meta key '${WRITER_EPOCH_KEY}' belongs to claimLog; use another key`)
    const db = this.#requireWritable('putMeta')
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
      // The claim, the connection or the right to write may have gone since append() was called.
      if (this.#requireWritable('append') !== db) throw new Error(`${this.#label()}: the database was reopened; ${what} not written`)
      // add, not put: an lsn already present means a second writer, which must not be overwritten.
      const { stores, writes } = withFinishMark(this.#claim, batch.some((p) => p.finishes), ['wal', 'checkpoints'], batch.map((p): LogWrite => (tx) => tx.objectStore('wal').add(p.bytes.buffer, p.lsn)))
      commit = this.#commit(db, stores, writes, `${what} not written`, (tx) => this.#appendGuard(tx, first, `${what} not written`))
    } catch (error) {
      commit = Promise.reject(error)
    }
    // These handlers run in the microtasks after the transaction's complete or abort event, so
    // the fence and the holes are in place before any later transaction's guard reads them.
    const settled = commit.then(
      () => {
        for (const p of batch) this.#catalog.recordStored(p.lsn, p.bytes.length)
        if (batch.some((p) => p.finishes)) retireClaimed(this.#claim) // before anyone hears it is durable
        for (const p of batch) p.resolve(p.lsn)
      },
      (error: unknown) => {
        const taken = first === last ? `lsn ${first} is already in the log` : `an lsn in ${first}-${last} is already in the log`
        const reported = errorName(error) === 'ConstraintError' ? this.#fence(`${what} not written`, taken, error) : error
        if (!isFencedError(reported)) for (const p of batch) this.#holes.add(p.lsn)
        this.#failedFinish ??= batch.find((p) => p.finishes)?.lsn ?? null
        for (const p of batch) p.reject(reported)
      },
    )
    this.#inFlight.add(settled)
    settled.then(() => this.#inFlight.delete(settled))
  }

  async #recover(db: IDBDatabase): Promise<RecoveredLog> {
    const stored = await readStoredLog(db, this.#catalog)
    this.#newestCheckpoint = stored.newestCheckpoint
    this.#strays = stored.strays
    if (this.#epoch !== null && stored.storedEpoch !== this.#epoch) throw new FencedError(this.#label(), this.#epoch, stored.storedEpoch, 'open() refused')
    return this.#catalog.recovered(stored, stored.corrupt)
  }

  /**
   * Runs the writes in one readwrite transaction and resolves only once it committed.
   * A quota failure may surface as a thrown request, a request error or a transaction
   * abort (the request then only says AbortError); all of them become `QuotaError`.
   * With a writer epoch, and then `guard`, the writes wait for their reads and are refused by them.
   */
  async #commit(db: IDBDatabase, stores: LogStore[], writes: readonly LogWrite[], what: string, guard?: WriteGuard): Promise<void> {
    const epoch = this.#epoch
    const scope: LogStore[] = epoch === null || stores.includes('meta') ? stores : [...stores, 'meta']
    const tx = db.transaction(scope, 'readwrite', { durability: this.#durability })
    const done = committed(tx)
    let failure: { readonly error: unknown } | null = null
    let refused: Error | null = null
    const write = (): void => {
      try {
        for (const write of writes) write(tx)
      } catch (error) {
        failure = { error }
        abortQuietly(tx)
      }
    }
    try {
      if (epoch === null && guard === undefined) write()
      else {
        // The checks and the writes share the transaction: a writer that claimed the log since
        // cannot commit in between, and one that claims it later waits for this commit.
        this.#refusal(tx, epoch, guard, what).then(
          (refusal) => {
            if (refusal === null) write()
            else {
              refused = refusal
              abortQuietly(tx)
            }
          },
          // A read that failed aborted the transaction; `done` says why.
          ignore,
        )
      }
      await done
    } catch (error) {
      abortQuietly(tx)
      await done.catch(ignore)
      if (refused !== null) throw refused
      const thrown = (failure as { readonly error: unknown } | null)?.error ?? error
      if (isQuotaExceeded(tx.error) || isQuotaExceeded(thrown)) {
        throw new QuotaError(`${this.#label()}: storage quota exceeded; ${what}`, { cause: tx.error ?? thrown })
      }
      throw thrown
    }
  }

  /** What refuses a transaction's writes: a later writer's epoch, else what `guard` found; null when nothing does. */
  async #refusal(tx: IDBTransaction, epoch: number | null, guard: WriteGuard | undefined, what: string): Promise<Error | null> {
    if (epoch !== null) {
      const stored = await requested(tx.objectStore('meta').get(WRITER_EPOCH_KEY))
      if (stored !== epoch) return new FencedError(this.#label(), epoch, stored, what)
    }
    return guard === undefined ? null : guard(tx)
  }

  /**
   * Refuses an append whose first lsn is at or behind a checkpoint: this handle's own
   * checkpoints are all behind the lsns it hands out after them, so that one is another
   * writer's, and recovery reads only the records after it. One read per transaction.
   */
  async #appendGuard(tx: IDBTransaction, first: number, what: string): Promise<Error | null> {
    const covering = await requested(tx.objectStore('checkpoints').getKey(IDBKeyRange.lowerBound(first)))
    // Found by a transaction that ran while this one waited: it writes nothing either.
    if (this.#anotherWriter !== null) return this.#fence(what, this.#anotherWriter)
    if (covering !== undefined) return this.#fence(what, `lsn ${first} is behind a checkpoint at lsn ${String(covering)} that this handle did not write`)
    return null
  }

  /**
   * Refuses a checkpoint whose truncation would take another writer's work with it: a
   * checkpoint newer than this handle's own (its state is not in this one), or a record it would
   * delete that this handle neither wrote nor recovered (another handle wrote it). Read when the
   * transaction runs, after the appends queued before it settled.
   */
  async #truncationGuard(tx: IDBTransaction, upToLsn: number, what: string): Promise<Error | null> {
    // The store keeps one checkpoint, a few at most: reading every key costs no more than one.
    const keys = (await requested(tx.objectStore('checkpoints').getAllKeys())) as number[]
    if (this.#anotherWriter !== null) return this.#fence(what, this.#anotherWriter)
    // Keys that are not lsns are strays found at open (another handle writes only lsns).
    const foreign = keys.find((key) => isLsn(key) && key > this.#newestCheckpoint)
    if (foreign !== undefined) return this.#fence(what, `a checkpoint at lsn ${foreign} that this handle did not write`)
    // Every record it deletes must be one this handle wrote or recovered: another handle may have
    // written into an lsn left free behind it (its own failed write, or one failed before it opened).
    const written = (await requested(tx.objectStore('wal').getAllKeys(IDBKeyRange.upperBound(upToLsn)))) as number[]
    const taken = written.find((lsn) => !this.#catalog.holds(lsn) && !this.#strays.some((stray) => stray.store === 'wal' && stray.key === lsn))
    if (taken === undefined) return null
    return this.#fence(what, `lsn ${taken}, which this handle ${this.#holes.has(taken) ? 'failed to write' : 'did not write or recover'}, holds another handle's record`)
  }

  /**
   * The error that refuses `what` now that this handle found another handle writing its
   * database (`found` says how; the first finding is kept and named from then on):
   * `FencedError`, so that callers that step down for a later writer's epoch do so here too.
   */
  #fence(what: string, found: string, cause?: unknown): FencedError {
    this.#anotherWriter ??= found
    const anotherWriter = this.#anotherWriter
    return new FencedError(this.#label(), this.#epoch ?? undefined, undefined, what, cause === undefined ? { anotherWriter } : { anotherWriter, cause })
  }

  /** The open database, for a write: refused once this handle found another writer. */
  #requireWritable(operation: string): IDBDatabase {
    const db = this.#requireOpen(operation)
    if (this.#anotherWriter !== null) throw this.#fence(`${operation}() refused`, this.#anotherWriter)
    return db
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
