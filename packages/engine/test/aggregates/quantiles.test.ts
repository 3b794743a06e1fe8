import { seededRandom } from '@tidemark/seeded-random'
import { assertSeeded } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type QuantileSketch, quantiles } from '@tidemark/engine'
import { bucketKey, bucketValue, logGamma, MIN_NORMAL, mappingMultiplier } from '../../src/aggregates/indexMapping.ts'
import { ByteWriter } from '../../src/aggregates/byteWriter.ts'
import { bytesOf, mergedState, shuffled, stateOf } from './aggregateEvents.ts'

const FILE = 'packages/engine/test/aggregates/quantiles.test.ts'

function property<T>(name: string, arbitrary: fc.Arbitrary<T>, check: (value: T) => void, runs = 100): void {
  it(name, () => assertSeeded(fc.property(arbitrary, check), FILE, name, runs), 60_000)
}

/** Values of one shape, drawn from a seed. */
function sample(kind: string, n: number, seed: number): number[] {
  const random = seededRandom(seed)
  const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random())
  const draw: Record<string, () => number> = {
    uniform: () => random() * 1000,
    lognormal: () => Math.exp(3 + 1.5 * normal()),
    pareto: () => 1 / (1 - random()) ** (1 / 1.2),
    mixedSign: () => (random() < 0.5 ? -1 : 1) * Math.exp(8 * normal()),
    withZeros: () => (random() < 0.3 ? 0 : Math.round(random() * 20) - 10),
    tiny: () => random() * 1e-300,
  }
  const next = draw[kind] as () => number
  return Array.from({ length: n }, next)
}

/** The exact quantile the sketch estimates: rank ⌊q·(n − 1)⌋ of the sorted values. */
function exactQuantile(sorted: readonly number[], q: number): number {
  return sorted[Math.floor(q * (sorted.length - 1))] as number
}

const AT = [0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1]

/**
 * The estimate of quantile `q` from a sketch, written out for one quantile: rank ⌊q·(n − 1)⌋,
 * exact at the extremes, else the representative of the first bucket (negative values, zeros,
 * positive values, in ascending order) whose cumulative count passes the rank, within [min, max].
 */
function bucketByBucket(s: QuantileSketch, q: number, multiplier: number): number {
  const buckets: [count: number, value: () => number][] = [
    ...s.negative.counts.map((c, i): [number, () => number] => [c, () => -bucketValue(-(s.negative.offset + i), multiplier)]),
    [s.zero, () => 0],
    ...s.positive.counts.map((c, i): [number, () => number] => [c, () => bucketValue(s.positive.offset + i, multiplier)]),
  ]
  const n = buckets.reduce((sum, [c]) => sum + c, 0)
  const rank = Math.floor(q * (n - 1))
  if (rank === 0) return s.min
  if (rank === n - 1) return s.max
  let seen = 0
  for (const [count, value] of buckets) {
    seen += count
    if (seen > rank) return Math.min(Math.max(value(), s.min), s.max)
  }
  return s.max
}

