/**
 * `histogram({ bounds, of })`: counts of a window's values in fixed buckets. Counts add,
 * saturating at 2^53 − 1 (`addBucketCounts`), so merge is a commutative monoid (exact in any
 * order; not idempotent).
 *
 * Encoding (format 1): the format byte `0x48`, the number of buckets (varint, bounds.length + 1,
 * checked), then each count (varint). Decode checks the format byte, the bucket count, each count
 * against 2^53 − 1, and that no byte trails.
 */
import { addBucketCounts, MAX_BUCKET_COUNT } from './bucketCount.ts'
import { exactAggregate } from './aggregateSet.ts'
import type { StreamEvent } from '../input/event.ts'
import type { Aggregate } from './aggregate.ts'
import { checkAggregateOptions, isListOf } from './aggregateOptions.ts'
import { ByteReader } from './byteReader.ts'
import { sameBytes } from './byteOrder.ts'
import { ByteWriter } from './byteWriter.ts'
import { eventValue, finiteInput } from './numericInput.ts'

const FORMAT = 0x48

/**
 * Options of `histogram`.
 *
 * @example
 * const options: HistogramOptions = { bounds: [10, 50, 100] }
 */
export interface HistogramOptions {
  /** Upper bounds of the buckets, finite and strictly increasing (1 to 1024 of them). */
  readonly bounds: readonly number[]
  /** The number to count; default `event.value`. */
  readonly of?: (event: StreamEvent) => number
}

/**
 * Bucket counts of a window's values: bucket i counts values v with `bounds[i − 1] < v ≤ bounds[i]`
 * (the first has no lower bound, the last, `bounds.length`, counts values above every bound), so
 * the result has bounds.length + 1 counts. Exact. Memory: one number per bucket.
 *
 * @example
 * const spread = histogram({ bounds: [10, 50, 100] })
 * result.aggregates.spread // [12, 40, 7, 1]: 12 values ≤ 10, 40 in (10, 50], 7 in (50, 100], 1 above 100
 */
export function histogram(options: HistogramOptions): Aggregate<number[], number[], number> {
  checkAggregateOptions('histogram', options, ['bounds', 'of'], true)
  const bounds = options.bounds
  if (!isListOf(bounds, 1024, (b, i) => typeof b === 'number' && Number.isFinite(b) && (i === 0 || b > (bounds[i - 1] as number)))) {
    throw new RangeError(`histogram: bounds must list 1 to 1024 finite, strictly increasing numbers, got ${Array.isArray(bounds) ? `${bounds.length} item(s): ${JSON.stringify(bounds.slice(0, 5))}` : typeof bounds}`)
  }
  const edges = bounds.slice()
  const size = edges.length + 1
  const encode = (s: number[]): Uint8Array => {
    const writer = new ByteWriter()
    writer.byte(FORMAT)
    writer.varint(s.length)
    for (const c of s) writer.varint(c)
    return writer.finish()
  }
  return exactAggregate({
    name: 'histogram',
    configuration: `histogram(bounds=${edges.join(',')})`,
    idempotent: false,
    read: options.of ?? eventValue,
    checkInput: finiteInput,
    init: () => new Array<number>(size).fill(0),
    add(s, x) {
      if (!Number.isFinite(x)) throw new RangeError(`histogram: cannot add ${x}, not a finite number`)
      let lo = 0
      let hi = edges.length
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        if (x <= (edges[mid] as number)) hi = mid
        else lo = mid + 1
      }
      s[lo] = addBucketCounts(s[lo] as number, 1)
      return s
    },
    merge: (a, b) => a.map((c, i) => addBucketCounts(c, b[i] as number)),
    mergeInto(into, from) {
      for (let i = 0; i < into.length; i++) into[i] = addBucketCounts(into[i] as number, from[i] as number)
      return into
    },
    result: (s) => s.slice(),
    encode,
    decode(bytes) {
      const r = new ByteReader(bytes, 'histogram state')
      r.format(FORMAT)
      const n = r.varint('bucket count', size)
      if (n !== size) throw r.fail(`${n} buckets, expected ${size} (bounds.length + 1)`)
      // Each count is at most 2^53 - 1 (they saturate there); their total may pass it.
      const s: number[] = []
      for (let i = 0; i < n; i++) s.push(r.varint('count', MAX_BUCKET_COUNT))
      r.end()
      return s
    },
    equals: (a, b) => sameBytes(encode(a), encode(b)),
  }, (s, cell) => {
    // Each count is at most 2^53 − 1, the cell's at most 2^40: the float total decides exactly.
    let n = 0
    for (const c of s) n += c
    return n > cell.count ? `${n} values in a cell of ${cell.count} events` : null
  })
}
