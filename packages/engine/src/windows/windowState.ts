import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'
import { type Cell, copyCell } from '../lattice/cell.ts'
import type { Aggregate } from '../lattice/cellSet.ts'
import type { WindowSnapshot } from './windowSnapshot.ts'
import type { Basis, PaneInfo, ResultStatus, WindowResult } from './windowResult.ts'

const NO_FRAGMENTS: readonly SessionFragment[] = Object.freeze([])

/** Where `value()` folds: results are made one at a time, so one object serves every window. */
const SCRATCH: Aggregate = { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY }

/** One source's session fragment inside a session window. */
export interface SessionFragment {
  readonly source: string
  /** Start of the fragment; part of its cell key, so it never changes (a merge writes a new fragment). */
  readonly start: number
  readonly cell: Cell
  /** With aggregates: the fragment's states (null for a tombstone, and without aggregates). */
  readonly states: States | null
}

/** A window's armed processing-time trigger: when it fires, and the order it was armed in. */
export interface PaneTimer {
  readonly at: number
  readonly seq: number
  /** Armed by the late trigger (the window had fired), not the early one. */
  readonly late: boolean
}

/** Where a fixed window's value comes from: the slices its index keeps (or, for the reference placement, its own cells). */
export interface WindowValues {
  /** Adds the window's whole value, every cell it counts in a fixed order, into `into`. */
  foldWindow(window: WindowState, into: Aggregate): void
}

/**
 * Live state of one window of one key: what it emitted, and where it is in its lifecycle
 * (fired, final, its panes and their trigger). A session window holds its fragments; a fixed
 * window's cells live in the slices of its index (`values`).
 */
export class WindowState {
  readonly window: string
  readonly key: string
  start: number
  end: number
  /** Session windows: fragments, in no particular order. Replaced, never mutated: fixed windows share one frozen empty list. */
  fragments: SessionFragment[] = NO_FRAGMENTS as SessionFragment[]
  /** Fixed windows: what folds their value. */
  values: WindowValues | null = null
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
  /** Panes emitted so far (the next one's index), and how many of them were on time or late. */
  panes = 0
  onTimePanes = 0
  /** Changed since its last pane: data no pane has shown yet. */
  dirty = false
  /** Its armed processing-time trigger, if any (most windows never arm one: no number to box per window). */
  timer: PaneTimer | null = null
  /** Discarding mode: what arrived since the last pane (merged, never subtracted), and its aggregate states. */
  pending: Cell | null = null
  pendingStates: States | null = null
  /** Discarding mode: the next pane carries the whole window, with `previous` (what changed cannot be told apart by merging). */
  whole = false
  /** Fired results, oldest first: the only one as itself (most windows fire once and are never corrected), an array from the second. */
  #history: WindowResult[] | WindowResult | null = null

  constructor(window: string, key: string, start: number, end: number) {
    this.window = window
    this.key = key
    this.start = start
    this.end = end
  }

  /**
   * The window's result with the given lifecycle fields: its whole value (`part` null), or, for a
   * discarding pane, `part` (its states in `part.states`). Cells are combined in a fixed order (a
   * fixed window's by slice, source and part; a session's by source, then fragment start), so
   * every replica gets the same floats and the same aggregate states.
   */
  result(status: ResultStatus, revision: number, final: boolean, basis: Basis, pane: PaneInfo, aggregates: AggregateSet | null, part: Aggregate | null = null): WindowResult {
    const { count, sum, min, max, states } = part ?? this.value(aggregates)
    const result: WindowResult = {
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
      pane,
    }
    // Last, so a result lists its fields in one order everywhere.
    if (aggregates !== null) (result as { aggregates?: unknown }).aggregates = aggregates.results(states ?? null)
    return result
  }

  /**
   * The window's whole value, in an object shared by every window: read it before the next call.
   * With `aggregates`, also its aggregate states (possibly a cell's own: read them only).
   */
  value(aggregates: AggregateSet | null = null): Aggregate {
    const a = SCRATCH
    a.count = 0
    a.sum = 0
    a.min = Number.POSITIVE_INFINITY
    a.max = Number.NEGATIVE_INFINITY
    a.states = aggregates === null ? undefined : null
    if (this.fragments.length > 0) {
      // A session's absorbed fragments are tombstones.
      for (const f of sortedFragments(this.fragments)) {
        const cell = f.cell
        if (cell.count === 0) continue
        a.count += cell.count
        a.sum += cell.sum
        if (cell.min < a.min) a.min = cell.min
        if (cell.max > a.max) a.max = cell.max
        if (aggregates !== null && f.states !== null) a.states = aggregates.mergeInto(a.states ?? null, f.states)
      }
    } else this.values?.foldWindow(this, a)
    return a
  }