describe('quantiles: accuracy', () => {
  property(
    'every quantile is within the relative accuracy of the exact one',
    fc.record({
      kind: fc.constantFrom('uniform', 'lognormal', 'pareto', 'mixedSign', 'withZeros'),
      n: fc.integer({ min: 1, max: 3000 }),
      seed: fc.integer(),
      alpha: fc.constantFrom(0.001, 0.01, 0.05, 0.2),
    }),
    ({ kind, n, seed, alpha }) => {
      const values = sample(kind, n, seed)
      // Enough buckets for these ranges never to collapse (collapsing is checked below).
      const sketch = quantiles({ at: AT, relativeAccuracy: alpha, maxBuckets: 65_536 })
      const estimates = sketch.result(stateOf(sketch, values))
      const sorted = values.slice().sort((a, b) => a - b)
      AT.forEach((q, i) => {
        const exact = exactQuantile(sorted, q)
        const estimate = estimates[i] as number
        expect(Math.abs(estimate - exact)).toBeLessThanOrEqual(alpha * Math.abs(exact) * (1 + 1e-12))
      })
    },
  )

  it('is exact at q = 0 and q = 1 and for one value, and [] when empty', () => {
    const sketch = quantiles({ at: [0, 0.5, 1] })
    expect(sketch.result(sketch.init())).toEqual([])
    expect(sketch.result(stateOf(sketch, [-3.25]))).toEqual([-3.25, -3.25, -3.25])
    const [low, , high] = sketch.result(stateOf(sketch, [17, 3.3, 1e9, -0.5, 42]))
    expect([low, high]).toEqual([-0.5, 1e9])
  })

  it('counts zeros, -0 and magnitudes below 2^-1022 as zero', () => {
    const sketch = quantiles({ at: [0.5] })
    expect(sketch.result(stateOf(sketch, [-5, 0, -0, 1e-310, 5]))).toEqual([0])
    expect(sketch.encode(stateOf(sketch, [0, -0]))).toEqual(sketch.encode(stateOf(sketch, [-0, 0])))
  })

  it('lists quantiles in the order of at, repeats included', () => {
    const sketch = quantiles({ at: [0.99, 0.5, 0.99] })
    const [p99, p50, again] = sketch.result(stateOf(sketch, Array.from({ length: 1000 }, (_, i) => i + 1)))
    expect(p99).toBeCloseTo(990, -1)
    expect(p50).toBeCloseTo(500, -1)
    expect(again).toBe(p99)
  })

  property(
    'several quantiles read in one walk are each the value of rank ⌊q·(n − 1)⌋, found bucket by bucket, in any order of at',
    fc.record({
      kind: fc.constantFrom('uniform', 'lognormal', 'mixedSign', 'withZeros'),
      n: fc.integer({ min: 1, max: 2000 }),
      seed: fc.integer(),
      at: fc.array(fc.oneof(fc.constantFrom(0, 1, 0.5), fc.double({ min: 0, max: 1, noNaN: true })), { minLength: 1, maxLength: 12 }),
      maxBuckets: fc.constantFrom(16, 64, 2048),
    }),
    ({ kind, n, seed, at, maxBuckets }) => {
      const values = sample(kind, n, seed)
      const together = quantiles({ at, maxBuckets })
      const sketch = stateOf(together, values)
      expect(together.result(sketch)).toEqual(at.map((q) => bucketByBucket(sketch, q, mappingMultiplier(0.01))))
    },
  )

  property(
    'every bucket value is within α of every value in the bucket, over the whole float64 range',
    fc.tuple(fc.constantFrom(0.0001, 0.001, 0.01, 0.1, 0.5), fc.double({ min: MIN_NORMAL, max: Number.MAX_VALUE, noNaN: true })),
    ([alpha, x]) => {
      const m = mappingMultiplier(alpha)
      const v = Math.min(bucketValue(bucketKey(x, m), m), Number.MAX_VALUE)
      expect(Math.abs(v - x) / x).toBeLessThanOrEqual(alpha * (1 + 1e-12))
    },
    2000,
  )

  it('values a bucket whose upper bound lies past the largest double within α, not as the largest double', () => {
    // At α = 0.5 the bucket of 1.09e308 reaches past 1.8e308: its quotient of bounds overflowed.
    for (const [alpha, x] of [
      [0.5, 1.0904163430841734e308],
      [0.1, 1.7e308],
      [0.01, 1.79e308],
    ] as const) {
      const m = mappingMultiplier(alpha)
      const v = bucketValue(bucketKey(x, m), m)
      expect(v).toBeLessThan(Number.POSITIVE_INFINITY)
      expect(Math.abs(Math.min(v, Number.MAX_VALUE) - x) / x).toBeLessThanOrEqual(alpha * (1 + 1e-12))
    }
  })
})

