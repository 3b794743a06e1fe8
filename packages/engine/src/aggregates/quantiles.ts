/**
 * `quantiles({ at, relativeAccuracy, maxBuckets, of })`: estimated quantiles with a relative
 * accuracy guarantee, from a DDSketch-style sketch whose merge is exact.
 *
 * State: a count of zeros, the exact minimum and maximum, and two bucket stores (positive
 * values by `bucketKey(x)`, negative values by `−bucketKey(−x)`, so both stores list values in
 * ascending order of key). Counts are integers that add, saturating at 2^53 − 1
 * (`addBucketCounts`), so merge is a commutative monoid, exact in any order; not idempotent. Each store keeps at most `maxBuckets` keys, collapsing its
 * lowest keys (the smallest positive values, the most negative values) by the rule in
 * bucketStore.ts, which does not depend on the order of adds and merges either.
 *
 * Encoding (format 1):
 *
 * | bytes | field |
 * | --- | --- |
 * | 1 | format byte `0x51` |
 * | varint | count of zeros (magnitude below 2^-1022) |
 * | store | negative values: `varint n`, then `n` × (key: zigzag varint for the first, varint gap ≥ 1 after; count: varint ≥ 1) |
 * | store | positive values, the same layout |
 * | 8 + 8 | only when the total count is above 0: minimum, maximum (float64, little-endian) |
 *
 * Decode checks the format byte, every length and bound (at most `maxBuckets` buckets spanning
 * at most `maxBuckets` keys, keys within the mapping's range, counts ≥ 1, a total below 2^53),
 * finite `min ≤ max` lying in the lowest and highest non-empty buckets, no -0 and no trailing byte.
 */
import { addBucketCounts } from './bucketCount.ts'
import { exactAggregate } from './aggregateSet.ts'
import type { StreamEvent } from '../input/event.ts'
import type { Aggregate } from './aggregate.ts'
import { checkAggregateOptions, isListOf, numberOption } from './aggregateOptions.ts'
import { addToStore, type BucketStore, decodeStore, encodeStore, mergeStoreInto, mergeStores } from './bucketStore.ts'
import { ByteReader } from './byteReader.ts'
import { sameBytes } from './byteOrder.ts'
import { ByteWriter } from './byteWriter.ts'
import { bucketKey, bucketValue, MIN_NORMAL, mappingMultiplier } from './indexMapping.ts'
import { eventValue, finiteInput } from './numericInput.ts'

const FORMAT = 0x51
const WHAT = 'quantiles state'

/**
 * Options of `quantiles`.
 *
 * @example
 * const options: QuantilesOptions = { at: [0.5, 0.95, 0.99], relativeAccuracy: 0.01 }
 */
export interface QuantilesOptions {
  /** The quantiles to report, each in [0, 1], in the order results list them (1 to 100 of them). */
  readonly at: readonly number[]
  /** α: every reported quantile is within α × its true value (0.0001 to 0.5; default 0.01). */
  readonly relativeAccuracy?: number
  /** Buckets per sign before the lowest collapse (16 to 65536; default 2048). */
  readonly maxBuckets?: number
  /** The number to measure; default `event.value`. */
  readonly of?: (event: StreamEvent) => number
}

/**
 * The state of `quantiles`: plain data, exchanged as bytes.
 *
 * @example
 * const sketch: QuantileSketch = latency.init()
 */
export interface QuantileSketch {
  zero: number
  min: number
  max: number
  positive: BucketStore
  negative: BucketStore
}

/**
 * Quantiles of a window's values, each within `relativeAccuracy` of the true one (the value of
 * rank ⌊q·(n − 1)⌋ among the n values sorted), in the order of `at`; `[]` for an empty window.
 * Exact at q = 0 and q = 1 and for windows of one value. Memory: at most 2 × `maxBuckets` counts.
 * Values of magnitude below 2^-1022 count as 0. Past `maxBuckets` keys per sign, the lowest
 * buckets collapse: the guarantee holds for quantiles within a factor of γ^(0.96·(maxBuckets − 2))
 * (γ = (1 + α)/(1 − α); about 10^17 at the defaults) of the largest positive value, or of the
 * negative value closest to zero; lower ones may be reported as high as that limit.
 *
 * @example
 * const latency = quantiles({ at: [0.5, 0.95, 0.99], relativeAccuracy: 0.01 })
 * createEngine({ windows: tumbling(60_000), aggregates: { latency } })
 * result.aggregates.latency // [12.1, 48.3, 97.6]
 */
