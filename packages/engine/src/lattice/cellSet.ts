import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'
import { type Cell, CellRecord, compareCells } from './cell.ts'
import { type CellGroup, compareGroupRow, groupCell, writeGroupRow } from './cellGroup.ts'
import { DoubleSlab } from './doubleSlab.ts'

/**
 * Cells kept as numbers: blocks of shared 64 KB buffers, so a cold join of 10k slices leaves
 * V8's young-generation collector no 4 MB of rows to copy, and a set keeps its block as the
 * buffer and an offset, not as a view of ~100 bytes of its own (a view is made only when `rows`
 * is asked for). A set that outgrows its block takes one twice the size and leaves the old one
 * unused.
 */
const rowBlocks = new DoubleSlab(8_192)

const NO_ROWS = new Float64Array(0)

/** No source yet: every set starts with this list. */
const NO_SOURCES: readonly string[] = []

/**
 * Sorted source lists shared by sets (see `#insert`) never change: a set that gains a source
 * moves to another list. Per list, the list last made from it by one insertion, so sets that gain
 * the same sources in the same order (the windows a join brings, peer after peer) share one list,
 * not an array each. Only the last is kept, so the lists kept alive form one chain, as long as the
 * largest set.
 */
const grown = new WeakMap<readonly string[], readonly [string, readonly string[]]>()

/** The list of `from` with `source` inserted at `at`, its sorted position. */
function withSource(from: readonly string[], at: number, source: string): readonly string[] {
  const last = grown.get(from)
  if (last?.[0] === source) return last[1]
  // `concat` makes an array of the exact length; a `push` would leave room for 16 more.
  const list = from.slice(0, at).concat(source, from.slice(at))
  grown.set(from, [source, list])
  return list
}

/**
 * What windows add up: the value fields of cells, and, with aggregates, their states (`null`:
 * none folded yet; `undefined`: not wanted, only the numbers). A fold may leave a cell's own
 * states in `states`: read them, never change them.
 */
export interface Aggregate {
  count: number
  sum: number
  min: number
  max: number
  states?: States | null | undefined
}

/**
 * One cell per source, kept in source order (the combination order, so every replica adds the
 * same floats). A cell is `null` here and lives as a row of six numbers in `#values` (count,
 * sum, min, max, maxTs, version at `6 × row` of its block of `rowBlocks`) unless someone holds it
 * as an object: a peer's cell, and this replica's own cell of a slice's main part when its
 * placement chose numbers (where cells take few writes each), written in place through its row
 * (`addRow`, `ownRow`). An object boxes each double field, and a set's cells live as long as its
 * windows: as objects, a fresh replica merging 80k cells would allocate ~400k objects, and every
 * cell a run writes would be copied by V8's young-generation collector.
 *
 * A row never moves: rows are taken in arrival order, and `#rowOf` says which row a position
 * holds (no `#rowOf`: row and position are the same, as long as sources arrived in order). A
 * writer may keep its row, and must look again once the row's count reads NaN: the cell became
 * an object. A cell becomes an object when asked for by `cell(source)` (a placement that hands
 * it to the replication outbox, which knows cells by identity), or is added as one (`addCell`),
 * and then stays one. A set holding only rows has no `#ordered` at all.
 *
 * @example
 * const set = new CellSet()
 * set.addCell('d1', emptyCell())
 * const row = set.addRow('d2', null) // an empty cell, as numbers
 * set.rows[6 * row] += 1 // its count
 * set.fold(into) // adds every cell, in source order
 */
export class CellSet {
  #sources = NO_SOURCES
  /** Whether `#sources` is this set's own array, changed in place, rather than a list shared with other sets. */
  #owned = false
  #ordered: (Cell | null)[] | null = null
  /** The buffer holding the rows, once any cell is kept as numbers: one per source (an object cell's is unused), then reserved room. */
  #values: Float64Array | null = null
  /** Where the rows start in `#values` (a buffer shared with other sets), and how many it has room for. */
  #base = 0
  #room = 0
  /** The rows as an array of their own, made when `rows` is asked for. */
  #view: Float64Array | null = null
  /** By position, its row in `#values`; null while every position is its own row. */
  #rowOf: number[] | null = null
  /** With aggregates: each cell's states, by position of `#sources`. */
  #states: States[] | null = null

