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
 * `version` stands, and merges the states of its spec's aggregates. The series reports every
 * slice joining or leaving `slices` (`BlockFolds.reshaped`): a fold looks its block's slices up
 * only when it takes the block. Described here, not imported: the series reads its folds through
 * its geometry, which owns them.
 */
export interface FoldedSeries {
  readonly version: number
  readonly slices: ReadonlyMap<number, FoldedSlice>
  readonly geometry: { readonly aggregates: AggregateSet | null }
}

/**
 * One block's folds: count, sum, min and max per slice position, of the prefix ending there and
 * the suffix starting there; with aggregates, their states too (null: no cell yet). Positions
 * are folded when first read and stay valid until a slice they cover changes: prefixes below
 * `prefixValid`, suffixes from `suffixFrom` on. Each position records the slice it folded and
 * that slice's version, by which a changed series tells which positions it reached.
 */
export interface BlockFold {
  series: FoldedSeries | null
  block: number
  version: number
  readonly prefix: Float64Array
  readonly suffix: Float64Array
  readonly prefixStates: (States | null)[]
  readonly suffixStates: (States | null)[]
  /** Prefixes `0 .. prefixValid − 1` and suffixes `suffixFrom .. perBlock − 1` are up to date. */
  prefixValid: number
  suffixFrom: number
  /** By position: the slice there (undefined: none; kept so by `reshaped`), and its `version` when the slot last looked. */
  readonly slices: (FoldedSlice | undefined)[]
  readonly versions: Float64Array
}

/** Blocks whose folds are kept: a sliding window reads two, and a batch's windows come from a few keys. */
const SLOTS = 16

/**
 * Prefix and suffix folds of recently read blocks, shared by the series of one spec: a batch
 * touching a slice changes up to `perBlock` windows, and each would otherwise fold up to
 * `perBlock` slices. A position is folded when a window first reads it, from its neighbour, with
 * the same additions in the same order as a fold from scratch; a change to a slice makes stale
 * only the prefixes from it on and the suffixes up to it. So the early panes of a batch that
 * wrote a block's newest slice refold the suffixes they read, and an on-time pane reading a
 * block the batch did not reach refolds nothing.
 *
 * @example
 * const fold = folds.prefix(series, block, 4)
 * fold.prefix[4 * 4 + 1] // sum of the block's slices 0..4
 */
export class BlockFolds {
  readonly #slots: BlockFold[] = []
  readonly #perBlock: number
  #next = 0
  /**
   * The slots the last prefix and the last suffix came from: the windows a batch changed are
   * folded one after another, and those of one key read the same two blocks.
   */
  #lastPrefix: BlockFold | null = null
  #lastSuffix: BlockFold | null = null

  constructor(perBlock: number) {
    this.#perBlock = perBlock
  }

  /** The folds of `series`'s block starting at ordinal `block`, with the prefix ending at position `at` up to date. */
  prefix(series: FoldedSeries, block: number, at: number): BlockFold {
    const slot = this.#slot(series, block, this.#lastPrefix)
    this.#lastPrefix = slot
    if (slot.prefixValid <= at) {
      this.#fold(slot, series, slot.prefixValid, at, 1)
      slot.prefixValid = at + 1
    }
    return slot
  }

  /** The folds of `series`'s block starting at ordinal `block`, with the suffix starting at position `at` up to date. */
  suffix(series: FoldedSeries, block: number, at: number): BlockFold {
    const slot = this.#slot(series, block, this.#lastSuffix)
    this.#lastSuffix = slot
    if (slot.suffixFrom > at) {
      // Down to the block's second position at once: the windows a batch changed read their
      // suffixes latest start first, each one position lower than the one before.
      const to = Math.min(at, 1)
      this.#fold(slot, series, slot.suffixFrom - 1, to, -1)
      slot.suffixFrom = to
    }
    return slot
  }

