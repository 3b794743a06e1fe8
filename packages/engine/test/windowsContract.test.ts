/**
 * Sentences of docs/semantics.md (Windows: Results, When a window fires, Basis, Allowed
 * lateness, corrections and finality, Retention) that scenarios.test.ts and the reference-model
 * properties leave open. The properties compare results with `toEqual`, so nothing checks that
 * results are kept by identity; their fold accepts a window that leaves live state with or
 * without a change; scenarios show a `final` change only through `brief`, and the basis of
 * corrections only for windows born late. A fake clock (`now`).
 */
import { describe, expect, it } from 'vitest'
import { createEngine, manual, type StreamEvent, tumbling, type WindowChange } from '../src/index.ts'

/** An event of `source` at `ts`, with `seq` when given. */
function at(source: string, ts: number, seq?: number): StreamEvent {
  return { id: `${source}@${ts}`, source, ts, value: 1, ...(seq === undefined ? {} : { seq }) }
}

/** Every change `engine` emits from now on. */
function changesOf(engine: { subscribe: (listener: (changes: readonly WindowChange[]) => void) => unknown }): WindowChange[] {
  const seen: WindowChange[] = []
  engine.subscribe((changes) => seen.push(...changes))
  return seen
}

/**
 * Sources a and b at 5, then b silent past `idleTimeout` (100) while a reaches `aTs`: [0,10)
 * fires on a fallback basis. Returns the engine, its clock (at 200) and every change since the start.
 */
function fallbackWindow(allowedLateness: number, aTs: number) {
  const clock = { now: 0 }
  const engine = createEngine({ windows: tumbling(10), idleTimeout: 100, allowedLateness, now: () => clock.now })
  const seen = changesOf(engine)
  engine.ingest([at('a', 5), at('b', 5)])
  clock.now = 200
  engine.ingest([at('a', aTs)])
  return { engine, clock, seen }
}

describe('results', () => {
  it('are kept by identity: an unchanged window is the same object from batch to batch; a change is a new one, the kept one as it was', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), allowedLateness: 100 })
    engine.ingest([at('a', 5), at('a', 25)])
    const [first, other] = engine.results()
    engine.ingest([at('a', 26)])
    expect(engine.results()[0]).toBe(first)
    expect(engine.results()[1]).not.toBe(other)
    engine.advanceWatermark(10)
    engine.ingest([at('a', 6)])
    expect(engine.results()[0]).toMatchObject({ count: 2, status: 'corrected' })
    expect(first).toMatchObject({ count: 1, status: 'provisional', revision: 0 })
  })
})

describe('basis', () => {
  it('is judged when each result is emitted: a correction of a window that fired fallback is derived once the idle source passed its end', () => {
    const { engine, clock, seen } = fallbackWindow(1_000, 30)
    expect(seen.find((c) => c.type === 'on_time')?.result.basis).toBe('fallback')
    clock.now = 210
    engine.ingest([at('b', 7)]) // b back, still behind the end
    expect(seen.at(-1)?.result).toMatchObject({ status: 'corrected', revision: 1, basis: 'fallback' })
    engine.ingest([at('b', 25)])
    engine.ingest([at('b', 8)])
    expect(seen.at(-1)?.result).toMatchObject({ start: 0, status: 'corrected', revision: 2, basis: 'derived' })
  })

  it('is proven when P passed the end, though W passed it too', () => {
    const engine = createEngine({ windows: tumbling(10) })
    const seen = changesOf(engine)
    engine.ingest([at('a', 5, 1), at('a', 15, 2)])
    expect(engine.watermark()).toBe(15)
    expect(seen.find((c) => c.type === 'on_time')?.result.basis).toBe('proven')
  })
})

describe('finality', () => {
  it('a fired window turning final emits its last result again, final: true, with the same values, status, revision, basis and pane', () => {
    const { engine, seen } = fallbackWindow(20, 15)
    const onTime = seen.find((c) => c.type === 'on_time')?.result
    expect(onTime).toMatchObject({ basis: 'fallback', final: false })
    engine.ingest([at('b', 40), at('a', 40)]) // W = 40 >= 10 + 20, counting b
    const final = seen.find((c) => c.type === 'final')
    expect(final?.result).toEqual({ ...onTime, final: true })
  })
})

describe('retention', () => {
  it('a final window leaves live state at end + allowedLateness + retention (default 60,000) without a change', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), allowedLateness: 5 })
    engine.ingest([at('a', 5)])
    engine.advanceWatermark(15)
    const seen = changesOf(engine)
    engine.advanceWatermark(60_014)
    expect(engine.results()).toHaveLength(1)
    engine.advanceWatermark(60_015)
    expect(engine.results()).toEqual([])
    expect(seen).toEqual([])
  })
})
