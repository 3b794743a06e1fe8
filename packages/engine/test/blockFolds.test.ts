import { assertSeeded } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { histogram, quantiles } from '@tidemark/engine'
import { AggregateSet, type States } from '../src/aggregates/aggregateSet.ts'
import { BlockFolds, type FoldedSeries, type FoldedSlice } from '../src/windows/blockFolds.ts'

const FILE = 'packages/engine/test/blockFolds.test.ts'
const PER_BLOCK = 8

/** A slice as block folds read it: count, sum, min, max and states of the values written to it. */
class TestSlice implements FoldedSlice {
  version = 0
  foldedStates: States | null = null
  readonly #values: number[] = []
  readonly #aggregates: AggregateSet

  constructor(aggregates: AggregateSet) {
    this.#aggregates = aggregates
  }

  write(value: number): void {
    this.#values.push(value)
    // States handed out are never changed in place: a write makes new ones, as a slice's refold does.
    this.foldedStates = this.#aggregates.merge(this.foldedStates ?? this.#aggregates.init(), this.#one(value))
    this.version++
  }

  #one(value: number): States {
    const s = this.#aggregates.init()
    this.#aggregates.add(s, [value, value], { id: 'e', source: 's', ts: 0, value })
    return s
  }

  folded(): Float64Array {
    const v = this.#values
    return Float64Array.of(v.length, v.reduce((a, b) => a + b, 0), Math.min(...v), Math.max(...v))
  }
}

/** A key's slices as block folds read them, with the slices' own type for writing. */
function testSeries(aggregates: AggregateSet): { version: number; readonly slices: Map<number, TestSlice>; readonly geometry: FoldedSeries['geometry'] } {
  return { version: 0, slices: new Map<number, TestSlice>(), geometry: { aggregates } }
}

type Step =
  | { kind: 'write'; at: number; value: number }
  | { kind: 'drop'; at: number }
  | { kind: 'prefix' | 'suffix'; block: number; at: number }

const STEP: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('write' as const), at: fc.integer({ min: 0, max: 2 * PER_BLOCK - 1 }), value: fc.double({ min: -1e6, max: 1e6, noNaN: true }) }),
  fc.record({ kind: fc.constant('drop' as const), at: fc.integer({ min: 0, max: 2 * PER_BLOCK - 1 }) }),
  fc.record({ kind: fc.constantFrom('prefix' as const, 'suffix' as const), block: fc.constantFrom(0, PER_BLOCK), at: fc.integer({ min: 0, max: PER_BLOCK - 1 }) }),
)

describe('block folds', () => {
  it('a prefix or suffix read from kept folds is what folding the block from scratch gives', () => {
    assertSeeded(
      fc.property(fc.array(STEP, { minLength: 1, maxLength: 80 }), (steps) => {
        const aggregates = new AggregateSet({ spread: histogram({ bounds: [-10, 0, 10] }), latency: quantiles({ at: [0.5], maxBuckets: 16 }) })
        const series = testSeries(aggregates)
        const kept = new BlockFolds(PER_BLOCK)
        for (const s of steps) {
          if (s.kind === 'write') {
            let slice = series.slices.get(s.at)
            if (slice === undefined) {
              slice = new TestSlice(aggregates)
              series.slices.set(s.at, slice)
            }
            slice.write(s.value)
            series.version++
          } else if (s.kind === 'drop') {
            if (series.slices.delete(s.at)) series.version++
          } else {
            const whole = new BlockFolds(PER_BLOCK)
            const got = s.kind === 'prefix' ? kept.prefix(series, s.block, s.at) : kept.suffix(series, s.block, s.at)
            const want = s.kind === 'prefix' ? whole.prefix(series, s.block, PER_BLOCK - 1) : whole.suffix(series, s.block, 0)
            const values = s.kind === 'prefix' ? [got.prefix, want.prefix] : [got.suffix, want.suffix]
            const states = s.kind === 'prefix' ? [got.prefixStates, want.prefixStates] : [got.suffixStates, want.suffixStates]
            const at = 4 * s.at
            expect(Array.from((values[0] as Float64Array).subarray(at, at + 4))).toEqual(Array.from((values[1] as Float64Array).subarray(at, at + 4)))
            expect(aggregates.encode((states[0] as (States | null)[])[s.at] ?? null)).toEqual(aggregates.encode((states[1] as (States | null)[])[s.at] ?? null))
          }
        }
      }),
      FILE,
      'a prefix or suffix read from kept folds is what folding the block from scratch gives',
      300,
    )
  })

  it('refolds a position whose slice was replaced by another at the same version', () => {
    const aggregates = new AggregateSet({ spread: histogram({ bounds: [0] }) })
    const series = testSeries(aggregates)
    const folds = new BlockFolds(PER_BLOCK)
    const first = new TestSlice(aggregates)
    first.write(5)
    series.slices.set(3, first)
    series.version++
    expect(folds.prefix(series, 0, 3).prefix[4 * 3 + 1]).toBe(5)
    // Dropped, and a new slice at the same place written once: version 1 again, other values.
    const second = new TestSlice(aggregates)
    second.write(-2)
    series.slices.set(3, second)
    series.version++
    expect(folds.prefix(series, 0, PER_BLOCK - 1).prefix[4 * 3 + 1]).toBe(-2)
    expect(folds.suffix(series, 0, 0).suffix[1]).toBe(-2)
    expect(aggregates.results(folds.prefix(series, 0, PER_BLOCK - 1).prefixStates[PER_BLOCK - 1] ?? null)).toEqual({ spread: [1, 0] })
  })
})
