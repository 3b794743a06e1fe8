/**
 * The order a batch is placed in when sessions are kept: invalid inputs first by position, then
 * the valid events by (ts, source, seq, id), copies in their positions' order. placementOrder
 * finds it by keeping the events that extend the order and merging in the sorted rest; here it
 * must equal a stable sort of the whole batch, on batches in order, nearly in order and shuffled,
 * with copies and invalid inputs anywhere.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { StreamEvent } from '../../src/core/event.ts'
import { compareEventOrder, placementOrder } from '../../src/ordered/eventOrder.ts'
import { assertSeeded } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/ordered/placementOrder.test.ts'

/** The order by a stable sort of every position (what placementOrder must give). */
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

describe('placementOrder', () => {
  it('equals a stable sort of the batch', () => {
    assertSeeded(
      fc.property(batch, ({ events, invalid }) => {
        const expected = sortedOrder(events, invalid)
        const order = placementOrder(events, invalid)
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
    expect(placementOrder([e('a', 1), e('b', 2), e('c', 2)], [null, null, null])).toBeNull()
    expect(placementOrder([e('bad', 9), e('a', 1), e('b', 2)], ['invalid_event', null, null])).toBeNull()
    expect(placementOrder([e('a', 1), e('bad', 9), e('b', 2)], [null, 'invalid_event', null])).toEqual([1, 0, 2])
    expect(placementOrder([e('b', 2), e('a', 1), e('c', 3)], [null, null, null])).toEqual([1, 0, 2])
    // A copy of an event keeps the order of positions, whichever of the two parts it lies in.
    expect(placementOrder([e('a', 5), e('b', 1), e('a', 5), e('c', 3)], [null, null, null, null])).toEqual([1, 3, 0, 2])
    expect(placementOrder([e('a', 5), e('z', 9), e('a', 5)], [null, null, null])).toEqual([0, 2, 1])
  })
})
