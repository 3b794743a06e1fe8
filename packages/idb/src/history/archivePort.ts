import type { WindowResult } from '@tidemark/engine'
import type { ArchivedChange, ArchiveQuery, CorruptRecord } from '../persistence/persistence.ts'

/**
 * Key of one archive record: its sequence number, how many changes it holds and the range
 * of window starts they cover, so rotation and range queries need keys only.
 *
 * @example
 * const key: ArchiveKey = [1, 4096, 0, 245_700_000] // record 1: 4,096 changes, windows starting from 0 to 245,700,000
 */
export type ArchiveKey = readonly [seq: number, count: number, minStart: number, maxStart: number]

/**
 * What one checkpoint does to the `archive` store, in its transaction: records to put, the
 * oldest records rotation drops, the stored keys that are not archive keys (found by `load()`,
 * reported as corrupt there), and the rotation count to keep beside them (the persistence
 * stores it and hands it back to `load()` on open). `applied()` once it committed.
 *
 * @example
 * const write = archive.plan()
 * if (write !== null) {
 *   for (const { key, bytes } of write.put) store.set(key[0], bytes)
 *   for (const key of write.remove) store.delete(key[0])
 *   for (const key of write.stray) store.delete(key)
 *   meta.set('archiveRotated', String(write.rotated))
 *   write.applied()
 * }
 */
export interface ArchiveWrite {
  readonly put: readonly { readonly key: ArchiveKey; readonly bytes: Uint8Array<ArrayBuffer> }[]
  readonly remove: readonly ArchiveKey[]
  /** Stored keys that are not archive keys, as `load()` found them: their records are deleted. */
  readonly stray: readonly unknown[]
  readonly rotated: number
  /** The write committed: its records are stored, its changes no longer pending. */
  applied(): void
}

/** Meta key of the count of changes the archive's rotation dropped. */
export const ARCHIVE_ROTATED_KEY = 'archiveRotated'

/**
 * The final-window archive as a persistence drives it: `finalArchive()` from
 * `@tidemark/idb/archive` makes one, given to one persistence as its `archive` option. The
 * archive keeps the bookkeeping and the record format; the persistence keeps the records
 * (its `archive` store) and writes them with each checkpoint.
 *
 * @example
 * import { finalArchive } from '@tidemark/idb/archive'
 * const persistence = indexedDbPersistence({ name: claim.database, claim, archive: finalArchive({ limit: 50_000 }) })
 */
export interface ArchivePort {
  /** Taken by one persistence (`owner` names it); throws if a persistence has it already. */
  attach(owner: string): void
  /**
   * Takes what `open()` found: the keys of the stored records and the rotation count; returns
   * the keys that are not archive keys, as corrupt records, which the next checkpoint deletes.
   */
  load(keys: readonly unknown[], rotated: string | undefined): CorruptRecord[]
  /** Stages a final result or the retraction of one: `read` returns it at once, the next checkpoint stores it. */
  stage(change: ArchivedChange): void
  /** The writes of the next checkpoint; null when there is nothing to write. */
  plan(): ArchiveWrite | null
  /**
   * The latest final result of every archived window matching `query`, in `results()` order:
   * reads the stored records that may hold such windows through `get` (undefined for a record
   * no longer stored), then the staged changes.
   */
  read(query: ArchiveQuery | undefined, get: (keys: readonly ArchiveKey[]) => Promise<readonly unknown[]>): Promise<WindowResult[]>
  /** Records stored. */
  readonly records: number
  /** Changes kept: stored and staged. */
  readonly changes: number
  /** Changes rotation dropped since the database was created. */
  readonly rotated: number
  /** Corrupt records `read` came across, each counted once. */
  readonly corrupt: number
}

/** The error of `persistence.archive(query)` on a persistence without an archive; `owner` names it. */
export function noArchiveError(owner: string): Error {
  return new Error(`${owner}: no archive configured; pass archive: finalArchive() from @tidemark/idb/archive to keep final windows`)
}

/** Checks an `archive` option (`where` names the function): absent, or made by `finalArchive()`. Throws a TypeError. */
export function checkArchive(archive: unknown, where: string): void {
  if (archive !== undefined && (typeof archive !== 'object' || archive === null || typeof (archive as ArchivePort).read !== 'function')) {
    throw new TypeError(`${where}: archive must be made by finalArchive() from @tidemark/idb/archive, got ${String(archive)}`)
  }
}
