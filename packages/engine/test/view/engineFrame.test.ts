/**
 * `EngineFrame.matches(query)` tells a view whether its query saw a change this frame; a query
 * by key is answered from the frame's changes grouped by key, which must agree with checking
 * every change.
 */
import { seededRandom } from '@tidemark/seeded-random'
import { describe, expect, it } from 'vitest'
import type { ResultQuery, WindowResult } from '../../src/index.ts'
import { FakeEngine } from '../../src/testing/index.ts'
import { EngineFeed } from '../../src/view/engineFeed.ts'
import type { EngineFrame } from '../../src/view/engineFrame.ts'
import { createManualScheduler } from '../../src/view/manualScheduler.ts'

const SPECS = ['tumbling:60000', 'tumbling:3600000']
const KEYS = ['a', 'b', 'c', 'd', 'e', 'f']

function inQuery(result: WindowResult, query: ResultQuery): boolean {
  return (
    (query.window === undefined || result.window === query.window) &&
    (query.key === undefined || result.key === query.key) &&
    (query.from === undefined || result.start >= query.from) &&
    (query.to === undefined || result.start < query.to)
  )
}

describe('EngineFrame.matches', () => {
  for (const seed of [5, 6, 7]) {
    it(`agrees with checking every change, by window, key and start (seed ${seed}; repro: pnpm vitest run packages/engine/test/view/engineFrame.test.ts)`, () => {
      const random = seededRandom(seed)
      const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T
      const engine = new FakeEngine()
      const scheduler = createManualScheduler()
      const feed = new EngineFeed(engine, scheduler)
      const frames: EngineFrame[] = []
      feed.subscribe((frame) => frames.push(frame))
      let checked = 0
      let matched = 0
      for (let round = 0; round < 30; round++) {
        const updates: [string, string, number, number][] = []
        // Only some keys change in a frame, so most queries by key must answer false.
        const keys = KEYS.filter(() => random() < 0.4)
        for (let i = 0; i < 1 + Math.floor(random() * 8); i++) updates.push([pick(SPECS), pick(keys.length > 0 ? keys : KEYS), 60_000 * Math.floor(random() * 5), round * 10 + i])
        engine.emitMany(updates)
        scheduler.flush()
        const frame = frames.at(-1) as EngineFrame
        for (let q = 0; q < 40; q++) {
          const from = random() < 0.5 ? undefined : 60_000 * Math.floor(random() * 5)
          const query: ResultQuery = {
            ...(random() < 0.8 ? { key: pick([...KEYS, 'absent']) } : {}),
            ...(random() < 0.5 ? { window: pick(SPECS) } : {}),
            ...(from === undefined ? {} : { from, to: from + 60_000 * (1 + Math.floor(random() * 3)) }),
          }
          const expected = frame.changes.some((c) => inQuery(c.result, query) || (c.previous !== undefined && inQuery(c.previous, query)))
          expect(frame.matches(query), `seed ${seed}, round ${round}, query ${JSON.stringify(query)}`).toBe(expected)
          checked++
          if (expected) matched++
        }
      }
      // Both answers were exercised.
      expect(matched, `seed ${seed}`).toBeGreaterThan(checked / 10)
      expect(matched, `seed ${seed}`).toBeLessThan(checked - checked / 10)
    })
  }
})
