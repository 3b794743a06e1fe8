import { describe, expect, it } from 'vitest'
import type { StreamEvent } from '../../src/input/event.ts'
import { createOrderedStream } from '../../src/ordered/orderedStream.ts'
import { boundedOutOfOrderness } from '../../src/time/watermarkStrategy.ts'
import { ev, ids, manualStream } from './streamHelpers.ts'

describe('createOrderedStream: receipts, duplicates and anomalies', () => {
  it('accepted + duplicates + beyondLateness + rejected === events.length, one anomaly per rejected event', () => {
    const { stream } = manualStream()
    stream.advanceWatermark(10)
    const receipt = stream.push([
      ev('a', 1, 20),
      ev('a', 1, 20),
      { id: '', source: 'a', ts: 1, value: 1 },
      ev('a', 2, 5),
      { id: 'n', source: 'a', ts: 30, value: Number.POSITIVE_INFINITY },
      null as unknown as StreamEvent,
    ])
    expect(receipt).toMatchObject({ accepted: 1, duplicates: 1, beyondLateness: 1, rejected: 3 })
    expect(receipt.anomalies.map((a) => [a.reason, a.index])).toEqual([
      ['missing_id', 2],
      ['invalid_value', 4],
      ['invalid_event', 5],
    ])
    expect(stream.stats().anomalies).toMatchObject({ duplicate: 1, beyond_lateness: 1, missing_id: 1, invalid_value: 1, invalid_event: 1 })
  })

  it('light anomaly path: invalid and duplicate input leaves every buffer and the source table untouched', () => {
    const { stream } = manualStream()
    stream.push([ev('a', 1, 10), ev('a', 3, 30), ev('b', undefined, 10, 'x')])
    const before = stream.stats()
    const junk: unknown[] = []
    for (let i = 0; i < 10_000; i++) {
      junk.push(ev('a', 1, 10), ev('a', 3, 30), ev('b', undefined, 10, 'x'), { id: `z${i}`, source: `s${i}`, ts: Number.NaN, value: 1 })
    }
    const receipt = stream.push(junk as StreamEvent[])
    expect(receipt.duplicates).toBe(30_000)
    expect(receipt.anomalies).toHaveLength(10_000)
    const after = stream.stats()
    for (const field of ['pending', 'pendingCorrections', 'lateLane', 'dedupEntries', 'sources', 'peakPending'] as const) {
      expect(after[field]).toBe(before[field])
    }
  }, 30_000)

  it('a receipt without anomalies shares one frozen empty list', () => {
    const { stream } = manualStream()
    const a = stream.push([ev('a', 1, 1)])
    const b = stream.push([ev('a', 1, 1)])
    expect(a.anomalies).toBe(b.anomalies)
    expect(Object.isFrozen(a.anomalies)).toBe(true)
  })

  it('dedup by (source, seq), or (source, id) without seq, across pushes', () => {
    const { stream } = manualStream()
    stream.push([ev('a', 1, 10, 'first'), ev('b', undefined, 10, 'x')])
    const receipt = stream.push([ev('a', 1, 99, 'other-id'), ev('b', undefined, 50, 'x'), ev('b', undefined, 10, 'y')])
    expect(receipt).toMatchObject({ accepted: 1, duplicates: 2 })
    stream.advanceWatermark(Number.POSITIVE_INFINITY)
    expect(ids(stream.flushReady())).toEqual(['first', 'x', 'y'])
  })

  it('keys such as __proto__ and constructor are ordinary sources and ids', () => {
    const { stream } = manualStream()
    stream.push([ev('__proto__', 1, 2, '__proto__'), ev('constructor', 1, 1, 'constructor'), ev('__proto__', 1, 2)])
    stream.advanceWatermark(10)
    expect(ids(stream.flushReady())).toEqual(['constructor', '__proto__'])
    expect(stream.stats().sources).toBe(2)
  })

  it('rejects a non-array push with a TypeError', () => {
    const { stream } = manualStream()
    expect(() => stream.push('nope' as unknown as StreamEvent[])).toThrow(TypeError)
  })
})

