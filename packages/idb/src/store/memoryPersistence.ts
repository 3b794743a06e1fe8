import type { WalOp } from '@tidemark/engine'
import type { WindowResult } from '@tidemark/engine'
import { encodeCheckpoint } from '../checkpoint/checkpointEnvelope.ts'
import { assertKnownOptions } from '@tidemark/engine/adapter'
import { checkpointPolicy } from '../checkpoint/checkpointPolicy.ts'
import { ARCHIVE_ROTATED_KEY, type ArchiveKey, type ArchivePort, checkArchive, noArchiveError } from '../history/archivePort.ts'
import { LateLaneRecords } from '../history/lateLaneRecords.ts'
import type {
  ArchivedChange,
  ArchiveQuery,
  Checkpoint,
  CheckpointPolicy,
  CorruptRecord,
  LateLaneRecord,
  Persistence,
  PersistenceStats,
  RecoveredLog,
} from './persistence.ts'
import { encodeWalRecord } from '../wal/walCodec.ts'
import { WalCatalog } from '../wal/walCatalog.ts'
import { isCorrupt, readCheckpoint, readLateLaneRecord, readTail } from '../wal/walRecovery.ts'

/**
 * Options of `memoryPersistence`; all optional.
 *
 * @example
 * const engine = await openEngine({ windows: tumbling(60_000), persistence: memoryPersistence({ checkpointEvery: { events: 1_000 } }) })
 */
export interface MemoryPersistenceOptions {
  /** Cadence the engine should checkpoint at; defaults to `DEFAULT_CHECKPOINT_EVERY`. */
  readonly checkpointEvery?: Partial<CheckpointPolicy>
  /** The final-window archive, `finalArchive()` from `@tidemark/idb/archive`; without it `archive(query)` rejects. */
  readonly archive?: ArchivePort
}

/**
 * A `Persistence` that keeps the log in memory: for Node processes that need no
 * durability, and for tests. Records go through the same codecs as on disk, and the log,
 * the late lane and the archive (when there is one) survive `close()` + `open()` on the same
 * handle (but not the process).
 *
 * @example
 * const persistence = memoryPersistence({ archive: finalArchive() })
 * const engine = await openEngine({ windows: tumbling(60_000), persistence })
 * await persistence.archive({ key: 'temp' }) // final windows, also those past retention
 */
export function memoryPersistence(options: MemoryPersistenceOptions = {}): Persistence {
  if (typeof options !== 'object' || options === null) throw new TypeError('memoryPersistence options must be an object')
  assertKnownOptions('memoryPersistence', options, ['checkpointEvery', 'archive'])
  if (options.checkpointEvery !== undefined) checkpointPolicy(options.checkpointEvery, 'memoryPersistence: checkpointEvery')
  checkArchive(options.archive, 'memoryPersistence')
  return new MemoryPersistence(checkpointPolicy(options.checkpointEvery), options.archive ?? null)
}

class MemoryPersistence implements Persistence {
  readonly checkpointEvery: CheckpointPolicy
  readonly #wal = new Map<number, Uint8Array>()
  readonly #meta = new Map<string, string>()
  readonly #lateLaneStore = new Map<number, Uint8Array>()
  /** Archive records by seq. */
  readonly #archiveStore = new Map<number, { readonly key: ArchiveKey; readonly bytes: Uint8Array }>()
  #checkpoint: { readonly key: number; readonly bytes: Uint8Array } | null = null
  readonly #ledger = new WalCatalog()
  readonly #lateLane = new LateLaneRecords()
  readonly #archive: ArchivePort | null
  /** Present only with an archive, so that openEngine stages final windows only then. */
  declare readonly archiveFinal?: (change: ArchivedChange) => void
  #open = false

  constructor(checkpointEvery: CheckpointPolicy, archive: ArchivePort | null) {
    this.checkpointEvery = checkpointEvery
    archive?.attach('memoryPersistence')
    if (archive !== null) this.archiveFinal = (change) => archive.stage(change)
    this.#archive = archive
  }

