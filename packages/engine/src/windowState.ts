import type { Cell } from './cell.ts'
import type { WindowSnapshot } from './engineCheckpoint.ts'
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
  /** Session windows: fragments, in no particular order. */
  fragments: SessionFragment[] = []
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
  #history: WindowResult[] | null = null
  /**
   * Fixed windows: the sources with a cell, in sorted order (the combination order, so every
   * replica adds the same floats), and their cells in that order. Arrays rather than a Map:
   * a window holds few sources, and a fresh replica builds tens of thousands of windows at once.
   */
  readonly #sources: string[] = []
  readonly #ordered: Cell[] = []

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

  /** Fixed windows: sources with a cell, sorted; `cells()` holds their cells in the same order. */
  sources(): readonly string[] {
    return this.#sources
  }

  cells(): readonly Cell[] {
    return this.#ordered
  }

  /** Fixed windows: the cell of `source`, if it has one. */
  cell(source: string): Cell | undefined {
    const at = this.#position(source)
    return this.#sources[at] === source ? this.#ordered[at] : undefined
  }

  /** Adds a source's first cell; a window never loses one, and a source's cell is updated in place. */
  addCell(source: string, cell: Cell): void {
    const at = this.#position(source)
    if (this.#sources[at] === source) throw new Error(`window already holds a cell of source ${JSON.stringify(source)}`)
    if (at === this.#sources.length) {
      this.#sources.push(source)
      this.#ordered.push(cell)
    } else {
      this.#sources.splice(at, 0, source)
      this.#ordered.splice(at, 0, cell)
    }
  }

  /** Where `source` is or would be inserted in `#sources`. */
  #position(source: string): number {
    const sources = this.#sources
    let lo = 0
    let hi = sources.length
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
    // A session's absorbed fragments are tombstones; a fixed window adds every cell it holds.
    const sessions = this.fragments.length > 0
    const cells = sessions ? fragmentCells(this.fragments) : this.#ordered
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[i] as Cell
      if (sessions && cell.count === 0) continue
      count += cell.count
      sum += cell.sum
      if (cell.min < min) min = cell.min
      if (cell.max > max) max = cell.max
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
    const history = this.#history ?? []
    this.#history = history
    history.push(result)
    if (history.length > limit) history.splice(0, history.length - limit)
  }

  history(): readonly WindowResult[] {
    return this.#history ?? []
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
      cells: this.#sources.map((source, i) => [source, { ...(this.#ordered[i] as Cell) }] as const),
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
    w.#history = s.history.length > 0 ? [...s.history] : null
    for (const [source, cell] of s.cells) w.addCell(source, { ...cell })
    w.fragments = s.fragments.map(([source, start, cell]) => ({ source, start, cell: { ...cell } }))
    return w
  }

  /** Total events held in this window's cells. */
  count(): number {
    let n = 0
    for (const cell of this.#ordered) n += cell.count
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
