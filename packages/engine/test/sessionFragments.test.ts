import { describe, expect, it } from 'vitest'
import { boundedOutOfOrderness, createEngine, type Engine, manual, type StreamEvent, session } from '../src/index.ts'
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

describe('final sessions a peer reshapes', () => {
  const options = { windows: session(50), allowedLateness: 200, retention: 500, watermark: boundedOutOfOrderness(30), now: () => 0, replicaId: 'me' }
  const fragment = (source: string, start: number, maxTs: number, count: number, version: number) => ({
    address: { window: 'session:50', key: 'b', start, source },
    cell: count === 0 ? { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, maxTs, version } : { count, sum: count, min: 1, max: 1, maxTs, version },
  })
  const shown = (engine: Engine) => engine.results({ key: 'b' }).map((r) => `[${r.start},${r.end}) ${r.count} ${r.status}${r.final ? ' final' : ''}`)
  /** The engine and a copy restored from its checkpoint, each fed `later`: they must show the same. */
  function afterRestore(engine: TidemarkEngine, later: StreamEvent[][]): [string[], string[]] {
    const restored = createEngine(options) as TidemarkEngine
    restored.restore(engine.checkpoint())
    for (const batch of later) for (const e of [engine, restored]) e.ingest(batch)
    return [shown(engine), shown(restored)]
  }

  it("a final session a peer's fragment grew stays final, and leaves at its new end's time, as the same engine restored from a checkpoint", () => {
    const engine = createEngine(options) as TidemarkEngine
    engine.ingest([{ id: 'x1', source: 'd3', ts: 1_000_013, value: 1, key: 'b' }])
    engine.ingest([{ id: 'x2', source: 'd3', ts: 1_000_299, value: 1, key: 'c' }]) // W 1,000,269: [1,000,013, 1,000,063) is final
    engine.replica.mergeRemote([fragment('p1', 1_000_061, 1_000_104, 2, 2)], [])
    expect(shown(engine)).toEqual(['[1000013,1000154) 3 corrected final'])
    // A new source holds W at 1,000,832: past the old end's time to leave (1,000,763), not the new one's (1,000,854).
    const [live, restored] = afterRestore(engine, [
      [{ id: 'x3', source: 'd3', ts: 1_001_118, value: 1, key: 'c' }, { id: 'y1', source: 'd2', ts: 1_000_862, value: 1, key: 'a' }],
      [{ id: 'x4', source: 'd3', ts: 1_005_000, value: 1, key: 'c' }, { id: 'y2', source: 'd2', ts: 1_005_000, value: 1, key: 'a' }],
    ])
    expect(live).toEqual([])
    expect(restored).toEqual(live)
  })

  it("a final session a peer's tombstone shrank leaves at its new end's time, as the same engine restored from a checkpoint", () => {
    const engine = createEngine(options) as TidemarkEngine
    engine.ingest([{ id: 'x0', source: 'd3', ts: 1_002_000, value: 1, key: 'z' }]) // W 1,001,970
    engine.replica.mergeRemote([fragment('p1', 1_001_300, 1_001_300, 1, 1), fragment('p2', 1_001_340, 1_001_700, 2, 1)], [])
    expect(shown(engine)).toEqual(['[1001300,1001750) 3 corrected final'])
    engine.replica.mergeRemote([fragment('p2', 1_001_340, 1_001_700, 0, 2)], [])
    expect(shown(engine)).toEqual(['[1001300,1001350) 1 corrected final'])
    // W 1,002,270: past the shrunk session's time to leave (1,002,050), not the merged one's (1,002,450).
    const [live, restored] = afterRestore(engine, [[{ id: 'x1', source: 'd3', ts: 1_002_300, value: 1, key: 'z' }]])
    expect(live).toEqual([])
    expect(restored).toEqual(live)
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
