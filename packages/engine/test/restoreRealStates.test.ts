import { describe, expect, it } from 'vitest'
import { afterProcessingTime, cumulating, distinct, type EngineOptions, everyElement, manual, quantiles, session, sliding, type StreamEvent, TidemarkEngine, tumbling } from '../src/index.ts'

const MAX = 2 ** 53 / 1000
const specs = [tumbling(10), sliding(20, 5), cumulating(20, 5), session(5)]

function opts(extra: Record<string, unknown>, replicaId = 'me', clock = { now: 0 }): EngineOptions<Record<string, never>> {
  return { windows: specs, watermark: manual(), replicaId, now: () => clock.now, retention: 40, ...extra } as unknown as EngineOptions<Record<string, never>>
}

function roundTrip(extra: Record<string, unknown>, drive: (e: TidemarkEngine, clock: { now: number }) => void): TidemarkEngine {
  const clock = { now: 0 }
  const e = new TidemarkEngine(opts(extra, 'me', clock))
  drive(e, clock)
  const cp = e.checkpoint()
  const t = new TidemarkEngine(opts(extra, 'me', { now: clock.now }))
  t.restore(structuredClone(cp))
  expect(t.checkpoint()).toEqual(cp)
  return t
}

const ev = (i: number, ts: number, value = 1, extra: Partial<StreamEvent> = {}): StreamEvent => ({ id: `e${i}`, source: 's', seq: i, ts, value, key: 'k', ...extra })
const aggs = { aggregates: { median: quantiles({ at: [0.5] }), sources: distinct({ of: (e: StreamEvent) => e.source }) } }

