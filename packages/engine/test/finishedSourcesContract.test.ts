/**
 * Sentences of docs/semantics.md (Finished sources) that finishedSources.test.ts leaves open: it
 * sends copies of a finished source's events only while dedup memory remembers them. Once
 * released, behind the lateness horizon, a copy is refused as `finished_source` where it would
 * have gone to the late lane: either way it is counted once.
 */
import { describe, expect, it } from 'vitest'
import { createEngine, type StreamEvent, tumbling } from '../src/index.ts'

/** An event without seq of `source` at `ts` (remembered by id in dedup memory). */
function at(source: string, ts: number): StreamEvent {
  return { id: `${source}@${ts}`, source, ts, value: 1 }
}

describe('finishSource', () => {
  it('a copy of an event the source sent is a duplicate while remembered, then finished_source, never on the late lane', async () => {
    const engine = createEngine({ windows: tumbling(10), limits: { maxDedupEntries: 3 } })
    engine.ingest([at('a', 5), at('b', 5)])
    await engine.finishSource('a')
    expect(engine.ingest([at('a', 5)])).toMatchObject({ duplicates: 1, rejected: 0 })
    // Dedup memory full: the next id releases what lies behind the horizon (W - 0 - 10 = 90), a@5 with it.
    engine.ingest([at('b', 100)])
    engine.ingest([at('b', 101)])
    expect(engine.stats().dedupEntries).toBe(2)
    const receipt = engine.ingest([at('a', 5)])
    expect(receipt).toMatchObject({ accepted: 0, duplicates: 0, beyondLateness: 0, rejected: 1 })
    expect(receipt.anomalies.map((a) => a.reason)).toEqual(['finished_source'])
    expect(engine.lateEvents()).toEqual([])
    expect(engine.results({ from: 0, to: 1 })[0]?.count).toBe(2)
  })
})
