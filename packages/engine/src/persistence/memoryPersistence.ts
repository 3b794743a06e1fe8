import { encodeCheckpoint } from './checkpointEnvelope.ts'
import { checkpointPolicy } from './checkpointPolicy.ts'
import type { Checkpoint, CheckpointPolicy, CorruptRecord, Persistence, PersistenceStats, RecoveredLog, WalOp } from './persistence.ts'
import { encodeWalRecord } from './walCodec.ts'
import { WalLedger } from './walLedger.ts'
import { readCheckpoint, readTail } from './walRecovery.ts'

export interface MemoryPersistenceOptions {
  /** Cadence the engine should checkpoint at; defaults to `DEFAULT_CHECKPOINT_EVERY`. */
  readonly checkpointEvery?: Partial<CheckpointPolicy>
}

/**
 * A `Persistence` that keeps the log in memory: for Node processes that need no
 * durability, and for tests. Records go through the same codec as on disk, and the log
 * survives `close()` + `open()` on the same handle (but not the process).
 *
 * @example
 * const engine = await openEngine({ windows: tumbling(60_000), persistence: memoryPersistence() })
 */
export function memoryPersistence(options: MemoryPersistenceOptions = {}): Persistence {
  return new MemoryPersistence(checkpointPolicy(options.checkpointEvery))
}

class MemoryPersistence implements Persistence {
  readonly checkpointEvery: CheckpointPolicy
  readonly #wal = new Map<number, Uint8Array>()
  readonly #meta = new Map<string, string>()
  #checkpoint: { readonly key: number; readonly bytes: Uint8Array } | null = null
  readonly #ledger = new WalLedger()
  #open = false

  constructor(checkpointEvery: CheckpointPolicy) {
    this.checkpointEvery = checkpointEvery
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
    this.#ledger.recordCorrupt(corrupt.length)
    return { checkpoint, tail, corrupt, meta: new Map(this.#meta) }
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
    this.#checkpoint = { key: checkpoint.upToLsn, bytes }
    for (const lsn of this.#wal.keys()) if (lsn <= checkpoint.upToLsn) this.#wal.delete(lsn)
    this.#ledger.recordCheckpoint(checkpoint.upToLsn)
  }

  async putMeta(key: string, value: string): Promise<void> {
    this.#requireOpen('putMeta')
    this.#meta.set(key, value)
  }

  get lastLsn(): number {
    return this.#ledger.lastLsn
  }

  stats(): PersistenceStats {
    return this.#ledger.stats()
  }

  async close(): Promise<void> {
    this.#open = false
  }

  #requireOpen(operation: string): void {
    if (!this.#open) throw new Error(`memoryPersistence: call open() before ${operation}()`)
  }
}
