/**
 * One replica's root array in the doc (its key-value log, see docEntry.ts) with an index of
 * the entries this binding has read, held by identity: Yjs keeps the very arrays that were
 * pushed or decoded, so a delete finds its entries in one scan without re-encoding keys.
 */
import type * as Y from 'yjs'
import {
  type Cell,
  type CellAddress,
  type CellEntry,
  type CellGroup,
  type ClockEntry,
  compareBytes,
  compareCells,
  groupCell,
  packCellGroup,
} from '@tidemark/engine'
import { GroupIndex, groupCellProblem } from '@tidemark/engine/adapter'
import {
  clockOf,
  compareClocks,
  type DocEntry,
  entryCells,
  entryKind,
  groupAddressOf,
  groupKeysOf,
  KeyLists,
  readClockEntry,
  readGroupEntry,
  writeClockEntry,
  writeGroupEntry,
} from '../schema/docEntry.ts'

/** A shape-checked entry, or why it was refused. */
export type ReadEntry =
  | { readonly kind: 'group'; readonly entry: CellGroup }
  | { readonly kind: 'clock'; readonly entry: ClockEntry }
  | { readonly kind: 'invalid'; readonly detail: string }

/** Most entries one group keeps (a full entry and its deltas) before it is rewritten as one. */
const MAX_GROUP_ENTRIES = 32

/** Whether this binding merges the replica's entries. */
export type ReplicaStatus = 'unknown' | 'accepted' | 'mismatch'

interface GroupAddress {
  readonly window: string
  readonly start: number
  readonly source: string
}

/** A group this write rewrites: its cells (and their aggregate states) by key, joined with the entries already in the log at commit. */
interface GroupDraft {
  readonly window: string
  readonly start: number
  readonly source: string
  readonly cells: Map<string, Cell>
  readonly states: Map<string, readonly Uint8Array[]>
}

/** Appends and deletes collected during one local transaction, applied together by `commit`. */
export interface LogWrite {
  readonly pushes: DocEntry[]
  readonly doomed: Set<DocEntry>
  readonly drafts: GroupIndex<GroupDraft>
  /** Groups that lost keys to retention in this write. */
  readonly expiring: GroupIndex<GroupAddress>
}

export class ReplicaEntries {
  readonly replicaId: string
  readonly array: Y.Array<DocEntry>
  status: ReplicaStatus = 'unknown'
  /**
   * The raw entries read or written, by group address (groups) and source (clocks). Raw
   * entries only: they are the doc's own immutable arrays, so nothing decoded outlives the
   * read, and an entry's address is read back from it when it leaves.
   */
  readonly #groups = new GroupIndex<DocEntry[]>()
  readonly #clocks = new Map<string, DocEntry[]>()
  /** Keys of a group whose windows left live state here; an entry goes once all its keys have. */
  readonly #expired = new GroupIndex<Set<string>>()
  readonly #keyLists = new KeyLists()

  constructor(replicaId: string, array: Y.Array<DocEntry>) {
    this.replicaId = replicaId
    this.array = array
  }

