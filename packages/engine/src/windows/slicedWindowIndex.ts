import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'
import type { StreamEvent } from '../input/event.ts'
import { type Cell, copyCell, emptyCell } from '../lattice/cell.ts'
import type { CellGroup } from '../lattice/cellGroup.ts'
import type { CellSet } from '../lattice/cellSet.ts'
import type { SessionIndexSnapshot, SliceIndexSnapshot } from './windowSnapshot.ts'
import type { CellEntry } from '../lattice/cellEntry.ts'
import { partName, Slice } from './slice.ts'
import { SliceGeometry } from './sliceGeometry.ts'
import { liveSliceCells, mergePeerGroups, namedParts, type PartsHost, restoreSliceEntries, sliceEntries } from './sliceParts.ts'
import { SliceSeries } from './sliceSeries.ts'
import {
  ADMITTED_LATE,
  type BatchFrontiers,
  type ExpiredCell,
  type MergeCounts,
  ON_TIME,
  type PlacementSource,
  REFUSED,
  type RemoteFrontiers,
  type WindowIndex,
  type WindowTracker,
} from './windowIndex.ts'
import { alignedStart, sliceLength, type WindowSpec } from './windowSpec.ts'
import { restoredStates, WindowState } from './windowState.ts'

/**
 * Tumbling, sliding and cumulating windows over shared slices (Flink's window slicing, Jet's
 * frames). A slice is `unit` long: the slide, the cumulating step, or the tumbling size. An
 * event updates one cell, its source's in its slice, whatever the window size; a window's value
 * is folded from the slices it holds (`SliceSeries`). Windows still exist one by one, for what
 * they emitted and where they are in their lifecycle.
 *
 * Lateness stays per window: an event is admitted by the windows holding its slice whose end
 * plus allowed lateness is above the watermark. Those are always the later ones (by end); when
 * the earlier ones are final already, the event goes to a partial part of its slice, counted only
 * from the first window that admitted it (`Slice`), so every window shows what it would have
 * shown with cells of its own, on this replica and, through the replicated parts, on every other.
 */
export class SlicedWindowIndex implements WindowIndex {
  readonly id: string
  readonly maxNewPerEvent: number
  /** Slice length: every window start and end is a multiple of it. */
  readonly unit: number
  discarding = false
  readonly #geometry: SliceGeometry
  /** Largest window size (dedup horizon). */
  readonly #reach: number
  /** key → series. A Map, so `__proto__` is an ordinary key. */
  readonly #byKey = new Map<string, SliceSeries>()
  #windows = 0
  #cells = 0
  /**
   * Events placed, and cells this replica made for them, lately (both halved now and then): how
   * many writes a new cell can expect, which decides how it is kept (see `SPARSE_WRITES`).
   */
  #writes = 0
  #made = 0
  /** By source slot: the slices the source wrote last, and its cells there (see `RecentEntries`). */
  readonly #recent: (RecentEntries | undefined)[] = []
  /** What merging peers' groups reaches of this index. */
  readonly #parts: PartsHost

