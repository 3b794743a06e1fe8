import { ARCHIVE_ROTATED_KEY, type ArchiveKey, type ArchiveWrite } from '../history/archivePort.ts'
import type { LateLaneWrite } from '../history/lateLaneRecords.ts'
import { requested } from './idbRequests.ts'

/**
 * IndexedDB schema version: stores `wal` (log records by lsn), `checkpoints` (by upToLsn),
 * `meta`, `lateLane` (keyed by the number of the record's first entry) and `archive` (final
 * windows, keyed by `[seq, count, minStart, maxStart]`). Record formats are versioned
 * separately, inside each record (see walCodec.ts and historyRecord.ts). A later schema will
 * upgrade databases of this one in place.
 *
 * @example
 * SCHEMA_VERSION // 1: `indexedDbPersistence` creates and opens its database at this version
 */
export const SCHEMA_VERSION = 1

/** Stores keyed out of line: log records by lsn, checkpoints by their upToLsn. Values are bytes. */
export type LogStore = 'wal' | 'checkpoints' | 'meta' | 'lateLane' | 'archive'
const STORES: readonly LogStore[] = ['wal', 'checkpoints', 'meta', 'lateLane', 'archive']

/**
 * The `meta` key of the log's writer epoch (a number), raised by `claimLog` and checked inside
 * every write transaction of a persistence opened with that claim.
 */
export const WRITER_EPOCH_KEY = 'writerEpoch'

/** One write of a readwrite transaction; a request that fails aborts the transaction. */
export type LogWrite = (tx: IDBTransaction) => unknown

/** Opens (creating) the database through the given factory. */
export async function openDatabase(factory: IDBFactory, name: string): Promise<IDBDatabase> {
  const request = factory.open(name, SCHEMA_VERSION)
  // The only upgrade from an older version is from none (0): the database is new.
  request.onupgradeneeded = () => {
    for (const store of STORES) request.result.createObjectStore(store)
  }
  let db: IDBDatabase
  try {
    db = await requested(request)
  } catch (error) {
    if (errorName(error) === 'VersionError') {
      throw new Error(`indexedDbPersistence("${name}"): the database has a schema newer than ${SCHEMA_VERSION}`, { cause: error })
    }
    throw error
  }
  // A database of this version made by something else (another program, an unreleased version) is not ours to use.
  const missing = STORES.filter((store) => !db.objectStoreNames.contains(store))
  if (missing.length > 0) {
    db.close()
    throw new Error(`indexedDbPersistence("${name}"): the database lacks the stores ${missing.join(', ')} of schema ${SCHEMA_VERSION}: another program made it; use another name`)
  }
  return db
}

/** The late-lane store writes of one checkpoint. */
export function laneWrites(lane: LateLaneWrite): LogWrite[] {
  const writes: LogWrite[] = []
  if (lane.clear) writes.push((tx) => tx.objectStore('lateLane').clear())
  for (const key of lane.remove) writes.push((tx) => tx.objectStore('lateLane').delete(key))
  const put = lane.put
  if (put !== null) writes.push((tx) => tx.objectStore('lateLane').put(put.bytes.buffer, put.from))
  return writes
}

/** The archive store writes of one checkpoint, with the rotation count in `meta`. */
export function archiveWrites(archive: ArchiveWrite): LogWrite[] {
  const writes: LogWrite[] = []
  for (const key of archive.remove) writes.push((tx) => tx.objectStore('archive').delete(archiveKey(key)))
  // Keys read from this very store at open: valid IndexedDB keys, whatever their shape.
  for (const key of archive.stray) writes.push((tx) => tx.objectStore('archive').delete(key as IDBValidKey))
  for (const record of archive.put) writes.push((tx) => tx.objectStore('archive').put(record.bytes.buffer, archiveKey(record.key)))
  writes.push((tx) => tx.objectStore('meta').put(String(archive.rotated), ARCHIVE_ROTATED_KEY))
  return writes
}

function archiveKey(key: ArchiveKey): IDBValidKey {
  return [...key]
}

export function errorName(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { name?: unknown }).name : undefined
}