describe('createOrderedStream: bounds and backpressure', () => {
  it("maxPending: refuses with 'overflow' instead of growing; the refused event can be resent once the buffer drains", () => {
    const { stream } = manualStream({ maxPending: 2 })
    const receipt = stream.push([ev('a', 1, 10), ev('a', 2, 20), ev('a', 3, 30)])
    expect(receipt).toMatchObject({ accepted: 2, rejected: 1 })
    expect(receipt.anomalies[0]).toMatchObject({ reason: 'overflow', index: 2, id: 'a-3', source: 'a' })
    expect(stream.stats().anomalies.overflow).toBe(1)
    stream.advanceWatermark(25)
    expect(ids(stream.flushReady())).toEqual(['a-1', 'a-2'])
    expect(stream.push([ev('a', 3, 30)])).toMatchObject({ accepted: 1, duplicates: 0 })
  })

  it('a new source whose first event overflows does not hold a bounded watermark at -Infinity', () => {
    const stream = createOrderedStream({ watermark: boundedOutOfOrderness(0), maxPending: 2, now: () => 0 })
    stream.push([ev('a', 1, 10)])
    stream.push([ev('a', 2, 20)])
    expect(stream.push([ev('b', 1, 25)]).rejected).toBe(1)
    expect(stream.stats().sources).toBe(1)
    expect(ids(stream.flushReady())).toEqual(['a-1'])
    stream.push([ev('a', 3, 30)])
    expect(stream.watermark()).toBe(30)
  })

  it('maxSources: events of a source beyond the bound are refused with overflow', () => {
    const { stream } = manualStream({ maxSources: 1 })
    const receipt = stream.push([ev('a', 1, 1), ev('b', 1, 1), ev('a', 2, 2)])
    expect(receipt).toMatchObject({ accepted: 2, rejected: 1 })
    expect(receipt.anomalies[0]).toMatchObject({ reason: 'overflow', source: 'b' })
  })

  it('checks its options and names the bad one', () => {
    expect(() => createOrderedStream({ batchSize: 0 })).toThrow(/batchSize/)
    expect(() => createOrderedStream({ allowedLateness: -1 })).toThrow(/allowedLateness/)
    expect(() => createOrderedStream({ onLate: 'keep' as 'drop' })).toThrow(/onLate/)
    expect(() => createOrderedStream({ maxPending: 1.5 })).toThrow(/maxPending/)
  })
})

describe('createOrderedStream: stats', () => {
  it('oldest pending age follows the injected processing-time clock and the events that are still held', () => {
    const { stream, clock } = manualStream()
    expect(stream.stats().oldestPendingAge).toBe(0)
    stream.push([ev('a', 1, 50)])
    clock.advance(1_000)
    stream.push([ev('a', 2, 10)])
    clock.advance(500)
    expect(stream.stats().oldestPendingAge).toBe(1_500)
    stream.advanceWatermark(60)
    stream.flushReady()
    expect(stream.stats().oldestPendingAge).toBe(0)
    stream.push([ev('a', 3, 100)])
    clock.advance(200)
    stream.push([ev('a', 4, 70)])
    stream.advanceWatermark(80)
    stream.flushReady()
    expect(stream.stats().oldestPendingAge).toBe(200)
  })

  it('counts flushes, batches, pending, peak, watermark lag and per-reason anomalies', () => {
    const { stream } = manualStream({ batchSize: 2, allowedLateness: 100 })
    stream.push([ev('a', 1, 10), ev('a', 2, 20), ev('a', 3, 30), ev('a', 4, 400)])
    stream.advanceWatermark(100)
    stream.flushReady()
    stream.push([ev('b', 1, 50)])
    stream.flushReady()
    stream.flushReady()
    expect(stream.stats()).toMatchObject({
      pushed: 5,
      accepted: 5,
      flushes: 3,
      readyEmitted: 3,
      readyBatches: 2,
      correctionsEmitted: 1,
      correctionBatches: 1,
      batchFragmentation: 4 / 3 / 2,
      pending: 1,
      pendingCorrections: 0,
      peakPending: 4,
      watermark: 100,
      finality: 0,
      watermarkLag: 300,
    })
  })

  it('compacts the pending buffer after a large backlog drains, and shows it in stats', () => {
    const { stream } = manualStream({ batchSize: 10_000 })
    stream.push(Array.from({ length: 20_000 }, (_, i) => ev('a', i + 1, i)))
    expect(stream.stats().compactions).toBe(0)
    stream.advanceWatermark(19_990)
    stream.flushReady()
    expect(stream.stats().compactions).toBeGreaterThan(0)
    expect(stream.pending()).toBe(10)
    stream.advanceWatermark(Number.POSITIVE_INFINITY)
    expect(ids(stream.flushReady())).toEqual(Array.from({ length: 10 }, (_, i) => `a-${19_991 + i}`))
  }, 30_000)
})
