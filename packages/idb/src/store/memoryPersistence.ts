import type { WalOp, WindowResult } from '@tidemark/engine'
import { assertKnownOptions } from '@tidemark/engine/adapter'
import { checkpointPolicy } from '../checkpoint/checkpointPolicy.ts'
import { ARCHIVE_ROTATED_KEY, type ArchiveKey, type ArchivePort, checkArchive } from '../history/archivePort.ts'
import { encodeWalRecord } from '../wal/walCodec.ts'
import { WalCatalog } from './walCatalog.ts'
import { readCheckpoint } from './walRecovery.ts'
import type {
  ArchivedChange,
  ArchiveQuery,
  Checkpoint,
  CheckpointPolicy,
  CorruptRecord,
  Persistence,
  PersistenceStats,
  RecoveredLog,
} from '../persistence/persistence.ts'

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

/** Records in key order. */
function sorted<V>(store: ReadonlyMap<number, V>): { key: number; value: V }[] {
  return [...store].sort(([a], [b]) => a - b).map(([key, value]) => ({ key, value }))
}

class MemoryPersistence implements Persistence {
  readonly checkpointEvery: CheckpointPolicy
  readonly #wal = new Map<number, Uint8Array>()
  readonly #meta = new Map<string, string>()
  readonly #lateLane = new Map<number, Uint8Array>()
  /** Archive records by seq. */
  readonly #archive = new Map<number, { readonly key: ArchiveKey; readonly bytes: Uint8Array }>()
  #checkpoint: { readonly key: number; readonly bytes: Uint8Array } | null = null
  readonly #catalog: WalCatalog
  /** Present only with an archive, so that openEngine stages final windows only then. */
  declare readonly archiveFinal?: (change: ArchivedChange) => void
  #open = false

  constructor(checkpointEvery: CheckpointPolicy, archive: ArchivePort | null) {
    this.checkpointEvery = checkpointEvery
    this.#catalog = new WalCatalog('memoryPersistence', archive)
    if (archive !== null) this.archiveFinal = (change) => archive.stage(change)
  }

  async open(): Promise<RecoveredLog> {
    if (this.#open) throw new Error('memoryPersistence: already open; close() it first')
    this.#open = true
    this.#catalog.reset()
    const corrupt: CorruptRecord[] = []
    let checkpoint: Checkpoint | null = null
    if (this.#checkpoint !== null) {
      this.#catalog.observeLsn(this.#checkpoint.key)
      const read = readCheckpoint({ key: this.#checkpoint.key, value: this.#checkpoint.bytes })
      if (read.ok) checkpoint = read.checkpoint
      else corrupt.push(read.corrupt)
    }
    const after = checkpoint?.upToLsn ?? 0
    const stored = {
      checkpoint,
      wal: sorted(this.#wal).filter((record) => record.key > after),
      lateLane: sorted(this.#lateLane),
      archiveKeys: [...this.#archive.values()].map((record) => record.key),
      meta: new Map(this.#meta),
    }
    return this.#catalog.recovered(stored, corrupt)
  }

  async append(op: WalOp): Promise<number> {
    this.#requireOpen('append')
    const lsn = this.#catalog.nextLsn()
    const bytes = encodeWalRecord(lsn, op)
    this.#wal.set(lsn, bytes)
    this.#catalog.recordStored(lsn, bytes.length)
    return lsn
  }

  async checkpoint(checkpoint: Checkpoint): Promise<void> {
    this.#requireOpen('checkpoint')
    const write = this.#catalog.planCheckpoint(checkpoint)
    const { upToLsn, lane, archive } = write
    this.#checkpoint = { key: upToLsn, bytes: write.bytes }
    for (const lsn of this.#wal.keys()) if (lsn <= upToLsn) this.#wal.delete(lsn)
    if (lane !== null) {
      if (lane.clear) this.#lateLane.clear()
      for (const key of lane.remove) this.#lateLane.delete(key)
      if (lane.put !== null) this.#lateLane.set(lane.put.from, lane.put.bytes)
    }
    if (archive !== null) {
      for (const key of archive.remove) this.#archive.delete(key[0])
      for (const record of archive.put) this.#archive.set(record.key[0], record)
      this.#meta.set(ARCHIVE_ROTATED_KEY, String(archive.rotated))
    }
    this.#catalog.checkpointed(write)
  }

  async archive(query?: ArchiveQuery): Promise<readonly WindowResult[]> {
    return this.#catalog.readArchive(query, async (keys) => {
      this.#requireOpen('archive')
      return keys.map((key) => this.#archive.get(key[0])?.bytes)
    })
  }

  async putMeta(key: string, value: string): Promise<void> {
    this.#requireOpen('putMeta')
    this.#meta.set(key, value)
  }

  get lastLsn(): number {
    return this.#catalog.lastLsn
  }

  stats(): PersistenceStats {
    return this.#catalog.stats()
  }

  async close(): Promise<void> {
    this.#open = false
  }

  #requireOpen(operation: string): void {
    if (!this.#open) throw new Error(`memoryPersistence: call open() before ${operation}()`)
  }
}
