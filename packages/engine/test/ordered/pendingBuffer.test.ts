import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ArrivalQueue } from '../../src/ordered/arrivalQueue.ts'
import { compareEventOrder, type PendingEvent } from '../../src/ordered/eventOrder.ts'
import { PendingBuffer } from '../../src/ordered/pendingBuffer.ts'
import { naiveOrder } from './orderedReference.ts'
import { assertFreshSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/ordered/pendingBuffer.test.ts'

const pendingEvent = fc.record({
  ts: fc.integer({ min: -5, max: 5 }),
  source: fc.constantFrom('a', 'b', 'B', '__proto__', 'ä'),
  seq: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
  id: fc.constantFrom('x', 'y', 'z'),
})

function toEvent(raw: { ts: number; source: string; seq: number | undefined; id: string }): PendingEvent {
  const event: PendingEvent = { id: raw.id, source: raw.source, ts: raw.ts, value: 0, basis: 'unknown' }
  if (raw.seq !== undefined) event.seq = raw.seq
  return event
}

describe('PendingBuffer', () => {
  it('pops in the total order (ts, source, seq, id), however events were pushed and popped in between', () => {
    assertFreshSeeded(
      fc.property(fc.array(fc.tuple(pendingEvent, fc.boolean()), { maxLength: 200 }), (ops) => {
        const buffer = new PendingBuffer()
        const arrivals = new ArrivalQueue()
        const model: PendingEvent[] = []
        for (const [raw, popAfter] of ops) {
          const event = toEvent(raw)
          buffer.push(event, arrivals.open(0))
          model.push(event)
          if (popAfter) {
            model.sort(naiveOrder)
            const want = model.shift() as PendingEvent
            expect(naiveOrder(buffer.pop(), want)).toBe(0)
          }
        }
        model.sort(naiveOrder)
        for (const want of model) {
          expect(buffer.peekTs()).toBe(want.ts)
          expect(naiveOrder(buffer.pop(), want)).toBe(0)
        }
        expect(buffer.size).toBe(0)
        expect(buffer.peekTs()).toBe(Number.POSITIVE_INFINITY)
      }),
      FILE,
      300,
    )
  }, PROPERTY_TIMEOUT)

  it('agrees with the reference comparator on the order itself', () => {
    assertFreshSeeded(
      fc.property(pendingEvent, pendingEvent, (a, b) => {
        const x = toEvent(a)
        const y = toEvent(b)
        expect(Math.sign(compareEventOrder(x, y))).toBe(Math.sign(naiveOrder(x, y)))
      }),
      FILE,
      500,
    )
  }, PROPERTY_TIMEOUT)

  it('tracks the arrival of what is still waiting, and shrinks its storage after a drain', () => {
    const buffer = new PendingBuffer()
    const log = new ArrivalQueue()
    const early = log.open(100)
    const late = log.open(200)
    for (let i = 0; i < 5_000; i++) buffer.push({ id: `e${i}`, source: 's', ts: i, value: 0, basis: 'unknown' }, i < 10 ? late : early)
    expect(early.remaining).toBe(4_990)
    expect(log.oldest()).toBe(100)
    while (buffer.size > 10) buffer.pop()
    // The ten left (ts 4990..4999) all came with `early`; `late` events had ts 0..9.
    expect(late.remaining).toBe(0)
    expect(early.remaining).toBe(10)
    expect(log.oldest()).toBe(100)
    expect(buffer.compactions).toBeGreaterThan(0)
    while (buffer.size > 0) buffer.pop()
    expect(log.oldest()).toBeNull()
  })
})
