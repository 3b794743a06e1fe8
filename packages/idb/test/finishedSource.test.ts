import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { describe, expect, it } from 'vitest'
import { boundedOutOfOrderness, type Engine, type EngineOptions, type StreamEvent, tumbling } from '@tidemark/engine'
import { reading } from '@tidemark/engine/testing'
import { indexedDbPersistence, openEngine, type OpenEngineOptions } from '../src/index.ts'

const config: EngineOptions = { windows: tumbling(10_000), watermark: boundedOutOfOrderness(1_000), now: () => 5_000, replicaId: 'phone' }

/** One reading per second of `source`, seqs 1..count. */
function seconds(source: string, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => reading(source, i + 1, i * 1_000, 1))
}

function open(factory: IDBFactory, extra: Partial<OpenEngineOptions> = {}): Promise<Engine> {
  return openEngine({ ...config, persistence: indexedDbPersistence({ name: 'finish', indexedDB: factory }), ...extra })
}

describe('openEngine: a finished source', () => {
  for (const checkpointOnClose of [false, true]) {
    it(`stays finished after a reopen (${checkpointOnClose ? 'from the checkpoint' : 'replayed from the log'})`, async () => {
      const factory = new IDBFactory()
      const engine = await open(factory, { checkpointOnClose })
      engine.ingest([...seconds('d1', 25), ...seconds('d2', 3)])
      expect(engine.stats().proofFrontier).toBe(2_000)
      await engine.finishSource('d2')
      const before = engine.results()
      await engine.close()

      const reopened = await open(factory, { checkpointOnClose })
      expect(reopened.results()).toEqual(before)
      expect(reopened.stats().proofFrontier).toBe(24_000)
      expect(reopened.ingest([reading('d2', 4, 3_000, 1)]).anomalies[0]?.reason).toBe('finished_source')
      await reopened.close()
    })
  }
})
