/**
 * Without `idleTimeout`, when `flushReady` is called never changes which events the ordered
 * stream emits (docs/semantics.md): dedup memory is released on pushes (below finality), never
 * by a flush, so a later copy of an event is a duplicate whether or not the stream was flushed
 * in between.
 */
import { describe, expect, it } from 'vitest'
import { ev, ids, manualStream } from './streamHelpers.ts'

describe('ordered stream: dedup memory and the timing of flushReady', () => {
  function run(flushInBetween: boolean): string[] {
    const { stream } = manualStream({ allowedLateness: 0 })
    // 4,097 events without seq: more dedup entries than the amortized release waits for (4,096).
    stream.push(Array.from({ length: 4_097 }, (_, i) => ev('a', undefined, i, `a${i}`)))
    stream.advanceWatermark(10_000)
    const out: string[] = []
    if (flushInBetween) out.push(...ids(stream.flushReady()))
    // A second delivery of a0 (same source and id), stamped later.
    stream.push([ev('a', undefined, 20_000, 'a0')])
    stream.advanceWatermark(30_000)
    out.push(...ids(stream.flushReady()))
    return out
  }

  it('emits the same events whether or not a flush happened in between', () => {
    const without = run(false)
    const withFlush = run(true)
    expect(withFlush).toEqual(without)
    expect(without.filter((id) => id === 'a0')).toHaveLength(1)
  })

  it('still releases dedup memory below finality, on the next push', () => {
    const { stream } = manualStream({ allowedLateness: 0 })
    stream.push(Array.from({ length: 4_097 }, (_, i) => ev('a', undefined, i, `a${i}`)))
    stream.advanceWatermark(10_000)
    // Memory more than doubled (plus 4,096) since the last release: this push releases the a's.
    stream.push(Array.from({ length: 12_300 }, (_, i) => ev('b', undefined, 10_000 + i, `b${i}`)))
    const { dedupEntries, dedupReleased } = stream.stats()
    expect(dedupReleased).toBe(4_097)
    expect(dedupEntries).toBe(12_300)
  })
})
