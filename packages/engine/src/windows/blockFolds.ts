import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'

/** A slice as block folds read it (`Slice`): its main part's fold (count, sum, min, max) and states. */
export interface FoldedSlice {
  folded(): Float64Array
  readonly foldedStates: States | null
  /** Bumped on every change to one of its cells. */
  readonly version: number
}

/**
 * A key's slices as block folds read them (`SliceSeries`): a fold is kept while the series'
 * `version` stands, and merges the states of its spec's aggregates. Described here, not
 * imported: the series reads its folds through its geometry, which owns them.
 */
export interface FoldedSeries {
  readonly version: number
  readonly slices: ReadonlyMap<number, FoldedSlice>
  readonly geometry: { readonly aggregates: AggregateSet | null }
}

/**
 * One block's folds: count, sum, min and max per slice position, of the prefix ending there and
 * the suffix starting there; with aggregates, their states too (null: no cell yet). Each
 * position also records the slice it folded and that slice's version, so a block whose series
 * changed refolds only from the first changed position (prefix) and down from the last (suffix).
 */
export interface BlockFold {
  series: FoldedSeries | null
  block: number
  version: number
  readonly prefix: Float64Array
  readonly suffix: Float64Array
  readonly prefixStates: (States | null)[]
  readonly suffixStates: (States | null)[]
  /** By position: the slice folded there (undefined: none), and its `version` then. */
  readonly slices: (FoldedSlice | undefined)[]
  readonly versions: Float64Array
}

/** Blocks whose folds are kept: a sliding window reads two, and a batch's windows come from a few keys. */
const SLOTS = 16

/**
 * Prefix and suffix folds of recently read blocks, shared by the series of one spec: a batch
 * touching a slice changes up to `perBlock` windows, and each would otherwise fold up to
 * `perBlock` slices. A fold stays valid while its series is unchanged (`version`); when the
 * series changed, only the positions from its first changed slice on (prefixes) and from its
 * last changed slice down (suffixes) are folded again, with the same additions in the same
 * order as a fold from scratch (a batch mostly writes a block's newest slice).
 *
 * @example
 * const { prefix } = folds.of(series, block)
 * prefix[4 * i + 1] // sum of the block's slices 0..i
 */
export class BlockFolds {
  readonly #slots: BlockFold[] = []
  readonly #perBlock: number
  #next = 0

  constructor(perBlock: number) {
    this.#perBlock = perBlock
  }

  /** The folds of `series`'s block starting at ordinal `block`, computed if not kept. */
  of(series: FoldedSeries, block: number): BlockFold {
    const slots = this.#slots
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as BlockFold
      if (slot.series === series && slot.block === block) {
        if (slot.version !== series.version) this.#refold(slot, series, block, false)
        return slot
      }
    }
    const k = this.#perBlock
    let slot = slots[this.#next]
    if (slot === undefined) {
      slot = {
        series: null,
        block: 0,
        version: -1,
        prefix: new Float64Array(4 * k),
        suffix: new Float64Array(4 * k),
        prefixStates: [],
        suffixStates: [],
        slices: [],
        versions: new Float64Array(k),
      }
      slots.push(slot)
    }
    this.#next = (this.#next + 1) % SLOTS
    slot.series = series
    slot.block = block
    this.#refold(slot, series, block, true)
    return slot
  }

  /** Brings `slot` up to date with `series` (from scratch when `all`, else from the slices that changed). */
  #refold(slot: BlockFold, series: FoldedSeries, block: number, all: boolean): void {
    const k = this.#perBlock
    const { prefix, suffix, prefixStates, suffixStates, slices: folded, versions } = slot
    const slices = series.slices
    // The positions whose slice (or its version) differs from what the slot folded.
    let lo = all ? 0 : k
    let hi = all ? k - 1 : -1
    for (let i = 0; i < k; i++) {
      const slice = slices.get(block + i)
      const version = slice === undefined ? -1 : slice.version
      if (all || slice !== folded[i] || version !== versions[i]) {
        folded[i] = slice
        versions[i] = version
        if (i < lo) lo = i
        hi = i
      }
    }
    slot.version = series.version
    if (hi < 0) return
    const aggregates = series.geometry.aggregates
    let states: States | null = lo === 0 || aggregates === null ? null : (prefixStates[lo - 1] ?? null)
    let count = lo === 0 ? 0 : (prefix[4 * lo - 4] as number)
    let sum = lo === 0 ? 0 : (prefix[4 * lo - 3] as number)
    let min = lo === 0 ? Number.POSITIVE_INFINITY : (prefix[4 * lo - 2] as number)
    let max = lo === 0 ? Number.NEGATIVE_INFINITY : (prefix[4 * lo - 1] as number)
    for (let i = lo; i < k; i++) {
      const slice = folded[i]
      if (slice !== undefined) {
        const f = slice.folded()
        count += f[0] as number
        sum += f[1] as number
        if ((f[2] as number) < min) min = f[2] as number
        if ((f[3] as number) > max) max = f[3] as number
        if (aggregates !== null && slice.foldedStates !== null) states = aggregates.merge(states, slice.foldedStates)
      }
      if (aggregates !== null) prefixStates[i] = states
      prefix[4 * i] = count
      prefix[4 * i + 1] = sum
      prefix[4 * i + 2] = min
      prefix[4 * i + 3] = max
    }
    const top = hi === k - 1
    states = top || aggregates === null ? null : (suffixStates[hi + 1] ?? null)
    count = top ? 0 : (suffix[4 * hi + 4] as number)
    sum = top ? 0 : (suffix[4 * hi + 5] as number)
    min = top ? Number.POSITIVE_INFINITY : (suffix[4 * hi + 6] as number)
    max = top ? Number.NEGATIVE_INFINITY : (suffix[4 * hi + 7] as number)
    for (let i = hi; i >= 0; i--) {
      const slice = folded[i]
      if (slice !== undefined) {
        const f = slice.folded()
        count += f[0] as number
        sum += f[1] as number
        if ((f[2] as number) < min) min = f[2] as number
        if ((f[3] as number) > max) max = f[3] as number
        if (aggregates !== null && slice.foldedStates !== null) states = aggregates.merge(states, slice.foldedStates)
      }
      if (aggregates !== null) suffixStates[i] = states
      suffix[4 * i] = count
      suffix[4 * i + 1] = sum
      suffix[4 * i + 2] = min
      suffix[4 * i + 3] = max
    }
  }

  /** Forgets every fold (a series was dropped, so the slots do not keep it alive). */
  clear(): void {
    for (const slot of this.#slots) {
      slot.series = null
      slot.prefixStates.length = 0
      slot.suffixStates.length = 0
      slot.slices.length = 0
    }
  }
}
