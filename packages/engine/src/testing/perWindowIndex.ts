import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'
import type { StreamEvent } from '../input/event.ts'
import { addToCell, type Cell, emptyCell } from '../lattice/cell.ts'
import type { Aggregate } from '../lattice/cellSet.ts'
import { CellSet } from '../lattice/cellSet.ts'
import type { CellEntry } from '../lattice/cellEntry.ts'
import {
  ADMITTED_LATE,
  type BatchFrontiers,
  type ExpiredCell,
  type MergeCounts,
  ON_TIME,
  type PlacementSource,
  REFUSED,
  type WindowIndex,
  type WindowTracker,
} from '../windows/windowIndex.ts'
import { alignedStart, sliceLength, type WindowSpec } from '../windows/windowSpec.ts'
import { WindowState, type WindowValues } from '../windows/windowState.ts'

/** A window's own cells, one per source: what folds its value in the per-window placement. */
class WindowCells implements WindowValues {
  readonly cells = new CellSet()
  readonly #aggregates: AggregateSet | null

  constructor(aggregates: AggregateSet | null) {
    this.#aggregates = aggregates
  }

  foldWindow(_window: WindowState, into: Aggregate): void {
    this.cells.fold(into, this.#aggregates)
  }
}

/**
 * The per-window placement: every tumbling, sliding and cumulating window keeps one cell per
 * source, and an event updates each window it falls in (`size / slide` cells for a sliding
 * spec). This is how fixed windows were placed before they shared slices; it stays as the
 * reference the sliced placement is checked against (results, changes, late lane, stats) and
 * measured against (bench/sliding-1h-1m.ts). It places and settles like the engine's own index
 * (same order of windows, same outcome bits), but neither merges peers' cells nor checkpoints.
 *
 * Windows are found by the ordinal of their end, `(end - origin) / unit`, a small integer; per
 * source, the windows and cells it reached last are remembered in `maxNewPerEvent` slots by
 * ordinal, so a source's next event mostly lands in windows it reached before, with no map lookup.
 */
export class PerWindowIndex implements WindowIndex {
  readonly id: string
  readonly maxNewPerEvent: number
  readonly unit: number
  discarding = false
  aggregates: AggregateSet | null = null
  readonly #size: number
  readonly #cumulating: boolean
  /** key → end ordinal → window. */
  readonly #byKey = new Map<string, Map<number, WindowState>>()
  #count = 0
  #origin = Number.NaN
  readonly #recentWindows: (WindowState | undefined)[] = []
  readonly #recentCells: (Cell | undefined)[] = []
  readonly #recentStates: (States | undefined)[] = []

  constructor(spec: WindowSpec & { kind: 'tumbling' | 'sliding' | 'cumulating' }) {
    this.id = spec.id
    this.#size = spec.size
    this.#cumulating = spec.kind === 'cumulating'
    this.unit = sliceLength(spec)
    this.maxNewPerEvent = spec.size / this.unit
  }

  get size(): number {
    return this.#count
  }

  #ordinal(end: number): number {
    if (Number.isNaN(this.#origin)) this.#origin = end
    return (end - this.#origin) / this.unit
  }

  /** Ends of the windows holding `ts`, latest first, and the start of the window ending at `end`. */
  #ends(ts: number): { first: number; last: number } {
    const slice = alignedStart(ts, this.unit)
    const last = this.#cumulating ? alignedStart(ts, this.#size) + this.#size : slice + this.#size
    return { first: slice + this.unit, last }
  }

  #startOf(end: number): number {
    return this.#cumulating ? alignedStart(end - 1, this.#size) : end - this.#size
  }

