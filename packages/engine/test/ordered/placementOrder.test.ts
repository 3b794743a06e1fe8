/**
 * The order a batch is placed in when sessions are kept: invalid inputs first by position, then
 * the valid events by (ts, source, seq, id), copies in their positions' order. PlacementOrder
 * finds it by keeping the events that extend the order and merging in the sorted rest; here it
 * must equal a stable sort of the whole batch, on batches in order, nearly in order and shuffled,
 * with copies and invalid inputs anywhere, one instance ordering batch after batch (its storage
 * is reused).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { StreamEvent } from '../../src/input/event.ts'
import { compareEventOrder, PlacementOrder } from '../../src/input/eventOrder.ts'
import { assertSeeded } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/ordered/placementOrder.test.ts'

/** The order by a stable sort of every position (what PlacementOrder must give). */
function sortedOrder(events: readonly StreamEvent[], invalid: readonly (string | null)[]): number[] {
  return events
    .map((_, i) => i)
    .sort((a, b) => {
      const va = invalid[a] === null
      const vb = invalid[b] === null
      if (!va || !vb) return va === vb ? a - b : va ? 1 : -1
      return compareEventOrder(events[a] as StreamEvent, events[b] as StreamEvent) || a - b
    })
}

const entry = fc.record({
  ts: fc.integer({ min: 0, max: 40 }),
  source: fc.constantFrom('a', 'b', 'c'),
  seq: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
  id: fc.constantFrom('x', 'y', 'z'),
  invalid: fc.integer({ min: 0, max: 12 }).map((n) => n === 0),
})

/**
 * A batch whose times rise along it (an in-order stream), with some entries moved back in time,
 * and copies: an entry may repeat an earlier event (a re-sent reading, equal in the order).
 */
const batch = fc
  .tuple(fc.array(fc.tuple(entry, fc.integer({ min: -6, max: 59 })), { maxLength: 60 }), fc.integer({ min: 0, max: 3 }))
  .map(([entries, disorder]) => {
    const events: StreamEvent[] = []
    for (const [i, [e, copyOf]] of entries.entries()) {
      const copied = copyOf >= 0 && copyOf < i ? events[copyOf] : undefined
      // disorder 0: sorted times (ties kept); 3: the drawn times as they are.
      const ts = disorder === 0 ? i : disorder === 3 ? e.ts : e.ts % (disorder * 5) === 0 ? i - e.ts : i
      if (copied !== undefined) events.push({ ...copied })
      else events.push(e.seq === undefined ? { id: e.id, source: e.source, ts, value: 1 } : { id: e.id, source: e.source, seq: e.seq, ts, value: 1 })
    }
    return { events, invalid: entries.map(([e]) => (e.invalid ? 'invalid_event' : null)) }
  })

/** One batch's order as a plain array: null stays null. */
function orderOf(order: PlacementOrder, events: readonly StreamEvent[], invalid: readonly (string | null)[]): number[] | null {
  const positions = order.of(events, invalid)
  return positions === null ? null : Array.from(positions.subarray(0, events.length))
}

describe('PlacementOrder', () => {
  it('equals a stable sort of the batch', () => {
    const shared = new PlacementOrder()
    assertSeeded(
      fc.property(batch, ({ events, invalid }) => {
        const expected = sortedOrder(events, invalid)
        const order = orderOf(shared, events, invalid)
        if (order === null) expect(expected).toEqual(events.map((_, i) => i))
        else expect(order).toEqual(expected)
      }),
      FILE,
      'equals a stable sort of the batch',
      400,
    )
  })

  it('is null for a batch already in order, invalid inputs leading, and an order otherwise', () => {
    const e = (id: string, ts: number): StreamEvent => ({ id, source: 'd', seq: ts, ts, value: 1 })
    const order = new PlacementOrder()
    const placementOrder = (events: readonly StreamEvent[], invalid: readonly (string | null)[]) => orderOf(order, events, invalid)
    expect(placementOrder([e('a', 1), e('b', 2), e('c', 2)], [null, null, null])).toBeNull()
    expect(placementOrder([e('bad', 9), e('a', 1), e('b', 2)], ['invalid_event', null, null])).toBeNull()
    expect(placementOrder([e('a', 1), e('bad', 9), e('b', 2)], [null, 'invalid_event', null])).toEqual([1, 0, 2])
    expect(placementOrder([e('b', 2), e('a', 1), e('c', 3)], [null, null, null])).toEqual([1, 0, 2])
    // A copy of an event keeps the order of positions, whichever of the two parts it lies in.
    expect(placementOrder([e('a', 5), e('b', 1), e('a', 5), e('c', 3)], [null, null, null, null])).toEqual([1, 3, 0, 2])
    expect(placementOrder([e('a', 5), e('z', 9), e('a', 5)], [null, null, null])).toEqual([0, 2, 1])
  })

  it('orders a batch larger than the storage it keeps, then smaller ones, with the same instance', () => {
    const order = new PlacementOrder()
    const batch = (n: number, seed: number): StreamEvent[] =>
      Array.from({ length: n }, (_, i) => ({ id: `e${i}`, source: `d${i % 7}`, seq: i + 1, ts: (i * 7919 + seed) % (n / 2), value: 1 }))
    for (const n of [70_000, 10, 40_000, 3]) {
      const events = batch(n, n)
      const invalid = events.map(() => null)
      // Null: the batch is in order already.
      expect(orderOf(order, events, invalid) ?? events.map((_, i) => i)).toEqual(sortedOrder(events, invalid))
    }
  })
})