describe('quantiles: convergence', () => {
  property(
    'any delivery order, batching and merge tree gives the same bytes',
    fc.record({
      kind: fc.constantFrom('uniform', 'lognormal', 'mixedSign', 'withZeros', 'tiny'),
      n: fc.integer({ min: 0, max: 500 }),
      seed: fc.integer(),
      cuts: fc.array(fc.nat(), { maxLength: 8 }),
      order: fc.array(fc.integer(), { maxLength: 9 }),
      maxBuckets: fc.constantFrom(16, 64, 2048),
    }),
    ({ kind, n, seed, cuts, order, maxBuckets }) => {
      const sketch = quantiles({ at: [0.5], relativeAccuracy: 0.02, maxBuckets })
      const values = sample(kind, n, seed)
      const reference = sketch.encode(stateOf(sketch, values))
      const reordered = shuffled(values, seededRandom(seed + 1))
      expect(sketch.encode(stateOf(sketch, reordered))).toEqual(reference)
      expect(sketch.encode(mergedState(sketch, reordered, cuts, order))).toEqual(reference)
    },
  )

  property(
    'folding pieces into one accumulator (mergeInto) gives the bytes of merge, and leaves the pieces as they were',
    fc.record({
      kind: fc.constantFrom('uniform', 'lognormal', 'mixedSign', 'withZeros', 'pareto'),
      n: fc.integer({ min: 0, max: 500 }),
      seed: fc.integer(),
      cuts: fc.array(fc.nat(), { maxLength: 12 }),
      maxBuckets: fc.constantFrom(16, 64, 2048),
    }),
    ({ kind, n, seed, cuts, maxBuckets }) => {
      const sketch = quantiles({ at: [0.5], relativeAccuracy: 0.02, maxBuckets })
      const values = sample(kind, n, seed)
      const points = [...new Set(cuts.map((c) => c % (n + 1)))].sort((a, b) => a - b)
      const pieces = [...points, n].map((p, i) => stateOf(sketch, values.slice(i === 0 ? 0 : points[i - 1], p)))
      const before = pieces.map((piece) => sketch.encode(piece))
      const merged = pieces.reduce((acc, piece) => sketch.merge(acc, piece), sketch.init())
      const folded = pieces.reduce((acc, piece) => (sketch.mergeInto as NonNullable<typeof sketch.mergeInto>)(acc, piece), sketch.init())
      expect(sketch.encode(folded)).toEqual(sketch.encode(merged))
      expect(sketch.result(folded)).toEqual(sketch.result(merged))
      expect(pieces.map((piece) => sketch.encode(piece))).toEqual(before)
    },
  )

  property(
    'collapsing keeps maxBuckets per sign, and the accuracy within γ^(0.96·(maxBuckets − 2)) of the largest magnitude',
    fc.record({
      kind: fc.constantFrom('lognormal', 'pareto', 'mixedSign', 'uniform'),
      n: fc.integer({ min: 1, max: 1500 }),
      seed: fc.integer(),
      alpha: fc.constantFrom(0.001, 0.01, 0.05),
      maxBuckets: fc.constantFrom(16, 64, 256),
    }),
    ({ kind, n, seed, alpha, maxBuckets }) => {
      const values = sample(kind, n, seed)
      const sketch = quantiles({ at: AT, relativeAccuracy: alpha, maxBuckets })
      const state = stateOf(sketch, values)
      expect(state.positive.counts.length).toBeLessThanOrEqual(maxBuckets)
      expect(state.negative.counts.length).toBeLessThanOrEqual(maxBuckets)
      const reach = Math.exp(0.96 * (maxBuckets - 2) * logGamma(alpha))
      const largest = Math.max(...values)
      const nearestNegative = Math.max(...values.filter((v) => v < 0))
      const sorted = values.slice().sort((a, b) => a - b)
      const estimates = sketch.result(state)
      AT.forEach((q, i) => {
        const exact = exactQuantile(sorted, q)
        const covered = exact > 0 ? exact * reach >= largest : exact < 0 ? exact >= nearestNegative * reach : true
        if (covered) expect(Math.abs((estimates[i] as number) - exact)).toBeLessThanOrEqual(alpha * Math.abs(exact) * (1 + 1e-12))
      })
      expect(estimates[AT.length - 1]).toBe(largest)
    },
  )

  it('merge modifies neither argument and keeps a memory bound of 2 × maxBuckets counts', () => {
    const sketch = quantiles({ at: [0.5], maxBuckets: 16 })
    const a = stateOf(sketch, [1, 2, 3, 1e10])
    const b = stateOf(sketch, [-4, 0, 1e-200])
    const before = [sketch.encode(a), sketch.encode(b)]
    const merged = sketch.merge(a, b)
    expect([sketch.encode(a), sketch.encode(b)]).toEqual(before)
    expect(merged.positive.counts.length + merged.negative.counts.length).toBeLessThanOrEqual(32)
  })

  it('round-trips through bytes and compares equal only when the bytes do', () => {
    const sketch = quantiles({ at: [0.5] })
    const state = stateOf(sketch, [3, -7.5, 0, 1e300, -1e-300, 42])
    const back = sketch.decode(sketch.encode(state))
    expect(back).toEqual(state)
    expect(sketch.equals(back, state)).toBe(true)
    expect(sketch.equals(back, stateOf(sketch, [3]))).toBe(false)
  })
})

