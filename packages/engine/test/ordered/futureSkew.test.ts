/**
 * The ordered stream's `maxFutureSkew` (docs/semantics.md, clock skew): the engine's rule, on the
 * stream. An event stamped later than `now() + maxFutureSkew` is refused with `future_ts` and
 * leaves no trace. A fake clock (`now`).
 */
import { describe, expect, it } from 'vitest'
import { boundedOutOfOrderness, createEngine, tumbling } from '../../src/index.ts'
import { createOrderedStream } from '../../src/ordered/orderedStream.ts'
import type { OrderedStreamOptions } from '../../src/ordered/orderedStreamApi.ts'
import { ev, ids } from './streamHelpers.ts'

const DAY = 86_400_000
const YEAR = 365 * DAY
const NOW = Date.parse('2026-06-01T12:00:00Z')

function boundedStream(options: OrderedStreamOptions = {}) {
  const clock = { now: NOW }
  const stream = createOrderedStream({ watermark: boundedOutOfOrderness(0), allowedLateness: 60_000, now: () => clock.now, ...options })
  return { stream, clock }
}

describe('ordered stream: maxFutureSkew', () => {
  it('a device whose clock is a year ahead moves nothing: W stays in the present, and present readings are not late', () => {
    const { stream, clock } = boundedStream()
    stream.push([ev('d1', 1, NOW - 2_000), ev('d1', 2, NOW - 1_000)])
    const ahead = ev('d1', 3, NOW + YEAR)
    const receipt = stream.push([ahead])
    expect(receipt).toMatchObject({ accepted: 0, late: 0, duplicates: 0, beyondLateness: 0, rejected: 1 })
    expect(receipt.anomalies).toEqual([
      {
        reason: 'future_ts',
        index: 0,
        id: 'd1-3',
        source: 'd1',
        detail: `ts ${NOW + YEAR} is ${YEAR} ms ahead of now (${NOW}); maxFutureSkew is ${DAY} ms`,
        event: ahead,
      },
    ])
    // Without the guard, W would have jumped a year ahead and the next reading gone to the late lane.
    expect(stream.watermark()).toBe(NOW - 1_000)
    clock.now += 1_000
    expect(stream.push([ev('d1', 3, NOW)])).toMatchObject({ accepted: 1, late: 0, beyondLateness: 0, rejected: 0 })
    expect(stream.lateEvents()).toEqual([])
    expect(ids(stream.flushReady())).toEqual(['d1-1', 'd1-2'])
    const stats = stream.stats()
    expect(stats.anomalies.future_ts).toBe(1)
    expect(stats.rejected).toBe(1)
    expect(stats.futureSources).toEqual([{ source: 'd1', count: 1, lastTs: NOW + YEAR }])
    expect(stats.watermark).toBe(NOW)
  })

  it('a refused event leaves no source clock, dedup memory or seq behind, and is taken once real time caught up', () => {
    const { stream, clock } = boundedStream({ maxFutureSkew: 100 })
    stream.push([ev('known', 1, NOW - 500)])
    const before = stream.stats()
    // Without seq, an id that would be remembered; from a source never heard of, a clock that would hold W.
    const ahead = [ev('known', undefined, NOW + 101, 'f'), ev('new', 1, NOW + 101)]
    expect(stream.push(ahead).anomalies.map((a) => a.reason)).toEqual(['future_ts', 'future_ts'])
    expect(stream.stats()).toMatchObject({ sources: before.sources, dedupEntries: before.dedupEntries, watermark: NOW - 500, pending: 1 })
    clock.now += 1
    expect(stream.push(ahead)).toMatchObject({ accepted: 2, duplicates: 0, rejected: 0 })
    expect(stream.stats().futureSources).toEqual([
      { source: 'known', count: 1, lastTs: NOW + 101 },
      { source: 'new', count: 1, lastTs: NOW + 101 },
    ])
  })

  it('is judged before anything else: a copy of an event already taken, or one of a finished source, is future_ts', () => {
    const { stream } = boundedStream({ maxFutureSkew: 0 })
    stream.push([ev('d1', 1, NOW)])
    stream.finishSource('d1')
    const receipt = stream.push([ev('d1', 1, NOW + 1), ev('d1', 2, NOW + 1), ev('d1', 3, NOW)])
    expect(receipt.anomalies.map((a) => [a.reason, a.index])).toEqual([
      ['future_ts', 0],
      ['future_ts', 1],
      ['finished_source', 2],
    ])
    expect(receipt).toMatchObject({ duplicates: 0, rejected: 3 })
  })

  it('takes an event exactly maxFutureSkew ahead, refuses its fraction beyond, and defaults to a day', () => {
    const skewed = boundedStream({ maxFutureSkew: 100 }).stream
    expect(skewed.push([ev('a', 1, NOW + 100), ev('a', 2, NOW + 100.5)])).toMatchObject({ accepted: 1, rejected: 1 })
    const byDefault = boundedStream().stream
    expect(byDefault.push([ev('a', 1, NOW + DAY), ev('a', 2, NOW + DAY + 1)])).toMatchObject({ accepted: 1, rejected: 1 })
  })

  it('is off with Infinity, and a now() that reads no finite time (NaN, an infinity) refuses nothing', () => {
    const off = boundedStream({ maxFutureSkew: Number.POSITIVE_INFINITY }).stream
    expect(off.push([ev('a', 1, NOW + YEAR)])).toMatchObject({ accepted: 1, rejected: 0 })
    for (const reading of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      const clock = { now: reading }
      const noTime = createOrderedStream({ now: () => clock.now, maxFutureSkew: 0 })
      expect(noTime.push([ev('a', 1, 1e12)]), String(reading)).toMatchObject({ accepted: 1, rejected: 0 })
      // Judged again at the next finite reading.
      clock.now = NOW
      expect(noTime.push([ev('a', 2, NOW + 1)]).anomalies.map((a) => a.reason), String(reading)).toEqual(['future_ts'])
    }
  })

  it('is checked as the engine checks it', () => {
    for (const bad of [-1, Number.NaN, '5', null]) {
      const fromEngine = (() => {
        try {
          createEngine({ windows: tumbling(10), maxFutureSkew: bad as number })
        } catch (error) {
          return error
        }
      })()
      expect(fromEngine).toBeInstanceOf(RangeError)
      expect(() => createOrderedStream({ maxFutureSkew: bad as number })).toThrow(fromEngine as RangeError)
    }
    expect(() => createOrderedStream({ maxFutureSkew: -1 })).toThrow(/maxFutureSkew must be a number >= 0 \(Infinity: no event is refused for being ahead of the clock\) of ms, got -1/)
  })
})