  /** Live entries indexed (groups and clocks). */
  get size(): number {
    let n = 0
    for (const list of this.#groups.values()) n += list.length
    for (const list of this.#clocks.values()) n += list.length
    return n
  }

  /** Checks an entry read from the doc and indexes it when well-formed. */
  read(raw: unknown): ReadEntry {
    const kind = entryKind(raw)
    if (kind === 'clock') {
      const clock = readClockEntry(raw)
      if (typeof clock === 'string') return { kind: 'invalid', detail: clock }
      if (clock.writer !== this.replicaId) {
        return { kind: 'invalid', detail: `clock of ${JSON.stringify(clock.source)} in another replica's log names writer ${JSON.stringify(clock.writer)}` }
      }
      this.#clocks.set(clock.source, filed(this.#clocks.get(clock.source), raw as DocEntry))
      return { kind: 'clock', entry: clock }
    }
    const group = readGroupEntry(raw, this.#keyLists)
    if (typeof group === 'string') return { kind: 'invalid', detail: group }
    this.#groups.set(group.window, group.source, group.start, filed(this.#groups.get(group.window, group.source, group.start), raw as DocEntry))
    return { kind: 'group', entry: group }
  }

  /** Forgets an entry that left the doc. */
  forget(raw: unknown): void {
    const entry = raw as DocEntry
    if (entryKind(raw) === 'clock') {
      const source = entry[1]
      if (typeof source !== 'string') return
      const rest = unfiled(this.#clocks.get(source), entry)
      if (rest === null) this.#clocks.delete(source)
      else this.#clocks.set(source, rest)
      return
    }
    const at = groupAddressOf(raw)
    if (at === null) return
    const rest = unfiled(this.#groups.get(at.window, at.source, at.start), entry)
    if (rest === null) this.#dropGroup(at.window, at.source, at.start)
    else this.#groups.set(at.window, at.source, at.start, rest)
  }

  /** The Yjs clients (sessions) whose entries the log holds. */
  writers(): Set<number> {
    const clients = new Set<number>()
    for (let item = this.array._start; item !== null; item = item.right as Y.Item | null) if (!item.deleted) clients.add(item.id.client)
    return clients
  }

  /** Drops the index and reads every entry now in the array, but those the sessions (Yjs clients) in `skip` wrote. */
  reread(skip?: ReadonlySet<number>): ReadEntry[] {
    this.#groups.clear()
    this.#clocks.clear()
    this.#expired.clear()
    const read: ReadEntry[] = []
    for (let item = this.array._start; item !== null; item = item.right as Y.Item | null) {
      if (!item.deleted && item.countable && skip?.has(item.id.client) !== true) for (const raw of item.content.getContent()) read.push(this.read(raw))
    }
    return read
  }

  /**
   * Writes a cell into its group's draft; `commit` rewrites the group as one entry holding the
   * join of the draft and every entry of that group already in the log, and dooms those.
   */
  putCell(entry: CellEntry, write: LogWrite): void {
    const { window, start, source, key } = entry.address
    let draft = write.drafts.get(window, source, start)
    if (draft === undefined) {
      draft = { window, start, source, cells: new Map(), states: new Map() }
      write.drafts.set(window, source, start, draft)
    }
    // Copied: the engine hands out its live cells, and the entry is the snapshot.
    putNewer(draft, key, { ...entry.cell }, entry.aggregates)
    this.#expired.get(window, source, start)?.delete(key)
  }

  /** Writes a clock: appends it unless an equal entry is there, and dooms the entries it supersedes. */
  putClock(clock: ClockEntry, write: LogWrite): void {
    this.#clocks.set(clock.source, supersede(this.#clocks.get(clock.source), clock, clockOrder, writeClockEntry, write))
  }

  /** Notes a cell that left live state; its group's entries go once all their keys have. */
  expire(address: CellAddress, write: LogWrite): void {
    const { window, source, start } = address
    // A cell written and expired in one write (its window fired and left live state in one batch) is not written.
    const draft = write.drafts.get(window, source, start)
    draft?.cells.delete(address.key)
    draft?.states.delete(address.key)
    if (this.#groups.get(window, source, start) === undefined) return
    let keys = this.#expired.get(window, source, start)
    if (keys === undefined) {
      keys = new Set()
      this.#expired.set(window, source, start, keys)
    }
    keys.add(address.key)
    if (write.expiring.get(window, source, start) === undefined) write.expiring.set(window, source, start, { window, start, source })
  }

  /** Dooms every entry (a replica that changed configuration starts its log afresh). */
  clear(write: LogWrite): void {
    // Every entry, not only the indexed ones: entries of another schema do not read as entries.
    for (const raw of this.array.toArray()) write.doomed.add(raw)
    this.#groups.clear()
    this.#clocks.clear()
    this.#expired.clear()
  }

  /** Applies a write to the array; call inside the binding's transaction. */
  commit(write: LogWrite): void {
    for (const draft of write.drafts.values()) if (draft.cells.size > 0) this.#rewrite(draft, write)
    for (const group of write.expiring.values()) this.#retire(group, write)
    if (write.pushes.length > 0) this.array.push(write.pushes)
    if (write.doomed.size > 0) deleteEntries(this.array, write.doomed)
  }

  /**
   * Writes a draft. A draft that is small next to its group's entries is appended as a delta
   * entry of its cells alone (readers join the entries of a group, and the draft's cells are
   * the newest): a batch that changes one key of a window holding 100 keys then sends one cell,
   * not 100. Once the deltas add up to half of the largest entry, or a group has
   * `MAX_GROUP_ENTRIES` entries, the group is rewritten as one entry (the join of all of them
   * and the draft) and its old entries are deleted.
   */
  #rewrite(draft: GroupDraft, write: LogWrite): void {
    const { window, start, source, cells } = draft
    const existing = this.#groups.get(window, source, start) ?? []
    if (existing.length > 0 && existing.length < MAX_GROUP_ENTRIES) {
      let total = 0
      let largest = 0
      for (const raw of existing) {
        const n = entryCells(raw)
        total += n
        if (n > largest) largest = n
      }
      if (2 * (total - largest + cells.size) <= largest) {
        const raw = draftEntry(draft)
        write.pushes.push(raw)
        this.#groups.set(window, source, start, [...existing, raw])
        return
      }
    }
    const expired = this.#expired.get(window, source, start)
    // How many aggregate states this engine's cells carry (unknown when the draft has no cell).
    const first = draft.states.values().next()
    const width = cells.size === 0 ? -1 : first.done === true ? 0 : first.value.length
    for (const raw of existing) {
      write.doomed.add(raw)
      const old = readGroupEntry(raw, this.#keyLists)
      // An unreadable entry in this replica's own log (a hostile peer's push) is dropped.
      if (typeof old === 'string') continue
      for (let i = 0; i < old.keys.length; i++) {
        const key = old.keys[i] as string
        if (expired?.has(key) === true) continue
        // Cells the engine refuses (a peer's push) or of another configuration's states (an earlier
        // session's) are dropped: joined, they would outrank or break this replica's own.
        if (groupCellProblem(old, i) !== null || (width >= 0 && (old.aggregates?.[i]?.length ?? 0) !== width)) continue
        // Copied out of the update: the aggregate states are views into it.
        putNewer(draft, key, groupCell(old, i), old.aggregates?.[i]?.map((state) => state.slice()))
      }
    }
    const raw = draftEntry(draft)
    write.pushes.push(raw)
    this.#groups.set(window, source, start, [raw])
    this.#expired.delete(window, source, start)
  }

  /** Dooms the group's entries whose every key has left live state. */
  #retire(at: GroupAddress, write: LogWrite): void {
    const expired = this.#expired.get(at.window, at.source, at.start)
    const list = this.#groups.get(at.window, at.source, at.start)
    if (expired === undefined || list === undefined) return
    const kept = list.filter((raw) => {
      // Indexed entries were read (or written) whole, so their keys parse; null cannot happen here.
      const keys = groupKeysOf(raw)
      if (keys !== null && !keys.every((key) => expired.has(key))) return true
      write.doomed.add(raw)
      return false
    })
    if (kept.length > 0) this.#groups.set(at.window, at.source, at.start, kept)
    else this.#dropGroup(at.window, at.source, at.start)
  }

  #dropGroup(window: string, source: string, start: number): void {
    this.#groups.delete(window, source, start)
    this.#expired.delete(window, source, start)
  }
}

/** A fresh, empty write. */
export function emptyWrite(): LogWrite {
  return { pushes: [], doomed: new Set(), drafts: new GroupIndex(), expiring: new GroupIndex() }
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

/**
 * Puts `cell` (with its states) into the draft unless the draft holds a newer one: the lattice
 * order of cells, then of their states' encodings.
 */
function putNewer(draft: GroupDraft, key: string, cell: Cell, states: readonly Uint8Array[] | undefined): void {
  const mine = draft.cells.get(key)
  if (mine !== undefined && (compareCells(cell, mine) || compareStates(states, draft.states.get(key))) <= 0) return
  draft.cells.set(key, cell)
  if (states === undefined) draft.states.delete(key)
  else draft.states.set(key, states)
}

function compareStates(a: readonly Uint8Array[] | undefined, b: readonly Uint8Array[] | undefined): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const order = compareBytes(a[i] as Uint8Array, b[i] as Uint8Array)
    if (order !== 0) return order
  }
  return a.length - b.length
}

/** The doc entry of a draft's cells. */
function draftEntry({ window, start, source, cells, states }: GroupDraft): DocEntry {
  const keys = [...cells.keys()]
  const aggregates = states.size === 0 ? undefined : keys.map((k) => states.get(k) ?? [])
  return writeGroupEntry(packCellGroup(window, start, source, keys, keys.map((k) => cells.get(k) as Cell), aggregates))
}

/** `list` with `raw` in it once (a new list when there was none). */
function filed(list: DocEntry[] | undefined, raw: DocEntry): DocEntry[] {
  if (list === undefined) return [raw]
  if (!list.includes(raw)) list.push(raw)
  return list
}

/** `list` without `raw`; `null` when nothing is left. */
function unfiled(list: readonly DocEntry[] | undefined, raw: DocEntry): DocEntry[] | null {
  const rest = list === undefined ? [] : list.filter((e) => e !== raw)
  return rest.length === 0 ? null : rest
}

function rawClock(raw: DocEntry): ClockEntry {
  return clockOf(raw[1] as string, raw[2] as string, raw[3] as number, raw[4] as number, raw[5] as number, raw[6] as number, raw[7] as number)
}

const clockOrder = (old: DocEntry, clock: ClockEntry): number => compareClocks(rawClock(old), clock)

/**
 * The entries of one source's clock after writing `value`: those above it in the lattice order
 * stay (and one equal to it), the rest are doomed; `value` is encoded and pushed unless an
 * equal entry is already there.
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