  /** Records an emitted result: the last one is what `results()` shows; fired ones (on-time and late panes) enter the history. */
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

  /** What a checkpoint keeps of the window; aggregate states encoded. */
  snapshot(aggregates: AggregateSet | null): WindowSnapshot {
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
      cells: [],
      fragments: this.fragments.map((f) => (aggregates === null ? ([f.source, f.start, { ...f.cell }] as const) : ([f.source, f.start, { ...f.cell }, aggregates.encode(f.states)] as const))),
      panes: this.panes,
      onTimePanes: this.onTimePanes,
      dirty: this.dirty,
      timerAt: this.timer?.at ?? Number.NaN,
      timerSeq: this.timer?.seq ?? 0,
      pending: this.pending === null ? null : { ...this.pending },
      ...(aggregates === null || this.pending === null ? {} : { pendingStates: aggregates.encode(this.pendingStates) }),
      whole: this.whole,
    }
  }

  /** A window from its snapshot; aggregate states decoded (a RangeError for bytes they cannot be). */
  static restore(s: WindowSnapshot, aggregates: AggregateSet | null): WindowState {
    const w = new WindowState(s.window, s.key, s.start, s.end)
    w.fired = s.fired
    w.final = s.final
    w.revision = s.revision
    w.basis = s.basis
    w.basisEnd = s.basisEnd
    w.emitted = s.emitted
    w.#history = s.history.length === 0 ? null : s.history.length === 1 ? (s.history[0] as WindowResult) : [...s.history]
    w.fragments = s.fragments.map(([source, start, cell, bytes]) => ({ source, start, cell: copyCell(cell), states: restoredStates(aggregates, bytes, cell.count) }))
    w.panes = s.panes ?? 0
    w.onTimePanes = s.onTimePanes ?? 0
    w.dirty = s.dirty ?? false
    const at = s.timerAt ?? Number.NaN
    w.timer = Number.isNaN(at) ? null : { at, seq: s.timerSeq ?? 0, late: s.fired }
    w.pending = s.pending == null ? null : { ...s.pending }
    if (w.pending !== null) w.pendingStates = restoredStates(aggregates, s.pendingStates, 1)
    w.whole = s.whole ?? false
    return w
  }

  /** Events the window counts. */
  count(): number {
    return this.value().count
  }
}

/** Fragments by source, then start. */
function sortedFragments(fragments: readonly SessionFragment[]): readonly SessionFragment[] {
  return fragments.length === 1 ? fragments : [...fragments].sort(byFragment)
}

/**
 * The states of a checkpoint's cells, by their encodings, that `restore` decoded while it checked
 * the checkpoint (checkpointValidation.ts): each is taken once, by the first cell of those bytes,
 * and the rest are cleared when the restore ends. A Map, not a WeakMap: a checkpoint holds many
 * cells, and a WeakMap's entries each cost the garbage collector.
 */
export const checkpointStates = new Map<readonly Uint8Array[], States>()

/**
 * A checkpointed cell's states: decoded (taken from `checkpointStates` when decoded already), or,
 * for a tombstone (and without aggregates), none.
 *
 * @example
 * const states = restoredStates(aggregates, bytes, cell.count)
 */
export function restoredStates(aggregates: AggregateSet | null, bytes: readonly Uint8Array[] | undefined, count: number): States | null {
  if (aggregates === null || count === 0) return null
  if (bytes === undefined) return aggregates.init()
  const decoded = checkpointStates.get(bytes)
  // Taken, not shared: a hand-made checkpoint may give two cells the same list.
  checkpointStates.delete(bytes)
  return decoded ?? aggregates.decode(bytes)
}

function byFragment(a: SessionFragment, b: SessionFragment): number {
  return a.source < b.source ? -1 : a.source > b.source ? 1 : a.start - b.start
}

/**
 * The identity of a source's fragment starting at `start`, as maps of fragments key it.
 *
 * @example
 * fragmentId('d1', 1_000) // '1000\u0000d1'
 */
export function fragmentId(source: string, start: number): string {
  return `${start}\u0000${source}`
}