describe('quantiles: hostile bytes', () => {
  const sketch = quantiles({ at: [0.5], maxBuckets: 16 })
  const valid = sketch.encode(stateOf(sketch, [1, 2, 3]))
  /** A state with `positive` buckets (key, count) and the given min, max. */
  const forged = (buckets: readonly (readonly [number, number])[], min: number, max: number, zero = 0): Uint8Array => {
    const w = new ByteWriter()
    w.byte(0x51)
    w.varint(zero)
    w.varint(0)
    w.varint(buckets.length)
    buckets.forEach(([key, count], i) => {
      if (i === 0) w.signed(key)
      else w.varint(key - (buckets[i - 1] as readonly [number, number])[0])
      w.varint(count)
    })
    w.float64(min)
    w.float64(max)
    return w.finish()
  }
  const m = mappingMultiplier(0.01)
  const cases: [string, Uint8Array, RegExp][] = [
    ['empty bytes', new Uint8Array(0), /truncated at byte 0/],
    ['a wrong format byte', bytesOf('52 00 00 00'), /format byte 0x52 is not 0x51/],
    ['a truncated state', valid.subarray(0, valid.length - 3), /truncated/],
    ['trailing bytes', new Uint8Array([...valid, 0]), /1 unexpected trailing byte/],
    ['more buckets than maxBuckets', bytesOf('51 00 00 11'), /positive number of buckets 17 exceeds 16/],
    ['a bucket count of 2^60', bytesOf('51 00 00 01 00 80 80 80 80 80 80 80 80'), /longer than 8 bytes/],
    ['an overlong varint', bytesOf('51 80 00'), /overlong/],
    ['a zero bucket count', forged([[0, 0]], 1, 1), /zero count/],
    ['buckets spanning more than maxBuckets', forged([[0, 1], [16, 1]], 1, 1.5), /span 17 keys, more than maxBuckets 16/],
    ['a key beyond the mapping', forged([[40_000, 1]], 1, 1), /positive first key 40000 is beyond ±35840/],
    ['a bucket count of 2^53', bytesOf('51 00 00 01 00 8080808080808010'), /bucket count .*exceeds/],
    ['NaN as minimum', forged([[0, 1]], Number.NaN, 1), /minimum is NaN, not a finite number/],
    ['an infinite maximum', forged([[0, 1]], 1, Number.POSITIVE_INFINITY), /maximum is Infinity/],
    ['-0 as minimum', forged([[0, 1]], -0, 0, 1), /-0/],
    ['a minimum above the maximum', forged([[0, 1]], 1.01, 1), /do not match the buckets/],
    ['a maximum outside the highest bucket', forged([[bucketKey(5, m), 1]], 5, 500), /do not match the buckets/],
    ['a negative minimum with no negative bucket', forged([[bucketKey(5, m), 1]], -5, 5), /do not match the buckets/],
  ]
  it.each(cases)('rejects %s with a RangeError naming the problem', (_name, bytes, message) => {
    expect(() => sketch.decode(bytes)).toThrow(RangeError)
    expect(() => sketch.decode(bytes)).toThrow(message)
  })

  it('rejects what is not a Uint8Array', () => {
    expect(() => sketch.decode([0x51, 0, 0, 0] as unknown as Uint8Array)).toThrow(/quantiles state: expected a Uint8Array, got object/)
  })

  property('random bytes decode or throw a RangeError, never anything else', fc.uint8Array({ maxLength: 40 }), (bytes) => {
    try {
      sketch.decode(new Uint8Array([0x51, ...bytes]))
    } catch (error) {
      expect(error).toBeInstanceOf(RangeError)
    }
  }, 2000)
})

describe('quantiles: options', () => {
  it.each([
    [{ at: [] }, /at must list 1 to 100 numbers from 0 to 1, got 0 item\(s\): \[\]/],
    [{ at: new Array(101).fill(0.5) }, /got 101 item\(s\): \[0.5,0.5,0.5,0.5,0.5\]$/],
    [{ at: '0.5' }, /got string/],
    [{ at: [1.5] }, /at must list/],
    [{ at: [0.5], relativeAccuracy: 0 }, /relativeAccuracy must be a number from 0.0001 to 0.5, got 0/],
    [{ at: [0.5], maxBuckets: 10.5 }, /maxBuckets must be an integer from 16 to 65536/],
    [{ at: [0.5], relativeAcuracy: 0.01 }, /unknown option 'relativeAcuracy' \(did you mean 'relativeAccuracy'\?\)/],
    [{ at: [0.5], of: 'value' }, /of must be a function/],
    [null, /expected an options object, got null/],
  ])('refuses %j', (options, message) => {
    expect(() => quantiles(options as never)).toThrow(message)
  })

  it('fingerprints what shapes the state, not the quantiles read from it', () => {
    expect(quantiles({ at: [0.5] }).configuration).toBe('quantiles(relativeAccuracy=0.01,maxBuckets=2048)')
    expect(quantiles({ at: [0.9], relativeAccuracy: 0.02, maxBuckets: 100 }).configuration).toBe('quantiles(relativeAccuracy=0.02,maxBuckets=100)')
  })

  it('reads event.value, or what of returns, and refuses non-finite input', () => {
    const sketch = quantiles({ at: [0.5], of: (event) => event.ts })
    expect(sketch.read({ id: 'a', source: 'd1', ts: 5, value: 1 })).toBe(5)
    expect(quantiles({ at: [0.5] }).read({ id: 'a', source: 'd1', ts: 5, value: 1 })).toBe(1)
    expect(sketch.checkInput(Number.NaN)).toBe('expected a finite number, got NaN')
    expect(sketch.checkInput('7' as unknown as number)).toBe('expected a finite number, got "7"')
    expect(() => sketch.add(sketch.init(), Number.POSITIVE_INFINITY, { id: 'a', source: 'd1', ts: 5, value: 1 })).toThrow(/cannot add Infinity/)
  })
})
