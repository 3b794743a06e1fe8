import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'

/** A slice as block folds read it (`Slice`): its main part's fold (count, sum, min, max) and states. */
export interface FoldedSlice {
  folded(): Float64Array
  readonly foldedStates: States | null
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
 * the suffix starting there; with aggregates, their states too (null: no cell yet).
 */
export interface BlockFold {
  series: FoldedSeries | null
  block: number
  version: number
  readonly prefix: Float64Array
  readonly suffix: Float64Array
  readonly prefixStates: (States | null)[]
  readonly suffixStates: (States | null)[]
}

/** Blocks whose folds are kept: a sliding window reads two, and a batch's windows come from a few keys. */
const SLOTS = 16

/**
 * Prefix and suffix folds of recently read blocks, shared by the series of one spec: a batch
 * touching a slice changes up to `perBlock` windows, and each would otherwise fold up to
 * `perBlock` slices. A fold stays valid while its series is unchanged (`version`).
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
      if (slot.series === series && slot.block === block && slot.version === series.version) return slot
    }
    const k = this.#perBlock
    let slot = slots[this.#next]
    if (slot === undefined) {
      slot = { series: null, block: 0, version: -1, prefix: new Float64Array(4 * k), suffix: new Float64Array(4 * k), prefixStates: [], suffixStates: [] }
      slots.push(slot)
    }
    this.#next = (this.#next + 1) % SLOTS
    slot.series = series
    slot.block = block
    slot.version = series.version
    const { prefix, suffix, prefixStates, suffixStates } = slot
    const slices = series.slices
    const aggregates = series.geometry.aggregates
    let states: States | null = null
    let count = 0
    let sum = 0
    let min = Number.POSITIVE_INFINITY
    let max = Number.NEGATIVE_INFINITY
    for (let i = 0; i < k; i++) {
      const slice = slices.get(block + i)
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
    count = 0
    sum = 0
    min = Number.POSITIVE_INFINITY
    max = Number.NEGATIVE_INFINITY
    states = null
    for (let i = k - 1; i >= 0; i--) {
      const slice = slices.get(block + i)
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
    return slot
  }

  /** Forgets every fold (a series was dropped, so the slots do not keep it alive). */
  clear(): void {
    for (const slot of this.#slots) {
      slot.series = null
      slot.prefixStates.length = 0
      slot.suffixStates.length = 0
    }
  }
}
