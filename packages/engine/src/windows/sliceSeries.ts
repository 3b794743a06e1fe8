import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'
import type { StreamEvent } from '../input/event.ts'
import { emptyCell } from '../lattice/cell.ts'
import type { Aggregate } from '../lattice/cellSet.ts'
import type { Slice } from './slice.ts'
import type { SliceGeometry } from './sliceGeometry.ts'
import type { WindowState, WindowValues } from './windowState.ts'

/** Slices per window from which a block's prefix and suffix folds are kept for all its windows; below it each window folds its own. */
const SHARED_FOLDS = 16

/**
 * One key's slices and windows under one spec, and how a window's value is folded from its
 * slices. The fold is one fixed function of the slices' cells, so every replica, and every
 * path through this one, adds the same floats in the same order:
 *
 * - a window whose first slice starts a block is the block's prefix up to its last slice,
 *   folded left to right (every cumulating window, every tumbling window, every sliding window
 *   aligned to its size);
 * - any other sliding window spans two blocks: the suffix of the first block from its first
 *   slice, folded right to left, then the prefix of the next block up to its last slice;
 * - then the partial parts of its slices that it counts, by slice, part and source.
 *
 * Prefixes and suffixes of one block are shared by every window that ends or starts in it:
 * `BlockFolds` keeps them per block, folds a position when a window first reads it, refolds only
 * the positions a change reaches, and makes the same additions a single window's fold would make.
 */
export class SliceSeries implements WindowValues {
  readonly key: string
  readonly geometry: SliceGeometry
  /** Slices by ordinal. A slice joining or leaving is told to the block folds (`BlockFolds.reshaped`; `dropSlice` does). */
  readonly slices = new Map<number, Slice<SliceSeries>>()
  /** Windows by the ordinal of their last slice. */
  readonly windows = new Map<number, WindowState>()
  /** Ordinals of slices holding partial parts, ascending. */
  readonly partialSlices: number[] = []
  /** Bumped on every change to a cell of the series. */
  version = 0
  constructor(key: string, geometry: SliceGeometry) {
    this.key = key
    this.geometry = geometry
  }

  foldWindow(window: WindowState, into: Aggregate): void {
    const g = this.geometry
    const last = g.ordinal(window.end) - 1
    const first = g.firstOf(last)
    if (g.perBlock === 1) {
      // One slice, one window: its cells folded straight in (the same additions as from a cached fold;
      // the slice's running fold of its states, handed out as is, when no partial part is merged after it).
      const slice = this.slices.get(last)
      if (this.partialSlices.length === 0) slice?.foldMain(into)
      else slice?.fold(into, g.aggregates)
    } else if (g.perBlock < SHARED_FOLDS) {
      // Few slices per window: folded here, with the additions the shared block folds make.
      const block = g.blockStart(first)
      if (first !== block) this.#foldRange(block + g.perBlock - 1, first, into)
      this.#foldRange(g.blockStart(last), last, into)
    } else {
      const block = g.blockStart(first)
      if (first !== block) this.#suffixInto(block, first, into)
      this.#prefixInto(g.blockStart(last), last, into)
    }
    if (this.partialSlices.length > 0) this.#partialsInto(first, last, into)
  }

  /** Discarding mode: an event joins what windows `from..last` collect until their next pane. */
  addPending(from: number, last: number, value: number, event: StreamEvent, inputs: readonly unknown[] | null, aggregates: AggregateSet | null): void {
    for (let b = from; b <= last; b++) {
      const w = this.windows.get(b) as WindowState
      w.pending ??= emptyCell()
      const pending = w.pending
      pending.count++
      pending.sum += value
      if (value < pending.min) pending.min = value
      if (value > pending.max) pending.max = value
      if (inputs !== null && aggregates !== null) {
        w.pendingStates ??= aggregates.init()
        aggregates.add(w.pendingStates, inputs, event)
      }
    }
  }

