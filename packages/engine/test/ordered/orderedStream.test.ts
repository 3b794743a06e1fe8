import { describe, expect, it } from 'vitest'
import { createOrderedStream } from '../../src/ordered/orderedStream.ts'
import { boundedOutOfOrderness } from '../../src/time/watermarkStrategy.ts'
import { ev, fakeClock, flat, ids, manualStream } from './streamHelpers.ts'

describe('createOrderedStream: release by watermark', () => {
  it('releases exactly the events with ts < W, in (ts, source, seq, id) order, and keeps the rest', () => {
    const { stream } = manualStream()
    stream.push([ev('b', 1, 20), ev('a', 2, 30), ev('a', 1, 10), ev('c', undefined, 20, 'c-x'), ev('b', 2, 40)])
    stream.advanceWatermark(30)
    const batches = stream.flushReady()
    expect(batches.map((b) => b.kind)).toEqual(['ready'])
    expect(ids(batches)).toEqual(['a-1', 'b-1', 'c-x'])
    expect(stream.pending()).toBe(2)
    stream.advanceWatermark(41)
    expect(ids(stream.flushReady())).toEqual(['a-2', 'b-2'])
    expect(stream.pending()).toBe(0)
  })

  it('hands out plain objects: a waiting event, as a literal with its basis; a late lane entry, without window', () => {
    const { stream } = manualStream({ allowedLateness: 0 })
    stream.push([{ id: 'k', source: 'a', seq: 1, ts: 10, value: 2.5, key: 'temp' }, ev('b', undefined, 20, 'b-x')])
    stream.advanceWatermark(30)
    stream.push([ev('a', 2, 5)])
    const events = flat(stream.flushReady())
    expect(events).toStrictEqual([
      { id: 'k', source: 'a', ts: 10, value: 2.5, basis: 'proven', seq: 1, key: 'temp' },
      { id: 'b-x', source: 'b', ts: 20, value: 20, basis: 'derived' },
    ])
    expect(stream.lateEvents()).toStrictEqual([{ event: { id: 'a-2', source: 'a', ts: 5, value: 5, seq: 2 }, reason: 'beyond_lateness' }])
    for (const made of [...events, ...stream.lateEvents(), ...stream.lateEvents().map((late) => late.event)]) {
      expect(Object.getPrototypeOf(made)).toBe(Object.prototype)
    }
    // In the order a literal lists them (JSON shows it).
    expect(JSON.stringify(events[0])).toBe('{"id":"k","source":"a","ts":10,"value":2.5,"basis":"proven","seq":1,"key":"temp"}')
    expect(JSON.stringify(stream.lateEvents())).toBe('[{"event":{"id":"a-2","source":"a","ts":5,"value":5,"seq":2},"reason":"beyond_lateness"}]')
  })

  it('returns the same empty array, allocating nothing, when nothing is ready', () => {
    const { stream } = manualStream()
    stream.push([ev('a', 1, 100)])
    const first = stream.flushReady()
    expect(first).toEqual([])
    expect(stream.flushReady()).toBe(first)
    expect(Object.isFrozen(first)).toBe(true)
  })

  it('cuts a flush into batches of at most batchSize, only the last one short', () => {
    const { stream } = manualStream({ batchSize: 4 })
    stream.push(Array.from({ length: 10 }, (_, i) => ev('a', i + 1, i)))
    stream.advanceWatermark(100)
    const batches = stream.flushReady()
    expect(batches.map((b) => b.events.length)).toEqual([4, 4, 2])
    expect(ids(batches)).toEqual(Array.from({ length: 10 }, (_, i) => `a-${i + 1}`))
    expect(stream.stats().batchFragmentation).toBeCloseTo(10 / 3 / 4)
  })

  it('bounded out-of-orderness: W is the slowest source minus the bound, and a lagging source holds it', () => {
    const stream = createOrderedStream({ watermark: boundedOutOfOrderness(5), now: () => 0 })
    stream.push([ev('fast', 1, 100), ev('slow', 1, 20)])
    expect(stream.watermark()).toBe(15)
    stream.push([ev('fast', 2, 200), ev('slow', 2, 17)])
    expect(stream.watermark()).toBe(15)
    expect(stream.flushReady()).toEqual([])
    stream.push([ev('slow', 3, 150)])
    expect(stream.watermark()).toBe(145)
    expect(ids(stream.flushReady())).toEqual(['slow-2', 'slow-1', 'fast-1'])
    expect(stream.pending()).toBe(2)
  })

  it('the watermark never goes backwards and rejects NaN', () => {
    const { stream } = manualStream()
    stream.advanceWatermark(50)
    stream.advanceWatermark(10)
    expect(stream.watermark()).toBe(50)
    expect(() => stream.advanceWatermark(Number.NaN)).toThrow(RangeError)
  })

  it('an idle source stops holding the watermark once idleTimeout passes (checked at flush)', () => {
    const clock = fakeClock()
    const stream = createOrderedStream({ watermark: boundedOutOfOrderness(0), idleTimeout: 1_000, now: clock.now })
    stream.push([ev('quiet', 1, 10), ev('busy', 1, 10)])
    clock.advance(600)
    stream.push([ev('busy', 2, 500)])
    expect(stream.flushReady()).toEqual([])
    clock.advance(600)
    expect(ids(stream.flushReady())).toEqual(['busy-1', 'quiet-1'])
    expect(stream.watermark()).toBe(500)
    // It speaks again: active again, and its old events are late.
    const receipt = stream.push([ev('quiet', 2, 20)])
    expect(receipt.beyondLateness).toBe(1)
  })
})

