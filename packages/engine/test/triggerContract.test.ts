/**
 * Sentences of docs/semantics.md (Triggers and accumulation; The order of one operation's
 * changes) that the trigger property and the nine scores do not pin on their own: the property
 * compares one operation's changes as a multiset (and per window), so the order across windows
 * is checked here, with the edges of the processing-time triggers. A fake clock (`now`) and
 * `tick()`; no sleeps.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import {
  alignedProcessingTime,
  afterProcessingTime,
  boundedOutOfOrderness,
  createEngine,
  type Engine,
  type EngineOptions,
  manual,
  never,
  session,
  type StreamEvent,
  tumbling,
  type WindowResult,
} from '../src/index.ts'

/** A full garbage collection, to see what the engine still holds. */
const collectGarbage = ((): (() => void) => {
  setFlagsFromString('--expose-gc')
  return runInNewContext('gc') as () => void
})()

/** An event of source `s` (or `source`) at `ts`, key `key`. */
function at(id: string, ts: number, key = 'k', value = 1, source = 's'): StreamEvent {
  return { id, source, ts, key, value }
}

/** An engine on a fake clock, and every change it emits from now on as `type key start-end sum`. */
function watched(options: Omit<EngineOptions, 'now'>, now = 0): { engine: Engine; clock: { now: number }; seen: string[] } {
  const clock = { now }
  const engine = createEngine({ ...options, now: () => clock.now })
  const seen: string[] = []
  engine.subscribe((changes) => {
    for (const { type, result } of changes) seen.push(`${type} ${result.key} ${result.start}-${result.end} ${result.sum}`)
  })
  return { engine, clock, seen }
}

/** A peer's cell for window [start, start + 10) of key `k` in spec tumbling:10. */
function peerCell(start: number, count: number, sum: number) {
  return { address: { window: 'tumbling:10', key: 'k', start, source: 'peer' }, cell: { count, sum, min: 1, max: sum, maxTs: start, version: 1 } }
}

describe('Triggers', () => {
  it('an aligned boundary is strictly after now: a change at a boundary waits for the next one', () => {
    const { engine, clock, seen } = watched({ windows: tumbling(100), watermark: manual(), trigger: { early: alignedProcessingTime(1_000, 200) } }, 1_200)
    engine.ingest([at('a', 5)])
    expect(engine.nextTickAt()).toBe(2_200)
    engine.tick()
    expect(seen).toEqual([])
    clock.now = 2_200
    engine.tick()
    expect(seen).toEqual(['provisional k 0-100 1'])
  })

  it('everyElement(): a merge of peers’ state that changes the window is a pane; one that changes nothing is none', () => {
    const { engine, seen } = watched({ windows: tumbling(10), watermark: manual(), replicaId: 'r' })
    engine.replica.mergeRemote([peerCell(0, 1, 1)], [])
    engine.replica.mergeRemote([peerCell(0, 1, 1)], [])
    expect(seen).toEqual(['provisional k 0-10 1'])
  })

  it('in a tick, windows that fire because a source turned idle fire before the due timers are handled', () => {
    const { engine, clock, seen } = watched({ windows: tumbling(10), watermark: boundedOutOfOrderness(0), idleTimeout: 100, trigger: { early: afterProcessingTime(50) } })
    engine.ingest([at('q', 5, 'q', 1, 'quiet')])
    clock.now = 20
    engine.ingest([at('b', 25, 'b', 1, 'busy')])
    seen.length = 0
    // At 200 quiet is idle (W moves to 25: [0, 10) of q fires, its timer cancelled) and b's timer (due 70) fires.
    clock.now = 200
    engine.tick()
    expect(seen).toEqual(['on_time q 0-10 1', 'provisional b 20-30 1'])
  })

  it.each([
    ['afterProcessingTime(100)', afterProcessingTime(100), 1_100],
    ['alignedProcessingTime(300)', alignedProcessingTime(300), 1_200],
  ] as const)('%s: a change while the clock reads no finite time counts as made at its next finite reading, which arms the timer', (_, early, due) => {
    for (const noTime of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      const { engine, clock, seen } = watched({ windows: tumbling(10_000), watermark: manual(), trigger: { early } }, noTime)
      engine.ingest([at('a', 5)])
      // No deadline can be worked out yet.
      expect(engine.nextTickAt(), String(noTime)).toBe(Number.POSITIVE_INFINITY)
      clock.now = 1_000
      engine.tick()
      expect(engine.nextTickAt(), String(noTime)).toBe(due)
      clock.now = due
      engine.tick()
      expect(seen, String(noTime)).toEqual(['provisional k 0-10000 1'])
    }
  })

  it('a late change while the clock reads NaN arms the late timer at the next finite reading', () => {
    const { engine, clock, seen } = watched({ windows: tumbling(10), watermark: manual(), allowedLateness: 100, trigger: { late: afterProcessingTime(100) } })
    engine.ingest([at('a', 1)])
    engine.advanceWatermark(10)
    clock.now = Number.NaN
    engine.ingest([at('b', 2)])
    clock.now = 1_000
    // Any operation reads the clock: an ingest elsewhere arms it too.
    engine.ingest([at('c', 25)])
    expect(engine.nextTickAt()).toBe(1_100)
    clock.now = 1_100
    engine.tick()
    expect(seen.filter((change) => change.includes(' 0-10 '))).toEqual(['provisional k 0-10 1', 'on_time k 0-10 1', 'correction k 0-10 2'])
  })

  it('a window changed while the clock reads NaN is let go once it leaves live state, though the clock still reads NaN', async () => {
    const { engine, seen } = watched({ windows: tumbling(10), watermark: manual(), retention: 0, trigger: { early: afterProcessingTime(100) } }, Number.NaN)
    let shown: WindowResult | null = null
    engine.subscribe((changes) => {
      shown ??= changes[0]?.result ?? null
    })
    engine.ingest([at('a', 5)])
    engine.advanceWatermark(100)
    expect(seen).toEqual(['on_time k 0-10 1'])
    expect(engine.stats().openWindows).toBe(0)
    // The window's result lives as long as the window: held, every window changed while the clock reads NaN would be kept for good.
    const result = new WeakRef(shown as unknown as WindowResult)
    shown = null
    seen.length = 0
    // A WeakRef made in this job holds its target until the job ends.
    await new Promise((resolve) => setImmediate(resolve))
    collectGarbage()
    expect(result.deref()).toBeUndefined()
  })

  it('a window already final that a peer’s cell changes gets its late pane at once, also with late: never()', () => {
    const { engine, seen } = watched({ windows: tumbling(10), watermark: manual(), replicaId: 'r', trigger: { late: never() } })
    engine.ingest([at('a', 1)])
    engine.advanceWatermark(10)
    seen.length = 0
    engine.replica.mergeRemote([peerCell(0, 1, 1)], [])
    expect(seen).toEqual(['correction k 0-10 2'])
  })
})