export function quantiles(options: QuantilesOptions): Aggregate<QuantileSketch, number[], number> {
  checkAggregateOptions('quantiles', options, ['at', 'relativeAccuracy', 'maxBuckets', 'of'], true)
  const at = options.at
  if (!isListOf(at, 100, (q) => typeof q === 'number' && q >= 0 && q <= 1)) {
    throw new RangeError(`quantiles: at must list 1 to 100 numbers from 0 to 1, got ${Array.isArray(at) ? `${at.length} item(s): ${JSON.stringify(at.slice(0, 5))}` : typeof at}`)
  }
  // The quantiles in ascending order, each with its place in `at`: one walk of the buckets finds them all.
  const ranked = at.map((q, i) => ({ q, i })).sort((x, y) => x.q - y.q || x.i - y.i)
  const alpha = numberOption('quantiles', 'relativeAccuracy', options.relativeAccuracy, 0.01, 0.0001, 0.5, false)
  const limit = numberOption('quantiles', 'maxBuckets', options.maxBuckets, 2048, 16, 65_536, true)
  const multiplier = mappingMultiplier(alpha)
  const keyLimit = Math.ceil(1024 * multiplier) + 1

  /** A value's place in ascending order of buckets: negative keys, zero, positive keys. */
  const position = (x: number): number =>
    x >= MIN_NORMAL ? 2 ** 32 + bucketKey(x, multiplier) : x <= -MIN_NORMAL ? -(2 ** 32) - bucketKey(-x, multiplier) : 0

  const encode = (s: QuantileSketch): Uint8Array => {
    const writer = new ByteWriter()
    writer.byte(FORMAT)
    writer.varint(s.zero)
    encodeStore(writer, s.negative)
    encodeStore(writer, s.positive)
    if (s.min <= s.max) {
      writer.float64(s.min)
      writer.float64(s.max)
    }
    return writer.finish()
  }

  return exactAggregate({
    name: 'quantiles',
    configuration: `quantiles(relativeAccuracy=${alpha},maxBuckets=${limit})`,
    idempotent: false,
    read: options.of ?? eventValue,
    checkInput: finiteInput,
    init: () => ({ zero: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, positive: { offset: 0, counts: [] }, negative: { offset: 0, counts: [] } }),
    add(s, x) {
      if (!Number.isFinite(x)) throw new RangeError(`quantiles: cannot add ${x}, not a finite number`)
      if (x === 0) x = 0 // -0 and 0 are one value: the minimum's bits must not depend on which came first
      if (x >= MIN_NORMAL) addToStore(s.positive, bucketKey(x, multiplier), 1, limit)
      else if (x <= -MIN_NORMAL) addToStore(s.negative, -bucketKey(-x, multiplier), 1, limit)
      else s.zero = addBucketCounts(s.zero, 1)
      if (x < s.min) s.min = x
      if (x > s.max) s.max = x
      return s
    },
    merge: (a, b) => ({
      zero: addBucketCounts(a.zero, b.zero),
      min: Math.min(a.min, b.min),
      max: Math.max(a.max, b.max),
      positive: mergeStores(a.positive, b.positive, limit),
      negative: mergeStores(a.negative, b.negative, limit),
    }),
    mergeInto(into, from) {
      into.zero = addBucketCounts(into.zero, from.zero)
      if (from.min < into.min) into.min = from.min
      if (from.max > into.max) into.max = from.max
      mergeStoreInto(into.positive, from.positive, limit)
      mergeStoreInto(into.negative, from.negative, limit)
      return into
    },
    result: (s) => valuesAtRanks(s, ranked, multiplier),
    encode,
    decode(bytes) {
      const r = new ByteReader(bytes, WHAT)
      r.format(FORMAT)
      const zero = r.varint('count of zeros', Number.MAX_SAFE_INTEGER)
      const negative = decodeStore(r, 'negative', limit, keyLimit)
      const positive = decodeStore(r, 'positive', limit, keyLimit)
      const s: QuantileSketch = { zero, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, positive, negative }
      if (valueCount(s) > 0) {
        s.min = r.float64('minimum')
        s.max = r.float64('maximum')
        if (Object.is(s.min, -0) || Object.is(s.max, -0)) throw r.fail('-0 as minimum or maximum (zero is always +0)')
        // The maximum lies in the highest bucket; the minimum in the lowest, or below it when that store is full (collapsed).
        const low = negative.counts.length > 0 ? negative : zero > 0 ? null : positive
        const lowest = low === null ? 0 : (low === negative ? -(2 ** 32) : 2 ** 32) + low.offset
        const highest = positive.counts.length > 0 ? 2 ** 32 + positive.offset + positive.counts.length - 1 : zero > 0 ? 0 : -(2 ** 32) + negative.offset + negative.counts.length - 1
        const atMin = position(s.min)
        const belowLowest = atMin < lowest && Math.sign(atMin) === Math.sign(lowest) && low?.counts.length === limit
        if (!(s.min <= s.max) || (atMin !== lowest && !belowLowest) || position(s.max) !== highest) {
          throw r.fail(`minimum ${s.min} and maximum ${s.max} do not match the buckets`)
        }
      }
      r.end()
      return s
    },
    equals: (a, b) => sameBytes(encode(a), encode(b)),
  }, (s, cell) => {
    const n = valueCount(s)
    return n > cell.count ? `${n} values in a cell of ${cell.count} events` : null
  })
}

