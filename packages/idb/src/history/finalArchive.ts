import type { WindowResult } from '@tidemark/engine'
import { compareResults } from '@tidemark/engine/adapter'
import { encodeHistoryRecord } from './historyRecord.ts'
import type { ArchivedChange, ArchiveQuery } from '../store/persistence.ts'

/**
 * Changes the archive keeps by default (about 80 bytes each as stored).
 *
 * @example
 * DEFAULT_ARCHIVE_LIMIT // 100000
 * indexedDbPersistence({ name: 'tidemark:d1', archiveLimit: 4 * DEFAULT_ARCHIVE_LIMIT })
 */
export const DEFAULT_ARCHIVE_LIMIT = 100_000

/**
 * Checks an `archiveLimit` option (`where` names the function): an integer >= 0, 0 turning
 * the archive off. Throws a RangeError.
 *
 * @example
 * checkArchiveLimit(-1, 'memoryPersistence') // RangeError: memoryPersistence: archiveLimit must be an integer >= 0 ...
 */
export function checkArchiveLimit(limit: unknown, where: string): void {
  if (limit === undefined) return
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 0) {
    throw new RangeError(`${where}: archiveLimit must be an integer >= 0 of changes (0 turns the archive off), got ${String(limit)}`)
  }
}

/** Most changes in one archive record: rotation drops whole records, so this is its granularity. */
export const ARCHIVE_RECORD_CHANGES = 4096

/** Meta key of the count of changes rotation dropped. */
export const ARCHIVE_ROTATED_KEY = 'archiveRotated'

/**
 * Key of one archive record: its sequence number, how many changes it holds and the range
 * of window starts they cover, so rotation and range queries need keys only.
 */
export type ArchiveKey = readonly [seq: number, count: number, minStart: number, maxStart: number]

/** What one checkpoint does to the `archive` store, in its transaction. */
export interface ArchiveWrite {
  readonly put: readonly { readonly key: ArchiveKey; readonly bytes: Uint8Array<ArrayBuffer> }[]
  /** Oldest records dropped to stay within the limit. */
  readonly remove: readonly ArchiveKey[]
  /** The rotation count to store with this write (the count at plan time plus `remove`). */
  readonly rotated: number
  readonly changes: readonly ArchivedChange[]
}

/**
 * The final-window archive's bookkeeping, shared by every persistence: changes staged since
 * they were written, the keys of stored records, and the rotation policy.
 *
 * Policy: the archive keeps at most `limit` changes (stored plus staged). Staged changes
 * are deduplicated per window (the latest wins). Each checkpoint writes the staged changes
 * as records of at most `ARCHIVE_RECORD_CHANGES`, and drops the oldest whole records while
 * the store would exceed the limit; when more than `limit` are staged at once, the oldest
 * staged ones go. Every dropped change is counted (`rotated`, kept in `meta`).
 */
export class FinalArchive {
  readonly limit: number
  /** Stored records, by seq ascending. */
  #stored: ArchiveKey[] = []
  #storedChanges = 0
  #nextSeq = 1
  #rotated = 0
  /** Changes not yet in a committed record, by window identity; insertion order is age. */
  readonly #unwritten = new Map<string, ArchivedChange>()

