/**
 * Checks an aggregate (built-in or from `defineAggregate`) against the laws the engine relies on
 * when it combines cells and slices and exchanges states between replicas, on random states
 * built from random inputs, with the shared seed. Each law is its own property, so a failure
 * names the law, fast-check's shrunk counterexample (the input lists), the seed and a repro command.
 */
import { isDeepStrictEqual } from 'node:util'
import type { StreamEvent } from '@tidemark/engine'
import { assertSeeded } from '@tidemark/seeded-random/property'
import fc from 'fast-check'

/**
 * The parts of an aggregate the laws speak of; the engine's `Aggregate` has them all.
 *
 * @example
 * const underTest: AggregateUnderTest<number[], number[], number> = histogram({ bounds: [10, 50] })
 */
export interface AggregateUnderTest<State, Result, Input> {
  readonly name: string
  readonly idempotent: boolean
  init(): State
  add(state: State, input: Input, event: StreamEvent): State
  merge(a: State, b: State): State
  mergeInto?(into: State, from: State): State
  result(state: State): Result
  encode(state: State): Uint8Array
  decode(bytes: Uint8Array): State
  equals(a: State, b: State): boolean
}

/**
 * Options of `checkAggregateLaws`.
 *
 * @example
 * const options: AggregateLawOptions<number> = { runs: 200, testFile: 'test/energy.test.ts', testName: 'energy obeys the laws' }
 */
export interface AggregateLawOptions<State> {
  /** Cases per law (default 100; `TIDEMARK_EXTENSIVE=1` runs 20 times more). */
  readonly runs?: number
  /** Most inputs per state (default 40). */
  readonly maxInputs?: number
  /** Check `merge(a, a) ≡ a`; default: what the aggregate declares (`idempotent`). */
  readonly idempotent?: boolean
  /** When two states are the same; default the aggregate's `equals` (equal encodings). */
  readonly equals?: (a: State, b: State) => boolean
  /** For the repro command: the test file and the test's name. */
  readonly testFile?: string
  readonly testName?: string
}

/** One input with the event that carries it: sources, times and seqs from small ranges, so ties come up. */
interface Arrival<Input> {
  readonly input: Input
  readonly source: string
  readonly ts: number
  readonly seq: number | undefined
}

/**
 * Checks, on random input lists xs, ys, zs and their states A, B, C (each added to `init()` one
 * event at a time, events with random sources, times and seqs), with `≡` the aggregate's equality:
 * - commutative `merge(A, B) ≡ merge(B, A)`, associative `merge(merge(A, B), C) ≡ merge(A, merge(B, C))`
 * - identity `merge(init(), A) ≡ A ≡ merge(A, init())`
 * - batching: the state of `xs ++ ys` ≡ `merge(A, B)`; delivery order: the state of xs shuffled ≡ A
 * - idempotent `merge(A, A) ≡ A`, when declared
 * - round trip: `decode(encode(A)) ≡ A`, re-encoding gives the same bytes
 * - merge leaves its arguments' encodings unchanged
 * - `mergeInto(A, B)`, when the aggregate has it, ≡ `merge(A, B)` and leaves B unchanged, also
 *   folding C, then B into one accumulator
 * - the result of `merge(merge(A, B), C)` deep-equals that of `merge(C, merge(B, A))`
 * - decoding a truncated or corrupted encoding returns a state or throws a RangeError, nothing else
 *
 * Throws an Error naming the broken law, with the seed and a repro command.
 *
 * @example
 * it('sum of squares obeys the laws', () => {
 *   checkAggregateLaws(sumOfSquares, fc.integer({ min: -1000, max: 1000 }), { testFile: FILE, testName: 'sum of squares obeys the laws' })
 * })
 */
