import { type Cell, compareCells } from '../lattice/cell.ts'
import { DoubleSlab } from '../lattice/doubleSlab.ts'

const NO_FRAGMENTS: readonly SessionFragment[] = Object.freeze([])

/**
 * Peers' cells kept as numbers, for every window: blocks of shared 64 KB buffers, so a cold join
 * of 10k windows leaves V8's young-generation collector a view per window to copy, not 4 MB of
 * rows. A window that outgrows its block takes one twice the size and leaves the old one unused.
 */
const peerRows = new DoubleSlab(8_192)
import { type CellGroup, compareGroupRow, groupCell, writeGroupRow } from '../lattice/cellGroup.ts'
import type { WindowSnapshot } from '../recovery/engineCheckpoint.ts'
import type { Basis, ResultStatus, WindowResult } from './windowResult.ts'

/** One source's session fragment inside a session window. */
export interface SessionFragment {
  readonly source: string
  /** Start of the fragment; part of its cell key, so it never changes (a merge writes a new fragment). */
  readonly start: number
  readonly cell: Cell
}

/**
 * Live state of one window of one key: its cells and what was emitted for it.
 * Fixed windows hold one cell per source; session windows hold fragments.
 */
export class WindowState {
  readonly window: string
  readonly key: string
  start: number
  end: number
  /** Session windows: fragments, in no particular order. Replaced, never mutated: fixed windows share one frozen empty list. */
  fragments: SessionFragment[] = NO_FRAGMENTS as SessionFragment[]
  /** The on-time result was emitted (or the window was created already past the firing frontier). */
  fired = false
  final = false
  /** False once removed from live state (retention, or swallowed by a session merge). */
  live = true
  /** Revision of the last emitted fired result; -1 before the first. */
  revision = -1
  /** Last result emitted under this window's current identity. */
  emitted: WindowResult | null = null
  /** How completeness was known when it fired. */
  basis: Basis = 'unknown'
  /** The end `basis` speaks for; a session that grew past it is no longer known complete. */
  basisEnd = Number.NEGATIVE_INFINITY
  /** Batch number that last touched this window (0 = never). */
  touchedIn = 0
  /** Fired results, oldest first: the only one as itself (most windows fire once and are never corrected), an array from the second. */
  #history: WindowResult[] | WindowResult | null = null
  /**
   * Fixed windows: the sources with a cell, in sorted order (the combination order, so every
   * replica adds the same floats), and their cells in that order. A cell is an object when this
   * replica writes it or someone holds it (placement caches); a peer's cell that nobody holds
   * is `null` here and lives as six numbers in `#values` (count, sum, min, max, maxTs, version
   * at `6 × position`, in typed-array blocks of shared 64 KB buffers: `peerRows`), where an object would box
   * each double field and a fresh replica merging 80k cells would allocate ~400k objects. A
   * window holding only such rows has no `#ordered` at all.
   */
  readonly #sources: string[] = []
  #ordered: (Cell | null)[] | null = null
  /** Row `i` belongs to `#sources[i]` once any peer cell is kept as numbers (rows of object cells are unused, rows past the sources are reserved room). */
  #values: Float64Array | null = null

  constructor(window: string, key: string, start: number, end: number) {
    this.window = window
    this.key = key
    this.start = start
    this.end = end
  }

  /** Fixed windows: how many sources have a cell here. */
  get cellCount(): number {
    return this.#sources.length
  }

  /** Fixed windows: sources with a cell, sorted; `cellAt(i)` is the cell of `sources()[i]`. */
  sources(): readonly string[] {
    return this.#sources
  }

  /** Fixed windows: the cell at a position of `sources()`: the live object, or a copy of a peer cell kept as numbers. */
  cellAt(position: number): Readonly<Cell> {
    return this.#ordered?.[position] ?? this.#rowCell(position)
  }

