import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { StreamEvent } from '../../src/input/event.ts'
import { invalidReason } from '../../src/input/eventValidation.ts'
import type { OrderedEvent } from '../../src/ordered/eventOrder.ts'
import { orderEvents } from '../../src/ordered/orderEvents.ts'
import { createOrderedStream } from '../../src/ordered/orderedStream.ts'
import { manual } from '../../src/time/watermarkStrategy.ts'
import type { Basis } from '../../src/windows/windowResult.ts'
import { disorderedEvents, signature } from './arbitraries.ts'
import { dedupKey, naiveOrder } from './orderedReference.ts'
import { assertFreshSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/ordered/orderEvents.test.ts'

function ev(source: string, seq: number | undefined, ts: number, id = `${source}-${seq ?? ts}`): StreamEvent {
  return seq === undefined ? { id, source, ts, value: ts } : { id, source, seq, ts, value: ts }
}

const basisOf = (ordered: readonly OrderedEvent[]) => ordered.map((e) => [e.id, e.basis])

/** Copies of some events, some re-sent exactly, some with a different ts or value (a conflicting copy). */
const withConflictingCopies = disorderedEvents.chain((events) =>
  fc
    .array(fc.tuple(fc.nat(), fc.integer({ min: -3, max: 3 }), fc.boolean()), { maxLength: events.length === 0 ? 0 : 10 })
    .map((copies) => {
      const out = [...events]
      for (const [at, shift, changeValue] of copies) {
        const original = events[at % events.length] as StreamEvent
        if (!Number.isFinite(original.ts)) continue
        out.push(changeValue ? { ...original, value: original.value + shift } : { ...original, ts: original.ts + shift })
      }
      return out
    }),
)

/** The basis rules of docs/semantics.md (the ordered event stream) written out directly on the whole deduped batch. */
function naiveBasis(ordered: readonly StreamEvent[]): Basis[] {
  const seqTs = new Map<string, Map<number, number>>()
  for (const e of ordered) {
    if (e.seq === undefined) continue
    const m = seqTs.get(e.source) ?? new Map<number, number>()
    m.set(e.seq, e.ts)
    seqTs.set(e.source, m)
  }
  return ordered.map((e, i) => {
    const tie = ordered[i - 1]?.ts === e.ts || ordered[i + 1]?.ts === e.ts
    if (e.seq === undefined) return tie ? 'fallback' : 'derived'
    const m = seqTs.get(e.source) as Map<number, number>
    let prefix = 0
    while (m.has(prefix + 1)) prefix++
    let regression = Number.POSITIVE_INFINITY
    for (let s = 2; s <= prefix; s++) {
      if ((m.get(s) as number) < (m.get(s - 1) as number)) {
        regression = s
        break
      }
    }
    // A seq above the gap earlier than the prefix's end: ts went backwards along seq past the prefix.
    if (regression === Number.POSITIVE_INFINITY && prefix > 0 && [...m].some(([seq, ts]) => seq > prefix && ts < (m.get(prefix) as number))) regression = prefix + 1
    if (e.seq <= prefix) return e.seq < regression ? 'proven' : 'fallback'
    if (regression !== Number.POSITIVE_INFINITY) return 'fallback'
    return tie ? 'fallback' : 'unknown'
  })
}

describe('orderEvents: named scenarios', () => {
  it('orders by ts, then source, then seq (absent first), then id, by code units not locale', () => {
    const { ordered, anomalies } = orderEvents([
      ev('b', 2, 10),
      ev('b', undefined, 10, 'b-z'),
      ev('a', 1, 10),
      ev('B', 1, 10),
      ev('b', 1, 10),
      ev('a', 2, 5),
      ev('b', undefined, 10, 'b-y'),
    ])
    expect(anomalies).toEqual([])
    expect(ordered.map((e) => e.id)).toEqual(['a-2', 'B-1', 'a-1', 'b-y', 'b-z', 'b-1', 'b-2'])
  })

  it("reports every duplicate as a 'duplicate' anomaly with its index, and keeps one copy", () => {
    const { ordered, anomalies } = orderEvents([ev('a', 1, 10), ev('a', 1, 10), ev('a', undefined, 5, 'x'), ev('a', undefined, 5, 'x'), ev('a', 1, 10)])
    expect(ordered.map((e) => e.id)).toEqual(['x', 'a-1'])
    expect(anomalies.map((a) => [a.reason, a.index, a.id, a.source])).toEqual([
      ['duplicate', 1, 'a-1', 'a'],
      ['duplicate', 3, 'x', 'a'],
      ['duplicate', 4, 'a-1', 'a'],
    ])
  })

  it('validates with the shared rules; anomalies come in input order', () => {
    const { ordered, anomalies } = orderEvents([
      { id: 'a', source: 's', ts: Number.NaN, value: 1 },
      ev('s', 1, 1),
      ev('s', 1, 1),
      { id: 'b', source: 's', seq: 0, ts: 1, value: 1 },
      { id: 'c', source: '', ts: 1, value: 1 },
    ])
    expect(ordered).toHaveLength(1)
    expect(anomalies.map((a) => [a.reason, a.index])).toEqual([
      ['invalid_ts', 0],
      ['duplicate', 2],
      ['invalid_seq', 3],
      ['missing_source', 4],
    ])
  })

  it('of conflicting copies keeps the one that comes first in the order, whatever the input order', () => {
    const copies = [
      { id: 'late', source: 's', seq: 1, ts: 30, value: 1 },
      { id: 'early', source: 's', seq: 1, ts: 20, value: 2 },
      { id: 'early', source: 's', seq: 1, ts: 20, value: 1 },
    ]
    const forward = orderEvents(copies)
    const backward = orderEvents([...copies].reverse())
    expect(forward.ordered).toEqual([{ id: 'early', source: 's', seq: 1, ts: 20, value: 1, basis: 'proven' }])
    expect(backward.ordered).toEqual(forward.ordered)
  })

  it('basis: proven prefix, fallback after the clock went backwards, unknown above a gap, derived without seq, fallback on a tie', () => {
    const { ordered } = orderEvents([
      ev('p', 1, 10),
      ev('p', 2, 20),
      ev('r', 1, 11),
      ev('r', 2, 31),
      ev('r', 3, 21),
      ev('r', 4, 41),
      ev('g', 1, 12),
      ev('g', 3, 32),
      ev('n', undefined, 13, 'n1'),
      ev('n', undefined, 20, 'n2'),
    ])
    expect(basisOf(ordered)).toEqual([
      ['p-1', 'proven'],
      ['r-1', 'proven'],
      ['g-1', 'proven'],
      ['n1', 'derived'],
      ['n2', 'fallback'],
      ['p-2', 'proven'],
      ['r-3', 'fallback'],
      ['r-2', 'proven'],
      ['g-3', 'unknown'],
      ['r-4', 'fallback'],
    ])
  })

  it('events without seq of a source that also has seqs do not break its proof', () => {
    const { ordered } = orderEvents([ev('s', undefined, 1, 'loose'), ev('s', 1, 2), ev('s', 2, 3), ev('s', 4, 5)])
    expect(basisOf(ordered)).toEqual([
      ['loose', 'derived'],
      ['s-1', 'proven'],
      ['s-2', 'proven'],
      ['s-4', 'unknown'],
    ])
  })

  it('__proto__ and constructor are ordinary sources and ids', () => {
    const { ordered, anomalies } = orderEvents([ev('__proto__', undefined, 2, 'constructor'), ev('constructor', 1, 1), ev('__proto__', undefined, 2, 'constructor')])
    expect(ordered.map((e) => [e.source, e.id])).toEqual([
      ['constructor', 'constructor-1'],
      ['__proto__', 'constructor'],
    ])
    expect(anomalies).toHaveLength(1)
  })

  it('a batch over maxEvents is refused whole with overflow', () => {
    const { ordered, anomalies } = orderEvents([ev('a', 1, 1), ev('a', 2, 2)], { maxEvents: 1 })
    expect(ordered).toEqual([])
    expect(anomalies.map((a) => [a.reason, a.index])).toEqual([
      ['overflow', 0],
      ['overflow', 1],
    ])
    expect(() => orderEvents([], { maxEvents: -1 })).toThrow(RangeError)
    expect(() => orderEvents('x' as unknown as StreamEvent[])).toThrow(TypeError)
  })

  it('does not keep references to the caller objects', () => {
    const input = { id: 'a', source: 's', ts: 1, value: 1 }
    const { ordered } = orderEvents([input])
    input.ts = 99
    expect(ordered[0]?.ts).toBe(1)
  })
})

describe('orderEvents: properties', () => {
  it('the same events in any order give the same output', () => {
    assertFreshSeeded(
      fc.property(
        withConflictingCopies.chain((events) => fc.tuple(fc.constant(events), fc.shuffledSubarray(events, { minLength: events.length, maxLength: events.length }))),
        ([events, shuffled]) => {
          const a = orderEvents(events)
          const b = orderEvents(shuffled)
          expect(b.ordered).toEqual(a.ordered)
          const refused = (input: readonly StreamEvent[], r: typeof a) =>
            r.anomalies.map((x) => `${x.reason} ${signature(input[x.index as number] as StreamEvent)}`).sort()
          expect(refused(shuffled, b)).toEqual(refused(events, a))
        },
      ),
      FILE,
      300,
    )
  }, PROPERTY_TIMEOUT)

  it('is strictly sorted, dedups to exactly the valid keys, keeps the first copy in order, and accounts for every input', () => {
    assertFreshSeeded(
      fc.property(withConflictingCopies, (events) => {
        const { ordered, anomalies } = orderEvents(events)
        for (let i = 1; i < ordered.length; i++) expect(naiveOrder(ordered[i - 1] as StreamEvent, ordered[i] as StreamEvent)).toBe(-1)
        const valid = events.filter((e) => invalidReason(e) === null)
        const keys = new Set(valid.map(dedupKey))
        expect(ordered.map(dedupKey).sort()).toEqual([...keys].sort())
        for (const kept of ordered) {
          const copies = valid.filter((e) => dedupKey(e) === dedupKey(kept))
          for (const c of copies) expect(naiveOrder(kept, c)).toBeLessThanOrEqual(0)
        }
        expect(ordered.length + anomalies.length).toBe(events.length)
        const copies = anomalies.filter((a) => a.reason === 'duplicate' || a.reason === 'conflicting_duplicate')
        expect(copies).toHaveLength(valid.length - keys.size)
        for (const a of copies) {
          const copy = events[a.index as number] as StreamEvent
          const kept = ordered.find((k) => dedupKey(k) === dedupKey(copy)) as StreamEvent
          expect(a.reason).toBe(kept.ts === copy.ts ? 'duplicate' : 'conflicting_duplicate')
        }
        expect(anomalies.map((a) => a.index)).toEqual([...anomalies.map((a) => a.index)].sort((x, y) => (x as number) - (y as number)))
      }),
      FILE,
      300,
    )
  }, PROPERTY_TIMEOUT)

  it('basis matches the rules written out naively on the whole batch', () => {
    assertFreshSeeded(
      fc.property(withConflictingCopies, (events) => {
        const { ordered } = orderEvents(events)
        expect(ordered.map((e) => e.basis)).toEqual(naiveBasis(ordered))
      }),
      FILE,
      300,
    )
  }, PROPERTY_TIMEOUT)

  it('agrees with the ordered stream, events and basis, when the stream gets the whole batch at once in seq order', () => {
    assertFreshSeeded(
      fc.property(disorderedEvents, (events) => {
        const bySourceSeq = [...events].sort((a, b) =>
          a.source !== b.source ? (a.source < b.source ? -1 : 1) : (a.seq ?? Number.POSITIVE_INFINITY) - (b.seq ?? Number.POSITIVE_INFINITY) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
        )
        const stream = createOrderedStream({ watermark: manual(), batchSize: 7, now: () => 0 })
        stream.push(bySourceSeq)
        stream.advanceWatermark(Number.POSITIVE_INFINITY)
        const fromStream = stream.flushReady().flatMap((b) => b.events)
        expect(fromStream).toEqual(orderEvents(events).ordered)
      }),
      FILE,
      300,
    )
  }, PROPERTY_TIMEOUT)
})
