import { describe, expect, it } from 'vitest'
import { boundedOutOfOrderness, type Engine, manual, session, type StreamEvent, tumbling, type WindowChange } from '@tidemark/engine'
import type { HostEngineOptions } from '../src/host/hostOptions.ts'
import { MAX_BACKLOG_PANES } from '../src/host/hostClient.ts'
import { settle } from './fakeTimers.ts'
import { type TestHost, type TestPage, type Wire, World } from './hostHarness.ts'

function wires(page: TestPage): { toHost: Wire; toPage: Wire } {
  const { toHost, toPage } = page.connector
  if (toHost === null || toPage === null) throw new Error('the page has no link')
  return { toHost, toPage }
}

function hosted(world: World, options: Partial<HostEngineOptions>): TestHost {
  return world.host({ name: 'fleet', engine: { windows: tumbling(10), watermark: manual() }, log: false, ...options })
}

/** Everything a page can read, as plain data. */
function reads(engine: Pick<Engine, 'results' | 'watermark' | 'lateEvents' | 'stats'>) {
  const { walRecords: _r, walBytes: _b, ...stats } = engine.stats()
  return { results: engine.results(), watermark: engine.watermark(), lateEvents: engine.lateEvents(), stats }
}

/**
 * The page stops acknowledging; 22 batches of 1,000 tumbling windows (key 'k', ts 20 .. 220,010)
 * open, fire and expire meanwhile: its backlog outgrows the live windows by MAX_BACKLOG_PANES.
 */
async function freezeUntilResync(world: World, page: TestPage, host: TestHost): Promise<void> {
  wires(page).toHost.drop.add('ack')
  const batch = 1_000
  for (let b = 0; b < 22; b++) {
    const from = 2 + b * batch
    void page.engine.ingest(Array.from({ length: batch }, (_, i) => ({ id: `d1#${from + i}`, source: 'd1', ts: (from + i) * 10, key: 'k', value: 1 })))
    await world.run(20)
    void page.engine.advanceWatermark((from + batch) * 10)
    await world.run(20)
  }
  if (host.host.backlog !== 0) throw new Error('no resync is due')
}

/** A world whose host runs an engine with `engine` (over the defaults of `hosted`), and a page it welcomed. */
async function connected(engine: HostEngineOptions['engine']): Promise<{ world: World; host: TestHost; page: TestPage; engine: Engine }> {
  const world = new World()
  const host = hosted(world, { engine })
  const page = world.page(() => host)
  await world.run()
  await page.engine.ready
  return { world, host, page, engine: host.host.engine as Engine }
}

/** A page that stopped acknowledging reads again: it acknowledges the last frame it applied (its ack was dropped). */
async function thaw(world: World, page: TestPage): Promise<void> {
  wires(page).toHost.drop.delete('ack')
  page.connector.link?.send({ t: 'ack', frame: 3 })
  await world.run(100)
}

/** What the page's feed said of key `key`, as plain data. */
function of(changes: readonly WindowChange[], key: string): unknown[] {
  return changes.filter((c) => c.result.key === key).map((c) => [c.type, c.result.pane.index, c.result.count, c.previous?.count])
}

const discarding = { windows: tumbling(10), watermark: manual(), accumulation: 'discarding' as const, allowedLateness: 50, retention: 0 }

