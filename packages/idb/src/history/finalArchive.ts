import type { WindowResult } from '@tidemark/engine'
import { assertKnownOptions, compareResults } from '@tidemark/engine/adapter'
import { notBytes, storedBytes } from '../persistence/storedBytes.ts'
import type { ArchivedChange, ArchiveQuery, CorruptRecord } from '../persistence/persistence.ts'
import { ARCHIVE_COLUMNS } from './archiveColumns.ts'
import type { ArchiveKey, ArchivePort, ArchiveWrite } from './archivePort.ts'
import { decodeHistoryRecord, encodeHistoryRecord } from './historyRecord.ts'

/**
 * Changes the archive keeps by default (about 80 bytes each as stored).
 *
 * @example
 * DEFAULT_ARCHIVE_LIMIT // 100000
 * finalArchive({ limit: 4 * DEFAULT_ARCHIVE_LIMIT })
 */
export const DEFAULT_ARCHIVE_LIMIT = 100_000

/** Most changes in one archive record: rotation drops whole records, so this is its granularity. */
export const ARCHIVE_RECORD_CHANGES = 4096

/**
 * Options of `finalArchive`; all optional.
 *
 * @example
 * const options: FinalArchiveOptions = { limit: 50_000 }
 */
export interface FinalArchiveOptions {
  /** Most changes kept (default 100,000, about 8 MB); the oldest records go first. */
  readonly limit?: number
}

/**
 * The final-window archive, for the `archive` option of `indexedDbPersistence` or
 * `memoryPersistence`: every window result that turns final (and a later change to a final
 * window, from a peer) is staged as it happens and written with the next checkpoint;
 * `persistence.archive(query)` reads it back, also for windows that left live state through
 * `retention`. Bounded by `limit`: each checkpoint drops the oldest records beyond it, counted
 * in `persistence.stats().archiveRotated`. One archive per persistence.
 *
 * @example
 * import { finalArchive } from '@tidemark/idb/archive'
 * const persistence = indexedDbPersistence({ name: claim.database, claim, archive: finalArchive() })
 * const engine = await openEngine({ windows: tumbling(60_000), persistence })
 * const lastWeek = await persistence.archive({ key: 'temp', from: Date.now() - 7 * 86_400_000 })
 */
export function finalArchive(options: FinalArchiveOptions = {}): ArchivePort {
  if (typeof options !== 'object' || options === null) throw new TypeError(`finalArchive options must be an object { limit? }, got ${String(options)}`)
  assertKnownOptions('finalArchive', options, ['limit'])
  const { limit = DEFAULT_ARCHIVE_LIMIT } = options
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`finalArchive: limit must be an integer >= 1 of changes (leave the archive out to keep none), got ${String(limit)}`)
  }
  return new FinalArchive(limit)
}

/**
 * The archive's bookkeeping: changes staged since they were written, the keys of stored
 * records, and the rotation policy.
 *
 * Policy: the store holds at most `limit` changes after each checkpoint, and at most `limit`
 * wait staged between checkpoints (so `archive()` may read up to twice `limit` until the next
 * one). Staged changes are deduplicated per window (the latest wins). Each checkpoint writes the
 * staged changes as records of at most `ARCHIVE_RECORD_CHANGES`, and drops the oldest whole
 * records while the store would exceed the limit; when more than `limit` are staged at once, the
 * oldest staged ones go. Every dropped change is counted (`rotated`, kept in `meta`).
 */
export class FinalArchive implements ArchivePort {
  readonly limit: number
  #owner: string | null = null
  /** Stored records, by seq ascending. */
  #stored: ArchiveKey[] = []
  #storedChanges = 0
  #nextSeq = 1
  #rotated = 0
  /** Keys of corrupt records `read` reported. */
  readonly #corrupt = new Set<string>()
  /** Stored keys that are not archive keys, reported by `load()`: the next checkpoint deletes their records. */
  #stray: unknown[] = []
  /** Changes not yet in a committed record, by window identity; insertion order is age. */
  readonly #unwritten = new Map<string, ArchivedChange>()

