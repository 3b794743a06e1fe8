import { describe, expect, it } from 'vitest'
import { createEngine, manual, type StreamEvent, session } from '../src/index.ts'
import type { TidemarkEngine } from '../src/core/engine.ts'

const GAP = 1_000

/**
 * One key's session kept alive for `stretches` × 4 s by source `keeper` (a reading every 500 ms),
 * while source `burst` reports 3 readings at the start of every stretch and is silent for
 * longer than the gap in between: each of its stretches is its own run of activity.
 */
function neverEndingSession(stretches: number): StreamEvent[] {
  const events: StreamEvent[] = []
  let keeperSeq = 0
  let burstSeq = 0
  for (let s = 0; s < stretches; s++) {
    const t0 = s * 4_000
    for (let t = t0; t < t0 + 4_000; t += 500) {
      keeperSeq++
      events.push({ id: `keeper-${keeperSeq}`, source: 'keeper', seq: keeperSeq, ts: t, key: 'line', value: 1 })
    }
    for (let r = 0; r < 3; r++) {
      burstSeq++
      events.push({ id: `burst-${burstSeq}`, source: 'burst', seq: burstSeq, ts: t0 + 100 * r, key: 'line', value: 10 })
    }
  }
  return events
}

describe('session fragments', () => {
  it('a session that never ends keeps one fragment per source, however many stretches of activity a source has', () => {
    const engine = createEngine({ windows: session(GAP), watermark: manual() })
    const events = neverEndingSession(50)
    // Batches of one stretch each: the burst source comes back to a session that is still open.
    for (let i = 0; i < events.length; i += 11) engine.ingest(events.slice(i, i + 11))
    const stats = engine.stats()
    expect(stats.openWindows).toBe(1)
    expect(stats.cells).toBe(2)
    const [result] = engine.results()
    expect(result).toMatchObject({ start: 0, end: 49 * 4_000 + 3_500 + GAP, count: 50 * 11, sum: 50 * (8 + 30), min: 1, max: 10 })
  })

  it('a replica that merges the folded fragments shows the same session', () => {
    const writer = createEngine({ windows: session(GAP), watermark: manual(), replicaId: 'writer' }) as TidemarkEngine
    const events = neverEndingSession(20)
    for (let i = 0; i < events.length; i += 11) writer.ingest(events.slice(i, i + 11))
    const reader = createEngine({ windows: session(GAP), watermark: manual(), replicaId: 'reader' }) as TidemarkEngine
    const state = writer.replica.exportState()
    reader.replica.mergeRemote(state.cells, state.clocks)
    const shown = (e: TidemarkEngine) => e.results().map(({ start, end, count, sum, min, max }) => ({ start, end, count, sum, min, max }))
    expect(shown(reader)).toEqual(shown(writer))
    expect(reader.stats().cells).toBe(2)
  })

  it('a fragment absorbed out of order leaves the replicated state with its session: no tombstone stays behind', () => {
    const engine = createEngine({ windows: session(10_000), watermark: manual(), replicaId: 'a', retention: 1_000, now: () => 0 }) as TidemarkEngine
    const written = new Set<string>()
    const expired = new Set<string>()
    engine.replica.onLocalWrite((write) => {
      for (const { address } of write.cells) written.add(`${address.key}@${address.start}`)
      for (const address of write.expired) expired.add(`${address.key}@${address.start}`)
    })
    for (let r = 0; r < 3; r++) {
      const base = r * 100_000
      // The later reading first: the earlier one then absorbs its fragment, whose cell becomes a tombstone.
      engine.ingest([{ id: `late${r}`, source: 'd1', seq: 2 * r + 1, ts: base + 5_000, key: 'k', value: 1 }])
      engine.ingest([{ id: `early${r}`, source: 'd1', seq: 2 * r + 2, ts: base + 1_000, key: 'k', value: 1 }])
      expect(engine.replica.exportState().cells.filter((c) => c.cell.count === 0)).toHaveLength(1)
      engine.advanceWatermark(base + 50_000) // past end + lateness + retention
      expect(engine.replica.exportState().cells).toHaveLength(0)
    }
    expect(written.size).toBe(6)
    expect([...expired].sort()).toEqual([...written].sort())
  })

  it("a peer's tombstones for keys without a session here leave once no copy of their fragment could merge", () => {
    const engine = createEngine({ windows: session(10_000), watermark: manual(), replicaId: 'b', retention: 1_000, now: () => 0 }) as TidemarkEngine
    const kept = () => engine.checkpoint().sessions[0]?.tombstones.length
    for (let r = 0; r < 5; r++) {
      const base = r * 1_000_000
      engine.advanceWatermark(base)
      // Tombstones only (count 0), of keys never seen here, each round new ones.
      const cells = Array.from({ length: 50 }, (_, k) => ({
        address: { window: 'session:10000', key: `k${r}-${k}`, start: base + 5_000, source: 'p1' },
        cell: { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, maxTs: base + 5_000, version: 3 },
      }))
      expect(engine.replica.mergeRemote(cells, []).applied).toBe(50)
      expect(kept()).toBe(50)
    }
    expect(engine.stats().openWindows).toBe(0)
  })
})

describe('fractional event times in sessions', () => {
  it('are placed by their floor, as in every window kind: whole-millisecond bounds, the gap judged on floors', () => {
    const engine = createEngine({ windows: session(5), watermark: manual() })
    // Floors 4 and 9 differ by the gap: two sessions (raw times 4.7 and 9.5 differ by less).
    engine.ingest([
      { id: 'x', source: 'a', ts: 4.7, value: 1 },
      { id: 'y', source: 'a', ts: 9.5, value: 1 },
    ])
    expect(engine.results().map((r) => [r.start, r.end, r.count])).toEqual([
      [4, 9, 1],
      [9, 14, 1],
    ])
    // A later event between them, by floor within the gap of both, joins them into one.
    engine.ingest([{ id: 'z', source: 'b', ts: 6.9, value: 1 }])
    expect(engine.results().map((r) => [r.start, r.end, r.count])).toEqual([[4, 14, 3]])
  })
})