  constructor(spec: WindowSpec & { kind: 'tumbling' | 'sliding' | 'cumulating' }) {
    this.id = spec.id
    this.unit = sliceLength(spec)
    this.#reach = spec.size
    this.maxNewPerEvent = this.#reach / this.unit
    this.#geometry = new SliceGeometry(this.unit, this.maxNewPerEvent, spec.kind === 'cumulating')
    this.#parts = {
      id: this.id,
      unit: this.unit,
      geometry: this.#geometry,
      sliceAt: (key, start) => this.#sliceAt(key, start),
      cellAdded: () => {
        this.#cells++
      },
      touch: (series, from, to, frontiers, tracker) => this.#touch(series, from, to, frontiers, tracker, true),
    }
  }

  get size(): number {
    return this.#windows
  }

  get aggregates(): AggregateSet | null {
    return this.#geometry.aggregates
  }

  set aggregates(aggregates: AggregateSet | null) {
    this.#geometry.aggregates = aggregates
  }

  takes(window: string): boolean {
    return window === this.id || (window.startsWith(this.id) && window.charCodeAt(this.id.length) === 64)
  }

  missingWindows(key: string, ts: number, frontiers: BatchFrontiers): number {
    const g = this.#geometry
    const s = g.ordinal(alignedStart(ts, this.unit))
    const series = this.#byKey.get(key)
    let missing = 0
    for (let b = g.firstAbove(s, frontiers.watermark, frontiers.lateness); b <= g.lastOf(s); b++) {
      if (series?.windows.get(b) === undefined) missing++
    }
    return missing
  }

  /**
   * Places one event: folds it into its source's cell of its slice (the one cell update, whatever
   * the window size), and, the first time a batch reaches the slice, touches the windows that
   * admit what it brings. Returns ON_TIME / ADMITTED_LATE / REFUSED bits.
   */
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
    const batch = frontiers.batch
    const recent = this.#recent[source.slot] ?? this.#recentOf(source.slot)
    const publish = frontiers.publish === true
    let slice: Slice<SliceSeries> | undefined
    let cell: Cell | undefined
    // Without a cell object, the source's cell is kept as numbers at `row` of the slice's `rows`.
    let row = -1
    let states: States | undefined
    // A slice the source wrote lately, in the key's series: no alignment, no lookup.
    for (let i = 0; i < ENTRIES; i += FIELDS) {
      const entry = recent[i] as Slice<SliceSeries> | undefined
      if (entry !== undefined && ts >= entry.start && ts < entry.start + this.unit && entry.key === key && entry.live) {
        slice = entry
        cell = recent[i + 1] as Cell | undefined
        // The outbox needs the cell as an object; a count of NaN says the row's cell became one.
        if (cell === undefined && !publish) {
          row = recent[i + 2] as number
          if (Number.isNaN(entry.rows[6 * row])) row = -1
        }
        if (inputs !== null) states = recent[i + 3] as States | undefined
        break
      }
    }
    if (slice === undefined) {
      const start = alignedStart(ts, this.unit)
      const g = this.#geometry
      const ordinal = g.ordinal(start)
      // An event no window admits any more leaves no trace: a slice made for it would hold no
      // cell, and no window would ever release it.
      if (g.firstAbove(ordinal, frontiers.watermark, frontiers.lateness) > g.lastOf(ordinal)) return REFUSED
      slice = this.#sliceOf(this.#seriesOf(key), ordinal, start)
    }
    // Frontiers stand still within a batch: a slice's first admitting window is worked out once per batch.
    const last = this.#geometry.lastOf(slice.ordinal)
    if (slice.batch !== batch) {
      slice.batch = batch
      slice.from = this.#geometry.firstAbove(slice.ordinal, frontiers.watermark, frontiers.lateness)
      slice.touchedFrom = last + 1
    }
    const from = slice.from
    if (from > last) return REFUSED
    const series = slice.series
    const main = from === slice.ordinal
    if (!main || (cell === undefined && row < 0)) {
      const part = slice.part(from)
      // The cell's row; −2: it is (or, new, will be) an object, as the outbox and partial parts need.
      row = main && !publish ? part.ownRow(source.name) : -2
      cell = row === -2 ? part.cell(source.name) : undefined
      if (row >= 0 || cell !== undefined) {
        if (inputs !== null) states = part.statesOf(source.name)
      } else {
        states = this.aggregates?.init()
        // Numbers where the index's cells take few writes each (see SPARSE_WRITES).
        if (row === -1 && this.#sparse()) row = part.addRow(source.name, states ?? null)
        else {
          cell = emptyCell()
          part.addCell(source.name, cell, states ?? null)
        }
        this.#cells++
        if (++this.#made === 1024) {
          // Halved now and then: what happened lately decides.
          this.#made /= 2
          this.#writes = Math.floor(this.#writes / 2)
        }
        if (!main) series.notePartial(slice.ordinal)
      }
      if (main) {
        // The entry of this key's slice, or else the next in turn; a slice older than the one
        // there (a late event's) takes the next late entry instead.
        let at = 0
        while (at < RECENT * FIELDS && (recent[at] as Slice<SliceSeries> | undefined)?.key !== key) at += FIELDS
        const current = at < RECENT * FIELDS ? (recent[at] as Slice<SliceSeries> | undefined) : undefined
        if (current === undefined) {
          const next = (recent[NEXT] as number | undefined) ?? 0
          at = next * FIELDS
          recent[NEXT] = (next + 1) % RECENT
        } else if (current.live && slice.start < current.start) {
          const next = (recent[NEXT_LATE] as number | undefined) ?? 0
          at = (RECENT + next) * FIELDS
          recent[NEXT_LATE] = (next + 1) % LATE
        }
        recent[at] = slice
        recent[at + 1] = cell
        recent[at + 2] = row
        if (inputs !== null) recent[at + 3] = states
      }
    }
    this.#writes++
    // `addToCell`'s lines, inline: `ts` and `value` handed to a call V8 does not inline are boxed.
    if (cell !== undefined) {
      cell.count++
      cell.sum += value
      if (value < cell.min) cell.min = value
      if (value > cell.max) cell.max = value
      if (ts > cell.maxTs) cell.maxTs = ts
      cell.version = version
    } else {
      const v = slice.rows
      const o = 6 * row
      v[o] = (v[o] as number) + 1
      v[o + 1] = (v[o + 1] as number) + value
      if (value < (v[o + 2] as number)) v[o + 2] = value
      if (value > (v[o + 3] as number)) v[o + 3] = value
      if (ts > (v[o + 4] as number)) v[o + 4] = ts
      v[o + 5] = version
    }
    if (inputs !== null) {
      const aggregates = this.aggregates as AggregateSet
      aggregates.add(states as States, inputs, event)
      if (main && aggregates.exact) slice.addToRunning(aggregates, inputs, event)
    }
    slice.version++
    series.version++
    if (publish) tracker.written(main ? this.id : partName(this.id, this.#geometry.endOf(from)), key, slice.start, source.name, cell as Cell, states ?? null)
    if (from < slice.touchedFrom) {
      // The batch's first event here: windows `from..last` touched, and what they make of it read on the way.
      slice.bits = this.#touch(series, from, last, frontiers, tracker, false)
      slice.touchedFrom = from
    }
    if (this.discarding) series.addPending(from, last, value, event, inputs, this.aggregates)
    return main ? slice.bits : slice.bits | REFUSED
  }

  /**
   * Touches windows `from..to` of `series`, latest end first (the order the windows of one slice
   * were always reached in), creating those that are missing: born fired past the firing frontier.
   * Returns ON_TIME when one of them has not fired, ADMITTED_LATE when one has.
   */
  #touch(series: SliceSeries, from: number, to: number, frontiers: BatchFrontiers, tracker: WindowTracker, replaced: boolean): number {
    const g = this.#geometry
    const batch = frontiers.batch
    let bits = 0
    for (let b = to; b >= from; b--) {
      let w = series.windows.get(b)
      if (w === undefined) {
        const end = g.endOf(b)
        w = new WindowState(this.id, series.key, g.startOf(g.firstOf(b)), end)
        // A tumbling window folds its one slice straight away; others through the series.
        w.values = (g.perBlock === 1 ? series.slices.get(b) : undefined) ?? series
        w.fired = end <= frontiers.firing
        series.windows.set(b, w)
        this.#windows++
        tracker.created(w)
      }
      if (replaced) tracker.replaced(w)
      if (w.touchedIn !== batch) {
        w.touchedIn = batch
        tracker.touched(w)
      }
      bits |= w.fired ? ADMITTED_LATE : ON_TIME
    }
    return bits
  }

  /** The recent entries of the source at `slot`, made empty on its first event here. */
  #recentOf(slot: number): RecentEntries {
    // At its size at once: an array grown by its first writes was copied twice on the way.
    const recent: RecentEntries = new Array(ENTRIES + 2)
    this.#recent[slot] = recent
    return recent
  }

  #seriesOf(key: string): SliceSeries {
    let series = this.#byKey.get(key)
    if (series === undefined) {
      series = new SliceSeries(key, this.#geometry)
      this.#byKey.set(key, series)
    }
    return series
  }

  #sliceOf(series: SliceSeries, ordinal: number, start: number): Slice<SliceSeries> {
    let slice = series.slices.get(ordinal)
    if (slice === undefined) {
      slice = new Slice(ordinal, start, series)
      // Where cells are rows, room for as many as the slice before holds: a block grown one source
      // at a time would leave its smaller blocks unused.
      if (this.#sparse()) slice.reserveRows(series.slices.get(ordinal - 1)?.size ?? 0)
      series.slices.set(ordinal, slice)
      this.#geometry.folds.reshaped(series, ordinal, slice)
    }
    return slice
  }

  /** The slice of `key` starting at `start`, made when missing. */
  #sliceAt(key: string, start: number): Slice<SliceSeries> {
    return this.#sliceOf(this.#seriesOf(key), this.#geometry.ordinal(start), start)
  }

  /** Whether the index's cells take few writes each, lately: new cells are then rows (see `SPARSE_WRITES`). */
  #sparse(): boolean {
    return this.#writes < SPARSE_WRITES * this.#made
  }

  #addCell(part: CellSet, source: string, cell: Cell, states: States | null): void {
    part.addCell(source, cell, states)
    this.#cells++
  }

  /**
   * Peers' groups, slice part by slice part: each changed cell touches the windows that count
   * it and are still live here (its newer version is a lattice join; a window already final counts
   * a finality violation), and makes their next discarding pane carry the whole window.
   */
  mergeRemote(groups: readonly CellGroup[], frontiers: RemoteFrontiers, tracker: WindowTracker): MergeCounts {
    return mergePeerGroups(this.#parts, groups, frontiers, tracker)
  }

  adopt(window: WindowState): void {
    const series = this.#seriesOf(window.key)
    const b = this.#geometry.ordinal(window.end) - 1
    if (!series.windows.has(b)) this.#windows++
    series.windows.set(b, window)
    window.values = series
  }

  /** A format-1 checkpoint's tumbling window held its own cells: they are its one slice's. */
  adoptCells(window: WindowState, cells: readonly (readonly [string, Cell])[]): void {
    const slice = this.#sliceAt(window.key, window.start)
    for (const [source, cell] of cells) this.#addCell(slice, source, copyCell(cell), restoredStates(this.aggregates, undefined, 1))
  }

  snapshot(): SliceIndexSnapshot {
    return { window: this.id, slices: sliceEntries(this.#byKey.values(), this.aggregates) }
  }

  restore(snapshot: SessionIndexSnapshot | SliceIndexSnapshot): void {
    if ('slices' in snapshot) restoreSliceEntries(this.#parts, snapshot.slices)
  }

  find(key: string, start: number, end?: number): WindowState | undefined {
    const g = this.#geometry
    const series = this.#byKey.get(key)
    if (series === undefined || Number.isNaN(g.origin)) return undefined
    const last = end === undefined ? g.lastOf(g.ordinal(start)) : g.ordinal(end) - 1
    const w = series.windows.get(last)
    return w !== undefined && w.start === start ? w : undefined
  }

  remove(window: WindowState, expired: ExpiredCell): void {
    const g = this.#geometry
    const series = this.#byKey.get(window.key)
    const b = g.ordinal(window.end) - 1
    if (series === undefined || series.windows.get(b) !== window) return
    series.windows.delete(b)
    window.live = false
    this.#windows--
    // The slices whose last window this was are counted by no live window any more: a sliding
    // window's first slice; every slice of a cumulating period with its whole-period window.
    const first = g.firstOf(b)
    const to = g.cumulating ? (g.lastOf(b) === b ? b : first - 1) : first
    for (let s = first; s <= to; s++) {
      const slice = series.slices.get(s)
      if (slice !== undefined) this.#dropSlice(series, slice, expired)
    }
    if (series.windows.size === 0 && series.slices.size === 0) {
      this.#byKey.delete(window.key)
      g.folds.clear()
    }
  }

  #dropSlice(series: SliceSeries, slice: Slice<SliceSeries>, expired: ExpiredCell): void {
    for (const [name, part] of namedParts(this.id, slice)) {
      for (const source of part.sources()) expired(name, series.key, slice.start, source)
      this.#cells -= part.size
    }
    series.dropSlice(slice)
  }

  *windows(): IterableIterator<WindowState> {
    for (const series of this.#byKey.values()) yield* series.windows.values()
  }

  windowsOf(key: string): Iterable<WindowState> {
    return this.#byKey.get(key)?.windows.values() ?? []
  }

  horizon(frontiers: BatchFrontiers): number {
    return frontiers.watermark - frontiers.lateness - this.#reach
  }

  gauges(): { cells: number; pending: number } {
    let pending = 0
    for (const w of this.windows()) if (!w.fired) pending += w.count()
    return { cells: this.#cells, pending }
  }

  liveCells(out: CellEntry[], sources: ReadonlySet<string> | null): void {
    for (const series of this.#byKey.values()) liveSliceCells(this.id, series, this.aggregates, sources, out)
  }
}

/** Slices remembered per source: the keys a source writes in turn. */
const RECENT = 4

/** Older slices remembered per source: where its late events went lately. */
const LATE = 2

/**
 * A new cell is kept as numbers (a row of its slice part, see `CellSet`) while the index's cells
 * take fewer writes each than this, lately; otherwise as an object. A cell kept as an object is
 * written faster, but costs an object and four boxed numbers, which V8's young-generation
 * collector copies for as long as the cell lives: where cells take few writes (a sliding hour
 * every minute, a reading every 20 s: three each) that copying is most of the cost, and rows
 * measured 23 to 28% less time; where they take 50 to 100 (one-minute tumbling windows, a reading
 * every second), rows measured 1 to 8% more.
 */
const SPARSE_WRITES = 16

/** Values per entry of `RecentEntries`: the slice, the cell object, the row, the states. */
const FIELDS = 4

/** Values of a source's entries in `RecentEntries`; then the two turns. */
const ENTRIES = (RECENT + LATE) * FIELDS
const NEXT = ENTRIES
const NEXT_LATE = ENTRIES + 1

/**
 * What placement remembers of one source, in one array of its own (an event reads one object, a
 * new source costs one small array): `RECENT` entries for the slices the source wrote last (one
 * per key it writes: a device reporting several metrics alternates between them), then `LATE`
 * entries for slices older than their key's (where its late events went, so that a late event
 * does not push out the slice its next event goes to). An entry is `FIELDS` values: the slice,
 * the source's cell in its main part as an object (or undefined), else its row in the slice's
 * `rows`, and with aggregates the cell's states. Last, which entries to replace next.
 */
type RecentEntries = (Slice<SliceSeries> | Cell | States | number | undefined)[]