  /** Notes that slice `ordinal` now holds a partial part. */
  notePartial(ordinal: number): void {
    const list = this.partialSlices
    let at = list.length
    while (at > 0 && (list[at - 1] as number) > ordinal) at--
    if (list[at - 1] !== ordinal) list.splice(at, 0, ordinal)
  }

  /** Forgets a dropped slice. */
  dropSlice(slice: Slice<SliceSeries>): void {
    this.slices.delete(slice.ordinal)
    this.geometry.folds.reshaped(this, slice.ordinal, undefined)
    slice.live = false
    if (slice.partial !== null) {
      const at = this.partialSlices.indexOf(slice.ordinal)
      if (at >= 0) this.partialSlices.splice(at, 1)
    }
  }

  /**
   * Adds the fold of slices `from` to `to` (either direction), started from nothing: what
   * `BlockFolds` keeps as a block's prefix (`from` its start) or suffix (`from` its end).
   */
  #foldRange(from: number, to: number, into: Aggregate): void {
    const step = from <= to ? 1 : -1
    const aggregates = into.states === undefined ? null : this.geometry.aggregates
    let count = 0
    let sum = 0
    let min = Number.POSITIVE_INFINITY
    let max = Number.NEGATIVE_INFINITY
    let states: States | null = null
    for (let i = from; i !== to + step; i += step) {
      const slice = this.slices.get(i)
      if (slice === undefined) continue
      const f = slice.folded()
      count += f[0] as number
      sum += f[1] as number
      if ((f[2] as number) < min) min = f[2] as number
      if ((f[3] as number) > max) max = f[3] as number
      if (aggregates !== null && slice.foldedStates !== null) states = aggregates.mergeInto(states, slice.foldedStates)
    }
    if (aggregates !== null && states !== null) into.states = aggregates.mergeInto(into.states ?? null, states)
    into.count += count
    into.sum += sum
    if (min < into.min) into.min = min
    if (max > into.max) into.max = max
  }

  /** Adds the fold of the slices of the block starting at `block` from its start up to `last`, left to right. */
  #prefixInto(block: number, last: number, into: Aggregate): void {
    const fold = this.geometry.folds.prefix(this, block, last - block)
    const p = fold.prefix
    const at = 4 * (last - block)
    this.#statesInto(fold.prefixStates[last - block], into)
    into.count += p[at] as number
    into.sum += p[at + 1] as number
    if ((p[at + 2] as number) < into.min) into.min = p[at + 2] as number
    if ((p[at + 3] as number) > into.max) into.max = p[at + 3] as number
  }

  /** Adds the fold of the slices of the block starting at `block` from `first` to its end, right to left. */
  #suffixInto(block: number, first: number, into: Aggregate): void {
    const fold = this.geometry.folds.suffix(this, block, first - block)
    const s = fold.suffix
    const at = 4 * (first - block)
    this.#statesInto(fold.suffixStates[first - block], into)
    into.count += s[at] as number
    into.sum += s[at + 1] as number
    if ((s[at + 2] as number) < into.min) into.min = s[at + 2] as number
    if ((s[at + 3] as number) > into.max) into.max = s[at + 3] as number
  }

  /** Merges a block fold's states into `into`, when its states are wanted. */
  #statesInto(states: States | null | undefined, into: Aggregate): void {
    const aggregates = this.geometry.aggregates
    if (aggregates !== null && into.states !== undefined && states != null) into.states = aggregates.mergeInto(into.states, states)
  }

  /** Adds the partial parts of slices `first..last` counted by the window ending with slice `last`. */
  #partialsInto(first: number, last: number, into: Aggregate): void {
    for (const ordinal of this.partialSlices) {
      if (ordinal < first) continue
      if (ordinal > last) break
      for (const [from, part] of (this.slices.get(ordinal) as Slice<SliceSeries>).partials()) {
        if (from <= last) part.fold(into, this.geometry.aggregates)
      }
    }
  }
}
