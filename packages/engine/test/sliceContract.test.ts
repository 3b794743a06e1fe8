/**
 * Sentences of docs/semantics.md (Fixed windows share slices) that the per-window differential
 * property cannot pin, as it compares with cells of their own (stats but `cells`) and leaves
 * the last bits of a sliding sum aside: one cell per source and slice whatever the window size,
 * and the order in which a sliding window's slices are added.
 */
import { describe, expect, it } from 'vitest'
import { createEngine, type Engine, manual, sliding } from '../src/index.ts'

/** One event per (source, ts) into a sliding spec under a manual watermark. */
function fed(spec: ReturnType<typeof sliding>, events: readonly (readonly [string, number, number])[]): Engine {
  const engine = createEngine({ windows: spec, watermark: manual() })
  engine.ingest(events.map(([source, ts, value], i) => ({ id: `e${i}`, source, ts, value })))
  return engine
}

describe('fixed windows share slices', () => {
  it('an event updates one cell, its source’s in its slice, whatever the window size: an hour sliding every minute', () => {
    const engine = fed(sliding(3_600_000, 60_000), [
      ['a', 5, 1],
      ['a', 6, 1],
      ['b', 7, 1],
      ['a', 60_000, 1],
    ])
    expect(engine.stats()).toMatchObject({ openWindows: 61, cells: 3 })
  })

  it('a block-aligned window folds its slices left to right; one starting inside a block adds the rest of that block right to left, then the next block', () => {
    // sliding(40, 10): blocks [0, 40), [40, 80). Slices 1, 2, 3 hold 0.1, 0.2, 0.3 and slice 4 holds 0.1.
    const engine = fed(sliding(40, 10), [
      ['s', 10, 0.1],
      ['s', 20, 0.2],
      ['s', 30, 0.3],
      ['s', 40, 0.1],
    ])
    const sums = new Map(engine.results().map((r) => [r.start, r.sum]))
    // [0, 40): ((0.1 + 0.2) + 0.3); [10, 50): ((0.3 + 0.2) + 0.1) + 0.1, where left to right gives 0.7000000000000001.
    expect(sums.get(0)).toBe(0.6000000000000001)
    expect(sums.get(10)).toBe(0.7)
  })
})
