import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'
import type { StreamEvent } from '../input/event.ts'
import { type Aggregate, CellSet } from '../lattice/cellSet.ts'
import type { SliceGeometry } from './sliceGeometry.ts'
import type { WindowState, WindowValues } from './windowState.ts'

/**
 * One key's slice of a tumbling, sliding or cumulating spec: `[start, start + unit)`, every
 * window holding it counts its events. Each source writes one cell per slice part: the main
 * part, counted by every window holding the slice (the slice's own cells: a slice is its main
 * part, one object fewer per slice in a cold join), and, for events that came when the earlier
 * of those windows were already final, a part counted only by the windows ending at or after the
 * first that still admitted them (`partial`, by that window's ordinal). Which windows count an
 * event is then part of the lattice state, so every replica computes every window the same way.
 *
 * `Series` is the series holding the slice (`SliceSeries`), whose key and geometry it reads: a
 * type parameter, as the series holds its slices in turn and the two files must not import each other.
 */
export class Slice<Series extends { readonly key: string; readonly geometry: SliceGeometry }> extends CellSet implements WindowValues {
  readonly ordinal: number
  readonly start: number
  readonly key: string
  readonly series: Series
  /** Partial parts by the ordinal of the first window counting them (sorted when read). */
  partial: Map<number, CellSet> | null = null
  /** False once dropped (its last window left live state). */
  live = true
  /** Bumped on every change to one of its cells. */
  version = 0
  /** The main part folded (count, sum, min, max), as of `foldedAt`; made on first use (a tumbling window folds its one slice itself). */
  #folded: Float64Array | null = null
  /** With aggregates: the main part's states folded, as of `foldedAt` (null when it has no cell; with exact aggregates the running fold, empty states when it has none). */
  foldedStates: States | null = null
  foldedAt = -1
  /**
   * With exact aggregates (`AggregateSet.exact`): the main part's states folded and kept up to
   * date by this replica's own adds, as of the slice version `#runningAt`. Any other change (a
   * peer's cell, a partial part) bumps the version alone, and the next read folds the cells again.
   */
  #running: States | null = null
  #runningAt = -1
  /**
   * What batch `batch` worked out once for the slice (frontiers stand still within a batch): the
   * first window admitting its events (`from`, later ones as well), the first window touched
   * (`touchedFrom`), and the outcome bits of the windows from `from` on (placement only).
   */
  batch = 0
  from = 0
  touchedFrom = 0
  bits = 0

  constructor(ordinal: number, start: number, series: Series) {
    super()
    this.ordinal = ordinal
    this.start = start
    this.series = series
    this.key = series.key
  }

  /** The part counted from window `from` on: the slice itself when that is the first window holding it. */
  part(from: number): CellSet {
    if (from === this.ordinal) return this
    this.partial ??= new Map()
    let part = this.partial.get(from)
    if (part === undefined) {
      part = new CellSet()
      this.partial.set(from, part)
    }
    return part
  }

  /** Partial parts in ascending order of their first window. */
  partials(): [number, CellSet][] {
    return this.partial === null ? [] : [...this.partial].sort((a, b) => a[0] - b[0])
  }

  /** Cells in every part. */
  cellCount(): number {
    let n = this.size
    if (this.partial !== null) for (const part of this.partial.values()) n += part.size
    return n
  }

  /**
   * A tumbling window's value: its one slice's cells (a tumbling window is one slice and has no
   * partial parts), folded as the series would fold them.
   */
  foldWindow(_window: WindowState, into: Aggregate): void {
    this.foldMain(into)
  }

  /**
   * Adds one of this replica's events, just added to a cell of the main part, to the running fold
   * of its states when that is up to date; call it before the add's `version++`.
   */
  addToRunning(aggregates: AggregateSet, inputs: readonly unknown[], event: StreamEvent): void {
    if (this.#runningAt !== this.version) return
    aggregates.add(this.#running as States, inputs, event)
    this.#runningAt = this.version + 1
  }

  /**
   * The main part's cells folded into `into`: count, sum, min and max from the cells, and, with
   * exact aggregates, the states from the running fold (handed out as they are when `into` has
   * none yet: read them only) instead of a merge per cell.
   */
  foldMain(into: Aggregate): void {
    const aggregates = this.series.geometry.aggregates
    if (aggregates === null || !aggregates.exact || into.states === undefined) {
      this.fold(into, aggregates)
      return
    }
    const running = this.#foldRunning(into, aggregates)
    into.states = into.states === null ? running : aggregates.mergeInto(into.states, running)
  }

  /**
   * Folds the main part's count, sum, min and max into `into` (its states untouched) and returns
   * the running fold of its states (exact aggregates), folded from the cells in the same pass
   * when a change other than this replica's adds made it stale.
   */
  #foldRunning(into: Aggregate, aggregates: AggregateSet): States {
    if (this.#runningAt === this.version) {
      this.fold(into, null)
      return this.#running as States
    }
    const states = into.states
    into.states = null
    this.fold(into, aggregates)
    this.#running = into.states ?? aggregates.init()
    this.#runningAt = this.version
    into.states = states
    return this.#running
  }

  /**
   * The main part's fold, brought up to date: count, sum, min, max (and `foldedStates`: with
   * exact aggregates the running fold itself, which later adds change in place; read it only,
   * and only while `foldedAt` is the slice's version).
   */
  folded(): Float64Array {
    let folded = this.#folded
    if (folded !== null && this.foldedAt === this.version) return folded
    folded ??= new Float64Array(4)
    const aggregates = this.series.geometry.aggregates
    const a: Aggregate = { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, states: aggregates === null ? undefined : null }
    if (aggregates?.exact === true) a.states = this.#foldRunning(a, aggregates)
    else this.fold(a, aggregates)
    this.foldedStates = a.states ?? null
    folded[0] = a.count
    folded[1] = a.sum
    folded[2] = a.min
    folded[3] = a.max
    this.#folded = folded
    this.foldedAt = this.version
    return folded
  }
}

/**
 * The replicated name of a slice part: the spec id for `main` parts, `<spec id>@<end>` for a part
 * counted only by windows ending at or after `end` (spec ids never hold `@`).
 *
 * @example
 * partName('sliding:60000:10000', 120_000) // 'sliding:60000:10000@120000'
 */
export function partName(spec: string, end: number): string {
  return `${spec}@${end}`
}

/** The spec id and first counting window end of a replicated part name; `end` NaN for a `main` part. */
export function parsePartName(window: string): { readonly spec: string; readonly end: number } {
  const at = window.indexOf('@')
  if (at < 0) return { spec: window, end: Number.NaN }
  const end = window.slice(at + 1)
  return { spec: window.slice(0, at), end: /^-?\d+$/.test(end) ? Number(end) : Number.POSITIVE_INFINITY }
}
