/**
 * The order of panes due together: windows that fire on time, or turn final, at one watermark
 * move come by end, then in the order `results()` lists them (spec id, key, start), live and
 * after a checkpoint restore alike (docs/semantics.md, Panes due together).
 */
import { seededRandom } from '@tidemark/seeded-random'
import { describe, expect, it } from 'vitest'
import type { TidemarkEngine } from '../src/core/engine.ts'
import { createEngine, manual, type StreamEvent, tumbling, type WindowChange } from '../src/index.ts'
import { compareResults } from '../src/windows/windowResult.ts'

const OPTIONS = { windows: [tumbling(10), tumbling(20)], watermark: manual(), allowedLateness: 30, replicaId: 'r' }

/** 40 keys, each a reading in each of the first four 10 ms slots, keys in a shuffled order. */
function readings(seed: number): StreamEvent[] {
  const random = seededRandom(seed)
  const keys = Array.from({ length: 40 }, (_, i) => `k${String(i).padStart(2, '0')}`)
  for (let i = keys.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[keys[i], keys[j]] = [keys[j] as string, keys[i] as string]
  }
  return [0, 10, 20, 30].flatMap((slot) => keys.map((key, i) => ({ id: `${key}-${slot}`, source: 's', ts: slot + (i % 10), key, value: i })))
}

/** Every change an engine emits from now on, as `type window key start`. */
function record(engine: TidemarkEngine): string[] {
  const seen: string[] = []
  engine.subscribe((changes: readonly WindowChange[]) => {
    for (const { type, result } of changes) seen.push(`${type} ${result.window} ${result.key} ${result.start}`)
  })
  return seen
}

describe('panes due together', () => {
  it('fire by end, then by spec, key and start; final changes likewise', () => {
    const engine = createEngine(OPTIONS) as TidemarkEngine
    engine.ingest(readings(7))
    const changes: WindowChange[] = []
    engine.subscribe((batch) => changes.push(...batch))
    engine.advanceWatermark(40)
    const onTime = changes.filter((c) => c.type === 'on_time').map((c) => c.result)
    // Ends 10, 20, 30, 40 of the 10 ms spec and 20, 40 of the 20 ms one, 40 keys each.
    expect(onTime).toHaveLength(6 * 40)
    expect(onTime).toEqual([...onTime].sort((a, b) => a.end - b.end || compareResults(a, b)))
    changes.length = 0
    engine.advanceWatermark(100)
    const finals = changes.filter((c) => c.type === 'final').map((c) => c.result)
    // The 10 ms windows ending at 10 turned final as they fired (10 + 30 <= 40): no final change of their own.
    expect(finals).toHaveLength(5 * 40)
    expect(finals).toEqual([...finals].sort((a, b) => a.end - b.end || compareResults(a, b)))
  })

  it('come in the same order from an engine restored from a checkpoint as from the live one', () => {
    for (const seed of [1, 2, 3]) {
      const live = createEngine(OPTIONS) as TidemarkEngine
      live.ingest(readings(seed))
      live.advanceWatermark(15)
      const restored = new (live.constructor as typeof TidemarkEngine)(OPTIONS)
      restored.restore(live.checkpoint())
      const fromLive = record(live)
      const fromRestored = record(restored)
      for (const engine of [live, restored]) {
        engine.advanceWatermark(40)
        engine.advanceWatermark(100)
      }
      expect(fromLive.length).toBeGreaterThan(400)
      expect(fromRestored, `seed ${seed}`).toEqual(fromLive)
    }
  })
})
