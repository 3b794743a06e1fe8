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

/** A key's slices as block folds read them, with the slices' own type for writing (report each slice joining or leaving: `reshaped`). */
function testSeries(aggregates: AggregateSet): { version: number; readonly slices: Map<number, TestSlice>; readonly geometry: FoldedSeries['geometry'] } {
  return { version: 0, slices: new Map<number, TestSlice>(), geometry: { aggregates } }
}

/**
 * The fold of a block's slices from position `from` to `to` (either direction), written out
 * here: count, sum, min, max, and the slices' states merged in that order.
 */
function foldOf(series: ReturnType<typeof testSeries>, aggregates: AggregateSet, block: number, from: number, to: number): { values: number[]; states: States | null } {
  const values = [0, 0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]
  let states: States | null = null
  const step = from <= to ? 1 : -1
  for (let i = from; i !== to + step; i += step) {
    const slice = series.slices.get(block + i)
    if (slice === undefined) continue
    const [count, sum, min, max] = slice.folded()
    values[0] = (values[0] as number) + (count as number)
    values[1] = (values[1] as number) + (sum as number)
    // As a fold compares: the first of equal extremes stays (0 and -0 are equal).
    if ((min as number) < (values[2] as number)) values[2] = min as number
    if ((max as number) > (values[3] as number)) values[3] = max as number
    if (slice.foldedStates !== null) states = aggregates.merge(states, slice.foldedStates)
  }
  return { values, states }
}

/** Series the steps pick from: more blocks than `BlockFolds` keeps (16), so slots are reused. */
const SERIES = 10

type Step =
  | { kind: 'write'; series: number; at: number; value: number }
  | { kind: 'drop'; series: number; at: number }
  | { kind: 'prefix' | 'suffix'; series: number; block: number; at: number }
  | { kind: 'clear' }

// Mostly one series (reads after the writes they must see), now and then the others (slots reused).
const series = fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(SERIES - 1) })
const STEP: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('write' as const), series, at: fc.integer({ min: 0, max: 2 * PER_BLOCK - 1 }), value: fc.double({ min: -1e6, max: 1e6, noNaN: true }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), series, at: fc.integer({ min: 0, max: 2 * PER_BLOCK - 1 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constantFrom('prefix' as const, 'suffix' as const), series, block: fc.constantFrom(0, PER_BLOCK), at: fc.integer({ min: 0, max: PER_BLOCK - 1 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
)

describe('block folds', () => {
  it('a prefix or suffix read from kept folds is what folding the block from scratch gives', () => {
    assertSeeded(
      fc.property(fc.array(STEP, { minLength: 1, maxLength: 120 }), (steps) => {
        const aggregates = new AggregateSet({ spread: histogram({ bounds: [-10, 0, 10] }), latency: quantiles({ at: [0.5], maxBuckets: 16 }) })
        const all = Array.from({ length: SERIES }, () => testSeries(aggregates))
        const kept = new BlockFolds(PER_BLOCK)
        for (const s of steps) {
          if (s.kind === 'clear') {
            kept.clear()
            continue
          }
          const series = all[s.series] as ReturnType<typeof testSeries>
          if (s.kind === 'write') {
            let slice = series.slices.get(s.at)
            if (slice === undefined) {
              slice = new TestSlice(aggregates)
              series.slices.set(s.at, slice)
              kept.reshaped(series, s.at, slice)
            }
            slice.write(s.value)
            series.version++
          } else if (s.kind === 'drop') {
            if (series.slices.delete(s.at)) {
              kept.reshaped(series, s.at, undefined)
              series.version++
            }
          } else {
            const prefix = s.kind === 'prefix'
            const got = prefix ? kept.prefix(series, s.block, s.at) : kept.suffix(series, s.block, s.at)
            const want = foldOf(series, aggregates, s.block, prefix ? 0 : PER_BLOCK - 1, s.at)
            const at = 4 * s.at
            expect(Array.from((prefix ? got.prefix : got.suffix).subarray(at, at + 4))).toEqual(want.values)
            expect(aggregates.encode((prefix ? got.prefixStates : got.suffixStates)[s.at] ?? null)).toEqual(aggregates.encode(want.states))
          }
        }
      }),
      FILE,
      'a prefix or suffix read from kept folds is what folding the block from scratch gives',
      400,
    )
  })

  it('refolds a position whose slice was replaced by another at the same version', () => {
    const aggregates = new AggregateSet({ spread: histogram({ bounds: [0] }) })
    const series = testSeries(aggregates)
    const folds = new BlockFolds(PER_BLOCK)
    const first = new TestSlice(aggregates)
    first.write(5)
    series.slices.set(3, first)
    folds.reshaped(series, 3, first)
    series.version++
    expect(folds.prefix(series, 0, 3).prefix[4 * 3 + 1]).toBe(5)
    // Dropped, and a new slice at the same place written once: version 1 again, other values.
    const second = new TestSlice(aggregates)
    second.write(-2)
    series.slices.delete(3)
    folds.reshaped(series, 3, undefined)
    series.slices.set(3, second)
    folds.reshaped(series, 3, second)
    series.version++
    expect(folds.prefix(series, 0, PER_BLOCK - 1).prefix[4 * 3 + 1]).toBe(-2)
    expect(folds.suffix(series, 0, 0).suffix[1]).toBe(-2)
    expect(aggregates.results(folds.prefix(series, 0, PER_BLOCK - 1).prefixStates[PER_BLOCK - 1] ?? null)).toEqual({ spread: [1, 0] })
  })
})
