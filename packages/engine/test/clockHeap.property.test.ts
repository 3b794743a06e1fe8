/**
 * `ClockHeap` against the order it promises, found by a scan: random sets (keys from a few
 * values, so ties are common, with -0 beside 0 and both infinities), deletes and builds, and after
 * every operation the same size, top clock and top key (to the sign of a zero) as a scan of the
 * held keys that keeps the lowest, the lower slot among equal ones, and the same clocks tied at the
 * lowest key (`topTies`).
 */
import fc from 'fast-check'
import { describe, it } from 'vitest'
import { assertSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import { ClockHeap } from '../src/time/clockHeap.ts'
import { SourceClock } from '../src/time/sourceClock.ts'

const FILE = 'packages/engine/test/clockHeap.property.test.ts'

type Op =
  | { readonly kind: 'set'; readonly clock: number; readonly key: number }
  | { readonly kind: 'delete'; readonly clock: number }
  | { readonly kind: 'build'; readonly clocks: readonly number[]; readonly keys: readonly number[] }

/** Few distinct keys (ties), signed zeros, infinities, and a spread of times. */
const key = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -4, max: 4 }) },
  { weight: 1, arbitrary: fc.constantFrom(-0, 0.5, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 1_000_000 }).map((ms) => 1_700_000_000_000 + ms) },
)

const plans = fc.integer({ min: 1, max: 300 }).chain((clocks) =>
  fc.record({
    clocks: fc.constant(clocks),
    ops: fc.array(
      fc.oneof(
        { weight: 12, arbitrary: fc.record({ kind: fc.constant<'set'>('set'), clock: fc.nat(clocks - 1), key }) },
        { weight: 3, arbitrary: fc.record({ kind: fc.constant<'delete'>('delete'), clock: fc.nat(clocks - 1) }) },
        {
          weight: 1,
          arbitrary: fc
            .uniqueArray(fc.nat(clocks - 1), { maxLength: clocks })
            .chain((held) => fc.record({ kind: fc.constant<'build'>('build'), clocks: fc.constant(held), keys: fc.array(key, { minLength: held.length, maxLength: held.length }) })),
        },
      ),
      { minLength: 1, maxLength: 1_500 },
    ),
  }),
)

/** The lowest key held (the lower slot among equal ones), as `slot key` with the zero's sign; `-` when none. */
function scanTop(held: ReadonlyMap<number, number>): string {
  let top = -1
  let topKey = 0
  for (const [slot, k] of held) if (top < 0 || k < topKey || (k === topKey && slot < top)) [top, topKey] = [slot, k]
  return top < 0 ? '-' : `${top} ${Object.is(topKey, -0) ? '-0' : topKey}`
}

/** The slots held under the lowest key, in order; the heap's `topTies`, sorted, must list the same. */
function scanTies(held: ReadonlyMap<number, number>): string {
  const lowest = Math.min(...held.values())
  return [...held]
    .filter(([, k]) => k === lowest)
    .map(([slot]) => slot)
    .sort((a, b) => a - b)
    .join(' ')
}

function check(plan: { readonly clocks: number; readonly ops: readonly Op[] }): void {
  // A clock's slot is its index: the scan breaks ties by it as the heap must.
  const clocks = Array.from({ length: plan.clocks }, (_, slot) => new SourceClock(`s${slot}`, 0, slot))
  const heap = new ClockHeap()
  const held = new Map<number, number>()
  for (let i = 0; i < plan.ops.length; i++) {
    const op = plan.ops[i] as Op
    if (op.kind === 'set') {
      heap.set(clocks[op.clock] as SourceClock, op.key)
      held.set(op.clock, op.key)
    } else if (op.kind === 'delete') {
      heap.delete(clocks[op.clock] as SourceClock)
      held.delete(op.clock)
    } else {
      heap.build(
        op.clocks.map((slot) => clocks[slot] as SourceClock),
        op.keys,
      )
      held.clear()
      for (let j = 0; j < op.clocks.length; j++) held.set(op.clocks[j] as number, op.keys[j] as number)
    }
    const top = heap.top()
    const topKey = heap.topKey(Number.NaN)
    const got = `${heap.size}: ${top === undefined ? '-' : `${top.slot} ${Object.is(topKey, -0) ? '-0' : topKey}`}`
    const want = `${held.size}: ${scanTop(held)}`
    if (got !== want) throw new Error(`op ${i} (${JSON.stringify(op)}): heap ${got}, scan ${want}`)
    const tied: SourceClock[] = []
    heap.topTies(tied)
    const ties = tied
      .map((clock) => clock.slot)
      .sort((a, b) => a - b)
      .join(' ')
    if (ties !== scanTies(held)) throw new Error(`op ${i} (${JSON.stringify(op)}): topTies ${ties}, scan ${scanTies(held)}`)
  }
}

describe('ClockHeap: the lowest key on top, the first known among equal ones', () => {
  const name = 'size, top clock, top key and the clocks tied with it agree with a scan after every set, delete and build'
  it(name, () => assertSeeded(fc.property(plans, check), FILE, name, 300), PROPERTY_TIMEOUT)
})
