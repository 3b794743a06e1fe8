/**
 * `engine.results(query)` answers a query by key from that key's windows alone; what it returns
 * must be exactly what filtering every result gives, in every window kind.
 */
import { seededRandom } from '@tidemark/seeded-random'
import { describe, expect, it } from 'vitest'
import { createEngine, cumulating, manual, type ResultQuery, session, sliding, type StreamEvent, tumbling, type WindowResult } from '../src/index.ts'

const KEYS = ['temp', 'humidity', 'battery', 'speed', 'fuel']
const SPECS = [tumbling(10_000), sliding(30_000, 10_000), session(15_000), cumulating(40_000, 10_000)]

function filtered(all: readonly WindowResult[], query: ResultQuery): WindowResult[] {
  return all.filter(
    (r) =>
      (query.window === undefined || r.window === query.window) &&
      (query.key === undefined || r.key === query.key) &&
      (query.from === undefined || r.start >= query.from) &&
      (query.to === undefined || r.start < query.to),
  )
}

describe('results(query)', () => {
  for (const seed of [1, 2, 3]) {
    it(`by window, key and start equals filtering every result (seed ${seed}; repro: pnpm vitest run packages/engine/test/resultQuery.test.ts)`, () => {
      const random = seededRandom(seed)
      const engine = createEngine({ windows: SPECS, watermark: manual(), allowedLateness: 20_000 })
      for (let batch = 0; batch < 20; batch++) {
        const events: StreamEvent[] = []
        for (let i = 0; i < 30; i++) {
          const n = batch * 30 + i
          events.push({ id: `e${n}`, source: `d${n % 3}`, ts: Math.floor(random() * 200_000), key: KEYS[Math.floor(random() * KEYS.length)] as string, value: n % 11 })
        }
        engine.ingest(events)
        // Fire some windows, so that results carry on-time, late and provisional panes.
        if (batch % 5 === 4) engine.advanceWatermark(batch * 10_000)
      }
      const all = engine.results()
      expect(all.length, `seed ${seed}`).toBeGreaterThan(50)
      const queries: ResultQuery[] = [{}]
      for (const spec of SPECS) {
        queries.push({ window: spec.id })
        for (const key of [...KEYS, 'absent']) {
          queries.push({ key }, { window: spec.id, key })
          const from = Math.floor(random() * 200_000)
          queries.push({ window: spec.id, key, from, to: from + Math.floor(random() * 80_000) }, { key, from })
        }
      }
      for (const query of queries) expect(engine.results(query), `seed ${seed}, query ${JSON.stringify(query)}`).toEqual(filtered(all, query))
    })
  }
})