  /**
   * Folds positions `from` to `to` of the prefixes (`step` 1) or suffixes (`step` −1), each from
   * its neighbour before it in that direction: the additions a fold from the block's end makes.
   */
  #fold(slot: BlockFold, series: FoldedSeries, from: number, to: number, step: 1 | -1): void {
    const sums = step === 1 ? slot.prefix : slot.suffix
    const kept = step === 1 ? slot.prefixStates : slot.suffixStates
    const aggregates = series.geometry.aggregates
    const before = from - step
    const edge = before < 0 || before >= this.#perBlock
    let states: States | null = edge || aggregates === null ? null : (kept[before] ?? null)
    let count = edge ? 0 : (sums[4 * before] as number)
    let sum = edge ? 0 : (sums[4 * before + 1] as number)
    let min = edge ? Number.POSITIVE_INFINITY : (sums[4 * before + 2] as number)
    let max = edge ? Number.NEGATIVE_INFINITY : (sums[4 * before + 3] as number)
    for (let i = from; i !== to + step; i += step) {
      const slice = slot.slices[i]
      if (slice !== undefined) {
        const f = slice.folded()
        count += f[0] as number
        sum += f[1] as number
        if ((f[2] as number) < min) min = f[2] as number
        if ((f[3] as number) > max) max = f[3] as number
        if (aggregates !== null && slice.foldedStates !== null) states = aggregates.merge(states, slice.foldedStates)
      }
      if (aggregates !== null) kept[i] = states
      sums[4 * i] = count
      sums[4 * i + 1] = sum
      sums[4 * i + 2] = min
      sums[4 * i + 3] = max
    }
  }

  /**
   * The slot holding `series`'s block, its stale positions marked (a new slot: every position).
   * `last` (the slot a prefix or a suffix came from last) is tried before the search.
   */
  #slot(series: FoldedSeries, block: number, last: BlockFold | null): BlockFold {
    const slots = this.#slots
    for (let i = -1; i < slots.length; i++) {
      const slot = i < 0 ? last : (slots[i] as BlockFold)
      if (slot !== null && slot.series === series && slot.block === block) {
        if (slot.version !== series.version) this.#sync(slot, series)
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
        prefixValid: 0,
        suffixFrom: k,
        slices: [],
        versions: new Float64Array(k),
      }
      slots.push(slot)
    }
    this.#next = (this.#next + 1) % SLOTS
    slot.series = series
    slot.block = block
    slot.prefixValid = 0
    slot.suffixFrom = k
    slot.prefixStates.length = 0
    slot.suffixStates.length = 0
    // The block's slices looked up; no version matches NaN, so the first look marks every position.
    for (let i = 0; i < k; i++) slot.slices[i] = series.slices.get(block + i)
    slot.versions.fill(Number.NaN)
    this.#sync(slot, series)
    return slot
  }

  /**
   * A slice joined (`slice`) or left (undefined) `series` at `ordinal`: the slot holding its block
   * takes it, the position's version unknown (the next look marks it changed).
   */
  reshaped(series: FoldedSeries, ordinal: number, slice: FoldedSlice | undefined): void {
    for (const slot of this.#slots) {
      const i = ordinal - slot.block
      if (slot.series === series && i >= 0 && i < this.#perBlock) {
        slot.slices[i] = slice
        slot.versions[i] = Number.NaN
      }
    }
  }

  /** Marks stale the prefixes from the first position whose slice changed and the suffixes up to the last. */
  #sync(slot: BlockFold, series: FoldedSeries): void {
    const k = this.#perBlock
    const { slices: known, versions } = slot
    let lo = k
    let hi = -1
    // The slices the slot knows are the block's (`reshaped`): only their versions can have moved.
    for (let i = 0; i < k; i++) {
      const slice = known[i]
      const version = slice === undefined ? -1 : slice.version
      if (version !== versions[i]) {
        versions[i] = version
        if (i < lo) lo = i
        hi = i
      }
    }
    slot.version = series.version
    if (lo < slot.prefixValid) slot.prefixValid = lo
    if (hi >= slot.suffixFrom) slot.suffixFrom = hi + 1
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
