/**
 * One replica's root array in the doc (its key-value log, see docEntry.ts) with an index of
 * the entries this binding has read, held by identity: Yjs keeps the very arrays that were
 * pushed or decoded, so a delete finds its entries in one scan without re-encoding keys.
 */
import type * as Y from 'yjs'
import { type Cell, compareCells } from '../cell.ts'
import type { CellAddress, CellEntry, ClockEntry } from '../replicaPort.ts'
import { CellIndex } from './cellIndex.ts'
import {
  compareClocks,
  type DocEntry,
  entryKind,
  readCellEntry,
  readClockEntry,
  writeCellEntry,
  writeClockEntry,
} from './docEntry.ts'

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
  /**
   * The raw entries read or written, by address key (cells) and source (clocks). Raw entries
   * only: they are the doc's own immutable arrays, so nothing decoded outlives the read, and an
   * entry's key is read back from it when it leaves.
   */
  readonly #cells = new CellIndex()
  readonly #clocks = new Map<string, DocEntry[]>()

  constructor(replicaId: string, array: Y.Array<DocEntry>) {
    this.replicaId = replicaId
    this.array = array
  }

  /** Live entries indexed (cells and clocks). */
  get size(): number {
    let n = 0
    for (const list of this.#cells.lists()) n += list.length
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
      file(this.#clocks, clock.source, raw as DocEntry)
      return { kind: 'clock', entry: clock }
    }
    const cell = readCellEntry(raw)
    if (typeof cell === 'string') return { kind: 'invalid', detail: cell }
    this.#cells.file(cell.address, raw as DocEntry)
    return { kind: 'cell', entry: cell }
  }

  /** Forgets an entry that left the doc. */
  forget(raw: unknown): void {
    const kind = entryKind(raw)
    const entry = raw as DocEntry
    if (kind === 'clock' && typeof entry[1] === 'string') unfile(this.#clocks, entry[1], entry)
    else if (kind === 'cell' && isAddress(entry)) this.#cells.unfile(rawAddress(entry), entry)
  }

  /** Drops the index and reads every entry now in the array. */
  reread(): ReadEntry[] {
    this.#cells.clear()
    this.#clocks.clear()
    return this.array.toArray().map((raw) => this.read(raw))
  }

  /**
   * Writes a cell: appends it unless an identical entry is there, and dooms the entries it
   * supersedes. Entries above it in the lattice order stay, so the doc never loses a join.
   */
  putCell(entry: CellEntry, write: LogWrite): void {
    // Encoded when pushed: the engine hands out its live cells, and the raw entry is the snapshot.
    this.#cells.set(entry.address, supersede(this.#cells.get(entry.address), entry, cellOrder, writeCellEntry, write))
  }

  /** Writes a clock, like `putCell`. */
  putClock(clock: ClockEntry, write: LogWrite): void {
    this.#clocks.set(clock.source, supersede(this.#clocks.get(clock.source), clock, clockOrder, writeClockEntry, write))
  }

  /** Dooms every entry of a cell that left live state. */
  expire(address: CellAddress, write: LogWrite): void {
    const existing = this.#cells.get(address)
    if (existing === undefined) return
    for (const old of existing) write.doomed.add(old)
    this.#cells.delete(address)
  }

  /** Dooms every entry (a replica that changed configuration starts its log afresh). */
  clear(write: LogWrite): void {
    for (const list of this.#cells.lists()) for (const raw of list) write.doomed.add(raw)
    for (const list of this.#clocks.values()) for (const raw of list) write.doomed.add(raw)
    this.#cells.clear()
    this.#clocks.clear()
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

function file(index: Map<string, DocEntry[]>, key: string, raw: DocEntry): void {
  const list = index.get(key)
  if (list === undefined) index.set(key, [raw])
  else if (!list.includes(raw)) list.push(raw)
}

function unfile(index: Map<string, DocEntry[]>, key: string, raw: DocEntry): void {
  const list = index.get(key)
  if (list === undefined) return
  const next = list.filter((e) => e !== raw)
  if (next.length === 0) index.delete(key)
  else index.set(key, next)
}

/** The cell of an entry this log indexed (validated when read, or written here). */
function rawCell(raw: DocEntry): Cell {
  return {
    count: raw[5] as number,
    sum: raw[6] as number,
    min: raw[7] as number,
    max: raw[8] as number,
    maxTs: raw[9] as number,
    version: raw[10] as number,
  }
}

function rawClock(raw: DocEntry): ClockEntry {
  return {
    source: raw[1] as string,
    writer: raw[2] as string,
    maxTs: raw[3] as number,
    prefix: raw[4] as number,
    prefixTs: raw[5] as number,
    provable: raw[6] === 1,
    version: raw[7] as number,
  }
}

/** True when a cell entry's address fields have the types `rawAddressKey` reads (a deleted entry may never have been valid). */
function isAddress(raw: DocEntry): boolean {
  return typeof raw[1] === 'string' && typeof raw[2] === 'string' && typeof raw[3] === 'number' && typeof raw[4] === 'string'
}

function rawAddress(raw: DocEntry): CellAddress {
  return { window: raw[1] as string, key: raw[2] as string, start: raw[3] as number, source: raw[4] as string }
}

const cellOrder = (old: DocEntry, entry: CellEntry): number => compareCells(rawCell(old), entry.cell)
const clockOrder = (old: DocEntry, clock: ClockEntry): number => compareClocks(rawClock(old), clock)

/**
 * The entries of one address after writing `value`: those above it in the lattice order stay
 * (and one equal to it), the rest are doomed; `value` is encoded and pushed unless an equal
 * entry is already there.
 */
function supersede<T>(
  existing: readonly DocEntry[] | undefined,
  value: T,
  order: (old: DocEntry, value: T) => number,
  encode: (value: T) => DocEntry,
  write: LogWrite,
): DocEntry[] {
  const kept: DocEntry[] = []
  let present = false
  if (existing !== undefined) {
    for (const old of existing) {
      const o = order(old, value)
      if (o > 0 || (o === 0 && !present)) {
        kept.push(old)
        present ||= o === 0
      } else {
        write.doomed.add(old)
      }
    }
  }
  if (!present) {
    const raw = encode(value)
    write.pushes.push(raw)
    kept.push(raw)
  }
  return kept
}