export function checkAggregateLaws<State, Result, Input>(
  aggregate: AggregateUnderTest<State, Result, Input>,
  arbitraryInput: fc.Arbitrary<Input>,
  options: AggregateLawOptions<State> = {},
): void {
  const runs = options.runs ?? 100
  const same = options.equals ?? ((a: State, b: State) => aggregate.equals(a, b))
  const arrival: fc.Arbitrary<Arrival<Input>> = fc.record({
    input: arbitraryInput,
    source: fc.constantFrom('a', 'b', 'c'),
    ts: fc.integer({ min: 0, max: 5 }),
    seq: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
  })
  const list = fc.array(arrival, { maxLength: options.maxInputs ?? 40 })
  const build = (arrivals: readonly Arrival<Input>[]): State => {
    let state = aggregate.init()
    arrivals.forEach((a, i) => {
      const event: StreamEvent =
        a.seq === undefined
          ? { id: `${a.source}-${i}`, source: a.source, ts: a.ts, value: typeof a.input === 'number' ? a.input : 0 }
          : { id: `${a.source}-${i}`, source: a.source, seq: a.seq, ts: a.ts, value: typeof a.input === 'number' ? a.input : 0 }
      state = aggregate.add(state, a.input, event)
    })
    return state
  }
  const law = <T>(name: string, arbitrary: fc.Arbitrary<T>, holds: (value: T) => boolean): void => {
    const testName = options.testName ?? `${aggregate.name} obeys the aggregate laws`
    try {
      assertSeeded(fc.property(arbitrary, holds), options.testFile ?? '<test file>', testName, runs)
    } catch (error) {
      throw new Error(`${aggregate.name} breaks the law: ${name}\n${error instanceof Error ? error.message : String(error)}`, { cause: error })
    }
  }
  const m = (a: State, b: State) => aggregate.merge(a, b)

  law('merge is commutative', fc.tuple(list, list), ([xs, ys]) => same(m(build(xs), build(ys)), m(build(ys), build(xs))))
  law('merge is associative', fc.tuple(list, list, list), ([xs, ys, zs]) =>
    same(m(m(build(xs), build(ys)), build(zs)), m(build(xs), m(build(ys), build(zs)))),
  )
  law('init() is the identity of merge', list, (xs) => same(m(aggregate.init(), build(xs)), build(xs)) && same(m(build(xs), aggregate.init()), build(xs)))
  law('adding xs ++ ys equals merging the states of xs and ys', fc.tuple(list, list), ([xs, ys]) => same(build([...xs, ...ys]), m(build(xs), build(ys))))
  law('any delivery order gives the same state', fc.tuple(list, fc.func(fc.integer())), ([xs, rank]) => {
    const shuffled = xs.map((x, i) => ({ x, key: rank(i) })).sort((p, q) => p.key - q.key).map((p) => p.x)
    return same(build(shuffled), build(xs))
  })
  if (options.idempotent ?? aggregate.idempotent) law('merge is idempotent', list, (xs) => same(m(build(xs), build(xs)), build(xs)))
  law('decode(encode(state)) is the same state, with the same bytes', list, (xs) => {
    const bytes = aggregate.encode(build(xs))
    const back = aggregate.decode(bytes)
    return same(back, build(xs)) && isDeepStrictEqual(aggregate.encode(back), bytes)
  })
  law('merge leaves its arguments unchanged', fc.tuple(list, list), ([xs, ys]) => {
    const a = build(xs)
    const b = build(ys)
    const before = [aggregate.encode(a), aggregate.encode(b)]
    m(a, b)
    return isDeepStrictEqual([aggregate.encode(a), aggregate.encode(b)], before)
  })
  const mergeInto = aggregate.mergeInto
  if (mergeInto !== undefined) {
    law('mergeInto equals merge and leaves its source unchanged', fc.tuple(list, list, list), ([xs, ys, zs]) => {
      const b = build(ys)
      const before = aggregate.encode(b)
      const folded = mergeInto(mergeInto(build(xs), build(zs)), b)
      return same(folded, m(m(build(xs), build(zs)), build(ys))) && isDeepStrictEqual(aggregate.encode(b), before)
    })
  }
  law('the result does not depend on merge order', fc.tuple(list, list, list), ([xs, ys, zs]) =>
    isDeepStrictEqual(aggregate.result(m(m(build(xs), build(ys)), build(zs))), aggregate.result(m(build(zs), m(build(ys), build(xs))))),
  )
  law('decoding damaged bytes returns a state or throws a RangeError', fc.tuple(list, fc.nat(), fc.nat({ max: 255 })), ([xs, at, byte]) => {
    const bytes = aggregate.encode(build(xs))
    const cut = bytes.length === 0 ? 0 : at % bytes.length
    const flipped = bytes.slice()
    if (flipped.length > 0) flipped[cut] = byte
    return [bytes.subarray(0, cut), flipped].every((damaged) => {
      try {
        aggregate.decode(damaged)
        return true
      } catch (error) {
        return error instanceof RangeError
      }
    })
  })
}
