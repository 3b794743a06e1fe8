import { expect, it } from 'vitest'
import { afterProcessingTime, cumulating, manual, quantiles, session, sliding, TidemarkEngine, tumbling } from '@tidemark/engine'
import { decodeEngineCheckpoint, encodeEngineCheckpoint } from '../src/checkpoint/checkpointCodec.ts'
const MAX = 2 ** 53 / 1000
it('a checkpoint of edge states (sum NaN, now NaN, overflowed sources, trimmed late lane, watermark Infinity) restores through the codec', () => {
  const clock = { now: Number.NaN }
  const o = { windows: [tumbling(10), sliding(20, 5), cumulating(20, 5), session(5)], watermark: manual(), replicaId: 'me', now: () => clock.now, retention: 40, limits: { maxSources: 2, maxLateEvents: 1 }, accumulation: 'discarding', trigger: { early: afterProcessingTime(5) }, aggregates: { q: quantiles({ at: [0.5] }) } } as never
  const e = new TidemarkEngine(o)
  const big = Number.MAX_VALUE
  e.ingest([{ id: 'a1', source: 's', seq: 1, ts: 1, value: big, key: 'k' }, { id: 'a2', source: 's', seq: 2, ts: 2, value: big, key: 'k' }, { id: 't1', source: 't', seq: 1, ts: 3, value: -big, key: 'k' }, { id: 't2', source: 't', seq: 2, ts: 4, value: -big, key: 'k' }, { id: 'u', source: 'u', ts: -MAX, value: 1 }, { id: 'f', source: 's', seq: 9, ts: 1e9, value: 1 }])
  e.advanceWatermark(12); clock.now = 3
  e.ingest([{ id: 'l1', source: 's', seq: 3, ts: -50, value: 1 }, { id: 'l2', source: 's', seq: 4, ts: -60, value: 1 }, { id: 'x', source: 's', seq: 5, ts: 11.5, value: 1 }])
  const cp = e.checkpoint()
  const back = decodeEngineCheckpoint(encodeEngineCheckpoint(cp))
  const t = new TidemarkEngine(o)
  t.restore(back)
  expect(t.checkpoint()).toEqual(cp)
  const inf = new TidemarkEngine(o); inf.ingest([{ id: 'a', source: 's', seq: 1, ts: 1, value: 1 }]); inf.advanceWatermark(Infinity)
  const t2 = new TidemarkEngine(o); t2.restore(decodeEngineCheckpoint(encodeEngineCheckpoint(inf.checkpoint())))
})
