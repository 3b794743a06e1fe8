/**
 * Dedup memory full of entries inside the lateness horizon: every further event that needs an
 * entry is refused with `overflow`, and releasing costs amortized O(1) per event
 * (docs/semantics.md, duplicates) in the ordered stream and the engine alike. A release that
 * can free nothing (the horizon did not move, nothing below it was remembered since) must not
 * scan the whole memory again for each refused event.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createEngine } from '../../src/core/engine.ts'
import { SourceClock } from '../../src/time/sourceClock.ts'
import { manual } from '../../src/time/watermarkStrategy.ts'
import { tumbling } from '../../src/windows/windowSpec.ts'
import { ev, manualStream } from './streamHelpers.ts'

/** Counts the dedup entries every release pass looks at, from here on. */
function countScanned(): { readonly scanned: number } {
  const counter = { scanned: 0 }
  const forget = SourceClock.prototype.forgetBefore
  vi.spyOn(SourceClock.prototype, 'forgetBefore').mockImplementation(function (this: SourceClock, horizon: number) {
    counter.scanned += this.dedupEntries()
    return forget.call(this, horizon)
  })
  return counter
}

const MAX = 2_000
const MORE = 2_000
const fill = (prefix: string, from: number, n: number) => Array.from({ length: n }, (_, i) => ev('a', undefined, from + i, `${prefix}${i}`))

afterEach(() => vi.restoreAllMocks())

describe('full dedup memory: refusals cost amortized O(1)', () => {
  it('ordered stream: each refused event does not rescan the memory', () => {
    const { stream } = manualStream({ maxDedupEntries: MAX, allowedLateness: 1_000_000 })
    stream.advanceWatermark(0)
    // Events without seq, all above finality (-1,000,000): nothing can be released.
    stream.push(fill('a', 0, MAX))
    const counter = countScanned()
    const receipt = stream.push(fill('b', MAX, MORE))
    expect(receipt.anomalies.filter((a) => a.reason === 'overflow')).toHaveLength(MORE)
    expect(counter.scanned).toBeLessThanOrEqual(10 * (MAX + MORE))
  })

  it('ordered stream: once finality moves, a full memory is released again', () => {
    const { stream } = manualStream({ maxDedupEntries: MAX, allowedLateness: 0 })
    stream.push(fill('a', 0, MAX))
    expect(stream.push(fill('b', MAX, 1)).anomalies.map((a) => a.reason)).toEqual(['overflow'])
    stream.advanceWatermark(MAX)
    const receipt = stream.push(fill('c', MAX, 1))
    expect(receipt.accepted).toBe(1)
    expect(stream.stats().dedupReleased).toBe(MAX)
  })

  it('ordered stream: an event remembered below finality since the last release is released by the next one', () => {
    const { stream } = manualStream({ maxDedupEntries: 3, allowedLateness: 0, onLate: 'drop' })
    stream.advanceWatermark(100)
    // Full: seq 2 above a gap, and two events without seq, none below finality (100).
    stream.push([ev('a', 2, 100), ev('a', undefined, 101, 'x'), ev('a', undefined, 102, 'y')])
    expect(stream.push([ev('a', undefined, 103, 'z')]).anomalies.map((a) => a.reason)).toEqual(['overflow'])
    // Seq 1 fills the gap (it needs no entry): one entry freed, then taken by an event beyond lateness.
    stream.push([ev('a', 1, 100)])
    expect(stream.push([ev('a', undefined, 5, 'old')]).beyondLateness).toBe(1)
    expect(stream.stats().dedupEntries).toBe(3)
    // Finality did not move, but 'old' is below it: the release frees it, and 'z' finds room.
    expect(stream.push([ev('a', undefined, 103, 'z')]).accepted).toBe(1)
    expect(stream.stats().dedupReleased).toBe(1)
  })

  it('engine: each refused event does not rescan the memory', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), allowedLateness: 1_000_000, now: () => 0, limits: { maxDedupEntries: MAX } })
    engine.advanceWatermark(0)
    engine.ingest(fill('a', 0, MAX))
    const counter = countScanned()
    const receipt = engine.ingest(fill('b', MAX, MORE))
    expect(receipt.anomalies.filter((a) => a.reason === 'overflow')).toHaveLength(MORE)
    expect(counter.scanned).toBeLessThanOrEqual(10 * (MAX + MORE))
  })

  it('engine: once the horizon moves, a full memory is released again', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), allowedLateness: 0, now: () => 0, limits: { maxDedupEntries: MAX } })
    engine.ingest(fill('a', 0, MAX))
    expect(engine.ingest(fill('b', MAX, 1)).anomalies.map((a) => a.reason)).toEqual(['overflow'])
    engine.advanceWatermark(MAX + 10)
    expect(engine.ingest(fill('c', MAX + 10, 1)).accepted).toBe(1)
    expect(engine.stats().dedupEntries).toBeLessThanOrEqual(2)
  })
})
