import type { AggregateSet } from '../aggregates/aggregateSet.ts'
import { BlockFolds } from './blockFolds.ts'
import { alignedStart } from './windowSpec.ts'

/**
 * Where the slices and windows of one tumbling, sliding or cumulating spec lie. Slices are
 * `unit` long (the slide, the step, or the tumbling size) and numbered by ordinal from an
 * origin; a window is named by the ordinal of its last slice (unique per key: no two windows of
 * a spec end together). Slices group into blocks of `perBlock` (the slides per sliding window,
 * the steps per cumulating period, 1 for tumbling), aligned to the epoch: a sliding window
 * spans at most two blocks, a cumulating window is a prefix of one.
 *
 * Ordinals count from an origin fixed at the first slice seen and aligned to a block, so they
 * stay small integers (a raw start, ~1.7e12, is a boxed double as a map key) and
 * `ordinal mod perBlock` is the same on every replica.
 */
export class SliceGeometry {
  readonly unit: number
  readonly perBlock: number
  /** Cumulating: every window of a block starts at the block's start. Sliding: a window is `perBlock` slices. */
  readonly cumulating: boolean
  origin = Number.NaN
  /** Folds of recently read blocks, shared by the spec's series. */
  readonly folds: BlockFolds
  /** The engine's aggregates, whose states cells carry and folds combine; null without. */
  aggregates: AggregateSet | null = null

  constructor(unit: number, perBlock: number, cumulating: boolean) {
    this.unit = unit
    this.perBlock = perBlock
    this.cumulating = cumulating
    this.folds = new BlockFolds(perBlock)
  }

  /** The ordinal of an aligned slice start; fixes the origin on first use. */
  ordinal(start: number): number {
    if (Number.isNaN(this.origin)) this.origin = alignedStart(start, this.unit * this.perBlock)
    return (start - this.origin) / this.unit
  }

  startOf(ordinal: number): number {
    return this.origin + ordinal * this.unit
  }

  /** First ordinal of the block holding `ordinal`. */
  blockStart(ordinal: number): number {
    const k = this.perBlock
    return ordinal - (ordinal - Math.floor(ordinal / k) * k)
  }

  /** The last window holding slice `ordinal` (every window holding it ends at or before this one's end). */
  lastOf(ordinal: number): number {
    return this.cumulating ? this.blockStart(ordinal) + this.perBlock - 1 : ordinal + this.perBlock - 1
  }

  /** The first slice of window `last`. */
  firstOf(last: number): number {
    return this.cumulating ? this.blockStart(last) : last - this.perBlock + 1
  }

  /** End of window `last`. */
  endOf(last: number): number {
    return this.origin + (last + 1) * this.unit
  }

  /**
   * The first window holding slice `ordinal` still in at `watermark`: windows with
   * `end + lateness + retention <= watermark` are out (final for an event's lateness, with
   * `retention` 0; gone for a peer's cell). Compared as the window lifecycle compares, not
   * against `watermark - lateness`: that difference rounds for a fractional watermark (an event
   * at a fractional `ts`) when it crosses a power of two, and then refused an event for a window
   * the lifecycle had not made final. Past `lastOf` when none.
   */
  firstAbove(ordinal: number, watermark: number, lateness: number, retention = 0): number {
    if (!(watermark > Number.NEGATIVE_INFINITY)) return ordinal
    let b = Math.max(ordinal, Math.floor((watermark - lateness - retention - this.origin) / this.unit) - 1)
    const last = this.lastOf(ordinal)
    // At most a few steps: the division only guesses, the comparison decides.
    while (b <= last && this.endOf(b) + lateness + retention <= watermark) b++
    // Past the last (also for an infinite watermark): one past it, a small integer like every ordinal.
    return Math.min(b, last + 1)
  }
}
