import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
// The aggregates reach the engine's public entry when cells carry them; until then, their folder's own index.
import { defineAggregate, distinct, histogram, latest, quantiles } from '@tidemark/engine'
import { checkAggregateLaws } from '../src/index.ts'

const FILE = 'packages/testkit/test/aggregateLaws.test.ts'

/** Finite doubles across the whole range, with zeros, subnormals and ties. */
const anyFinite = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -20, max: 20 }),
  fc.constantFrom(0, -0, 5e-324, -5e-324, 2 ** -1022, Number.MAX_VALUE, -Number.MAX_VALUE),
)
const identity = fc.oneof(fc.string({ maxLength: 6 }), fc.integer({ min: -50, max: 50 }), fc.constantFrom(0, -0, 1.5, '0', ''))

function lawful(name: string, check: () => void): void {
  it(name, () => check(), 60_000)
}

describe('the built-in aggregates obey the laws', () => {
  lawful('quantiles (defaults)', () =>
    checkAggregateLaws(quantiles({ at: [0, 0.5, 0.99, 1] }), anyFinite, { testFile: FILE, testName: 'quantiles (defaults)' }),
  )
  lawful('quantiles collapsing at 16 buckets', () =>
    checkAggregateLaws(quantiles({ at: [0.1, 0.5, 0.9], relativeAccuracy: 0.5, maxBuckets: 16 }), anyFinite, {
      testFile: FILE,
      testName: 'quantiles collapsing at 16 buckets',
    }),
  )
  lawful('distinct, exact (precision 14)', () =>
    checkAggregateLaws(distinct(), identity, { testFile: FILE, testName: 'distinct, exact (precision 14)' }),
  )
  lawful('distinct across the switch to registers (precision 4 and 6)', () => {
    for (const precision of [4, 6]) {
      checkAggregateLaws(distinct({ precision }), identity, { testFile: FILE, testName: 'distinct across the switch to registers (precision 4 and 6)' })
    }
  })
  lawful('latest', () => checkAggregateLaws(latest(), anyFinite, { testFile: FILE, testName: 'latest' }))
  lawful('histogram', () => checkAggregateLaws(histogram({ bounds: [-1, 0, 1, 1e6] }), anyFinite, { testFile: FILE, testName: 'histogram' }))
})

/** A user's aggregate: the sum of squares of integer values, exact in float64 at these sizes. */
const sumOfSquares = defineAggregate({
  name: 'sumOfSquares',
  init: () => 0,
  add: (sum, x) => sum + x * x,
  merge: (a, b) => a + b,
  result: (sum) => sum,
  encode: (sum) => {
    const bytes = new Uint8Array(8)
    new DataView(bytes.buffer).setFloat64(0, sum, true)
    return bytes
  },
  decode: (bytes) => {
    if (bytes.length !== 8) throw new RangeError(`expected 8 bytes, got ${bytes.length}`)
    return new DataView(bytes.buffer, bytes.byteOffset).getFloat64(0, true)
  },
})

describe('checkAggregateLaws on users’ aggregates', () => {
  lawful('a sum of squares obeys the laws', () =>
    checkAggregateLaws(sumOfSquares, fc.integer({ min: -1000, max: 1000 }), { testFile: FILE, testName: 'a sum of squares obeys the laws' }),
  )

  it('names the broken law, the seed and a repro command', () => {
    const lastWins = defineAggregate({ ...definitionOf(sumOfSquares), name: 'lastWins', merge: (_a: number, b: number) => b })
    const thrown = catchError(() => checkAggregateLaws(lastWins, fc.integer({ min: 1, max: 9 }), { testFile: FILE, testName: 'names the broken law' }))
    expect(thrown.message).toMatch(/^lastWins breaks the law: merge is commutative\nseed \d+\nrepro: TIDEMARK_SEED=\d+ npx vitest run packages\/testkit/)
  })

  it('catches a merge that modifies its argument', () => {
    const leaky = defineAggregate<number[], number, number>({
      name: 'leaky',
      init: () => [0],
      add: (s, x) => [(s[0] as number) + x],
      merge: (a, b) => {
        a[0] = (a[0] as number) + (b[0] as number)
        return a
      },
      result: (s) => s[0] as number,
      encode: (s) => new Uint8Array([s[0] as number]),
      decode: (bytes) => [bytes[0] ?? 0],
    })
    const thrown = catchError(() => checkAggregateLaws(leaky, fc.integer({ min: 0, max: 3 }), { maxInputs: 3, testFile: FILE }))
    expect(thrown.message).toMatch(/^leaky breaks the law: merge leaves its arguments unchanged/)
  })

  it('catches an idempotence that is declared but false', () => {
    const claims = defineAggregate({ ...definitionOf(sumOfSquares), name: 'claims', idempotent: true })
    const thrown = catchError(() => checkAggregateLaws(claims, fc.integer({ min: 1, max: 9 }), { testFile: FILE }))
    expect(thrown.message).toMatch(/^claims breaks the law: merge is idempotent/)
  })

  it('catches a decode that throws something other than a RangeError', () => {
    const careless = {
      ...sumOfSquares,
      decode: (bytes: Uint8Array) => {
        if (bytes.length !== 8) throw new TypeError('short')
        return new DataView(bytes.buffer, bytes.byteOffset).getFloat64(0, true)
      },
    }
    const thrown = catchError(() => checkAggregateLaws(careless, fc.integer({ min: 1, max: 9 }), { testFile: FILE }))
    expect(thrown.message).toMatch(/^sumOfSquares breaks the law: decoding damaged bytes returns a state or throws a RangeError/)
  })
})

function definitionOf(aggregate: typeof sumOfSquares) {
  return { name: aggregate.name, init: aggregate.init, add: aggregate.add, merge: aggregate.merge, result: aggregate.result, encode: aggregate.encode, decode: aggregate.decode }
}

/** The error `run` throws; the seeded runner's console report of an expected failure is muted. */
function catchError(run: () => void): Error {
  const report = vi.spyOn(console, 'error').mockImplementation(() => {})
  try {
    run()
  } catch (error) {
    if (error instanceof Error) return error
    throw error
  } finally {
    report.mockRestore()
  }
  throw new Error('expected the laws to fail')
}
