/**
 * `engine.nextSeq(source)`: where a producer resumes its numbering, also above a gap, after
 * dedup memory was released, and after a checkpoint is restored.
 */
import { describe, expect, it } from 'vitest'
import { createEngine, manual, type StreamEvent, TidemarkEngine, tumbling } from '../src/index.ts'

const at = (source: string, seq: number, ts = seq): StreamEvent => ({ id: `${source}-${seq}`, source, seq, ts, value: 1 })

describe('engine.nextSeq', () => {
  it('is 1 for a source never seen, and 1 + the gap-free prefix for an in-order source', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual() })
    expect(engine.nextSeq('d1')).toBe(1)
    engine.ingest([at('d1', 1), at('d1', 2), at('d1', 3)])
    expect(engine.nextSeq('d1')).toBe(4)
    expect(engine.nextSeq('d2')).toBe(1)
  })

  it('counts a seq above a gap: reusing it would collide with the event already taken', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual() })
    engine.ingest([at('d1', 1), at('d1', 2), at('d1', 5)])
    expect(engine.nextSeq('d1')).toBe(6)
    // The gap filling does not move it back, a duplicate does not move it at all.
    engine.ingest([at('d1', 3), at('d1', 2)])
    expect(engine.nextSeq('d1')).toBe(6)
  })

  it('does not count refused events, events without seq, or other sources', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), limits: { maxSources: 1 } })
    engine.ingest([at('d1', 1), { id: 'free', source: 'd1', ts: 1, value: 1 }, { ...at('d1', 9), value: Number.NaN }, at('d2', 4)])
    expect([engine.nextSeq('d1'), engine.nextSeq('d2')]).toEqual([2, 1])
  })

  it('counts events that went to the late lane', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual() })
    engine.advanceWatermark(1_000)
    expect(engine.ingest([at('d1', 7, 5)]).beyondLateness).toBe(1)
    expect(engine.nextSeq('d1')).toBe(8)
  })

  it('keeps counting a seq whose dedup memory was released behind the lateness horizon', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual() })
    // seq 1 never comes: 2..5001 wait above the gap, in dedup memory.
    engine.ingest(Array.from({ length: 5000 }, (_, i) => at('d1', i + 2, i)))
    expect(engine.stats().dedupEntries).toBe(5000)
    engine.advanceWatermark(1_000_000)
    engine.ingest(Array.from({ length: 5000 }, (_, i) => at('d2', i + 2, 2_000_000)))
    expect(engine.stats().dedupEntries).toBe(5000) // d1's entries released, d2's kept
    expect(engine.nextSeq('d1')).toBe(5002)
  })

  it('comes back exactly from a checkpoint, also for released seqs', () => {
    const options = { windows: tumbling(10), watermark: manual(), replicaId: 'r' }
    const engine = new TidemarkEngine(options)
    engine.ingest([at('d1', 1), at('d1', 2), at('d1', 9), at('d2', 1)])
    engine.ingest(Array.from({ length: 5000 }, (_, i) => at('d3', i + 2, i)))
    engine.advanceWatermark(1_000_000)
    engine.ingest(Array.from({ length: 5000 }, (_, i) => at('d4', i + 2, 2_000_000)))
    const restored = new TidemarkEngine(options)
    restored.restore(structuredClone(engine.checkpoint()))
    for (const source of ['d1', 'd2', 'd3', 'd4', 'd5']) expect(restored.nextSeq(source), source).toBe(engine.nextSeq(source))
    expect(restored.nextSeq('d3')).toBe(5002)
  })

  it('refuses a source that is not a string', () => {
    const engine = createEngine({ windows: tumbling(10) })
    expect(() => engine.nextSeq(7 as unknown as string)).toThrow(TypeError)
  })
})
