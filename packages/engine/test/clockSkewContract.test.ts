/**
 * Sentences of docs/semantics.md (Clock skew) that anomalies.test.ts and bad input B14/B15 leave
 * open: what a `future_ts` event from a source never heard of leaves behind (no source clock, no
 * proof frontier, no dedup memory for an event without seq), the copy of the event its anomaly
 * carries, and a clock that gives no number. A fake clock (`now`).
 */
import { describe, expect, it } from 'vitest'
import { createEngine, type StreamEvent, tumbling } from '../src/index.ts'

describe('maxFutureSkew', () => {
  it('a refused event moves nothing: no source clock, no proof frontier, no dedup memory', () => {
    const clock = { now: 1_000 }
    const engine = createEngine({ windows: tumbling(10), now: () => clock.now, maxFutureSkew: 100 })
    engine.ingest([{ id: 'a', source: 'known', seq: 1, ts: 500, value: 1 }])
    const before = engine.stats()
    // Without seq, ids that would be remembered; from a source never heard of, a clock that would hold W and P.
    const ahead = [
      { id: 'f', source: 'known', ts: 1_101, value: 1 },
      { id: 'g', source: 'new', ts: 1_101, value: 1 },
    ]
    expect(engine.ingest(ahead).anomalies.map((a) => a.reason)).toEqual(['future_ts', 'future_ts'])
    expect(engine.stats()).toMatchObject({ sources: before.sources, proofFrontier: before.proofFrontier, dedupEntries: before.dedupEntries, watermark: 500 })
    // Sent again once real time caught up: new events, not duplicates.
    clock.now = 1_001
    expect(engine.ingest(ahead)).toMatchObject({ accepted: 2, duplicates: 0 })
  })

  it('the anomaly carries a copy of the event: its six fields, unchanged by later writes to the object', () => {
    const engine = createEngine({ windows: tumbling(10), now: () => 0, maxFutureSkew: 0 })
    const event = { id: 'f', source: 's', seq: 3, ts: 1, key: 'k', value: 2, note: 'not kept' } as StreamEvent
    const [anomaly] = engine.ingest([event]).anomalies
    ;(event as { value: number }).value = 99
    expect(anomaly?.event).not.toBe(event)
    expect(anomaly?.event).toStrictEqual({ id: 'f', source: 's', seq: 3, ts: 1, key: 'k', value: 2 })
  })

  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])('a now() that reads no finite time (%s) refuses nothing, and the check judges again at the next finite reading', (reading) => {
    const clock = { now: reading }
    const engine = createEngine({ windows: tumbling(10), now: () => clock.now, maxFutureSkew: 0 })
    expect(engine.ingest([{ id: 'f', source: 's', ts: 1e12, value: 1 }])).toMatchObject({ accepted: 1, rejected: 0 })
    clock.now = 1_000
    expect(engine.ingest([{ id: 'g', source: 's', ts: 1_001, value: 1 }]).anomalies.map((a) => a.reason)).toEqual(['future_ts'])
  })
})