  constructor(limit: number) {
    this.limit = limit
  }

  attach(owner: string): void {
    if (this.#owner !== null) {
      throw new Error(`${owner}: this finalArchive() is the archive of ${this.#owner} already; give each persistence its own`)
    }
    this.#owner = owner
  }

  load(keys: readonly unknown[], rotated: string | undefined): CorruptRecord[] {
    const invalid: CorruptRecord[] = []
    this.#stray = []
    this.#stored = []
    this.#storedChanges = 0
    for (const key of keys) {
      if (!isArchiveKey(key)) {
        invalid.push({ store: 'archive', key: String(key), reason: 'key is not [seq, count, minStart, maxStart]' })
        this.#stray.push(key)
      } else {
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

  get corrupt(): number {
    return this.#corrupt.size
  }

  stage(change: ArchivedChange): void {
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

  plan(): ArchiveWrite | null {
    if (this.#unwritten.size === 0 && this.#stray.length === 0) return null
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
      put.push({ key: [seq, chunk.length, minStart, maxStart], bytes: encodeHistoryRecord(ARCHIVE_COLUMNS, seq, chunk) })
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
    return { put, remove, stray: this.#stray, rotated, applied: () => this.#applied(put, remove, changes) }
  }

  async read(query: ArchiveQuery = {}, get: (keys: readonly ArchiveKey[]) => Promise<readonly unknown[]>): Promise<WindowResult[]> {
    // Taken together, before the read: a checkpoint committing meanwhile moves changes from one to the other.
    const from = query.from ?? Number.NEGATIVE_INFINITY
    const to = query.to ?? Number.POSITIVE_INFINITY
    const keys = this.#stored.filter((key) => key[3] >= from && key[2] < to)
    const unwritten = [...this.#unwritten.values()]
    const values = await get(keys)
    const latest = new Map<string, ArchivedChange>()
    const take = (change: ArchivedChange) => {
      if (!matches(change.result, query)) return
      const id = identity(change.result)
      latest.delete(id)
      latest.set(id, change)
    }
    keys.forEach((key, i) => {
      const value = values[i]
      // Rotation dropped it while this read waited for a checkpoint's transaction.
      if (value === undefined) return
      const read = readArchiveRecord(key, value)
      // Reported once, through stats(); the record stays until rotation drops it.
      if (typeof read === 'string') this.#corrupt.add(key.join(','))
      else for (const change of read) take(change)
    })
    for (const change of unwritten) take(change)
    const results: WindowResult[] = []
    for (const change of latest.values()) if (change.type === 'final') results.push(change.result)
    return results.sort(compareResults)
  }

  #applied(put: ArchiveWrite['put'], remove: readonly ArchiveKey[], changes: readonly ArchivedChange[]): void {
    // Only `load()` finds stray keys, and a checkpoint never spans an open: this write deleted every one.
    this.#stray = []
    const removed = new Set(remove.map((key) => key[0]))
    this.#stored = this.#stored.filter((key) => !removed.has(key[0]))
    for (const key of remove) {
      this.#storedChanges -= key[1]
      this.#rotated += key[1]
    }
    for (const { key } of put) {
      this.#stored.push(key)
      this.#storedChanges += key[1]
      if (key[0] >= this.#nextSeq) this.#nextSeq = key[0] + 1
    }
    for (const change of changes) {
      const id = identity(change.result)
      if (this.#unwritten.get(id) === change) this.#unwritten.delete(id)
    }
  }
}

/** The changes of one stored record, or why it is corrupt. */
function readArchiveRecord(key: ArchiveKey, value: unknown): readonly ArchivedChange[] | string {
  const bytes = storedBytes(value)
  if (bytes === null) return notBytes(value)
  const read = decodeHistoryRecord(ARCHIVE_COLUMNS, bytes)
  if (!read.ok) return read.reason
  if (read.first !== key[0] || read.entries.length !== key[1]) return `record holds ${read.entries.length} changes as number ${read.first}`
  return read.entries
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
