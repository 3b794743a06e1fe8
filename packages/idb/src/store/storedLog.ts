/**
 * What `open()` reads of a log database, in one read-only transaction: the newest checkpoint that
 * verifies, the records after it, the late lane, the archive's keys and the meta values. Records
 * stored where this library never leaves one (a key that is not an lsn, a log record at or behind
 * the checkpoint) are strays: reported as corrupt, and deleted by key by the next checkpoint.
 */
import type { StoredLog, WalCatalog } from './walCatalog.ts'
import { isLsn, readCheckpoint, type StoredRecord, strayRecord } from './walRecovery.ts'
import { committed, requested } from './idbRequests.ts'
import { WRITER_EPOCH_KEY } from './indexedDbSchema.ts'
import type { Checkpoint, CorruptRecord } from '../persistence/persistence.ts'

/** A record under a key where this library never leaves one. */
export interface StrayKey {
  readonly store: 'wal' | 'checkpoints'
  readonly key: IDBValidKey
}

/** The stores as `readStoredLog` found them: what the catalog recovers from, and what the handle keeps. */
export interface LogRead extends StoredLog {
  /** The newest checkpoint key, damaged ones included (a checkpoint of this handle may replace them). */
  readonly newestCheckpoint: number
  /** The writer epoch `claimLog` stored, if any. */
  readonly storedEpoch: unknown
  readonly strays: readonly StrayKey[]
  /** The damaged checkpoints met on the way, and the strays. */
  readonly corrupt: CorruptRecord[]
}

/**
 * Reads the log database `db`; lsns seen on the way are observed by `catalog` (whether the
 * archive's keys are read is its to say).
 *
 * @example
 * const stored = await readStoredLog(db, catalog)
 * catalog.recovered(stored, stored.corrupt)
 */
export async function readStoredLog(db: IDBDatabase, catalog: WalCatalog): Promise<LogRead> {
  const tx = db.transaction(['checkpoints', 'wal', 'meta', 'lateLane', 'archive'], 'readonly')
  const done = committed(tx)
  const checkpoints = tx.objectStore('checkpoints')
  const corrupt: CorruptRecord[] = []
  let checkpoint: Checkpoint | null = null
  const storedCheckpointKeys = await requested(checkpoints.getAllKeys())
  const checkpointKeys = storedCheckpointKeys.filter(isLsn)
  for (let k = checkpointKeys.length - 1; k >= 0 && checkpoint === null; k--) {
    const key = checkpointKeys[k] as number
    catalog.observeLsn(key)
    const read = readCheckpoint({ key, value: await requested(checkpoints.get(key)) })
    if (read.ok) checkpoint = read.checkpoint
    else corrupt.push(read.corrupt)
  }
  const checkpointLsn = checkpoint?.upToLsn ?? 0
  const wal = tx.objectStore('wal')
  const metaStore = tx.objectStore('meta')
  const laneStore = tx.objectStore('lateLane')
  const [walKeys, metaValues, metaKeys, laneKeys, laneValues, archiveKeys] = await Promise.all([
    requested(wal.getAllKeys()),
    requested(metaStore.getAll()),
    requested(metaStore.getAllKeys()),
    requested(laneStore.getAllKeys()),
    requested(laneStore.getAll()),
    catalog.archiving ? requested(tx.objectStore('archive').getAllKeys()) : [],
  ])
  // The tail: the records after the checkpoint. Anything else there is a stray.
  const keys = walKeys.filter((key): key is number => isLsn(key) && key > checkpointLsn)
  const strays: StrayKey[] = [
    ...storedCheckpointKeys.filter((key) => !isLsn(key)).map((key) => ({ store: 'checkpoints' as const, key })),
    ...walKeys.filter((key) => !isLsn(key) || key <= checkpointLsn).map((key) => ({ store: 'wal' as const, key })),
  ]
  // One get per record, all in flight at once: in Chromium about twice as fast as one getAll over tens of MB.
  const values = await Promise.all(keys.map((key) => requested(wal.get(key))))
  const strayValues = await Promise.all(strays.map(({ store, key }) => requested(tx.objectStore(store).get(key))))
  await done
  strays.forEach((stray, i) => {
    corrupt.push(strayRecord(stray.store, { key: stray.key, value: strayValues[i] }, checkpointLsn))
  })
  const meta = new Map<string, string>()
  let storedEpoch: unknown
  metaKeys.forEach((key, i) => {
    const value = metaValues[i]
    if (key === WRITER_EPOCH_KEY) storedEpoch = value
    else if (typeof key === 'string' && typeof value === 'string') meta.set(key, value)
  })
  const records = (storedKeys: IDBValidKey[], stored: unknown[]): StoredRecord[] => storedKeys.map((key, i) => ({ key: key as number, value: stored[i] }))
  return {
    checkpoint,
    newestCheckpoint: checkpointKeys.at(-1) ?? 0,
    wal: records(keys, values),
    lateLane: records(laneKeys, laneValues),
    archiveKeys,
    meta,
    storedEpoch,
    strays,
    corrupt,
  }
}
