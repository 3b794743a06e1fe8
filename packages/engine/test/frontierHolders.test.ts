import { describe, expect, it } from 'vitest'
import { boundedOutOfOrderness, createEngine, manual, type StreamEvent, tumbling } from '../src/index.ts'
import type { TidemarkEngine } from '../src/core/engine.ts'

/** Readings of `source` with seqs `seqs`, one per second of event time (seq n at n - 1 s). */
function readings(source: string, seqs: readonly number[]): StreamEvent[] {
  return seqs.map((seq) => ({ id: `${source}-${seq}`, source, seq, ts: (seq - 1) * 1_000, value: 1 }))
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

function fleet(options: { idleTimeout?: number } = {}) {
  const clock = { now: 0 }
  const engine = createEngine({ windows: tumbling(10_000), watermark: boundedOutOfOrderness(1_000), now: () => clock.now, replicaId: 'r1', ...options })
  const held = () => ({ proof: engine.stats().proofHeldBy, watermark: engine.stats().watermarkHeldBy })
  return { engine, clock, held }
}

describe('stats(): which source holds each frontier', () => {
  it('names the source behind P and the one W waits for, and moves on as they change', async () => {
    const { engine, held } = fleet()
    expect(held()).toEqual({ proof: null, watermark: null })
    engine.ingest([...readings('d1', range(1, 35)), ...readings('d2', range(1, 5))])
    // d2 stopped at 4 s: it holds both.
    expect(held()).toEqual({ proof: 'd2', watermark: 'd2' })
    expect(engine.stats()).toMatchObject({ proofFrontier: 4_000, watermark: 3_000 })
    // d2 goes on past d1, but skips seq 30: d1 now holds W, d2 still holds P at its gap.
    engine.ingest(readings('d2', [...range(6, 29), ...range(31, 50)]))
    expect(held()).toEqual({ proof: 'd2', watermark: 'd1' })
    expect(engine.stats().proofFrontier).toBe(28_000)
    // The gap fills: d1 holds both again.
    engine.ingest(readings('d2', [30]))
    expect(held()).toEqual({ proof: 'd1', watermark: 'd1' })
    await engine.finishSource('d1')
    expect(held()).toEqual({ proof: 'd2', watermark: 'd2' })
    await engine.finishSource('d2')
    // Every source finished: nothing holds P (Infinity), and W has no source to wait for.
    expect(held()).toEqual({ proof: null, watermark: null })
    expect(engine.stats().proofFrontier).toBe(Number.POSITIVE_INFINITY)
  })

  it('an idle source stops holding W but still holds P; a source without seq holds P at -Infinity', () => {
    const { engine, clock, held } = fleet({ idleTimeout: 5_000 })
    engine.ingest([...readings('d1', range(1, 5)), ...readings('d2', range(1, 3))])
    expect(held()).toEqual({ proof: 'd2', watermark: 'd2' })
    clock.now = 10_000
    engine.ingest(readings('d1', range(6, 20)))
    // d2 turned idle: W follows d1; P stays with d2, whose readings up to 2 s are all it proves.
    expect(held()).toEqual({ proof: 'd2', watermark: 'd1' })
    engine.ingest([{ id: 'd3-x', source: 'd3', ts: 25_000, value: 1 }])
    expect(held()).toEqual({ proof: 'd3', watermark: 'd1' })
    expect(engine.stats().proofFrontier).toBe(Number.NEGATIVE_INFINITY)
    // A checkpoint keeps them as judged then: the restored engine cannot judge idleness again before it next moves.
    const restored = createEngine({ windows: tumbling(10_000), watermark: boundedOutOfOrderness(1_000), idleTimeout: 5_000, now: () => clock.now, replicaId: 'r1' }) as TidemarkEngine
    restored.restore(structuredClone((engine as TidemarkEngine).checkpoint()))
    expect(restored.stats()).toMatchObject({ proofHeldBy: 'd3', watermarkHeldBy: 'd1' })
  })

  it('under a manual watermark no source holds W', () => {
    const engine = createEngine({ windows: tumbling(10_000), watermark: manual() })
    engine.ingest(readings('d1', range(1, 3)))
    expect(engine.stats()).toMatchObject({ proofHeldBy: 'd1', watermarkHeldBy: null })
  })
})
