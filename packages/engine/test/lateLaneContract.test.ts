/**
 * Sentences of docs/semantics.md (The late lane) that scenarios.test.ts and boundsContract.test.ts
 * leave open: they compare entries with `toEqual` or by id, which a lane holding the caller's own
 * event object passes too. The lane keeps a copy, its six fields.
 */
import { describe, expect, it } from 'vitest'
import { createEngine, type StreamEvent, tumbling } from '../src/index.ts'

describe('engine.lateEvents()', () => {
  it('keeps a copy of each refused event, its six fields, unchanged by later writes to the object; oldest first', () => {
    const engine = createEngine({ windows: tumbling(10) })
    engine.ingest([{ id: 'now', source: 's', ts: 40, value: 1 }])
    const first = { id: 'x', source: 's', seq: 7, ts: 1, key: 'k', value: 2, note: 'not kept' } as StreamEvent
    engine.ingest([first, { id: 'y', source: 's', ts: 2, value: 3 }])
    ;(first as { value: number }).value = 99
    const [entry, second] = engine.lateEvents()
    expect(entry?.event).not.toBe(first)
    expect(entry).toStrictEqual({ event: { id: 'x', source: 's', seq: 7, ts: 1, key: 'k', value: 2 }, window: 'tumbling:10', reason: 'beyond_lateness' })
    expect(second?.event.id).toBe('y')
  })
})
