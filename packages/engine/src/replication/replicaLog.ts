/**
 * One replica's root array in the doc (its key-value log, see docEntry.ts) with an index of
 * the entries this binding has read, held by identity: Yjs keeps the very arrays that were
 * pushed or decoded, so a delete finds its entries in one scan without re-encoding keys.
 */
import type * as Y from 'yjs'
import { compareCells } from '../cell.ts'
import type { CellAddress, CellEntry, ClockEntry } from '../replicaPort.ts'
import {
  compareClocks,
  type DocEntry,
  entryKind,
  readCellEntry,
  readClockEntry,
  writeCellEntry,
  writeClockEntry,
} from './docEntry.ts'

interface Indexed<T> {
  readonly raw: DocEntry
  readonly value: T
}

/** A validated entry, or why it was refused. */
export type ReadEntry =
  | { readonly kind: 'cell'; readonly entry: CellEntry }
  | { readonly kind: 'clock'; readonly entry: ClockEntry }
  | { readonly kind: 'invalid'; readonly detail: string }

/** Whether this binding merges the replica's entries. */
export type ReplicaStatus = 'unknown' | 'accepted' | 'mismatch'

/** Appends and deletes collected during one local transaction, applied together by `commit`. */
export interface LogWrite {
  readonly pushes: DocEntry[]
  readonly doomed: Set<DocEntry>
}

export class ReplicaLog {
  readonly replicaId: string
  readonly array: Y.Array<DocEntry>
  status: ReplicaStatus = 'unknown'
  readonly #cells = new Map<string, Indexed<CellEntry>[]>()
  readonly #clocks = new Map<string, Indexed<ClockEntry>[]>()
  /** Where each indexed entry is filed, so a deleted one is forgotten without decoding it again. */
  readonly #filed = new Map<DocEntry, string>()

  constructor(replicaId: string, array: Y.Array<DocEntry>) {
    this.replicaId = replicaId
    this.array = array
  }