  missingWindows(key: string, ts: number, frontiers: BatchFrontiers): number {
    const series = this.#byKey.get(key)
    const { first, last } = this.#ends(ts)
    let missing = 0
    for (let end = last; end >= first; end -= this.unit) {
      if (end + frontiers.lateness <= frontiers.watermark) continue
      if (series?.get(this.#ordinal(end)) === undefined) missing++
    }
    return missing
  }

  place(
    key: string,
    source: PlacementSource,
    version: number,
    frontiers: BatchFrontiers,
    tracker: WindowTracker,
    event: StreamEvent,
    inputs: readonly unknown[] | null,
  ): number {
    const { ts, value } = event
    const aggregates = this.aggregates
    let series: Map<number, WindowState> | undefined
    let outcome = 0
    const slots = this.maxNewPerEvent
    const base = source.slot * slots
    const { first, last } = this.#ends(ts)
    let ordinal = this.#ordinal(last)
    for (let end = last; end >= first; end -= this.unit, ordinal--) {
      const at = base + slotOf(ordinal, slots)
      const start = this.#startOf(end)
      const recent = this.#recentWindows[at]
      let window: WindowState | undefined
      let cell: Cell | undefined
      let states: States | undefined
      if (recent !== undefined && recent.end === end && recent.key === key && recent.live) {
        window = recent
        cell = this.#recentCells[at]
        states = this.#recentStates[at]
      } else {
        series ??= this.#byKey.get(key)
        window = series?.get(ordinal)
      }
      if ((window === undefined || window.final) && end + frontiers.lateness <= frontiers.watermark) {
        outcome |= REFUSED
        continue
      }
      if (window === undefined) {
        window = new WindowState(this.id, key, start, end)
        window.values = new WindowCells(aggregates)
        window.fired = end <= frontiers.firing
        series ??= this.#seriesOf(key)
        series.set(ordinal, window)
        this.#count++
        tracker.created(window)
      }
      if (cell === undefined) {
        const cells = (window.values as WindowCells).cells
        cell = cells.cell(source.name)
        if (cell === undefined) {
          cell = emptyCell()
          states = aggregates?.init()
          cells.addCell(source.name, cell, states ?? null)
        } else if (aggregates !== null) states = cells.statesOf(source.name)
        this.#recentWindows[at] = window
        this.#recentCells[at] = cell
        this.#recentStates[at] = states
      }
      addToCell(cell, ts, value, version)
      if (aggregates !== null && inputs !== null) aggregates.add(states as States, inputs, event)
      if (this.discarding) {
        window.pending ??= emptyCell()
        addToCell(window.pending, ts, value, 0)
        if (aggregates !== null && inputs !== null) {
          window.pendingStates ??= aggregates.init()
          aggregates.add(window.pendingStates, inputs, event)
        }
      }
      tracker.written(this.id, key, start, source.name, cell, states ?? null)
      outcome |= window.fired ? ADMITTED_LATE : ON_TIME
      if (window.touchedIn !== frontiers.batch) {
        window.touchedIn = frontiers.batch
        tracker.touched(window)
      }
    }
    return outcome
  }

  #seriesOf(key: string): Map<number, WindowState> {
    let series = this.#byKey.get(key)
    if (series === undefined) {
      series = new Map()
      this.#byKey.set(key, series)
    }
    return series
  }

  mergeRemote(): MergeCounts {
    throw new Error('the per-window reference placement does not merge peers’ cells')
  }

  adopt(window: WindowState): void {
    window.values ??= new WindowCells(this.aggregates)
    const series = this.#seriesOf(window.key)
    const ordinal = this.#ordinal(window.end)
    if (!series.has(ordinal)) this.#count++
    series.set(ordinal, window)
  }

  snapshot(): null {
    return null
  }

  restore(): void {}

  find(key: string, start: number, end?: number): WindowState | undefined {
    if (Number.isNaN(this.#origin)) return undefined
    const w = this.#byKey.get(key)?.get(this.#ordinal(end ?? start + this.#size))
    return w !== undefined && w.start === start ? w : undefined
  }

  remove(window: WindowState, expired: ExpiredCell): void {
    const series = this.#byKey.get(window.key)
    const ordinal = this.#ordinal(window.end)
    if (series === undefined || series.get(ordinal) !== window) return
    series.delete(ordinal)
    if (series.size === 0) this.#byKey.delete(window.key)
    for (const source of (window.values as WindowCells).cells.sources()) expired(this.id, window.key, window.start, source)
    window.live = false
    this.#count--
  }

  *windows(): IterableIterator<WindowState> {
    for (const series of this.#byKey.values()) yield* series.values()
  }

  windowsOf(key: string): Iterable<WindowState> {
    return this.#byKey.get(key)?.values() ?? []
  }

  horizon(frontiers: BatchFrontiers): number {
    return frontiers.watermark - frontiers.lateness - this.#size
  }

  takes(window: string): boolean {
    return window === this.id
  }

  gauges(): { cells: number; pending: number } {
    let cells = 0
    let pending = 0
    for (const w of this.windows()) {
      cells += (w.values as WindowCells).cells.size
      if (!w.fired) pending += w.count()
    }
    return { cells, pending }
  }

  liveCells(out: CellEntry[], only: ReadonlySet<string> | null): void {
    for (const w of this.windows()) {
      const cells = (w.values as WindowCells).cells
      const sources = cells.sources()
      for (let i = 0; i < sources.length; i++) {
        const source = sources[i] as string
        if (only !== null && !only.has(source)) continue
        out.push({ address: { window: this.id, key: w.key, start: w.start, source }, cell: cells.cellAt(i) })
      }
    }
  }
}

/** `ordinal` modulo `slots`, in [0, slots). */
function slotOf(ordinal: number, slots: number): number {
  const r = ordinal - Math.floor(ordinal / slots) * slots
  return r < 0 ? r + slots : r >= slots ? r - slots : r
}