describe('Accumulation', () => {
  it('discarding: what arrived since the last pane is merged into a separate accumulator, never worked out by subtracting', () => {
    // The window's sum overflows to Infinity; Infinity minus the first pane would still be Infinity.
    const { engine, seen } = watched({ windows: tumbling(10), watermark: manual(), accumulation: 'discarding' })
    engine.ingest([at('a', 1, 'k', 1e308)])
    engine.ingest([at('b', 2, 'k', 1e308)])
    expect(seen).toEqual(['provisional k 0-10 1e+308', 'provisional k 0-10 1e+308'])
  })
})

describe("the order of one operation's changes", () => {
  it('retractions, then late panes, then on-time panes, then early panes in the order the batch first reached them', () => {
    const { engine, seen } = watched({ windows: [tumbling(10), session(3)], watermark: boundedOutOfOrderness(0), allowedLateness: 100 })
    engine.ingest([at('a', 3), at('b', 7), at('c', 14, 'j')])
    seen.length = 0
    // Placed in event order (an engine with session specs): 5 bridges k's sessions 3-6 and 7-10, then 22 (m), then 24 (k); W moves to 24.
    engine.ingest([at('f', 24), at('i', 22, 'm'), at('h', 5)])
    expect(seen).toEqual([
      'retract k 7-10 1',
      'correction k 0-10 3',
      'correction k 3-10 3',
      'on_time j 14-17 1',
      'on_time j 10-20 1',
      'provisional m 20-30 1',
      'provisional m 22-25 1',
      'provisional k 20-30 1',
      'provisional k 24-27 1',
    ])
  })

  it('for each window turning final, the late pane its trigger held back, then its final change, by end', () => {
    const { engine, seen } = watched({ windows: tumbling(10), watermark: manual(), allowedLateness: 15, trigger: { late: never() } })
    engine.ingest([at('a', 1, 'b'), at('b', 2, 'a'), at('c', 11, 'a')])
    engine.advanceWatermark(20)
    engine.ingest([at('d', 3, 'b'), at('e', 4, 'a'), at('f', 12, 'a')])
    seen.length = 0
    engine.advanceWatermark(40)
    expect(seen).toEqual(['correction a 0-10 2', 'final a 0-10 2', 'correction b 0-10 2', 'final b 0-10 2', 'correction a 10-20 2', 'final a 10-20 2'])
  })
})

describe('Changes', () => {
  it('subscribe calls the listener after every batch, one refused whole too, with no change', () => {
    const { engine } = watched({ windows: tumbling(10), watermark: manual(), limits: { maxBatch: 1 } })
    const heard: number[] = []
    engine.subscribe((changes) => heard.push(changes.length))
    expect(engine.ingest([at('a', 1), at('b', 2)]).rejected).toBe(2)
    expect(heard).toEqual([0])
  })

  it('engine.writable holds up to 8 batches (its high-water mark)', () => {
    const { engine } = watched({ windows: tumbling(10) })
    expect(engine.writable.getWriter().desiredSize).toBe(8)
  })
})
