import { describe, expect, it } from 'vitest'
import type { StreamEvent } from '../../src/input/event.ts'
import { createOrderedStream } from '../../src/ordered/orderedStream.ts'
import { manual } from '../../src/time/watermarkStrategy.ts'

/**
 * Flush cost must follow the ready subset, not the backlog. Measured in work the pending
 * buffer counts (comparisons and element moves), never in time.
 */
function flushWork(backlog: number, ready: number): { work: number; emitted: number; pending: number } {
  const stream = createOrderedStream({ watermark: manual(), batchSize: 1_000, now: () => 0 })
  const events: StreamEvent[] = []
  // The backlog lies far beyond the watermark, in shuffled order, from several sources.
  for (let i = 0; i < backlog; i++) {
    const ts = 1_000_000 + ((i * 7_919) % backlog)
    events.push({ id: `w${i}`, source: `s${i % 7}`, ts, value: i })
  }
  stream.push(events)
  stream.push(Array.from({ length: ready }, (_, i) => ({ id: `r${i}`, source: `s${i % 7}`, ts: (i * 31) % ready, value: i })))
  stream.advanceWatermark(ready)
  const before = stream.stats().work
  const emitted = stream.flushReady().reduce((n, b) => n + b.events.length, 0)
  const after = stream.stats().work
  return {
    work: after.flushComparisons - before.flushComparisons + after.flushMoves - before.flushMoves,
    emitted,
    pending: stream.pending(),
  }
}

describe('flush work is independent of the backlog', () => {
  it('flushing 100 ready events costs the same order of work with 1k or 100k events waiting', () => {
    const small = flushWork(1_000, 100)
    const large = flushWork(100_000, 100)
    expect(small.emitted).toBe(100)
    expect(large.emitted).toBe(100)
    expect(large.pending).toBe(100_000)
    // A heap pop costs O(log n): ~2 comparisons and ~1 move per level. 100k is 100x the backlog
    // but only ~1.7x the depth; a flush that scanned or re-sorted the backlog would cost >= 100k.
    expect(large.work).toBeLessThan(small.work * 2.5)
    expect(large.work).toBeLessThan(100 * 3 * Math.ceil(Math.log2(100_100)) + 100)
    expect(large.work).toBeLessThan(100_000 / 10)
    // The figures the engine's README quotes.
    expect([small.work, large.work]).toEqual([2_099, 3_334])
  }, 30_000)

  it('a flush with nothing ready does no work at all, whatever the backlog', () => {
    const stream = createOrderedStream({ watermark: manual(), now: () => 0 })
    stream.push(Array.from({ length: 50_000 }, (_, i) => ({ id: `w${i}`, source: 's', ts: 10_000 + i, value: i })))
    stream.advanceWatermark(10_000)
    const before = stream.stats().work
    for (let i = 0; i < 100; i++) expect(stream.flushReady()).toHaveLength(0)
    const after = stream.stats().work
    expect(after.flushComparisons + after.flushMoves).toBe(before.flushComparisons + before.flushMoves)
  }, 30_000)

  it('repeated flushes under a lagging watermark: total flush work grows with what was emitted, not with flushes x backlog', () => {
    const stream = createOrderedStream({ watermark: manual(), batchSize: 64, now: () => 0 })
    const backlog = 50_000
    stream.push(Array.from({ length: backlog }, (_, i) => ({ id: `w${i}`, source: `s${i % 5}`, ts: (i * 7_919) % backlog, value: i })))
    let emitted = 0
    for (let w = 1; w <= 500; w++) {
      stream.advanceWatermark(w * 10)
      for (const batch of stream.flushReady()) emitted += batch.events.length
    }
    expect(emitted).toBe(5_000)
    const { flushComparisons, flushMoves } = stream.stats().work
    expect(flushComparisons + flushMoves).toBeLessThan(emitted * 3 * Math.ceil(Math.log2(backlog)))
  }, 30_000)
})