  constructor(limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`archiveLimit must be a safe integer >= 0, got ${limit}`)
    this.limit = limit
  }

  /** Takes the stored keys (valid ones; the rest are returned) and the rotation count, as `open()` found them. */
  load(keys: readonly unknown[], rotated: string | undefined): unknown[] {
    const invalid: unknown[] = []
    this.#stored = []
    this.#storedChanges = 0
    for (const key of keys) {
      if (!isArchiveKey(key)) invalid.push(key)
      else {
        this.#stored.push(key)
        this.#storedChanges += key[1]
      }
    }
    this.#stored.sort((a, b) => a[0] - b[0])
    const last = this.#stored[this.#stored.length - 1]
    this.#nextSeq = last === undefined ? 1 : last[0] + 1
    const count = Number(rotated ?? 0)
    this.#rotated = Number.isSafeInteger(count) && count >= 0 ? count : 0
    this.#unwritten.clear()
    return invalid
  }

  get records(): number {
    return this.#stored.length
  }

  get changes(): number {
    return this.#storedChanges + this.#unwritten.size
  }

  get rotated(): number {
    return this.#rotated
  }

  stage(change: ArchivedChange): void {
    if (this.limit === 0) return
    const id = identity(change.result)
    // Re-inserted, so that insertion order stays the age of the latest change per window.
    this.#unwritten.delete(id)
    this.#unwritten.set(id, change)
    if (this.#unwritten.size > this.limit) {
      const oldest = this.#unwritten.keys().next().value as string
      this.#unwritten.delete(oldest)
      this.#rotated++
    }
  }

  /** Records for every change not yet written, and the oldest records rotation drops; null when there is nothing to do. */
  plan(): ArchiveWrite | null {
    if (this.#unwritten.size === 0) return null
    const changes = [...this.#unwritten.values()]
    const put: { key: ArchiveKey; bytes: Uint8Array<ArrayBuffer> }[] = []
    let seq = this.#nextSeq
    for (let at = 0; at < changes.length; at += ARCHIVE_RECORD_CHANGES) {
      const chunk = changes.slice(at, at + ARCHIVE_RECORD_CHANGES)
      let minStart = Number.POSITIVE_INFINITY
      let maxStart = Number.NEGATIVE_INFINITY
      for (const { result } of chunk) {
        if (result.start < minStart) minStart = result.start
        if (result.start > maxStart) maxStart = result.start
      }
      put.push({ key: [seq, chunk.length, minStart, maxStart], bytes: encodeHistoryRecord('archive', seq, chunk) })
      seq++
    }
    const remove: ArchiveKey[] = []
    let total = this.#storedChanges + changes.length
    let rotated = this.#rotated
    for (const key of this.#stored) {
      if (total <= this.limit) break
      remove.push(key)
      total -= key[1]
      rotated += key[1]
    }
    return { put, remove, rotated, changes }
  }

  /** The write committed: its records are stored, its changes no longer pending. */
  applied(write: ArchiveWrite): void {
    const removed = new Set(write.remove.map((key) => key[0]))
    this.#stored = this.#stored.filter((key) => !removed.has(key[0]))
    for (const key of write.remove) this.#storedChanges -= key[1]
    for (const { key } of write.put) {
      this.#stored.push(key)
      this.#storedChanges += key[1]
      if (key[0] >= this.#nextSeq) this.#nextSeq = key[0] + 1
    }
    for (const key of write.remove) this.#rotated += key[1]
    for (const change of write.changes) {
      const id = identity(change.result)
      if (this.#unwritten.get(id) === change) this.#unwritten.delete(id)
    }
  }

  /** Keys of the stored records that may hold windows `query` asks for, oldest first. */
  keysFor(query: ArchiveQuery = {}): ArchiveKey[] {
    const from = query.from ?? Number.NEGATIVE_INFINITY
    const to = query.to ?? Number.POSITIVE_INFINITY
    return this.#stored.filter((key) => key[3] >= from && key[2] < to)
  }

  /** The changes no records hold yet, oldest first: take them with `keysFor`, before reading those records. */
  unwritten(): ArchivedChange[] {
    return [...this.#unwritten.values()]
  }

  /**
   * The latest final result per window matching `query`, from stored records (oldest
   * first, as `keysFor` listed them) and then the changes `unwritten()` gave at that time.
   */
  select(stored: readonly (readonly ArchivedChange[])[], unwritten: readonly ArchivedChange[], query: ArchiveQuery = {}): WindowResult[] {
    const latest = new Map<string, ArchivedChange>()
    const take = (change: ArchivedChange) => {
      if (!matches(change.result, query)) return
      const id = identity(change.result)
      latest.delete(id)
      latest.set(id, change)
    }
    for (const changes of stored) for (const change of changes) take(change)
    for (const change of unwritten) take(change)
    const results: WindowResult[] = []
    for (const change of latest.values()) if (change.type === 'final') results.push(change.result)
    return results.sort(compareResults)
  }
}

function isArchiveKey(key: unknown): key is ArchiveKey {
  return (
    Array.isArray(key) &&
    key.length === 4 &&
    key.every((part) => typeof part === 'number') &&
    Number.isSafeInteger(key[0]) &&
    Number.isSafeInteger(key[1]) &&
    (key[1] as number) > 0
  )
}

function matches(result: WindowResult, query: ArchiveQuery): boolean {
  if (query.window !== undefined && query.window !== result.window) return false
  if (query.key !== undefined && query.key !== result.key) return false
  if (query.from !== undefined && result.start < query.from) return false
  if (query.to !== undefined && result.start >= query.to) return false
  return true
}

/** Window ids never hold U+0000 and starts are numbers, so the first and last separators split this unambiguously. */
function identity(result: WindowResult): string {
  return `${result.window}\u0000${result.key}\u0000${result.start}`
}
