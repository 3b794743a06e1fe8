/**
 * Cell groups: the cells one source holds in one window start of one window spec, for every
 * key, as columns (the packed replication unit, docs/replication.md).
 *
 * A fresh replica joining 8 writers of 10k cells each takes 80k cells at once. As one object
 * per cell (an address, a cell) that is 160k allocations before any window is touched, and as
 * one Yjs entry per cell Yjs alone spends ~400 ms decoding them. A group carries the same
 * cells as one key list and one `Float64Array`, so the doc holds one entry per group and the
 * engine resolves the window spec, alignment and source once per group.
 */
import { type Cell, CellRecord } from './cell.ts'
import type { CellEntry } from './cellEntry.ts'

/** Columns of a group, in this order: count, sum, min, max, maxTs, version. */
export const GROUP_COLUMNS = 6

/** Most cells one group may hold: more keys than this in one window of one source is not plausible. */
export const MAX_GROUP_CELLS = 1 << 16

/** Largest count a peer's cell may claim: beyond it the cell is absurd, not merely large. */
export const MAX_CELL_COUNT = 2 ** 40

/**
 * One source's cells for every key of one window (fixed windows) or session-fragment start.
 * `columns` holds `GROUP_COLUMNS × keys.length` values, column after column: counts, sums,
 * mins, maxs, maxTs, versions. A cell with count 0 is a tombstone.
 */
export interface CellGroup {
  readonly window: string
  readonly start: number
  readonly source: string
  readonly keys: readonly string[]
  readonly columns: Float64Array
  /**
   * With aggregates: per cell, each aggregate's state encoded (in the order of the aggregates'
   * names); absent without aggregates.
   */
  readonly aggregates?: readonly (readonly Uint8Array[])[]
}

/**
 * Packs cells of one window start and source into a group.
 *
 * @example
 * const group = packCellGroup('tumbling:60000', 0, 'd1', ['temp'], [{ count: 1, sum: 3, min: 3, max: 3, maxTs: 10, version: 1 }])
 * groupCell(group, 0).sum // 3
 */
export function packCellGroup(
  window: string,
  start: number,
  source: string,
  keys: readonly string[],
  cells: readonly Readonly<Cell>[],
  aggregates?: readonly (readonly Uint8Array[])[],
): CellGroup {
  const n = keys.length
  const columns = new Float64Array(GROUP_COLUMNS * n)
  for (let i = 0; i < n; i++) {
    const cell = cells[i] as Cell
    columns[i] = cell.count
    columns[n + i] = cell.sum
    columns[2 * n + i] = cell.min
    columns[3 * n + i] = cell.max
    columns[4 * n + i] = cell.maxTs
    columns[5 * n + i] = cell.version
  }
  return aggregates === undefined ? { window, start, source, keys, columns } : { window, start, source, keys, columns, aggregates }
}

/**
 * The `i`-th cell of a group, as a new object.
 *
 * @example
 * for (let i = 0; i < group.keys.length; i++) console.log(group.keys[i], groupCell(group, i).count)
 */
export function groupCell(group: CellGroup, i: number): Cell {
  const n = group.keys.length
  const c = group.columns
  return new CellRecord(c[i] as number, c[n + i] as number, c[2 * n + i] as number, c[3 * n + i] as number, c[4 * n + i] as number, c[5 * n + i] as number)
}

/**
 * Lattice order of a group's `i`-th cell against a cell kept as six numbers at `values[at]`
 * (count, sum, min, max, maxTs, version), in the order of `compareCells`; positive when the
 * group's cell wins.
 *
 * @example
 * if (compareGroupRow(group, i, values, 6 * position) > 0) writeGroupRow(group, i, values, 6 * position)
 */
export function compareGroupRow(group: CellGroup, i: number, values: Float64Array, at: number): number {
  const n = group.keys.length
  const c = group.columns
  return (
    order(c[5 * n + i] as number, values[at + 5] as number) ||
    order(c[i] as number, values[at] as number) ||
    order(c[n + i] as number, values[at + 1] as number) ||
    order(c[2 * n + i] as number, values[at + 2] as number) ||
    order(c[3 * n + i] as number, values[at + 3] as number) ||
    order(c[4 * n + i] as number, values[at + 4] as number)
  )
}

/**
 * Writes a group's `i`-th cell as six numbers at `values[at]` (count, sum, min, max, maxTs, version).
 *
 * @example
 * writeGroupRow(group, 0, values, 0)
 */
