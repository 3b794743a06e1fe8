import { describe, expect, it, vi } from 'vitest'
import { createEngine } from '../../src/core/engine.ts'
import { EngineFeed } from '../../src/view/engineFeed.ts'
import { EngineObserver } from '../../src/view/engineObserver.ts'
import type { EngineFrame } from '../../src/view/engineFrame.ts'
import { createManualScheduler } from '../../src/view/manualScheduler.ts'
import { windowSlice } from '../../src/view/engineSlice.ts'
import { FakeEngine } from '../../src/testing/index.ts'
import { tumbling } from '../../src/windows/windowSpec.ts'

const MINUTE = 'tumbling:60000'
const HOUR = 'tumbling:3600000'

function feedOf(engine = new FakeEngine()) {
  const scheduler = createManualScheduler()
  return { engine, scheduler, feed: new EngineFeed(engine, scheduler) }
}

describe('EngineFeed', () => {
  it('calls a window listener only in frames that changed its window, once however often it changed', () => {
    const { engine, scheduler, feed } = feedOf()
    const a = vi.fn<(frame: EngineFrame) => void>()
    const b = vi.fn<(frame: EngineFrame) => void>()
    const every = vi.fn<(frame: EngineFrame) => void>()
    feed.subscribe(a, { window: MINUTE, key: 'a', start: 0 })
    feed.subscribe(b, { window: MINUTE, key: 'b', start: 0 })
    feed.subscribe(every)

    engine.emit(MINUTE, 'a', 0, 1)
    engine.emitMany([
      [MINUTE, 'a', 0, 2],
      [MINUTE, 'a', 60_000, 3], // same key, other window
      [HOUR, 'b', 0, 4], // same key and start, other spec
    ])
    scheduler.flush()
    expect(a).toHaveBeenCalledTimes(1)
    expect(a.mock.calls[0]?.[0].latest(MINUTE, 'a', 0)?.sum).toBe(2)
    expect(b).not.toHaveBeenCalled()
    expect(every).toHaveBeenCalledTimes(1)

    engine.setStats({ ingested: 9 }) // no window changed
    scheduler.flush()
    expect(a).toHaveBeenCalledTimes(1)
    expect(every).toHaveBeenCalledTimes(2)
  })

  it('tells the listener of a window that a correction moved away from it', () => {
    const { engine, scheduler, feed } = feedOf()
    engine.emit(MINUTE, 'a', 10, 1)
    const old = vi.fn<(frame: EngineFrame) => void>()
    feed.subscribe(old, { window: MINUTE, key: 'a', start: 10 })
    engine.move(MINUTE, 'a', 10, 5, 2)
    scheduler.flush()
    expect(old).toHaveBeenCalledTimes(1)
    expect(old.mock.calls[0]?.[0].latest(MINUTE, 'a', 10)).toBeNull()
  })

  it('leaves the engine once its last window listener is gone, and starts afresh after', () => {
    const { engine, scheduler, feed } = feedOf()
    const stops = Array.from({ length: 100 }, (_, i) =>
      feed.subscribe(() => {}, { window: MINUTE, key: `k${i}`, start: i * 60_000 }),
    )
    expect(engine.listenerCount).toBe(1)
    engine.emit(MINUTE, 'k0', 0, 1)
    for (const stop of stops) {
      stop()
      stop() // a second call is harmless
    }
    expect(engine.listenerCount).toBe(0)
    expect(scheduler.pending).toBe(0)

    // A new listener starts from an empty index and a fresh engine subscription.
    const again = vi.fn<(frame: EngineFrame) => void>()
    feed.subscribe(again, { window: MINUTE, key: 'k0', start: 0 })
    expect(engine.listenerCount).toBe(1)
    engine.emit(MINUTE, 'k0', 0, 2)
    scheduler.flush()
    expect(again).toHaveBeenCalledTimes(1)
  })

  it('keeps what waits for a frame bounded while frames do not run, and the next frame shows the same', () => {
    const { engine, scheduler, feed } = feedOf()
    const seen = new Map<string, EngineFrame>()
    const watch = (key: string, start: number): void => {
      feed.subscribe((frame) => seen.set(`${key}@${start}`, frame), { window: MINUTE, key, start })
    }
    watch('k0', 0)
    watch('k0', 60_000)
    watch('k1', 0)
    watch('k2', 0)
    let matched = 0
    feed.subscribe((frame) => {
      if (frame.matches({ key: 'k2', from: 0, to: 1 })) matched++
    })

    // A hidden tab: the engine goes on, no frame runs.
    let most = 0
    for (let i = 1; i <= 20_000; i++) {
      engine.emit(MINUTE, `k${i % 10}`, 0, i)
      if (i === 5_000) engine.move(MINUTE, 'k0', 0, 60_000, -1) // k0 moves away, and comes back below
      most = Math.max(most, feed.pending)
    }
    engine.move(MINUTE, 'k2', 0, 60_000, -2) // moved away for good
    expect(most).toBeLessThanOrEqual(2 * 4096)
    expect(feed.pending).toBeLessThanOrEqual(4096)

    scheduler.flush()
    const latest = (key: string, start: number) => seen.get(`${key}@${start}`)?.latest(MINUTE, key, start)
    expect(latest('k0', 0)?.sum).toBe(20_000)
    expect(latest('k0', 60_000)?.sum).toBe(-1)
    expect(latest('k1', 0)?.sum).toBe(19_991)
    expect(latest('k2', 0)).toBeNull()
    expect(matched).toBe(1)
    expect(feed.pending).toBe(0)
  })

  it('in a hidden tab, drops the waiting changes of windows that left live state unless a hook watches them, and makes every query read again', () => {
    const engine = createEngine({ windows: tumbling(1_000), retention: 1_000, maxFutureSkew: Number.POSITIVE_INFINITY, now: () => 0 })
    const scheduler = createManualScheduler()
    const feed = new EngineFeed(engine, scheduler)
    let watched: EngineFrame | undefined
    feed.subscribe((frame) => {
      watched = frame
    }, { window: 'tumbling:1000', key: 'a', start: 0 })
    const matched: boolean[] = []
    feed.subscribe((frame) => matched.push(frame.matches({ key: 'zzz' })))
    let most = 0
    for (let t = 0; t < 20_000; t++) {
      engine.ingest(['a', 'b', 'c', 'd', 'e'].map((key) => ({ id: `${key}${t}`, source: key, ts: t * 1_000 + 500, key, value: 1 })))
      most = Math.max(most, feed.pending)
    }
    // Every window but the last few left live state: what waits is bounded by the live and the watched ones.
    expect(engine.stats().openWindows).toBeLessThanOrEqual(15)
    expect(most).toBeLessThanOrEqual(4096 + 5)
    scheduler.flush()
    // The watched window left too, and still hears its last change (final); a query hook reads again.
    expect(watched?.latest('tumbling:1000', 'a', 0)).toMatchObject({ final: true, count: 1 })
    expect(matched).toEqual([true])
  })

  it('hands a frame to every listener when one throws, and rethrows the first error after', () => {
    const { engine, scheduler, feed } = feedOf()
    const failure = new Error('a reader failed')
    const throwing = vi.fn<(frame: EngineFrame) => void>(() => {
      throw failure
    })
    const every = vi.fn<(frame: EngineFrame) => void>()
    const window = vi.fn<(frame: EngineFrame) => void>()
    feed.subscribe(throwing)
    feed.subscribe(every)
    feed.subscribe(window, { window: MINUTE, key: 'a', start: 0 })
    engine.emit(MINUTE, 'a', 0, 4)
    expect(() => scheduler.flush()).toThrow(failure)
    // The frame's changes left the feed with it: a listener skipped would never see them.
    expect(every).toHaveBeenCalledTimes(1)
    expect(window).toHaveBeenCalledTimes(1)
    expect(window.mock.calls[0]?.[0].latest(MINUTE, 'a', 0)?.sum).toBe(4)
  })

  it('throws what a closed engine throws from subscribe, and keeps nothing of that subscription', async () => {
    const closed = createEngine({ windows: tumbling(60_000) })
    await closed.close()
    expect(() => new EngineFeed(closed, createManualScheduler()).subscribe(() => {})).toThrow('engine is closed')

    // An engine whose subscribe fails, then works: what the failed calls asked for is not kept.
    const engine = new RefusingEngine()
    const { scheduler, feed } = feedOf(engine)
    const refused = vi.fn<(frame: EngineFrame) => void>()
    const refusedWindow = vi.fn<(frame: EngineFrame) => void>()
    engine.refusing = true
    expect(() => feed.subscribe(refused)).toThrow('engine is closed')
    expect(() => feed.subscribe(refusedWindow, { window: MINUTE, key: 'a', start: 0 })).toThrow('engine is closed')
    engine.refusing = false
    const later = vi.fn<(frame: EngineFrame) => void>()
    const stop = feed.subscribe(later, { window: MINUTE, key: 'a', start: 0 })
    engine.emit(MINUTE, 'a', 0, 1)
    scheduler.flush()
    expect(later).toHaveBeenCalledTimes(1)
    expect(refused).not.toHaveBeenCalled()
    expect(refusedWindow).not.toHaveBeenCalled()
    stop()
    expect(engine.listenerCount).toBe(0)
  })

  it('an observer whose subscribe threw keeps nothing of it either (a hook mounted over a closed engine)', () => {
    const engine = new RefusingEngine()
    const { scheduler, feed } = feedOf(engine)
    const observer = new EngineObserver(feed, windowSlice(MINUTE, 'a', 0))
    const refused = vi.fn<() => void>()
    engine.refusing = true
    expect(() => observer.subscribe(refused)).toThrow('engine is closed')
    engine.refusing = false
    const later = vi.fn<() => void>()
    const stop = observer.subscribe(later)
    engine.emit(MINUTE, 'a', 0, 1)
    scheduler.flush()
    expect(later).toHaveBeenCalledTimes(1)
    expect(refused).not.toHaveBeenCalled()
    stop()
    expect(engine.listenerCount).toBe(0)
  })
})

/** A fake engine whose `subscribe` throws, as a closed engine's does, while `refusing`. */
class RefusingEngine extends FakeEngine {
  refusing = false

  override subscribe(listener: Parameters<FakeEngine['subscribe']>[0]): () => void {
    if (this.refusing) throw new Error('engine is closed')
    return super.subscribe(listener)
  }
}
