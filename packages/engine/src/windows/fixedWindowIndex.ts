import { type Cell, emptyCell } from '../lattice/cell.ts'
import type { CellGroup } from '../lattice/cellGroup.ts'
import {
  ADMITTED_LATE,
  type BatchFrontiers,
  type MergeCounts,
  ON_TIME,
  type PlacementSource,
  REFUSED,
  type RemoteFrontiers,
  type WindowTracker,
  type WindowIndex,
} from './windowIndex.ts'
import { alignedStart } from './windowSpec.ts'
import { WindowState } from './windowState.ts'
import { PaneRun } from './paneRuns.ts'

/**
 * Tumbling and sliding windows: aligned starts every `slide` ms, each `size` long.
 *
 * Windows of a key are found by ordinal, `(start - origin) / slide`, a small integer: exact,
 * since every start is a multiple of `slide`, and hashed as a small integer where a raw start
 * (~1.7e12) would be a boxed double. Per source, the windows and cells it reached last are
 * remembered in `size / slide` slots by ordinal modulo that count: the windows of one event
 * (consecutive ordinals) never share a slot, and when a source's events move on by one slide,
 * all but one of their windows are still remembered. A source's next event mostly lands in
 * windows it reached before, so it is placed with no map lookup at all.
 */
export class FixedWindowIndex implements WindowIndex {
  readonly id: string
  readonly maxNewPerEvent: number
  readonly #size: number
  readonly #slide: number
  /** key → ordinal → window. A Map, so `__proto__` is an ordinary key. */
  readonly #byKey = new Map<string, Map<number, WindowState>>()
  #count = 0
  /** Start of ordinal 0: the first start this index saw (NaN before). */
  #origin = Number.NaN
  /** By `slot * maxNewPerEvent + ordinal mod maxNewPerEvent`: the window a source last reached there, and its cell in it. */
  readonly #recentWindows: (WindowState | undefined)[] = []
  readonly #recentCells: (Cell | undefined)[] = []
  /** The run `place` reuses for one event, and its value. */
  #single: PaneRun | null = null
  readonly #singleValue = new Float64Array(1)

  constructor(id: string, size: number, slide: number) {
    this.id = id
    this.#size = size
    this.#slide = slide
    this.maxNewPerEvent = size / slide
  }

  get size(): number {
    return this.#count
  }

  /** Distance between window starts: every start and end is a multiple of it. */
  get slide(): number {
    return this.#slide
  }