  /** Live entries indexed (cells and clocks). */
  get size(): number {
    let n = 0
    for (const list of this.#cells.values()) n += list.length
    for (const list of this.#clocks.values()) n += list.length
    return n
  }

  /** Validates an entry read from the doc and indexes it when valid. */
  read(raw: unknown): ReadEntry {
    const kind = entryKind(raw)
    if (kind === 'clock') {
      const clock = readClockEntry(raw)
      if (typeof clock === 'string') return { kind: 'invalid', detail: clock }
      if (clock.writer !== this.replicaId) {
        return { kind: 'invalid', detail: `clock of ${JSON.stringify(clock.source)} in another replica's log names writer ${JSON.stringify(clock.writer)}` }
      }
      this.#file(this.#clocks, clock.source, { raw: raw as DocEntry, value: clock })
      return { kind: 'clock', entry: clock }
    }
    const cell = readCellEntry(raw)
    if (typeof cell === 'string') return { kind: 'invalid', detail: cell }
    this.#file(this.#cells, addressKey(cell.address), { raw: raw as DocEntry, value: cell })
    return { kind: 'cell', entry: cell }
  }

  /** Forgets an entry that left the doc. */
  forget(raw: unknown): void {
    const key = this.#filed.get(raw as DocEntry)
    if (key === undefined) return
    this.#filed.delete(raw as DocEntry)
    if (entryKind(raw) === 'clock') unfile(this.#clocks, key, raw)
    else unfile(this.#cells, key, raw)
  }

  /** Drops the index and reads every entry now in the array. */
  reread(): ReadEntry[] {
    this.#cells.clear()
    this.#clocks.clear()
    this.#filed.clear()
    return this.array.toArray().map((raw) => this.read(raw))
  }

  /**
   * Writes a cell: appends it unless an identical entry is there, and dooms the entries it
   * supersedes. Entries above it in the lattice order stay, so the doc never loses a join.
   */
  putCell(entry: CellEntry, write: LogWrite): void {
    const key = addressKey(entry.address)
    const existing = this.#cells.get(key)
    const kept: Indexed<CellEntry>[] = []
    let present = false
    if (existing !== undefined) {
      for (const old of existing) {
        const order = compareCells(old.value.cell, entry.cell)
        if (order > 0 || (order === 0 && !present)) {
          kept.push(old)
          present ||= order === 0
        } else {
          this.#doom(old.raw, write)
        }
      }
    }
    if (!present) {
      const raw = writeCellEntry(entry)
      write.pushes.push(raw)
      this.#filed.set(raw, key)
      // The engine hands out its live cells: keep a snapshot, as the doc does.
      kept.push({ raw, value: { address: { ...entry.address }, cell: { ...entry.cell } } })
    }
    this.#cells.set(key, kept)
  }

  /** Writes a clock, like `putCell`. */
  putClock(clock: ClockEntry, write: LogWrite): void {
    const existing = this.#clocks.get(clock.source)
    const kept: Indexed<ClockEntry>[] = []
    let present = false
    if (existing !== undefined) {
      for (const old of existing) {
        const order = compareClocks(old.value, clock)
        if (order > 0 || (order === 0 && !present)) {
          kept.push(old)
          present ||= order === 0
        } else {
          this.#doom(old.raw, write)
        }
      }
    }
    if (!present) {
      const raw = writeClockEntry(clock)
      write.pushes.push(raw)
      this.#filed.set(raw, clock.source)
      kept.push({ raw, value: { ...clock } })
    }
    this.#clocks.set(clock.source, kept)
  }

  /** Dooms every entry of a cell that left live state. */
  expire(address: CellAddress, write: LogWrite): void {
    const key = addressKey(address)
    const existing = this.#cells.get(key)
    if (existing === undefined) return
    for (const old of existing) this.#doom(old.raw, write)
    this.#cells.delete(key)
  }

  /** Dooms every entry (a replica that changed configuration starts its log afresh). */
  clear(write: LogWrite): void {
    for (const list of this.#cells.values()) for (const e of list) write.doomed.add(e.raw)
    for (const list of this.#clocks.values()) for (const e of list) write.doomed.add(e.raw)
    this.#cells.clear()
    this.#clocks.clear()
    this.#filed.clear()
  }

  #doom(raw: DocEntry, write: LogWrite): void {
    write.doomed.add(raw)
    this.#filed.delete(raw)
  }

  #file<T>(index: Map<string, Indexed<T>[]>, key: string, entry: Indexed<T>): void {
    if (this.#filed.has(entry.raw)) return
    this.#filed.set(entry.raw, key)
    const list = index.get(key)
    if (list === undefined) index.set(key, [entry])
    else list.push(entry)
  }

  /** Applies a write to the array; call inside the binding's transaction. */
  commit(write: LogWrite): void {
    if (write.pushes.length > 0) this.array.push(write.pushes)
    if (write.doomed.size > 0) deleteEntries(this.array, write.doomed)
  }
}

/** A fresh, empty write. */
export function emptyWrite(): LogWrite {
  return { pushes: [], doomed: new Set() }
}

/** Deletes the given entries (by identity) with one scan, as contiguous ranges from the end. */
function deleteEntries(array: Y.Array<DocEntry>, doomed: ReadonlySet<DocEntry>): void {
  const starts: number[] = []
  const lengths: number[] = []
  array.forEach((raw, index) => {
    if (!doomed.has(raw)) return
    const last = starts.length - 1
    if (last >= 0 && (starts[last] as number) + (lengths[last] as number) === index) lengths[last] = (lengths[last] as number) + 1
    else {
      starts.push(index)
      lengths.push(1)
    }
  })
  for (let i = starts.length - 1; i >= 0; i--) array.delete(starts[i] as number, lengths[i] as number)
}

function unfile<T>(index: Map<string, Indexed<T>[]>, key: string, raw: unknown): void {
  const list = index.get(key)
  if (list === undefined) return
  const next = list.filter((e) => e.raw !== raw)
  if (next.length === 0) index.delete(key)
  else index.set(key, next)
}

/**
 * The index key of a cell address: cheaper than the engine's JSON `cellKey`, and unambiguous
 * for any strings (window and key are length-prefixed, start is a number, source is the rest).
 */
function addressKey(a: CellAddress): string {
  return `${a.window.length}:${a.window}${a.key.length}:${a.key}${a.start}|${a.source}`
}
