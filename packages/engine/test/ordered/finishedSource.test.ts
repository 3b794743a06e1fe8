import { describe, expect, it } from 'vitest'
import { boundedOutOfOrderness } from '../../src/index.ts'
import { createOrderedStream } from '../../src/ordered/orderedStream.ts'
import type { StreamEvent } from '../../src/index.ts'

function reading(source: string, seq: number, ts: number): StreamEvent {
  return { id: `${source}-${seq}`, source, seq, ts, value: 1 }
}

describe('OrderedStream.finishSource', () => {
  it('stops the source holding the watermark: what it held back is released at the next flush', () => {
    const stream = createOrderedStream({ watermark: boundedOutOfOrderness(0), now: () => 0 })
    stream.push([reading('d1', 1, 1_000), reading('d1', 2, 5_000), reading('d2', 1, 2_000)])
    // d2 holds W at 2 s: only d1's first reading is ready.
    expect(stream.flushReady().flatMap((b) => b.events.map((e) => e.id))).toEqual(['d1-1'])
    stream.finishSource('d2')
    expect(stream.watermark()).toBe(5_000)
    expect(stream.flushReady().flatMap((b) => b.events.map((e) => e.id))).toEqual(['d2-1'])
  })

  it('refuses the later events of a finished source, while a copy of one it sent stays a duplicate', () => {
    const stream = createOrderedStream({ watermark: boundedOutOfOrderness(0), now: () => 0 })
    stream.push([reading('d1', 1, 1_000)])
    stream.finishSource('d1')
    stream.finishSource('d1')
    const receipt = stream.push([reading('d1', 1, 1_000), reading('d1', 2, 2_000)])
    expect(receipt).toMatchObject({ accepted: 0, duplicates: 1, rejected: 1 })
    expect(receipt.anomalies.map((a) => [a.reason, a.index, a.detail])).toEqual([['finished_source', 1, "source 'd1' was finished: it takes no more events"]])
    expect(stream.stats().anomalies.finished_source).toBe(1)
  })

  it('throws for a name that is not one and for a new source past maxSources', () => {
    const stream = createOrderedStream({ watermark: boundedOutOfOrderness(0), now: () => 0, maxSources: 1 })
    stream.push([reading('d1', 1, 1_000)])
    expect(() => stream.finishSource('')).toThrow(TypeError)
    expect(() => stream.finishSource('d2')).toThrow('engine is full: maxSources (1) reached')
    expect(stream.stats().sources).toBe(1)
  })
})
