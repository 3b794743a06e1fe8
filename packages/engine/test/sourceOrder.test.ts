/**
 * Among many sources, placement tries first the clock that followed the last one placed (uploads
 * list their sources in much the same order each time) before a lookup by name. Whatever the
 * order, each event must reach its own source's clock: re-sent copies are duplicates, new sources
 * get clocks of their own, and the totals are those of the events.
 */
import { describe, expect, it } from 'vitest'
import { createEngine, manual, type StreamEvent, tumbling } from '../src/index.ts'

const SOURCES = 200

function reading(s: number, seq: number): StreamEvent {
  return { id: `d${s}-${seq}`, source: `d${s}`, seq, ts: seq * 10, key: `k${s % 7}`, value: s + seq / 4 }
}

/** `order` of source numbers, as readings of `seq`. */
function upload(order: readonly number[], seq: number): StreamEvent[] {
  return order.map((s) => reading(s, seq))
}

describe('placement among many sources', () => {
  it('reaches each source whatever the order of the uploads, with copies re-sent between them', () => {
    const engine = createEngine({ windows: tumbling(1_000), watermark: manual(), now: () => 0 })
    const inOrder = Array.from({ length: SOURCES }, (_, s) => s)
    const reversed = [...inOrder].reverse()
    // A fixed shuffle: every seventh source first, then the rest; and one source never seen before.
    const shuffled = [...inOrder.filter((s) => s % 7 === 0), ...inOrder.filter((s) => s % 7 !== 0), SOURCES]
    const first = engine.ingest(upload(inOrder, 1))
    expect([first.accepted, first.duplicates]).toEqual([SOURCES, 0])
    // The same order again, each reading followed by a copy of its source's previous one.
    const second = engine.ingest(inOrder.flatMap((s) => [reading(s, 2), reading(s, 1)]))
    expect([second.accepted, second.duplicates]).toEqual([SOURCES, SOURCES])
    const third = engine.ingest(upload(reversed, 3))
    expect([third.accepted, third.duplicates]).toEqual([SOURCES, 0])
    const fourth = engine.ingest([...upload(shuffled, 4), ...upload(reversed, 3)])
    expect([fourth.accepted, fourth.duplicates]).toEqual([SOURCES + 1, SOURCES])
    const expected = new Map<string, { count: number; sum: number }>()
    for (const [order, seq] of [[inOrder, 1], [inOrder, 2], [reversed, 3], [shuffled, 4]] as const) {
      for (const s of order) {
        const { key, value } = reading(s, seq)
        const total = expected.get(key as string) ?? { count: 0, sum: 0 }
        total.count++
        total.sum += value
        expected.set(key as string, total)
      }
    }
    const results = new Map(engine.results().map((r) => [r.key, r]))
    for (const [key, total] of expected) {
      expect(results.get(key)?.count).toBe(total.count)
      expect(results.get(key)?.sum).toBeCloseTo(total.sum, 6)
    }
    expect(engine.stats().sources).toBe(SOURCES + 1)
  })
})