  /** The map key of an aligned start; fixes the origin on first use. */
  #ordinal(start: number): number {
    if (Number.isNaN(this.#origin)) this.#origin = start
    return (start - this.#origin) / this.#slide
  }

  missingWindows(key: string, ts: number, frontiers: BatchFrontiers): number {
    const series = this.#byKey.get(key)
    let missing = 0
    for (let start = alignedStart(ts, this.#slide); start > ts - this.#size; start -= this.#slide) {
      if (start + this.#size + frontiers.lateness <= frontiers.watermark) continue
      if (series === undefined || series.get(this.#ordinal(start)) === undefined) missing++
    }
    return missing
  }

  /**
   * One event, as a run of one (`placeRun`): the windows it reaches, refusals and its cell
   * update are those of a run, so the per-event path (sessions' batches near `maxWindows`, the
   * reference placement in tests) and the run path cannot drift apart.
   */
  place(
    key: string,
    source: PlacementSource,
    ts: number,
    value: number,
    version: number,
    frontiers: BatchFrontiers,
    tracker: WindowTracker,
  ): number {
    const run = this.#single ?? new PaneRun(source, -1)
    this.#single = run
    run.source = source
    run.key = key
    // Any time in a pane reaches the pane's windows: the event's own time will do.
    run.pane = ts
    run.count = 1
    run.min = value
    run.max = value
    run.maxTs = ts
    run.version = version
    run.head = 0
    this.#singleValue[0] = value
    return this.placeRun(run, this.#singleValue, NO_NEXT, frontiers, tracker)
  }

  /**
   * Peers' groups are taken window start by window start: the groups of one start (one per
   * source, usually with the same keys in the same order) share their windows, so each key's
   * window is looked up once per start rather than once per cell.
   */
  mergeRemote(groups: readonly CellGroup[], frontiers: RemoteFrontiers, tracker: WindowTracker): MergeCounts {
    const counts: MergeCounts = { applied: 0, stale: 0, expired: 0, finalityViolations: 0, invalid: 0 }
    for (const list of byStart(groups)) {
      const start = (list[0] as CellGroup).start
      if (alignedStart(start, this.#slide) !== start) {
        for (const group of list) counts.invalid += group.keys.length
        continue
      }
      const end = start + this.#size
      // Already left live state here: the values it would change are no longer shown.
      const expired = end + frontiers.lateness + frontiers.retention <= frontiers.watermark
      const late = end + frontiers.lateness <= frontiers.watermark
      let keys: readonly string[] | null = null
      const windows: (WindowState | undefined)[] = []
      for (const group of list) {
        if (keys === null || !sameKeys(keys, group.keys)) {
          keys = group.keys
          windows.length = 0
          for (const key of keys) windows.push(this.#windowFor(key, start, expired, list.length, frontiers, tracker))
        }
        const source = group.source
        for (let i = 0; i < windows.length; i++) {
          const window = windows[i]
          if (window === undefined) {
            counts.expired++
            continue
          }
          if (!window.mergePeerCell(source, group, i)) {
            counts.stale++
            continue
          }
          counts.applied++
          if (window.final || late) counts.finalityViolations++
          if (window.touchedIn !== frontiers.batch) {
            window.touchedIn = frontiers.batch
            tracker.touched(window)
          }
        }
      }
    }
    return counts
  }

  /** The live window of `key` at `start`, created (with room for `sources` peers' cells) unless it already left live state (`expired`). */
  #windowFor(
    key: string,
    start: number,
    expired: boolean,
    sources: number,
    frontiers: RemoteFrontiers,
    tracker: WindowTracker,
  ): WindowState | undefined {
    const ordinal = this.#ordinal(start)
    const window = this.#byKey.get(key)?.get(ordinal)
    if (window !== undefined || expired) return window
    const created = this.#create(key, start, ordinal, frontiers, tracker)
    created.reserveRows(sources)
    return created
  }

  /** A new live window of `key` at `start` (ordinal `ordinal`); past the firing frontier it can only be corrected. */
  #create(key: string, start: number, ordinal: number, frontiers: BatchFrontiers, tracker: WindowTracker): WindowState {
    const end = start + this.#size
    const window = new WindowState(this.id, key, start, end)
    window.fired = end <= frontiers.firing
    this.#seriesOf(key).set(ordinal, window)
    this.#count++
    tracker.created(window)
    return window
  }

  /** The windows of `key` by ordinal, made when it has none. */
  #seriesOf(key: string): Map<number, WindowState> {
    let series = this.#byKey.get(key)
    if (series === undefined) {
      series = new Map()
      this.#byKey.set(key, series)
    }
    return series
  }

  adopt(window: WindowState): void {
    const series = this.#seriesOf(window.key)
    const ordinal = this.#ordinal(window.start)
    if (!series.has(ordinal)) this.#count++
    series.set(ordinal, window)
  }

  snapshot(): null {
    return null
  }

  restore(): void {}

  find(key: string, start: number): WindowState | undefined {
    if (Number.isNaN(this.#origin)) return undefined
    return this.#byKey.get(key)?.get((start - this.#origin) / this.#slide)
  }

  remove(window: WindowState): void {
    const series = this.#byKey.get(window.key)
    const ordinal = this.#ordinal(window.start)
    if (series === undefined || series.get(ordinal) !== window) return
    series.delete(ordinal)
    if (series.size === 0) this.#byKey.delete(window.key)
    window.live = false
    this.#count--
  }

  *windows(): IterableIterator<WindowState> {
    for (const series of this.#byKey.values()) yield* series.values()
  }

  horizon(frontiers: BatchFrontiers): number {
    return frontiers.watermark - frontiers.lateness - this.#size
  }

  /**
   * Places a whole run (events of one source and key in one pane; see `PaneRuns`): reaches each
   * window the pane falls in once, and folds the run's events into the source's cell there in
   * their batch order, leaving the cell exactly as placing them one by one would. Returns the
   * outcome bits every event of the run shares (frontiers do not move within a batch).
   */
  placeRun(run: PaneRun, values: Float64Array, next: Int32Array, frontiers: BatchFrontiers, tracker: WindowTracker): number {
    const source = run.source
    const key = run.key
    // Every time in the pane falls in the same windows; its start stands for all of them.
    const ts = run.pane
    let series: Map<number, WindowState> | undefined
    let outcome = 0
    const size = this.#size
    const slide = this.#slide
    const first = alignedStart(ts, slide)
    const slots = this.maxNewPerEvent
    const base = source.slot * slots
    const recentWindows = this.#recentWindows
    const recentCells = this.#recentCells
    let ordinal = this.#ordinal(first)
    let at = base + slotOf(ordinal, slots)
    for (let start = first; start > ts - size; start -= slide, ordinal--, at = at === base ? base + slots - 1 : at - 1) {
      const end = start + size
      const recent = recentWindows[at]
      let window: WindowState | undefined
      let cell: Cell | undefined
      if (recent !== undefined && recent.start === start && recent.key === key && recent.live) {
        window = recent
        cell = recentCells[at]
      } else {
        series ??= this.#byKey.get(key)
        window = series?.get(ordinal)
      }
      if (window === undefined || window.final) {
        if (end + frontiers.lateness <= frontiers.watermark) {
          outcome |= REFUSED
          continue
        }
      }
      window ??= this.#create(key, start, ordinal, frontiers, tracker)
      if (cell === undefined) {
        cell = window.cell(source.name)
        if (cell === undefined) {
          cell = emptyCell()
          window.addCell(source.name, cell)
        }
        recentWindows[at] = window
        recentCells[at] = cell
      }
      // Added one by one, in batch order: a float sum depends on the order of its terms.
      let sum = cell.sum
      for (let m = run.head; m >= 0; m = next[m] as number) sum += values[m] as number
      cell.sum = sum
      cell.count += run.count
      if (run.min < cell.min) cell.min = run.min
      if (run.max > cell.max) cell.max = run.max
      if (run.maxTs > cell.maxTs) cell.maxTs = run.maxTs
      cell.version = run.version
      tracker.written(window, source.name, start, cell)
      outcome |= window.fired ? ADMITTED_LATE : ON_TIME
      if (window.touchedIn !== frontiers.batch) {
        window.touchedIn = frontiers.batch
        tracker.touched(window)
      }
    }
    return outcome
  }
}

/**
 * Groups by window start, each list sorted by source: a window keeps its cells in source order,
 * so a fresh window then takes its sources by appending.
 */
function byStart(groups: readonly CellGroup[]): Iterable<readonly CellGroup[]> {
  if (groups.length <= 1) return groups.length === 0 ? [] : [groups]
  const lists = new Map<number, CellGroup[]>()
  for (const group of groups) {
    const list = lists.get(group.start)
    if (list === undefined) lists.set(group.start, [group])
    else list.push(group)
  }
  for (const list of lists.values()) if (list.length > 1) list.sort(bySource)
  return lists.values()
}

function bySource(a: CellGroup, b: CellGroup): number {
  return a.source < b.source ? -1 : a.source > b.source ? 1 : 0
}

/** True when two key lists hold the same keys in the same order. */
function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** `ordinal` modulo `slots`, in [0, slots): floor division, where `%` on doubles is a slow fmod. */
function slotOf(ordinal: number, slots: number): number {
  const r = ordinal - Math.floor(ordinal / slots) * slots
  return r < 0 ? r + slots : r >= slots ? r - slots : r
}

/** The `next` list of a run of one event. */
const NO_NEXT = Int32Array.of(-1)