/**
 * How many values a sketch holds. Each count is at most 2^53 − 1 (they saturate there); the
 * total may pass it, rounded, and is then above any count it is compared with.
 */
function valueCount(s: QuantileSketch): number {
  const negative = s.negative.counts
  const positive = s.positive.counts
  let n = s.zero
  for (let i = 0; i < negative.length; i++) n += negative[i] as number
  for (let i = 0; i < positive.length; i++) n += positive[i] as number
  return n
}

/**
 * The estimates of `ranked`'s quantiles (ascending) of a sketch, in the order of `at`, from one
 * walk of the buckets; `[]` for an empty sketch. The value of rank ⌊q·(n − 1)⌋ is its bucket's
 * representative value; the extremes are exact and bound every estimate, which only brings it
 * closer to the true value.
 */
function valuesAtRanks(s: QuantileSketch, ranked: readonly { readonly q: number; readonly i: number }[], multiplier: number): number[] {
  const negative = s.negative.counts
  const positive = s.positive.counts
  const n = valueCount(s)
  if (n === 0) return []
  const wanted = ranked.length
  const out = new Array<number>(wanted)
  let next = 0
  // The rank of the next quantile to find (Infinity once all are found): its bucket is the first
  // whose cumulative count exceeds it.
  let rank = Math.floor((ranked[0] as { q: number }).q * (n - 1))
  let seen = 0
  for (let i = 0; i < negative.length && rank < n; i++) {
    seen += negative[i] as number
    if (rank >= seen) continue
    const v = -bucketValue(-(s.negative.offset + i), multiplier)
    do {
      out[(ranked[next] as { i: number }).i] = estimate(s, rank, n, v)
      rank = ++next < wanted ? Math.floor((ranked[next] as { q: number }).q * (n - 1)) : Number.POSITIVE_INFINITY
    } while (rank < seen)
  }
  seen += s.zero
  while (rank < seen) {
    out[(ranked[next] as { i: number }).i] = estimate(s, rank, n, 0)
    rank = ++next < wanted ? Math.floor((ranked[next] as { q: number }).q * (n - 1)) : Number.POSITIVE_INFINITY
  }
  for (let i = 0; i < positive.length && rank < n; i++) {
    seen += positive[i] as number
    if (rank >= seen) continue
    const v = bucketValue(s.positive.offset + i, multiplier)
    do {
      out[(ranked[next] as { i: number }).i] = estimate(s, rank, n, v)
      rank = ++next < wanted ? Math.floor((ranked[next] as { q: number }).q * (n - 1)) : Number.POSITIVE_INFINITY
    } while (rank < seen)
  }
  // Only a sketch whose counts fall short of n (none does) would leave a quantile: the maximum.
  while (next < wanted) out[(ranked[next++] as { i: number }).i] = s.max
  return out
}

/** The estimate at `rank` of `n` values whose bucket stands for `v`: exact at the extremes, else `v` within them. */
function estimate(s: QuantileSketch, rank: number, n: number, v: number): number {
  return rank === 0 ? s.min : rank === n - 1 ? s.max : Math.min(Math.max(v, s.min), s.max)
}
