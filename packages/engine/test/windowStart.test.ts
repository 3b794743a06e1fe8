/**
 * `windowStart(spec, ts)` names the window the engine puts an event in, so callers never write
 * the alignment by hand; window ids come from the spec.
 */
import { describe, expect, it } from 'vitest'
import { createEngine, manual, session, sliding, type StreamEvent, tumbling, windowStart } from '../src/index.ts'

const event = (ts: number, i = 0): StreamEvent => ({ id: `e${i}`, source: 'd1', ts, key: 'temp', value: 1 })

describe('windowStart', () => {
  it('gives the start of the tumbling window holding ts, also before 1970 and at the edges', () => {
    const minute = tumbling(60_000)
    expect(windowStart(minute, Date.parse('2026-01-01T10:15:42Z'))).toBe(Date.parse('2026-01-01T10:15:00Z'))
    expect(windowStart(minute, 120_000)).toBe(120_000)
    expect(windowStart(minute, 119_999.5)).toBe(60_000)
    expect(windowStart(minute, -1)).toBe(-60_000)
    expect(Object.is(windowStart(minute, -0), 0)).toBe(true)
  })

  it('gives the latest start of the sliding windows holding ts', () => {
    expect(windowStart(sliding(60_000, 10_000), 125_000)).toBe(120_000)
    expect(windowStart(sliding(60_000, 10_000), -5)).toBe(-10_000)
  })

  it('names the same window as the engine: results for that start hold the event', () => {
    const specs = [tumbling(7_000), sliding(9_000, 3_000)]
    const engine = createEngine({ windows: specs, watermark: manual() })
    const times = [-10_001, -1, 0, 1, 2_999, 3_000, 6_999.5, 1_700_000_000_123]
    engine.ingest(times.map((ts, i) => event(ts, i)))
    for (const spec of specs) {
      for (const ts of times) {
        const [result] = engine.results({ window: spec.id, key: 'temp', from: windowStart(spec, ts), to: windowStart(spec, ts) + 1 })
        expect(result?.start, `${spec.id} ${ts}`).toBe(windowStart(spec, ts))
        expect(result && result.start <= ts && ts < result.end, `${spec.id} ${ts}`).toBe(true)
      }
    }
  })

  it('has ids derived from the spec', () => {
    expect([tumbling(60_000).id, sliding(60_000, 10_000).id, session(30_000).id]).toEqual(['tumbling:60000', 'sliding:60000:10000', 'session:30000'])
  })

  it('refuses sessions, times that are not finite, and things that are not specs', () => {
    expect(() => windowStart(session(30_000), 5)).toThrow(/session:30000 windows start at their first event/)
    expect(() => windowStart(tumbling(10), Number.NaN)).toThrow(RangeError)
    expect(() => windowStart(tumbling(10), Number.POSITIVE_INFINITY)).toThrow(RangeError)
    expect(() => windowStart(60_000 as never, 5)).toThrow(TypeError)
  })
})