  async open(): Promise<RecoveredLog> {
    if (this.#open) throw new Error('memoryPersistence: already open; close() it first')
    this.#open = true
    this.#ledger.reset()
    const corrupt: CorruptRecord[] = []
    let checkpoint: Checkpoint | null = null
    if (this.#checkpoint !== null) {
      this.#ledger.observeLsn(this.#checkpoint.key)
      const read = readCheckpoint({ key: this.#checkpoint.key, value: this.#checkpoint.bytes })
      if (read.ok) {
        checkpoint = read.checkpoint
        this.#ledger.observeCheckpoint(checkpoint.upToLsn)
      } else {
        corrupt.push(read.corrupt)
      }
    }
    const after = checkpoint?.upToLsn ?? 0
    const records = [...this.#wal].sort(([a], [b]) => a - b)
    for (const [lsn, bytes] of records) this.#ledger.recordStored(lsn, bytes.length)
    const tail = readTail(
      records.filter(([lsn]) => lsn > after).map(([key, value]) => ({ key, value })),
      corrupt,
    )
    const walCorrupt = corrupt.length
    const lateLane: LateLaneRecord[] = []
    for (const [key, bytes] of [...this.#lateLaneStore].sort(([a], [b]) => a - b)) {
      const read = readLateLaneRecord(key, bytes)
      if (isCorrupt(read)) corrupt.push(read)
      else lateLane.push(read)
    }
    this.#lateLane.load(lateLane, corrupt.length > walCorrupt)
    if (this.#archive !== null) {
      corrupt.push(...this.#archive.load([...this.#archiveStore.values()].map((r) => r.key), this.#meta.get(ARCHIVE_ROTATED_KEY)))
    }
    this.#ledger.recordCorrupt(corrupt.length)
    return { checkpoint, tail, corrupt, meta: new Map(this.#meta), lateLane }
  }

  async append(op: WalOp): Promise<number> {
    this.#requireOpen('append')
    const lsn = this.#ledger.nextLsn()
    const bytes = encodeWalRecord(lsn, op)
    this.#wal.set(lsn, bytes)
    this.#ledger.recordStored(lsn, bytes.length)
    return lsn
  }

  async checkpoint(checkpoint: Checkpoint): Promise<void> {
    this.#requireOpen('checkpoint')
    this.#ledger.requireCheckpointAt(checkpoint.upToLsn)
    const bytes = encodeCheckpoint(checkpoint)
    const lane = checkpoint.lateLane === undefined ? null : this.#lateLane.plan(checkpoint.lateLane)
    const archive = this.#archive?.plan() ?? null
    this.#checkpoint = { key: checkpoint.upToLsn, bytes }
    for (const lsn of this.#wal.keys()) if (lsn <= checkpoint.upToLsn) this.#wal.delete(lsn)
    if (lane !== null) {
      if (lane.clear) this.#lateLaneStore.clear()
      for (const key of lane.remove) this.#lateLaneStore.delete(key)
      if (lane.put !== null) this.#lateLaneStore.set(lane.put.from, lane.put.bytes)
      this.#lateLane.applied(lane)
    }
    if (archive !== null) {
      for (const key of archive.remove) this.#archiveStore.delete(key[0])
      for (const record of archive.put) this.#archiveStore.set(record.key[0], record)
      this.#meta.set(ARCHIVE_ROTATED_KEY, String(archive.rotated))
      archive.applied()
    }
    this.#ledger.recordCheckpoint(checkpoint.upToLsn)
  }

  async archive(query?: ArchiveQuery): Promise<readonly WindowResult[]> {
    if (this.#archive === null) throw noArchiveError('memoryPersistence')
    this.#requireOpen('archive')
    return this.#archive.read(query, async (keys) => keys.map((key) => this.#archiveStore.get(key[0])?.bytes))
  }

  async putMeta(key: string, value: string): Promise<void> {
    this.#requireOpen('putMeta')
    this.#meta.set(key, value)
  }

  get lastLsn(): number {
    return this.#ledger.lastLsn
  }

  stats(): PersistenceStats {
    return this.#ledger.stats(this.#lateLane, this.#archive)
  }

  async close(): Promise<void> {
    this.#open = false
  }

  #requireOpen(operation: string): void {
    if (!this.#open) throw new Error(`memoryPersistence: call open() before ${operation}()`)
  }
}