export function writeGroupRow(group: CellGroup, i: number, values: Float64Array, at: number): void {
  const n = group.keys.length
  const c = group.columns
  values[at] = c[i] as number
  values[at + 1] = c[n + i] as number
  values[at + 2] = c[2 * n + i] as number
  values[at + 3] = c[3 * n + i] as number
  values[at + 4] = c[4 * n + i] as number
  values[at + 5] = c[5 * n + i] as number
}

function order(x: number, y: number): number {
  return x < y ? -1 : x > y ? 1 : 0
}

/**
 * Groups loose cell entries by (window, source, start), in first-seen order. Keys repeat when
 * the entries repeat an address: a group's reader takes the lattice join.
 *
 * @example
 * const groups = groupCellEntries(port.exportState().cells)
 */
export function groupCellEntries(entries: readonly CellEntry[]): CellGroup[] {
  type Draft = { window: string; start: number; source: string; keys: string[]; cells: Cell[]; states: (readonly Uint8Array[])[] }
  const drafts = new GroupIndex<Draft>()
  const order: Draft[] = []
  for (const { address, cell, aggregates } of entries) {
    let draft = drafts.get(address.window, address.source, address.start)
    if (draft === undefined) {
      const made: Draft = { window: address.window, start: address.start, source: address.source, keys: [], cells: [], states: [] }
      drafts.set(address.window, address.source, address.start, made)
      order.push(made)
      draft = made
    }
    draft.keys.push(address.key)
    draft.cells.push(cell)
    // A cell without states among cells with them leaves a hole the group's check refuses.
    if (aggregates !== undefined) draft.states[draft.keys.length - 1] = aggregates
  }
  return order.map((d) => packCellGroup(d.window, d.start, d.source, d.keys, d.cells, d.states.length === 0 ? undefined : d.states))
}

/**
 * How many cells the groups hold.
 *
 * @example
 * cellCount([packCellGroup('tumbling:60000', 0, 'd1', ['a', 'b'], [cellA, cellB])]) // 2
 */
export function cellCount(groups: readonly CellGroup[]): number {
  let n = 0
  for (const group of groups) n += group.keys.length
  return n
}

/**
 * Every cell of the groups as loose entries (what `mergeRemote` takes).
 *
 * @example
 * const entries = cellEntriesOf(groups)
 */
export function cellEntriesOf(groups: readonly CellGroup[]): CellEntry[] {
  const out: CellEntry[] = []
  for (const group of groups) {
    const { window, start, source } = group
    for (let i = 0; i < group.keys.length; i++) {
      const address = { window, key: group.keys[i] as string, start, source }
      const states = group.aggregates?.[i]
      out.push(states === undefined ? { address, cell: groupCell(group, i) } : { address, cell: groupCell(group, i), aggregates: states })
    }
  }
  return out
}

/**
 * Values by group address in nested Maps (window → source → start). No string is built per
 * address: a flat key would need the start as text, and turning a time like 1.7e12 into a
 * string costs about a microsecond.
 *
 * @example
 * const index = new GroupIndex<number>()
 * index.set('tumbling:60000', 'd1', 1_700_000_040_000, 3)
 * index.get('tumbling:60000', 'd1', 1_700_000_040_000) // 3
 */
export class GroupIndex<T> {
  readonly #byWindow = new Map<string, Map<string, Map<number, T>>>()

  /** The value at one group address, if any. */
  get(window: string, source: string, start: number): T | undefined {
    return this.#byWindow.get(window)?.get(source)?.get(start)
  }

  /** Puts the value at one group address, replacing what was there. */
  set(window: string, source: string, start: number, value: T): void {
    let bySource = this.#byWindow.get(window)
    if (bySource === undefined) {
      bySource = new Map()
      this.#byWindow.set(window, bySource)
    }
    let byStart = bySource.get(source)
    if (byStart === undefined) {
      byStart = new Map()
      bySource.set(source, byStart)
    }
    byStart.set(start, value)
  }

  /** Removes the value at one group address (and the maps it leaves empty). */
  delete(window: string, source: string, start: number): void {
    const bySource = this.#byWindow.get(window)
    const byStart = bySource?.get(source)
    if (byStart === undefined || !byStart.delete(start) || byStart.size > 0) return
    bySource?.delete(source)
    if ((bySource?.size ?? 0) === 0) this.#byWindow.delete(window)
  }

  /** Every value. */
  *values(): IterableIterator<T> {
    for (const bySource of this.#byWindow.values()) for (const byStart of bySource.values()) yield* byStart.values()
  }

  /** Removes every value. */
  clear(): void {
    this.#byWindow.clear()
  }
}