describe('createOrderedStream: late events', () => {
  it("emit_correction: an event for a released range within allowedLateness comes back as a 'correction' batch", () => {
    const { stream } = manualStream({ allowedLateness: 50, batchSize: 2 })
    stream.push([ev('a', 1, 100), ev('a', 2, 200)])
    stream.advanceWatermark(150)
    expect(ids(stream.flushReady())).toEqual(['a-1'])
    const receipt = stream.push([ev('b', 3, 120), ev('b', 1, 101), ev('b', 2, 140), ev('b', 4, 99)])
    expect(receipt).toMatchObject({ accepted: 3, late: 3, beyondLateness: 1, duplicates: 0, rejected: 0 })
    const batches = stream.flushReady()
    expect(batches.map((b) => [b.kind, b.events.length])).toEqual([
      ['correction', 2],
      ['correction', 1],
    ])
    expect(ids(batches, 'correction')).toEqual(['b-1', 'b-3', 'b-2'])
    expect(stream.lateEvents()).toEqual([{ event: ev('b', 4, 99), reason: 'beyond_lateness' }])
    expect(stream.stats()).toMatchObject({ correctionsEmitted: 3, correctionBatches: 2, lateAdmitted: 3, beyondLateness: 1 })
  })

  it('ready batches come before the corrections of the same flush', () => {
    const { stream } = manualStream({ allowedLateness: 100 })
    stream.push([ev('a', 1, 10)])
    stream.advanceWatermark(50)
    stream.push([ev('a', 2, 60), ev('b', 1, 20)])
    stream.advanceWatermark(70)
    expect(stream.flushReady().map((b) => [b.kind, b.events.map((e) => e.id)])).toEqual([
      ['ready', ['a-1', 'a-2']],
      ['correction', ['b-1']],
    ])
  })

  it("onLate 'drop': every late event goes to the late lane, even within allowedLateness", () => {
    const { stream } = manualStream({ allowedLateness: 1_000, onLate: 'drop' })
    stream.advanceWatermark(100)
    const receipt = stream.push([ev('a', 1, 99), ev('a', 2, 100)])
    expect(receipt).toMatchObject({ accepted: 1, late: 0, beyondLateness: 1 })
    expect(stream.lateEvents().map((l) => [l.event.id, l.reason])).toEqual([['a-1', 'beyond_lateness']])
  })

  it('a late event still advances its source clock, so a reconnecting source holds W while it catches up', () => {
    const stream = createOrderedStream({ watermark: boundedOutOfOrderness(0), now: () => 0 })
    stream.push([ev('a', 1, 100)])
    stream.push([ev('b', 1, 50), ev('b', 2, 60)])
    expect(stream.lateEvents()).toHaveLength(2)
    expect(stream.watermark()).toBe(100)
    stream.push([ev('a', 2, 300), ev('b', 3, 120)])
    expect(stream.watermark()).toBe(120)
    expect(ids(stream.flushReady())).toEqual(['a-1'])
    expect(stream.pending()).toBe(2)
  })

  it('the late lane is bounded: older entries are trimmed and counted', () => {
    const { stream } = manualStream({ maxLateEvents: 2, onLate: 'drop' })
    stream.advanceWatermark(100)
    stream.push([ev('a', 1, 1), ev('a', 2, 2), ev('a', 3, 3)])
    expect(stream.lateEvents().map((l) => l.event.id)).toEqual(['a-2', 'a-3'])
    expect(stream.stats()).toMatchObject({ lateLane: 2, lateLaneTrimmed: 1, beyondLateness: 3 })
  })
})