  /** How many sources have a cell here. */
  get size(): number {
    return this.#sources.length
  }

  /** Sources with a cell, sorted; `cellAt(i)` is the cell of `sources()[i]`. */
  sources(): readonly string[] {
    return this.#sources
  }

  /** The cell at a position of `sources()`: the live object, or a copy of a cell kept as numbers. */
  cellAt(position: number): Readonly<Cell> {
    return this.#ordered?.[position] ?? this.#rowCell(position)
  }

  /** The row of the position `at`. */
  #row(at: number): number {
    const rowOf = this.#rowOf
    return rowOf === null ? at : (rowOf[at] as number)
  }

  /** Where the row of the position `at` starts in `#values`. */
  #offset(at: number): number {
    return this.#base + 6 * this.#row(at)
  }

  /** Takes a block of `rows` rows (zeros). */
  #take(rows: number): Float64Array {
    const values = rowBlocks.block(6 * rows)
    this.#values = values
    this.#base = rowBlocks.at
    this.#room = rows
    this.#view = null
    return values
  }

  /** The cell of `source` as a live object (a peer cell kept as numbers becomes one), if it has one. */
  cell(source: string): Cell | undefined {
    const at = this.#position(source)
    if (this.#sources[at] !== source) return undefined
    const ordered = this.#ordered ?? this.#objects()
    let cell = ordered[at] as Cell | null
    if (cell === null) {
      cell = this.#rowCell(at)
      ordered[at] = cell
      // The row's writer, if it holds the row, must see that the cell moved.
      ;(this.#values as Float64Array)[this.#offset(at)] = Number.NaN
    }
    return cell
  }

  /**
   * The row where `source`'s cell is kept as numbers: `rows[6 × row]` to `rows[6 × row + 5]`
   * (count, sum, min, max, maxTs, version), written in place by its writer. A row never moves, so
   * a writer may keep it, as long as its count is a number (NaN: the cell became an object). −1
   * when the source has no cell here, −2 when its cell is an object (see `cell`).
   *
   * @example
   * let row = set.ownRow('d1')
   * if (row === -1) row = set.addRow('d1', null)
   * if (row >= 0) set.rows[6 * row + 1] += value // its sum
   */
  ownRow(source: string): number {
    const at = this.#position(source)
    if (this.#sources[at] !== source) return -1
    const ordered = this.#ordered
    return ordered !== null && ordered[at] !== null ? -2 : this.#row(at)
  }

  /**
   * Adds `source`'s first cell, empty, as numbers (and, with aggregates, its states), and returns
   * its row (see `ownRow`).
   *
   * @example
   * const row = set.addRow('d1', null)
   * set.rows[6 * row] // 0, its count
   */
  addRow(source: string, states: States | null): number {
    const at = this.#position(source)
    if (this.#sources[at] === source) throw new Error(`already holds a cell of source ${JSON.stringify(source)}`)
    this.#insert(at, source, null, states)
    // A new row is zero: count, sum and version are; the extremes start at the infinities.
    const v = this.#values as Float64Array
    const o = this.#offset(at)
    v[o + 2] = Number.POSITIVE_INFINITY
    v[o + 3] = v[o + 4] = Number.NEGATIVE_INFINITY
    return this.#row(at)
  }

  /**
   * The numbers of the cells kept as numbers, at `6 × row` (see `ownRow`); empty while the set
   * has none. Replaced when the set outgrows it: read it again after any insertion.
   */
  get rows(): Float64Array {
    const values = this.#values
    if (values === null) return NO_ROWS
    this.#view ??= values.subarray(this.#base, this.#base + 6 * this.#room)
    return this.#view
  }

  /** The states of the cell at a position of `sources()` (engines with aggregates); updated in place by their writer. */
  statesAt(position: number): States {
    return (this.#states as States[])[position] as States
  }

  /** The states of `source`'s cell (engines with aggregates; it must have a cell). */
  statesOf(source: string): States {
    return this.statesAt(this.#position(source))
  }

  /** Adds a source's first cell (and, with aggregates, its states); a set never loses one, and a source's cell is updated in place. */
  addCell(source: string, cell: Cell, states: States | null = null): void {
    const at = this.#position(source)
    if (this.#sources[at] === source) throw new Error(`already holds a cell of source ${JSON.stringify(source)}`)
    this.#insert(at, source, cell, states)
  }

  /**
   * Merges the `i`-th cell of a peer's group as `source`'s cell (lattice join), with `states`,
   * its decoded aggregate states (engines with aggregates). Returns false when the cell held
   * here is equal or newer (stale); two cells of one version and equal values are ordered by
   * their states' encodings.
   */
  mergePeerCell(source: string, group: CellGroup, i: number, aggregates: AggregateSet | null = null, states: States | null = null): boolean {
    const at = this.#position(source)
    if (this.#sources[at] !== source) {
      this.#insert(at, source, null, states, true)
      writeGroupRow(group, i, this.#values as Float64Array, this.#offset(at))
      return true
    }
    const cell = this.#ordered?.[at] ?? null
    if (cell !== null) {
      // An object cell (a source this replica writes, or wrote): rare, so the plain lattice order.
      const peer = groupCell(group, i)
      if ((compareCells(peer, cell) || this.#tie(aggregates, group, i, at)) <= 0) return false
      // In place: placement caches hold the object (and the states array).
      Object.assign(cell, peer)
      if (states !== null) this.#replaceStates(at, states)
      return true
    }
    const values = this.#values as Float64Array
    const o = this.#offset(at)
    if ((compareGroupRow(group, i, values, o) || this.#tie(aggregates, group, i, at)) <= 0) return false
    writeGroupRow(group, i, values, o)
    if (states !== null) this.#replaceStates(at, states)
    return true
  }

  /** Order of the peer's states against those held at `at`, for cells equal in every value. */
  #tie(aggregates: AggregateSet | null, group: CellGroup, i: number, at: number): number {
    const peer = group.aggregates?.[i]
    if (aggregates === null || peer === undefined) return 0
    return aggregates.compare(peer, aggregates.encode(this.statesAt(at)))
  }

  /** Replaces the states at `at` in place: placement caches hold the array. */
  #replaceStates(at: number, states: States): void {
    const mine = this.statesAt(at)
    for (let a = 0; a < states.length; a++) mine[a] = states[a]
  }

  /**
   * Makes room for `rows` peers' cells kept as numbers at once (a merge knows how many sources'
   * groups it brings for a start), rather than growing row by row.
   */
  reserveRows(rows: number): void {
    if (this.#values !== null || rows < 2) return
    this.#take(Math.max(rows, this.#sources.length))
  }

  /** Adds every cell's count, sum, min and max into `into`, in source order, and its states when `into.states` is wanted. */
  fold(into: Aggregate, aggregates: AggregateSet | null): void {
    const states = this.#states
    if (aggregates !== null && into.states !== undefined && states !== null) {
      for (let i = 0; i < states.length; i++) into.states = aggregates.mergeInto(into.states, states[i] as States)
    }
    const ordered = this.#ordered
    const values = this.#values
    const base = this.#base
    const rowOf = this.#rowOf
    const n = this.#sources.length
    let { count, sum, min, max } = into
    for (let i = 0; i < n; i++) {
      const cell = ordered === null ? null : (ordered[i] as Cell | null)
      if (cell !== null) {
        count += cell.count
        sum += cell.sum
        if (cell.min < min) min = cell.min
        if (cell.max > max) max = cell.max
      } else {
        const v = values as Float64Array
        const o = base + 6 * (rowOf === null ? i : (rowOf[i] as number))
        count += v[o] as number
        sum += v[o + 1] as number
        if ((v[o + 2] as number) < min) min = v[o + 2] as number
        if ((v[o + 3] as number) > max) max = v[o + 3] as number
      }
    }
    into.count = count
    into.sum = sum
    into.min = min
    into.max = max
  }

  /** Events held in the cells. */
  count(): number {
    let n = 0
    const ordered = this.#ordered
    for (let i = 0; i < this.#sources.length; i++) n += ordered?.[i]?.count ?? ((this.#values as Float64Array)[this.#offset(i)] as number)
    return n
  }

  /** `[source, cell copy]` per source, in source order, with the states encoded when there are aggregates. */
  entries(aggregates: AggregateSet | null): ([string, Cell] | [string, Cell, Uint8Array[]])[] {
    return this.#sources.map((source, i) => (aggregates === null ? [source, { ...this.cellAt(i) }] : [source, { ...this.cellAt(i) }, aggregates.encode(this.statesAt(i))]))
  }

  /**
   * Inserts a source at `at`, with its cell object or `null` (its values then go into its row), and
   * its states. `share`: a peer's cell, taking a shared source list while the set has one (a join
   * adds the same sources to every set); a set that takes sources in changing orders (this
   * replica's own, or a sliding window's slices) would make a new list at every insertion, so it
   * keeps an array of its own from its first such insertion on.
   */
  #insert(at: number, source: string, cell: Cell | null, states: States | null, share = false): void {
    if (states !== null || this.#states !== null) {
      const all = this.#states ?? []
      this.#states = all
      insertAt(all, at, states as States)
    }
    const sources = this.#sources
    const n = sources.length
    // The sources already here when the first row is taken keep rows of their own (their cells
    // are objects): every source has a row, taken in arrival order, and the new one takes row `n`.
    let values = this.#values
    if (values === null && cell === null) values = this.#take(Math.max(n + 1, 2))
    if (values !== null) {
      if (this.#room < n + 1) {
        // Outgrown: a block twice the size; the old one is left unused. A loop, not `set`: a slice's block is a few rows.
        const base = this.#base
        const grown = this.#take(2 * (n + 1))
        for (let j = 0; j < 6 * n; j++) grown[this.#base + j] = values[base + j] as number
      }
      if (this.#rowOf !== null) insertAt(this.#rowOf, at, n)
      else if (at !== n) {
        this.#rowOf = [...sources.keys()]
        insertAt(this.#rowOf, at, n)
      }
    }
    const ordered = cell === null ? this.#ordered : (this.#ordered ?? this.#objects())
    if (share && !this.#owned) this.#sources = withSource(sources, at, source)
    else {
      const own = this.#owned ? (sources as string[]) : sources.slice()
      insertAt(own, at, source)
      this.#sources = own
      this.#owned = true
    }
    if (ordered !== null) insertAt(ordered, at, cell)
  }

  /** Creates `#ordered` for a set that so far held only rows (every position `null`). */
  #objects(): (Cell | null)[] {
    const ordered: (Cell | null)[] = []
    for (let n = this.#sources.length; n > 0; n--) ordered.push(null)
    this.#ordered = ordered
    return ordered
  }

  /** A new cell object from the numbers of the row of position `at`. */
  #rowCell(at: number): Cell {
    const v = this.#values as Float64Array
    const o = this.#offset(at)
    return new CellRecord(v[o] as number, v[o + 1] as number, v[o + 2] as number, v[o + 3] as number, v[o + 4] as number, v[o + 5] as number)
  }

  /** Where `source` is or would be inserted in `#sources`. */
  #position(source: string): number {
    const sources = this.#sources
    let hi = sources.length
    // Sources mostly arrive in order (a peer's groups, source after source): try the end first.
    if (hi === 0 || (sources[hi - 1] as string) < source) return hi
    let lo = 0
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if ((sources[mid] as string) < source) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

/**
 * Inserts `item` at `at`, moving the rest up by one: `splice(at, 0, item)` without the array of
 * removed items it allocates (a sliding window's slices take every source's cell this way).
 */
function insertAt<T>(list: T[], at: number, item: T): void {
  let i = list.length
  // A store past the end rather than `push`: the lists differ in elements kind, and a `push` seeing
  // them all was a call to the generic builtin.
  list[i] = item
  for (; i > at; i--) list[i] = list[i - 1] as T
  list[at] = item
}
