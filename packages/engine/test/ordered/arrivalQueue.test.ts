/**
 * The ordered stream keeps one arrival record per `push` call (for `stats().oldestPendingAge`).
 * Those records must be bounded by the events still held, as every buffer is (docs/bounds.md),
 * whether or not anyone reads `stats()`, and however long one old event stays held.
 */
import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type Arrival, ArrivalQueue } from '../../src/ordered/arrivalQueue.ts'
import { assertFreshSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import { ev, manualStream } from './streamHelpers.ts'

const FILE = 'packages/engine/test/ordered/arrivalQueue.test.ts'

/**
 * Records a queue may hold: twice the most records that had waiting events at once (a drop keeps
 * those, and lets the queue double before the next), plus the slack a drop leaves room for.
 */
const bound = (peakWaiting: number) => 2 * peakWaiting + 1025

/** The arrival queue a stream made, caught on its first record (streams make theirs privately). */
function queueOf(open: { readonly mock: { readonly contexts: readonly unknown[] } }): ArrivalQueue {
  return open.mock.contexts[0] as ArrivalQueue
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe('ArrivalQueue: bounded by the events still held', () => {
  it('a stream pushed and flushed 20,000 times, its stats never read, keeps a bounded number of arrival records', () => {
    const open = vi.spyOn(ArrivalQueue.prototype, 'open')
    const { stream, clock } = manualStream()
    for (let i = 1; i <= 20_000; i++) {
      stream.push([ev('d1', i, i)])
      stream.advanceWatermark(i + 1)
      stream.flushReady()
      clock.advance(1)
    }
    expect(stream.pending()).toBe(0)
    expect(queueOf(open).size).toBeLessThanOrEqual(bound(1))
  })

  it('one event held for good (stamped far ahead) does not pin every later arrival record, stats read or not', () => {
    const open = vi.spyOn(ArrivalQueue.prototype, 'open')
    const { stream, clock } = manualStream()
    // Ahead of the watermark for good, yet within the default maxFutureSkew (a day) of the clock.
    stream.push([ev('ahead', 1, 1e7)])
    for (let i = 1; i <= 20_000; i++) {
      clock.advance(1)
      stream.push([ev('d1', i, i)])
      stream.advanceWatermark(i + 1)
      stream.flushReady()
      if (i % 2 === 0) expect(stream.stats().oldestPendingAge).toBe(i)
    }
    expect(stream.pending()).toBe(1)
    expect(queueOf(open).size).toBeLessThanOrEqual(bound(2))
  })

  it('names the oldest record with a waiting event, as a list of every record would, within the bound', () => {
    const step = fc.oneof(
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('open' as const), at: fc.integer({ min: -5, max: 50 }), events: fc.integer({ min: 1, max: 3 }) }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('leave' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'oldest' as const }) },
    )
    assertFreshSeeded(
      fc.property(fc.array(step, { maxLength: 3_000 }), (steps) => {
        const queue = new ArrivalQueue()
        const all: Arrival[] = []
        let peak = 0
        for (const s of steps) {
          if (s.kind === 'open') {
            const arrival = queue.open(s.at)
            arrival.remaining += s.events
            all.push(arrival)
          } else if (s.kind === 'leave') {
            // An event leaves (flushed): any record's, as events leave in event-time order, not arrival order.
            const waiting = all.filter((a) => a.remaining > 0)
            const arrival = waiting[s.pick % Math.max(1, waiting.length)]
            if (arrival !== undefined) arrival.remaining--
          } else {
            expect(queue.oldest()).toBe(all.find((a) => a.remaining > 0)?.at ?? null)
          }
          peak = Math.max(peak, all.filter((a) => a.remaining > 0).length)
          expect(queue.size).toBeLessThanOrEqual(bound(peak))
        }
        expect(queue.oldest()).toBe(all.find((a) => a.remaining > 0)?.at ?? null)
      }),
      FILE,
      60,
    )
  }, PROPERTY_TIMEOUT)
})