describe('frames of the whole state: a page whose backlog outgrew the live windows, a page welcomed', () => {
  it('sends a page whose backlog outgrew the live windows the whole state instead, which replaces its own', async () => {
    const { world, host, page, engine } = await connected({ windows: tumbling(10), watermark: manual(), allowedLateness: 50, retention: 0 })
    const reading = (n: number, key = 'k'): StreamEvent => ({ id: `d1#${n}`, source: 'd1', ts: n * 10, key, value: n })
    // Shown on the page before it freezes: a window that fires, turns final and expires meanwhile, and one that stays live.
    await page.engine.ingest([reading(0, 'gone'), reading(30_000, 'watched')])
    await world.run(20)
    expect(page.engine.results().map((r) => [r.key, r.status])).toEqual([['gone', 'provisional'], ['watched', 'provisional']])
    expect(page.engine.history('tumbling:10', 'watched', 300_000)).toEqual([])
    await world.run(20)
    const seen: WindowChange[] = []
    page.engine.subscribe((changes) => seen.push(...changes))
    wires(page).toHost.drop.add('ack')
    // Frozen while 22,000 windows open, fire and expire, and the watched one gets a late reading.
    let most = 0
    const batch = 1_000
    for (let b = 0; b < 22; b++) {
      const from = 2 + b * batch
      void page.engine.ingest(Array.from({ length: batch }, (_, i) => reading(from + i)))
      await world.run(20)
      void page.engine.advanceWatermark((from + batch) * 10)
      await world.run(20)
      most = Math.max(most, host.host.backlog - engine.stats().openWindows)
    }
    void page.engine.advanceWatermark(300_010)
    await world.run(20)
    void page.engine.ingest([{ id: 'late', source: 'd2', ts: 300_005, key: 'watched', value: 99 }])
    await world.run(20)
    expect(engine.results({ key: 'watched' })).toMatchObject([{ status: 'corrected', final: false, count: 2 }])
    expect(engine.results({ key: 'gone' })).toEqual([])
    expect(most).toBeLessThanOrEqual(MAX_BACKLOG_PANES)
    expect(host.host.backlog).toBe(0)
    // It thaws: one frame replaces what it shows.
    seen.length = 0
    await thaw(world, page)
    expect(reads(page.engine)).toEqual(reads(engine))
    // The window that expired meanwhile leaves as at that watermark, without a retraction; the watched one shows its correction and whole history.
    expect(seen.filter((c) => c.type === 'retract')).toEqual([])
    expect(seen.some((c) => c.result.key === 'gone')).toBe(false)
    expect(seen.filter((c) => c.result.key === 'watched').map((c) => [c.type, c.result.count])).toEqual([['correction', 2]])
    expect(page.engine.history('tumbling:10', 'watched', 300_000)).toEqual(engine.history('tumbling:10', 'watched', 300_000))
    expect(page.engine.history('tumbling:10', 'watched', 300_000).map((r) => [r.status, r.count])).toEqual([['on_time', 1], ['corrected', 2]])
  }, 60_000)

  it('a page that keeps up is not resynced by one tick that touched many windows (a backfill): it sees every window fire', async () => {
    // A backfill: one batch of history spanning 21,000 windows; the watermark follows the events,
    // so they all fire, turn final and leave live state within that one batch.
    const { world, page, engine } = await connected({ windows: tumbling(10), watermark: boundedOutOfOrderness(0), retention: 0 })
    const emitted = new Set<number>()
    engine.subscribe((changes) => {
      for (const c of changes) if (c.result.final) emitted.add(c.result.start)
    })
    const seen = new Set<number>()
    page.engine.subscribe((changes) => {
      for (const c of changes) if (c.result.final) seen.add(c.result.start)
    })
    await world.run(50)
    // The page acknowledges every frame: nothing waits for it.
    const backfill: StreamEvent[] = Array.from({ length: 21_001 }, (_, n) => ({ id: `d1#${n}`, source: 'd1', ts: n * 10, key: 'k', value: n }))
    await (await page.engine.ingest(backfill)).durable
    await world.run(200)
    expect(engine.stats().openWindows).toBeLessThanOrEqual(1)
    expect(emitted.size).toBe(21_000)
    expect(reads(page.engine)).toEqual(reads(engine))
    // All of them reach the page in the next frame: a whole-state frame would hold none of them
    // (they left live state), and the page's feed would never show them.
    expect(seen.size).toBe(21_000)
  }, 60_000)

  it('retracts a session the engine withdrew while the page was frozen when its successor is live, though its stale end is past the watermark', async () => {
    // A session spec beside a tumbling one whose windows fill the backlog while the page is frozen.
    const { world, host, page, engine } = await connected({ windows: [session(300), tumbling(10)], watermark: manual(), allowedLateness: 50, retention: 0 })
    const reading = (n: number, ts = n * 10): StreamEvent => ({ id: `d1#${n}`, source: 'd1', ts, key: 's', value: 1 })
    // Shown on the page before it freezes: a session at 1,000 [1000, 1300), not final.
    await page.engine.ingest([reading(0, 1_000)])
    await world.run(40)
    const sessionId = (page.engine.results().find((r) => !r.window.startsWith('tumbling')) as { window: string }).window
    expect(page.engine.results({ window: sessionId }).map((r) => [r.start, r.end, r.final])).toEqual([[1_000, 1_300, false]])
    const engineSaid: WindowChange[] = []
    engine.subscribe((changes) => engineSaid.push(...changes.filter((c) => c.result.window === sessionId)))
    const seen: WindowChange[] = []
    page.engine.subscribe((changes) => seen.push(...changes))
    wires(page).toHost.drop.add('ack')
    // Frozen. Its two unacknowledged frames go out (another key's readings); then a reading at 800
    // joins the session, whose start moves to 800 (the engine retracts the one at 1,000) ...
    for (const ts of [1_001, 1_002]) {
      void page.engine.ingest([{ id: `o#${ts}`, source: 'o', ts, key: 'other', value: 1 }])
      await world.run(20)
    }
    void page.engine.ingest([reading(1, 800)])
    await world.run(20)
    expect(seen.filter((c) => c.result.window === sessionId && c.result.key === 's')).toEqual([])
    // ... and readings every 10 ms keep that session open while 22,000 tumbling windows open, fire and expire.
    const batch = 1_000
    for (let b = 0; b < 22; b++) {
      const from = 101 + b * batch
      void page.engine.ingest(Array.from({ length: batch }, (_, i) => reading(from + i)))
      await world.run(20)
      void page.engine.advanceWatermark((from + batch) * 10)
      await world.run(20)
    }
    expect(host.host.backlog).toBe(0) // the backlog was dropped: a resync is due
    expect(engine.results({ window: sessionId }).map((r) => [r.start, r.final])).toEqual([[800, false]])
    // The engine retracted the session at 1,000 and showed it at 800.
    expect(engineSaid.some((c) => c.type === 'retract' && c.result.start === 1_000)).toBe(true)
    // It thaws.
    await thaw(world, page)
    expect(reads(page.engine)).toEqual(reads(engine))
    const sessionChanges = seen.filter((c) => c.result.window === sessionId && c.result.key === 's').map((c) => [c.type, c.result.start, c.previous?.start])
    // The session at 800 that swallowed the one at 1,000 arrives as a new window: the one at 1,000
    // must leave with a retraction (its end on the page is past the watermark, but it did not expire).
    expect(sessionChanges.filter((c) => c[1] === 800).map((c) => c[0])).toEqual(['provisional'])
    expect(sessionChanges).toContainEqual(['retract', 1_000, undefined])
  }, 60_000)

  it('discarding: a pane the engine emitted between a tick and the ack that sends the whole state reaches the page once', async () => {
    const { world, host, page, engine } = await connected(discarding)
    const w = (n: number): StreamEvent => ({ id: `w#${n}`, source: 'w', ts: 1_000_000 + n, key: 'w', value: 1 })
    await page.engine.ingest([w(0)])
    await world.run(40)
    await freezeUntilResync(world, page, host)
    const emitted: WindowChange[] = []
    engine.subscribe((changes) => emitted.push(...changes))
    const seen: WindowChange[] = []
    page.engine.subscribe((changes) => seen.push(...changes))
    // It thaws just after a reading reached the host, before the host's next tick.
    wires(page).toHost.drop.delete('ack')
    void page.engine.ingest([w(1)])
    await settle()
    await settle()
    expect(of(emitted, 'w')).toEqual([['provisional', 1, 1, undefined]])
    page.connector.link?.send({ t: 'ack', frame: 3 })
    await world.run(100)
    expect(reads(page.engine)).toEqual(reads(engine))
    // The whole-state frame is read at a tick, with that tick's changes: the pane is not sent twice.
    expect(of(seen, 'w')).toEqual([['provisional', 1, 1, undefined]])
  }, 60_000)

  it('discarding: a watched window that did not change while the page was frozen gets no change from the whole-state frame', async () => {
    const { world, host, page, engine } = await connected(discarding)
    await page.engine.ingest([{ id: 'w#0', source: 'w', ts: 1_000_000, key: 'w', value: 1 }])
    await world.run(40)
    expect(page.engine.history('tumbling:10', 'w', 1_000_000)).toEqual([])
    await world.run(40)
    const emitted: WindowChange[] = []
    engine.subscribe((changes) => emitted.push(...changes))
    const seen: WindowChange[] = []
    page.engine.subscribe((changes) => seen.push(...changes))
    await freezeUntilResync(world, page, host)
    await thaw(world, page)
    expect(reads(page.engine)).toEqual(reads(engine))
    expect(page.engine.history('tumbling:10', 'w', 1_000_000)).toEqual(engine.history('tumbling:10', 'w', 1_000_000))
    expect(of(emitted, 'w')).toEqual([])
    // Its pane is not published again: a consumer adding up discarding panes would count it twice.
    expect(of(seen, 'w')).toEqual([])
  }, 60_000)

  it('accumulating: after the whole-state frame the late lane, stats and histories are the engine\'s, watches sent during the freeze included', async () => {
    const { world, host, page, engine } = await connected({ windows: tumbling(10), watermark: manual(), allowedLateness: 50, retention: 0, limits: { maxLateEvents: 5 } })
    await page.engine.ingest([{ id: 'w#0', source: 'w', ts: 1_000_000, key: 'w', value: 1 }])
    await world.run(40)
    await freezeUntilResync(world, page, host)
    // While it is frozen (its backlog dropped): readings beyond lateness fill the late lane past its bound,
    // it watches a live window and one that does not exist yet, and the live one changes.
    void page.engine.ingest(Array.from({ length: 8 }, (_, i) => ({ id: `late#${i}`, source: 'l', ts: i * 10, key: 'k', value: i })))
    expect(page.engine.history('tumbling:10', 'w', 1_000_000)).toEqual([])
    expect(page.engine.history('tumbling:10', 'w', 1_000_010)).toEqual([])
    await world.run(20)
    void page.engine.advanceWatermark(1_000_010)
    await world.run(20)
    void page.engine.ingest([{ id: 'w#1', source: 'w', ts: 1_000_001, key: 'w', value: 1 }])
    await world.run(20)
    expect(host.host.backlog).toBe(0)
    expect(engine.lateEvents()).toHaveLength(5)
    await thaw(world, page)
    expect(reads(page.engine)).toEqual(reads(engine))
    expect(page.engine.history('tumbling:10', 'w', 1_000_000)).toEqual(engine.history('tumbling:10', 'w', 1_000_000))
    expect(page.engine.history('tumbling:10', 'w', 1_000_000).map((r) => [r.status, r.count])).toEqual([['on_time', 1], ['corrected', 2]])
    // The window that does not exist yet stays watched: when it opens and fires, its history arrives.
    void page.engine.ingest([{ id: 'w#2', source: 'w', ts: 1_000_012, key: 'w', value: 1 }])
    await world.run(20)
    void page.engine.advanceWatermark(1_000_020)
    await world.run(40)
    expect(page.engine.history('tumbling:10', 'w', 1_000_010)).toEqual(engine.history('tumbling:10', 'w', 1_000_010))
    expect(page.engine.history('tumbling:10', 'w', 1_000_010)).toHaveLength(1)
    expect(reads(page.engine)).toEqual(reads(engine))
  }, 60_000)

  it('discarding: a page welcomed between a change and the next tick gets that pane once', async () => {
    const { world, host, page: first, engine } = await connected(discarding)
    const emitted: WindowChange[] = []
    engine.subscribe((changes) => emitted.push(...changes))
    void first.engine.ingest([{ id: 'w#0', source: 'w', ts: 1_000_000, key: 'w', value: 1 }])
    await settle()
    await settle()
    expect(of(emitted, 'w')).toEqual([['provisional', 0, 1, undefined]])
    // A second tab opens now, before the host's next tick.
    const second = world.page(() => host)
    const seen: WindowChange[] = []
    second.engine.subscribe((changes) => seen.push(...changes))
    await world.run(100)
    await second.engine.ready
    expect(reads(second.engine)).toEqual(reads(engine))
    expect(of(seen, 'w')).toEqual([['provisional', 0, 1, undefined]])
  })
})
