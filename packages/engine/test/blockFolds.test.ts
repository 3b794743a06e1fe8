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

type Step = { kind: 'write'; at: number; value: number } | { kind: 'drop'; at: number } | { kind: 'read' }

describe('block folds', () => {
  it('refolding only what changed gives what folding the block from scratch gives', () => {
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.record({ kind: fc.constant('write' as const), at: fc.integer({ min: 0, max: 2 * PER_BLOCK - 1 }), value: fc.double({ min: -1e6, max: 1e6, noNaN: true }) }),
      fc.record({ kind: fc.constant('drop' as const), at: fc.integer({ min: 0, max: 2 * PER_BLOCK - 1 }) }),
      fc.constant({ kind: 'read' as const }),
    )
    assertSeeded(
      fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => {
        const aggregates = new AggregateSet({ spread: histogram({ bounds: [-10, 0, 10] }), latency: quantiles({ at: [0.5], maxBuckets: 16 }) })
        const series = testSeries(aggregates)
        const kept = new BlockFolds(PER_BLOCK)
        const check = (): void => {
          for (const block of [0, PER_BLOCK]) {
            const got = kept.of(series, block)
            const want = new BlockFolds(PER_BLOCK).of(series, block)
            expect(Array.from(got.prefix)).toEqual(Array.from(want.prefix))
            expect(Array.from(got.suffix)).toEqual(Array.from(want.suffix))
            for (let i = 0; i < PER_BLOCK; i++) {
              expect(aggregates.encode(got.prefixStates[i] ?? null)).toEqual(aggregates.encode(want.prefixStates[i] ?? null))
              expect(aggregates.encode(got.suffixStates[i] ?? null)).toEqual(aggregates.encode(want.suffixStates[i] ?? null))
            }
          }
        }
        for (const s of steps) {
          if (s.kind === 'read') check()
          else if (s.kind === 'write') {
            let slice = series.slices.get(s.at)
            if (slice === undefined) {
              slice = new TestSlice(aggregates)
              series.slices.set(s.at, slice)
            }
            slice.write(s.value)
            series.version++
          } else if (series.slices.delete(s.at)) series.version++
        }
        check()
      }),
      FILE,
      'refolding only what changed gives what folding the block from scratch gives',
      200,
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
    expect(folds.of(series, 0).prefix[4 * 3 + 1]).toBe(5)
    // Dropped, and a new slice at the same place written once: version 1 again, other values.
    const second = new TestSlice(aggregates)
    second.write(-2)
    series.slices.set(3, second)
    series.version++
    const fold = folds.of(series, 0)
    expect(fold.prefix[4 * 3 + 1]).toBe(-2)
    expect(fold.suffix[1]).toBe(-2)
    expect(aggregates.results(fold.prefixStates[PER_BLOCK - 1] ?? null)).toEqual({ spread: [1, 0] })
  })
})
