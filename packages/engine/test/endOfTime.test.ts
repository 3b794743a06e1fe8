/**
 * A watermark advanced to the end of time (`advanceWatermark(Infinity)`, as Beam's and Flink's
 * final watermark at the end of a bounded input), and a processing clock at +Infinity: every
 * window fires and turns final, nothing breaks afterwards, and a replay of the log agrees.
 */
import { describe, expect, it } from 'vitest'
import { afterProcessingTime, createEngine, cumulating, groupCellEntries, MAX_ABS_TS, manual, session, sliding, type StreamEvent, tumbling, type WalOp } from '../src/index.ts'
import { TidemarkEngine } from '../src/core/engine.ts'

const event = (id: string, ts: number, value = 1): StreamEvent => ({ id, source: 'd1', ts, key: 'k', value })

describe('the end of time', () => {
  it('with retention: Infinity, advanceWatermark(Infinity) fires every window final and keeps them in results() and history()', () => {
    const options = { windows: [tumbling(10), cumulating(20, 10)], watermark: manual(), retention: Number.POSITIVE_INFINITY, now: () => 0, replicaId: 'r' }
    const engine = new TidemarkEngine(options)
    engine.ingest([event('a', 1), event('b', 12, 2)])
    engine.advanceWatermark(1_000_000_000)
    const kept = engine.results()
    expect(kept.map((r) => [r.window, r.start, r.end, r.count, r.final])).toEqual([
      ['cumulating:20:10', 0, 10, 1, true],
      ['cumulating:20:10', 0, 20, 2, true],
      ['tumbling:10', 0, 10, 1, true],
      ['tumbling:10', 10, 20, 1, true],
    ])
    engine.advanceWatermark(Number.POSITIVE_INFINITY)
    expect(engine.results()).toEqual(kept)
    expect(engine.stats().openWindows).toBe(4)
    expect(engine.history('tumbling:10', 'k', 0)).toHaveLength(1)
    // Restored from a checkpoint at the end of time, they stay too.
    const restored = new TidemarkEngine(options)
    restored.restore(engine.checkpoint())
    restored.advanceWatermark(Number.POSITIVE_INFINITY)
    expect(restored.results()).toEqual(kept)
  })

  it('advanceWatermark(Infinity) fires every window final; later events go to the late lane, and ingest and tick keep working', () => {
    // Dedup memory full at two ids: a third must release what lies behind the horizon, all of it at +Infinity.
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), allowedLateness: 5, now: () => 0, limits: { maxDedupEntries: 2 } })
    const seen: unknown[] = []
    engine.subscribe((changes) => {
      for (const change of changes) if (change.type !== 'provisional') seen.push([change.type, change.result.start, change.result.count, change.result.final])
    })
    engine.ingest([event('a', 1), event('b', 12, 2)])
    engine.advanceWatermark(Number.POSITIVE_INFINITY)
    expect(engine.watermark()).toBe(Number.POSITIVE_INFINITY)
    expect(seen).toEqual([
      ['on_time', 0, 1, true],
      ['on_time', 10, 1, true],
    ])
    // Past every retention too: nothing stays live.
    expect(engine.results()).toEqual([])
    expect(engine.stats().dedupEntries).toBe(2)
    const receipt = engine.ingest([event('c', 3), event('a', 1)])
    // No overflow: the memory was released, so 'a' is no longer known either; both are past every window's lateness.
    expect(receipt.anomalies).toEqual([])
    expect([receipt.accepted, receipt.late, receipt.duplicates]).toEqual([0, 0, 0])
    expect(engine.lateEvents().map((late) => [late.event.id, late.reason])).toEqual([
      ['c', 'beyond_lateness'],
      ['a', 'beyond_lateness'],
    ])
    engine.tick()
  })

  it('a processing clock at +Infinity fires the armed triggers', () => {
    let now = 0
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), now: () => now, trigger: { early: afterProcessingTime(5) } })
    const seen: string[] = []
    engine.subscribe((changes) => {
      for (const change of changes) seen.push(`${change.type} ${change.result.count}`)
    })
    engine.ingest([event('a', 1)])
    now = Number.POSITIVE_INFINITY
    engine.tick()
    expect(seen).toEqual(['provisional 1'])
  })

  it('a log holding an advance to +Infinity replays to the same results', () => {
    const ops: WalOp[] = []
    const options = { windows: tumbling(10), watermark: manual(), now: () => 0 } as const
    const engine = new TidemarkEngine(options)
    engine.attachLog({ record: (op) => {
        ops.push(op)
        return Promise.resolve()
      }, blocked: null, stats: () => ({ walRecords: ops.length, walBytes: 0 }) })
    engine.ingest([event('a', 1)])
    engine.advanceWatermark(Number.POSITIVE_INFINITY)
    engine.ingest([event('b', 2)])
    const replayed = new TidemarkEngine(options)
    for (const op of ops) replayed.replay(op)
    expect(replayed.results()).toEqual(engine.results())
    expect(replayed.lateEvents()).toEqual(engine.lateEvents())
  })

  it.each([tumbling(10), sliding(20, 10), cumulating(20, 10), session(5)])(
    '%o with retention: Infinity at the end of time: a peer cell of a final window changes it (a finality violation), as before the end',
    (spec) => {
      const options = (replicaId: string) => ({ windows: spec, watermark: manual(), retention: Number.POSITIVE_INFINITY, replicaId, now: () => 0 })
      const device = createEngine(options('device'))
      const peer = createEngine(options('peer'))
      peer.ingest([{ id: 'p', source: 'peer-dev', ts: 1, value: 1 }])
      device.ingest([{ id: 'd', source: 'dev', ts: 2, value: 5 }])
      for (const engine of [device, peer]) engine.advanceWatermark(Number.POSITIVE_INFINITY)
      const { cells, clocks } = device.replica.exportState()
      const report = peer.replica.mergeRemote(cells, clocks)
      expect([report.applied, report.expired]).toEqual([cells.length, 0])
      // Once per cell and window (docs/replication.md): the device's one cell, in each final window that holds its reading.
      expect(report.finalityViolations).toBe(device.results().length)
      expect(peer.stats().finalityViolations).toBe(report.finalityViolations)
      // Both sources' readings show in the peer's final results, as in the device's once it merges the peer's.
      device.replica.mergeRemote(peer.replica.exportState().cells, peer.replica.exportState().clocks)
      const shown = (engine: typeof device) => engine.results().map((r) => [r.start, r.end, r.count, r.sum, r.final])
      expect(shown(peer)).toEqual(shown(device))
      expect(peer.results().every((r) => r.final)).toBe(true)
      expect(Math.max(...peer.results().map((r) => r.sum))).toBe(6)
    },
  )

  it.each([tumbling(60_000), sliding(60_000, 10_000), cumulating(60_000, 10_000), session(30_000)])(
    '%o: the cells of an event at -MAX_ABS_TS start below it (floored to their grid), and a peer merges them, loose or grouped',
    (spec) => {
      const options = (replicaId: string) => ({ windows: spec, watermark: manual(), replicaId, now: () => 0 })
      const device = createEngine(options('device'))
      expect(device.ingest([{ id: 'a', source: 'dev', ts: -MAX_ABS_TS, value: 7 }]).accepted).toBe(1)
      const { cells, clocks } = device.replica.exportState()
      expect(cells[0]?.address.start).toBeLessThan(-MAX_ABS_TS)
      const shown = (engine: typeof device) => engine.results().map((r) => [r.start, r.end, r.count, r.sum])
      for (const merge of ['loose', 'grouped'] as const) {
        const peer = createEngine(options(`peer-${merge}`))
        const report = merge === 'loose' ? peer.replica.mergeRemote(cells, clocks) : peer.replica.mergeRemoteGroups(groupCellEntries(cells), clocks)
        expect(peer.stats().anomalies.invalid_remote_cell, String(peer.stats().remoteAnomalies)).toBe(0)
        expect(report.applied).toBe(cells.length)
        expect(shown(peer)).toEqual(shown(device))
      }
    },
  )
})