describe('real checkpoints restore', () => {
  it('extreme times', () => roundTrip({}, (e) => { e.ingest([ev(1, -MAX), ev(2, MAX), ev(3, 0.5)]) }))
  it('extreme times with aggregates', () => roundTrip(aggs, (e) => { e.ingest([ev(1, -MAX), ev(2, MAX), ev(3, 0.5)]) }))
  it('huge values, sum overflow', () => roundTrip({}, (e) => { e.ingest([ev(1, 1, 1e308), ev(2, 2, 1e308), ev(3, 3, -1e308), ev(4,4,-Number.MAX_VALUE)]) }))
  it('watermark Infinity', () => roundTrip({}, (e) => { e.ingest([ev(1, 1), ev(2, 7)]); e.advanceWatermark(Number.POSITIVE_INFINITY) }))
  it('watermark Infinity, retention Infinity', () => roundTrip({ retention: Number.POSITIVE_INFINITY }, (e) => { e.ingest([ev(1, 1), ev(2, 7)]); e.advanceWatermark(Number.POSITIVE_INFINITY); e.ingest([ev(3, 2)]) }))
  it('late lane trimmed', () => roundTrip({ limits: { maxLateEvents: 2 } }, (e) => { e.ingest([ev(1, 100)]); e.advanceWatermark(200); e.ingest([ev(2, 1), ev(3, 2), ev(4, 3), ev(5, 4)]) }))
  it('late lane 0', () => roundTrip({ limits: { maxLateEvents: 0 } }, (e) => { e.ingest([ev(1, 100)]); e.advanceWatermark(200); e.ingest([ev(2, 1), ev(3, 2)]) }))
  it('maxSources overflow', () => roundTrip({ limits: { maxSources: 1 } }, (e) => { e.ingest([ev(1, 1), { id: 'x', source: 't', seq: 1, ts: 2, value: 1, key: 'k' }, { id: 'y', source: 'u', ts: 3, value: 1 }]); e.advanceWatermark(50) }))
  it('now NaN, timers', () => roundTrip({ trigger: { early: afterProcessingTime(50) } }, (e, c) => { c.now = Number.NaN; e.ingest([ev(1, 1)]); e.tick(); c.now = 10; e.ingest([ev(2, 2)]) }))
  it('discarding with everyElement', () => roundTrip({ accumulation: 'discarding', trigger: { early: everyElement() }, allowedLateness: 5 }, (e) => { e.ingest([ev(1, 1), ev(2, 12)]); e.advanceWatermark(11); e.ingest([ev(3, 3)]); e.advanceWatermark(100) }))
  it('discarding with aggregates', () => roundTrip({ ...aggs, accumulation: 'discarding', trigger: { early: everyElement() }, allowedLateness: 5 }, (e) => { e.ingest([ev(1, 1), ev(2, 12)]); e.advanceWatermark(11); e.ingest([ev(3, 3)]) }))
  it('future sources', () => roundTrip({ maxFutureSkew: 10 }, (e, c) => { c.now = 5; e.ingest([ev(1, 1e6), ev(2, MAX)]) }))
  it('ids without seq, long ids and keys', () => roundTrip({}, (e) => { e.ingest([{ id: 'i'.repeat(1024), source: 's'.repeat(1024), ts: 1, value: 1, key: 'k'.repeat(1024) }]) }))
  it('seq gaps', () => roundTrip({}, (e) => { e.ingest([ev(1, 1), ev(5, 2), ev(9, -MAX)]) }))
  it('finished source', async () => {
    const finishing: Promise<unknown>[] = []
    const restored = roundTrip({}, (e) => { e.ingest([ev(1, 1)]); finishing.push(e.finishSource('s')) })
    await Promise.all(finishing)
    expect([restored.stats().sources, restored.stats().finishedSources]).toEqual([1, 1])
  })
  it('peer sessions merged, tombstones', () => roundTrip({}, (e) => {
    const peer = new TidemarkEngine(opts({}, 'peer'))
    peer.ingest([{ id: 'p1', source: 'p', seq: 1, ts: 1, value: 1, key: 'k' }, { id: 'p2', source: 'p', seq: 2, ts: 20, value: 1, key: 'k' }])
    e.ingest([ev(1, 4), ev(2, 11), ev(3, 17)])
    const s = peer.replica.exportState(); e.replica.mergeRemote(s.cells, s.clocks)
    peer.ingest([{ id: 'p3', source: 'p', seq: 3, ts: 8, value: 1, key: 'k' }, { id: 'p4', source: 'p', seq: 4, ts: 14, value: 1, key: 'k' }])
    const s2 = peer.replica.exportState(); e.replica.mergeRemote(s2.cells, s2.clocks)
    e.advanceWatermark(30)
  }))
  it('idle sources', () => roundTrip({ idleTimeout: 10 }, (e, c) => { e.ingest([ev(1, 1), { id: 'o', source: 'o', seq: 1, ts: 1, value: 1 }]); c.now = 100; e.tick(); e.ingest([ev(2, 30)]); e.tick() }))
  it('negative zero and empty key', () => roundTrip(aggs, (e) => { e.ingest([ev(1, -0, -0, { key: '' }), ev(2, -1e-9, 0)]) }))
  it('windows past retention with peer late cells', () => roundTrip(aggs, (e) => {
    const peer = new TidemarkEngine(opts(aggs, 'peer'))
    e.ingest([ev(1, 1), ev(2, 200)]); e.advanceWatermark(150)
    peer.ingest([{ id: 'p1', source: 'p', seq: 1, ts: 2, value: 1, key: 'k' }, { id: 'p2', source: 'p', seq: 2, ts: 120, value: 1, key: 'k' }, { id: 'p3', source: 'p', seq: 3, ts: 148, value: 1, key: 'k' }])
    const s = peer.replica.exportState(); e.replica.mergeRemote(s.cells, s.clocks)
  }))
  it('window sum of +Infinity and -Infinity cells', () => roundTrip({ trigger: { early: everyElement() } }, (e) => {
    const big = Number.MAX_VALUE
    e.ingest([ev(1, 1, big), ev(2, 2, big), { id: 't1', source: 't', seq: 1, ts: 3, value: -big, key: 'k' }, { id: 't2', source: 't', seq: 2, ts: 4, value: -big, key: 'k' }])
    e.advanceWatermark(20)
  }))
  it('clock reading Infinity', () => roundTrip({ trigger: { early: afterProcessingTime(50) } }, (e, c) => { c.now = Number.POSITIVE_INFINITY; e.ingest([ev(1, 1)]); e.tick() }))
  it('peer extreme', () => roundTrip(aggs, (e) => {
    const peer = new TidemarkEngine(opts(aggs, 'peer'))
    peer.ingest([{ id: 'p1', source: 'p', seq: 1, ts: -MAX, value: 1e308, key: 'k' }, { id: 'p2', source: 'p', seq: 2, ts: MAX, value: 1e308, key: 'k' }])
    const s = peer.replica.exportState(); e.replica.mergeRemote(s.cells, s.clocks)
  }))
})