  /** Fixed windows: the cell of `source` as a live object (a peer cell kept as numbers becomes one), if it has one. */
  cell(source: string): Cell | undefined {
    const at = this.#position(source)
    if (this.#sources[at] !== source) return undefined
    const ordered = this.#ordered ?? this.#objects()
    let cell = ordered[at] as Cell | null
    if (cell === null) {
      cell = this.#rowCell(at)
      ordered[at] = cell
    }
    return cell
  }

  /** Adds a source's first cell; a window never loses one, and a source's cell is updated in place. */
  addCell(source: string, cell: Cell): void {
    const at = this.#position(source)
    if (this.#sources[at] === source) throw new Error(`window already holds a cell of source ${JSON.stringify(source)}`)
    this.#insert(at, source, cell)
  }

  /**
   * Fixed windows: merges the `i`-th cell of a peer's group as `source`'s cell (lattice join).
   * Returns false when the cell held here is equal or newer (stale).
   */
  mergePeerCell(source: string, group: CellGroup, i: number): boolean {
    const at = this.#position(source)
    if (this.#sources[at] !== source) {
      this.#insert(at, source, null)
      writeGroupRow(group, i, this.#values as Float64Array, 6 * at)
      return true
    }
    const cell = this.#ordered?.[at] ?? null
    if (cell !== null) {
      // An object cell (a source this replica writes, or wrote): rare, so the plain lattice order.
      const peer = groupCell(group, i)
      if (compareCells(peer, cell) <= 0) return false
      // In place: placement caches hold the object.
      Object.assign(cell, peer)
      return true
    }
    const values = this.#values as Float64Array
    if (compareGroupRow(group, i, values, 6 * at) <= 0) return false
    writeGroupRow(group, i, values, 6 * at)
    return true
  }

  /**
   * Fixed windows: makes room for `rows` peers' cells kept as numbers at once (a merge knows
   * how many sources' groups it brings for a window start), rather than growing row by row.
   */
  reserveRows(rows: number): void {
    if (this.#values !== null || rows < 2) return
    this.#values = peerRows.take(6 * Math.max(rows, this.#sources.length))
  }

  /** Inserts a source at `at`, with its cell object or `null` (its values then go into its row). */
  #insert(at: number, source: string, cell: Cell | null): void {
    const sources = this.#sources
    const n = sources.length
    let values = this.#values
    if (values === null && cell === null) values = peerRows.take(6 * Math.max(n + 1, 2))
    if (values !== null) {
      if (values.length < 6 * (n + 1)) {
        // Outgrown: a block twice the size; the old one is left unused.
        const grown = peerRows.take(12 * (n + 1))
        grown.set(values.subarray(0, 6 * at))
        grown.set(values.subarray(6 * at, 6 * n), 6 * (at + 1))
        values = grown
      } else if (at < n) {
        values.copyWithin(6 * (at + 1), 6 * at, 6 * n)
        values.fill(0, 6 * at, 6 * (at + 1))
      }
      this.#values = values
    }
    const ordered = cell === null ? this.#ordered : (this.#ordered ?? this.#objects())
    if (at === n) {
      sources.push(source)
      ordered?.push(cell)
    } else {
      sources.splice(at, 0, source)
      ordered?.splice(at, 0, cell)
    }
  }

  /** Creates `#ordered` for a window that so far held only rows (every position `null`). */
  #objects(): (Cell | null)[] {
    const ordered: (Cell | null)[] = []
    for (let n = this.#sources.length; n > 0; n--) ordered.push(null)
    this.#ordered = ordered
    return ordered
  }

  /** A new cell object from the numbers of row `at`. */
  #rowCell(at: number): Cell {
    const v = this.#values as Float64Array
    const o = 6 * at
    return { count: v[o] as number, sum: v[o + 1] as number, min: v[o + 2] as number, max: v[o + 3] as number, maxTs: v[o + 4] as number, version: v[o + 5] as number }
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

  /** Combines the cells in a fixed order (by source, then fragment start), so every replica gets the same floats. */
  result(status: ResultStatus, revision: number, final: boolean, basis: Basis): WindowResult {
    let count = 0
    let sum = 0
    let min = Number.POSITIVE_INFINITY
    let max = Number.NEGATIVE_INFINITY
    if (this.fragments.length > 0) {
      // A session's absorbed fragments are tombstones.
      const cells = fragmentCells(this.fragments)
      for (let i = 0; i < cells.length; i++) {
        const cell = cells[i] as Cell
        if (cell.count === 0) continue
        count += cell.count
        sum += cell.sum
        if (cell.min < min) min = cell.min
        if (cell.max > max) max = cell.max
      }
    } else {
      // A fixed window adds every cell it holds, objects and rows alike, in source order.
      const ordered = this.#ordered
      const values = this.#values
      const n = this.#sources.length
      for (let i = 0; i < n; i++) {
        const cell = ordered === null ? null : (ordered[i] as Cell | null)
        if (cell !== null) {
          count += cell.count
          sum += cell.sum
          if (cell.min < min) min = cell.min
          if (cell.max > max) max = cell.max
        } else {
          const v = values as Float64Array
          const o = 6 * i
          count += v[o] as number
          sum += v[o + 1] as number
          if ((v[o + 2] as number) < min) min = v[o + 2] as number
          if ((v[o + 3] as number) > max) max = v[o + 3] as number
        }
      }
    }
    return {
      window: this.window,
      key: this.key,
      start: this.start,
      end: this.end,
      count,
      sum,
      min: count === 0 ? 0 : min,
      max: count === 0 ? 0 : max,
      mean: count === 0 ? 0 : sum / count,
      status,
      revision,
      final,
      basis,
    }
  }

  /** Records an emitted fired result (on-time or correction) in the window's history. */
  remember(result: WindowResult, limit: number): void {
    this.emitted = result
    if (result.status === 'provisional' || limit <= 0) return
    const history = this.#history
    if (history === null || limit === 1) this.#history = result
    else if (!Array.isArray(history)) this.#history = [history, result]
    else {
      history.push(result)
      if (history.length > limit) history.splice(0, history.length - limit)
    }
  }

  history(): readonly WindowResult[] {
    const history = this.#history
    return history === null ? [] : Array.isArray(history) ? history : [history]
  }

  snapshot(): WindowSnapshot {
    return {
      window: this.window,
      key: this.key,
      start: this.start,
      end: this.end,
      fired: this.fired,
      final: this.final,
      revision: this.revision,
      basis: this.basis,
      basisEnd: this.basisEnd,
      emitted: this.emitted,
      history: [...this.history()],
      cells: this.#sources.map((source, i) => [source, { ...this.cellAt(i) }] as const),
      fragments: this.fragments.map((f) => [f.source, f.start, { ...f.cell }] as const),
    }
  }

  static restore(s: WindowSnapshot): WindowState {
    const w = new WindowState(s.window, s.key, s.start, s.end)
    w.fired = s.fired
    w.final = s.final
    w.revision = s.revision
    w.basis = s.basis
    w.basisEnd = s.basisEnd
    w.emitted = s.emitted
    w.#history = s.history.length === 0 ? null : s.history.length === 1 ? (s.history[0] as WindowResult) : [...s.history]
    for (const [source, cell] of s.cells) w.addCell(source, { ...cell })
    w.fragments = s.fragments.map(([source, start, cell]) => ({ source, start, cell: { ...cell } }))
    return w
  }

  /** Total events held in this window's cells. */
  count(): number {
    let n = 0
    const ordered = this.#ordered
    for (let i = 0; i < this.#sources.length; i++) n += ordered?.[i]?.count ?? ((this.#values as Float64Array)[6 * i] as number)
    for (const fragment of this.fragments) n += fragment.cell.count
    return n
  }
}

/** Fragments' cells by source, then start. */
function fragmentCells(fragments: readonly SessionFragment[]): Cell[] {
  const ordered = fragments.length === 1 ? fragments : [...fragments].sort(byFragment)
  return ordered.map((f) => f.cell)
}

function byFragment(a: SessionFragment, b: SessionFragment): number {
  return a.source < b.source ? -1 : a.source > b.source ? 1 : a.start - b.start
}