describe('createOrderedStream: finality', () => {
  it('reports W - allowedLateness as the time below which nothing can change', () => {
    const { stream } = manualStream({ allowedLateness: 30 })
    expect(stream.finality()).toBe(Number.NEGATIVE_INFINITY)
    stream.advanceWatermark(100)
    expect(stream.finality()).toBe(70)
    expect(stream.push([ev('a', 1, 70)]).late).toBe(1)
    expect(stream.push([ev('a', 2, 69)]).beyondLateness).toBe(1)
  })

  it('releases dedup memory below finality; a copy arriving after that lands on the late lane, never emitted twice', () => {
    const { stream } = manualStream({ allowedLateness: 10, maxDedupEntries: 3 })
    stream.push([ev('s', undefined, 10, 'x1'), ev('s', undefined, 20, 'x2'), ev('s', undefined, 90, 'x3')])
    expect(stream.stats().dedupEntries).toBe(3)
    stream.advanceWatermark(50)
    expect(ids(stream.flushReady())).toEqual(['x1', 'x2'])
    // The bound is reached: entries below finality (40) are released to make room.
    expect(stream.push([ev('s', undefined, 95, 'x4')]).accepted).toBe(1)
    expect(stream.stats()).toMatchObject({ dedupEntries: 2, dedupReleased: 2 })
    const copy = stream.push([ev('s', undefined, 10, 'x1')])
    expect(copy.beyondLateness + copy.duplicates).toBe(1)
    expect(copy.accepted).toBe(0)
    // Entries at or above finality are kept, so their copies are still duplicates.
    expect(stream.push([ev('s', undefined, 90, 'x3')]).duplicates).toBe(1)
    stream.advanceWatermark(Number.POSITIVE_INFINITY)
    expect(ids(stream.flushReady())).toEqual(['x3', 'x4'])
  })

  it('refuses with overflow when dedup memory is full of entries above finality', () => {
    const { stream } = manualStream({ maxDedupEntries: 1 })
    stream.push([ev('s', undefined, 10, 'x1')])
    const receipt = stream.push([ev('s', undefined, 20, 'x2'), ev('t', 1, 20)])
    expect(receipt.anomalies.map((a) => [a.reason, a.id])).toEqual([['overflow', 'x2']])
    // An in-order seq needs no dedup entry, so it is still accepted.
    expect(receipt.accepted).toBe(1)
  })
})

describe('createOrderedStream: basis', () => {
  it('proven for a gap-free monotone seq prefix, unknown above a gap, proven again once the gap is filled', () => {
    const { stream } = manualStream()
    stream.push([ev('a', 1, 10), ev('a', 3, 30), ev('a', 5, 50)])
    stream.advanceWatermark(20)
    expect(flat(stream.flushReady()).map((e) => [e.id, e.basis])).toEqual([['a-1', 'proven']])
    stream.push([ev('a', 2, 25)])
    stream.advanceWatermark(40)
    expect(flat(stream.flushReady()).map((e) => [e.id, e.basis])).toEqual([
      ['a-2', 'proven'],
      ['a-3', 'proven'],
    ])
    stream.advanceWatermark(100)
    expect(flat(stream.flushReady()).map((e) => [e.id, e.basis])).toEqual([['a-5', 'unknown']])
  })

  it('a gap filled by a run that goes backwards: proven up to the decrease, fallback from it on', () => {
    const { stream } = manualStream()
    stream.push([ev('a', 1, 10), ev('a', 3, 30), ev('a', 4, 50), ev('a', 5, 60)])
    stream.advanceWatermark(40)
    expect(flat(stream.flushReady()).map((e) => [e.id, e.basis])).toEqual([
      ['a-1', 'proven'],
      ['a-3', 'unknown'],
    ])
    stream.push([ev('a', 2, 45)])
    stream.advanceWatermark(100)
    expect(flat(stream.flushReady()).map((e) => [e.id, e.basis])).toEqual([
      ['a-2', 'proven'],
      ['a-4', 'fallback'],
      ['a-5', 'fallback'],
    ])
  })

  it('fallback once the source clock went backwards along seq; earlier events stay proven', () => {
    const { stream } = manualStream()
    stream.push([ev('a', 1, 10), ev('a', 2, 30), ev('a', 3, 20), ev('a', 4, 40)])
    stream.advanceWatermark(100)
    expect(flat(stream.flushReady()).map((e) => [e.id, e.basis])).toEqual([
      ['a-1', 'proven'],
      ['a-3', 'fallback'],
      ['a-2', 'proven'],
      ['a-4', 'fallback'],
    ])
  })

  it('derived without seq, fallback when a tie-break placed it', () => {
    const { stream } = manualStream()
    stream.push([ev('a', undefined, 10, 'a1'), ev('b', undefined, 20, 'b1'), ev('c', undefined, 20, 'c1'), ev('d', 1, 20)])
    stream.advanceWatermark(100)
    expect(flat(stream.flushReady()).map((e) => [e.id, e.basis])).toEqual([
      ['a1', 'derived'],
      ['b1', 'fallback'],
      ['c1', 'fallback'],
      ['d-1', 'proven'],
    ])
  })

  it('emits detached copies: changing the pushed object later moves nothing', () => {
    const { stream } = manualStream()
    const e = { id: 'a', source: 's', ts: 5, value: 1 }
    stream.push([e])
    e.ts = 500
    stream.advanceWatermark(10)
    expect(flat(stream.flushReady())).toEqual([{ id: 'a', source: 's', ts: 5, value: 1, basis: 'derived' }])
  })
})
