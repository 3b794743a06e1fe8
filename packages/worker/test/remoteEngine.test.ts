import { isDeepStrictEqual } from 'node:util'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  type Accumulation,
  afterProcessingTime,
  alignedProcessingTime,
  boundedOutOfOrderness,
  type AggregateDefinitions,
  cumulating,
  createManualScheduler,
  defineAggregate,
  distinct,
  histogram,
  latest,
  quantiles,
  EngineFeed,
  EngineObserver,
  type Engine,
  everyElement,
  manual,
  never,
  session,
  type StreamEvent,
  sliding,
  tumbling,
  type WindowChange,
  windowHistorySlice,
  type WindowResult,
  windowSlice,
} from '@tidemark/engine'
import type { WindowAddress } from '../src/common/windowAddress.ts'
import { assertSeededAsync } from '@tidemark/seeded-random/property'
import { MAX_BACKLOG_PANES } from '../src/host/hostClient.ts'
import type { HostEngineOptions } from '../src/host/hostOptions.ts'
import type { RemoteEngine } from '../src/page/remoteEngine.ts'
import { type TestHost, type TestPage, type Wire, World } from './hostHarness.ts'

const FILE = 'packages/worker/test/remoteEngine.test.ts'

const windows = { windows: [tumbling(1_000), sliding(1_000, 500), session(300)], watermark: boundedOutOfOrderness(200), allowedLateness: 500, retention: 2_000 }

function readings(source: string, from: number, count: number, ts: (seq: number) => number = (seq) => seq * 10): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${source}#${from + i}`, source, seq: from + i, ts: ts(from + i), key: `k${(from + i) % 3}`, value: (from + i) % 7 }))
}

/** The two wires of a page's link to its host. */
function wires(page: TestPage): { toHost: Wire; toPage: Wire } {
  const { toHost, toPage } = page.connector
  if (toHost === null || toPage === null) throw new Error('the page has no link')
  return { toHost, toPage }
}

async function hosted(world: World, options: Partial<HostEngineOptions> = {}): Promise<TestHost> {
  const host = world.host({ name: 'fleet', engine: windows, log: false, ...options })
  return host
}

/** Everything a page can read, as plain data. */
function reads(engine: Pick<Engine, 'results' | 'watermark' | 'lateEvents' | 'stats'>) {
  const { walRecords: _r, walBytes: _b, ...stats } = engine.stats()
  return { results: engine.results(), watermark: engine.watermark(), lateEvents: engine.lateEvents(), stats }
}

const op = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('batch' as const),
      source: fc.constantFrom('d1', 'd2'),
      count: fc.integer({ min: 1, max: 30 }),
      jitter: fc.integer({ min: 0, max: 900 }),
      // The source's clock jumps ahead first: sessions with gaps, which late readings then join.
      hole: fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 300, max: 1_500 }) }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resend' as const), source: fc.constantFrom('d1', 'd2'), back: fc.integer({ min: 1, max: 20 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('advance' as const), by: fc.integer({ min: 0, max: 3_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('frame' as const) }) },
  // Processing time passes and the host ticks: processing-time triggers fire their panes.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), by: fc.integer({ min: 0, max: 600 }) }) },
  // The page freezes for the next few steps: what it sends and what it is sent wait, then arrive in order.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('freeze' as const), steps: fc.integer({ min: 1, max: 8 }) }) },
  // A second tab opens (the first time only), at whatever point the host's frames are.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('open' as const) }) },
)

const SPECS = { tumbling: tumbling(1_000), sliding: sliding(1_000, 500), session: session(300), cumulating: cumulating(1_000, 250) }

/** Engine options as apps give them: some of the specs, triggers, accumulation. */
const engineConfig = fc.record({
  specs: fc.subarray(['tumbling', 'sliding', 'session', 'cumulating'] as const, { minLength: 1 }),
  early: fc.oneof(
    fc.constant(everyElement()),
    fc.constant(never()),
    fc.integer({ min: 0, max: 400 }).map((ms) => afterProcessingTime(ms)),
    fc.integer({ min: 50, max: 500 }).map((ms) => alignedProcessingTime(ms)),
  ),
  late: fc.oneof(fc.constant(everyElement()), fc.constant(never()), fc.integer({ min: 0, max: 400 }).map((ms) => afterProcessingTime(ms))),
  accumulation: fc.constantFrom<Accumulation>('accumulating', 'discarding'),
  // None of them: results without an `aggregates` field, as without the option.
  aggregates: fc.subarray(['p', 'devices', 'last', 'spread'] as const),
})

const AGGREGATES = {
  p: quantiles({ at: [0.5, 0.95] }),
  devices: distinct({ of: (event) => event.source }),
  last: latest(),
  spread: histogram({ bounds: [1, 3, 5] }),
}

/** The `aggregates` option of the drawn names (none: no option). */
function aggregatesOf(names: readonly (keyof typeof AGGREGATES)[]): { aggregates?: AggregateDefinitions } {
  return names.length === 0 ? {} : { aggregates: Object.fromEntries(names.map((name) => [name, AGGREGATES[name]])) }
}

/** A change as plain data: what a consumer of the stream reads. */
function plain(change: WindowChange): unknown {
  const { type, result, pane, previous } = change
  return previous === undefined ? { type, result, pane } : { type, result, pane, previous }
}

/** A change as plain data without its `previous`. */
function bare(change: WindowChange | undefined): unknown {
  return change === undefined ? undefined : { type: change.type, result: change.result, pane: change.pane }
}

/** `changes` without the ones that repeat their window's last change (the same result object). */
function withoutRepeats(changes: readonly WindowChange[]): WindowChange[] {
  const last = new Map<string, WindowResult>()
  return changes.filter(({ type, result }) => {
    const id = windowId(result)
    // A retraction names the result shown last: the same object, and no repeat.
    if (type !== 'retract' && last.get(id) === result) return false
    last.set(id, result)
    return true
  })
}

function windowId({ window, key, start, end }: WindowResult): string {
  return `${window}|${key}|${start}${window.startsWith('cumulating:') ? `|${end}` : ''}`
}

/** Changes per window (spec, key, start, and a cumulating window's end), oldest first. */
function perWindow(changes: readonly WindowChange[]): Map<string, WindowChange[]> {
  const by = new Map<string, WindowChange[]>()
  for (const change of changes) {
    const id = windowId(change.result)
    const list = by.get(id)
    if (list === undefined) by.set(id, [change])
    else list.push(change)
  }
  return by
}

describe('a page mirroring a hosted engine', () => {
  it('reads what the engine holds: windows (sessions, cumulating, expiry, panes), watermark, late lane, stats, watched histories; its changes are the engine\'s', async () => {
    await assertSeededAsync(
      fc.asyncProperty(engineConfig, fc.array(op, { minLength: 5, maxLength: 60 }), fc.nat(), fc.nat(), async (config, ops, watchAt, pick) => {
        const world = new World()
        const host = await hosted(world, {
          engine: {
            ...windows,
            windows: config.specs.map((spec) => SPECS[spec]),
            trigger: { early: config.early, late: config.late },
            accumulation: config.accumulation,
            now: () => world.time.now,
            ...aggregatesOf(config.aggregates),
          },
        })
        const page = world.page(() => host)
        await world.run()
        await page.engine.ready
        const engine = host.host.engine as Engine
        const emitted: WindowChange[] = []
        engine.subscribe((changes) => emitted.push(...changes))
        const mirrored: WindowChange[] = []
        page.engine.subscribe((changes) => mirrored.push(...changes))
        const next = new Map([['d1', 1], ['d2', 1]])
        const shift = new Map([['d1', 0], ['d2', 0]])
        let watched: WindowAddress | null = null
        let thawAt = -1
        // The second tab: what its feed said after its first frame, and how many changes the engine had emitted when it was welcomed.
        let second: TestPage | null = null
        const secondSaw: WindowChange[] = []
        let welcomedAt = -1
        const receive = host.host.receive.bind(host.host)
        ;(host.host as { receive: typeof receive }).receive = (link, data) => {
          receive(link, data)
          if (second !== null && welcomedAt < 0 && (data as { t?: string }).t === 'hello' && host.host.clients === 2) welcomedAt = emitted.length
        }
        for (const [i, step] of ops.entries()) {
          if (step.kind === 'batch') {
            const from = next.get(step.source) as number
            next.set(step.source, from + step.count)
            const ahead = (shift.get(step.source) as number) + step.hole
            shift.set(step.source, ahead)
            // Mostly rising, some readings far behind: corrections, late lane, session merges.
            void page.engine.ingest(readings(step.source, from, step.count, (seq) => ahead + seq * 40 - (seq % 5 === 0 ? step.jitter : 0)))
          } else if (step.kind === 'resend') {
            const to = (next.get(step.source) as number) - 1
            const ahead = shift.get(step.source) as number
            if (to >= 1) void page.engine.ingest(readings(step.source, Math.max(1, to - step.back), Math.min(step.back, to), (seq) => ahead + seq * 40))
          } else if (step.kind === 'advance') void page.engine.advanceWatermark(engine.watermark() + step.by)
          else if (step.kind === 'tick') {
            await world.run(step.by)
            void page.engine.tick()
          } else if (step.kind === 'freeze') {
            if (thawAt < 0) {
              wires(page).toHost.held = true
              wires(page).toPage.held = true
              thawAt = i + step.steps
            }
          } else if (step.kind === 'open') {
            if (second === null) {
              const opened = world.page(() => host)
              second = opened
              opened.engine.subscribe((changes) => {
                if (opened.engine.connection().state === 'connected') secondSaw.push(...changes)
              })
            }
          } else await world.run(20)
          if (thawAt >= 0 && i >= thawAt) {
            thawAt = -1
            wires(page).toHost.release()
            wires(page).toPage.release()
          }
          if (i >= watchAt % ops.length && watched === null) {
            const live = page.engine.results()
            const chosen = live[pick % Math.max(1, live.length)]
            if (chosen !== undefined) {
              const { window, key, start, end } = chosen
              watched = window.startsWith('cumulating:') ? { window, key, start, end } : { window, key, start }
              page.engine.history(window, key, start, watched.end)
            }
          }
        }
        if (thawAt >= 0) {
          wires(page).toHost.release()
          wires(page).toPage.release()
        }
        await world.run(200)
        expect(reads(page.engine)).toEqual(reads(engine))
        if (second !== null) {
          const opened = second as TestPage
          expect(reads(opened.engine)).toEqual(reads(engine))
          expect(welcomedAt).toBeGreaterThanOrEqual(0)
          // Past its first frame (the whole state), the second tab is sent what the engine emitted since: once each.
          if (config.accumulation === 'discarding') expect(withoutRepeats(secondSaw).map(plain)).toEqual(emitted.slice(welcomedAt).map(plain))
        }
        if (watched !== null) {
          const { window, key, start, end } = watched
          expect(page.engine.history(window, key, start, end)).toEqual(engine.history(window, key, start, end))
        }
        expect(mirrored.every((change) => change.pane === change.result.pane)).toBe(true)
        // A watched history that arrives with no change of its window repeats the window's result
        // (so views re-read it): the same object as the page's change before it.
        const own = withoutRepeats(mirrored)
        if (config.accumulation === 'discarding') {
          // Every pane is an increment a consumer adds up: each one reaches the page, as and in the order the engine emitted it.
          expect(own.map(plain)).toEqual(emitted.map(plain))
          return
        }
        // Accumulating: a frame carries a window's last change; each of them is one the engine
        // emitted, in its order, the last one included, and a correction's previous is what the page
        // held. A retraction withdraws what the page showed, where the engine withdrew the window:
        // a window born and withdrawn within one frame is never shown, nor retracted.
        const ownChanges = perWindow(own)
        const engineChanges = perWindow(emitted)
        expect([...ownChanges.keys()].filter((id) => !engineChanges.has(id))).toEqual([])
        for (const [id, changes] of engineChanges) {
          const mine = ownChanges.get(id) ?? []
          if (mine.length === 0) {
            expect(changes.at(-1)?.type, `${id}: never shown on the page`).toBe('retract')
            continue
          }
          let at = 0
          for (const [i, change] of mine.entries()) {
            const held = mine[i - 1]
            const shown = held !== undefined && held.type !== 'retract' ? held.result : undefined
            if (change.type === 'retract') {
              expect(change.result, `${id}: a retraction names what the page showed`).toEqual(shown)
              while (at < changes.length && changes[at]?.type !== 'retract') at++
            } else {
              while (at < changes.length && !isDeepStrictEqual(bare(changes[at]), bare(change))) at++
            }
            expect(at, `${id}: page change ${i} (${change.type}) is not among the engine's`).toBeLessThan(changes.length)
            expect(change.previous, id).toEqual(change.type === 'correction' ? shown : undefined)
            at++
          }
          if (changes.at(-1)?.type === 'retract') expect(mine.at(-1)?.type, id).toBe('retract')
          else expect(bare(mine.at(-1)), id).toEqual(bare(changes.at(-1)))
        }
      }),
      FILE,
      'reads what the engine holds',
      60,
    )
  }, 120_000)

  it('passes on every discarding pane as the engine emitted it: several in one frame, an empty on-time pane, a pane carrying the whole window with its previous', async () => {
    const world = new World()
    const host = await hosted(world, { engine: { windows: session(300), watermark: manual(), allowedLateness: 2_000, accumulation: 'discarding' } })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const engine = host.host.engine as Engine
    const emitted: WindowChange[] = []
    engine.subscribe((changes) => emitted.push(...changes))
    const frames: WindowChange[][] = []
    page.engine.subscribe((changes) => frames.push([...changes]))
    // No seq: the source proves nothing, so only the (manual) watermark fires windows.
    const event = (n: number, ts: number, value: number): StreamEvent => ({ id: `d1#${n}`, source: 'd1', ts, key: 'k', value })
    // Two batches before the next frame: two early panes of the session at 0, both sent.
    void page.engine.ingest([event(1, 0, 1), event(2, 550, 2)])
    void page.engine.ingest([event(3, 100, 4)])
    await world.run()
    expect(frames).toHaveLength(1)
    expect(frames[0]?.filter((c) => c.result.start === 0).map((c) => [c.type, c.result.count, c.result.sum, c.pane])).toEqual([
      ['provisional', 1, 1, { timing: 'early', index: 0, onTimeIndex: -1 }],
      ['provisional', 1, 4, { timing: 'early', index: 1, onTimeIndex: -1 }],
    ])
    // The session at 0 fires with nothing new since its last pane: an empty on-time pane.
    await page.engine.advanceWatermark(450)
    await world.run()
    expect(page.engine.results({ key: 'k', from: 0, to: 1 })[0]).toMatchObject({ status: 'on_time', count: 0, sum: 0, pane: { timing: 'on_time', index: 2, onTimeIndex: 0 } })
    // A reading between the sessions joins them: the session at 0 carries its whole value again, with the pane it replaces.
    void page.engine.ingest([event(4, 280, 8)])
    await world.run()
    const whole = frames.flat().find((c) => c.previous !== undefined)
    expect(whole).toMatchObject({ type: 'correction', result: { start: 0, count: 4, sum: 15 }, previous: { status: 'on_time', count: 0 } })
    expect(frames.flat().map(plain)).toEqual(emitted.map(plain))
    expect(page.engine.results()).toEqual(engine.results())
  })

  it('keeps the windows of a cumulating spec apart by their end: results, history, window slices, expiry', async () => {
    const world = new World()
    const host = await hosted(world, { engine: { windows: cumulating(1_000, 250), watermark: manual(), allowedLateness: 500, retention: 1_000 } })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const engine = host.host.engine as Engine
    const scheduler = createManualScheduler()
    const feed = new EngineFeed(page.engine, scheduler)
    const quarter = new EngineObserver(feed, windowSlice('cumulating:1000:250', 'k1', 0, 250))
    const half = new EngineObserver(feed, windowSlice('cumulating:1000:250', 'k1', 0, 500))
    const halfHistory = new EngineObserver(feed, windowHistorySlice('cumulating:1000:250', 'k1', 0, 500))
    quarter.subscribe(() => {})
    half.subscribe(() => {})
    halfHistory.subscribe(() => {})
    await page.engine.ingest(readings('d1', 1, 12, (seq) => seq * 20))
    await world.run()
    scheduler.flush()
    expect(page.engine.results({ key: 'k1' }).map((r) => [r.start, r.end])).toEqual([
      [0, 250],
      [0, 500],
      [0, 750],
      [0, 1_000],
    ])
    expect([quarter.getSnapshot()?.end, quarter.getSnapshot()?.count, half.getSnapshot()?.end, half.getSnapshot()?.count]).toEqual([250, 4, 500, 4])
    await page.engine.advanceWatermark(500)
    await world.run()
    // A late reading in [250, 500) corrects the half and everything after it, not the quarter.
    await page.engine.ingest([{ id: 'late', source: 'd2', ts: 300, key: 'k1', value: 6 }])
    await world.run()
    scheduler.flush()
    expect(halfHistory.getSnapshot().map((r) => [r.end, r.status, r.count, r.pane.timing])).toEqual([
      [500, 'on_time', 4, 'on_time'],
      [500, 'corrected', 5, 'late'],
    ])
    expect(page.engine.history('cumulating:1000:250', 'k1', 0, 250)).toEqual(engine.history('cumulating:1000:250', 'k1', 0, 250))
    await world.run()
    expect(page.engine.history('cumulating:1000:250', 'k1', 0, 250).map((r) => [r.end, r.count])).toEqual([[250, 4]])
    // Without an end, the window covering the whole period, as on the engine.
    page.engine.history('cumulating:1000:250', 'k1', 0)
    await page.engine.advanceWatermark(1_200)
    await world.run()
    expect(page.engine.history('cumulating:1000:250', 'k1', 0)).toEqual(engine.history('cumulating:1000:250', 'k1', 0))
    expect(page.engine.history('cumulating:1000:250', 'k1', 0).at(-1)?.end).toBe(1_000)
    // Each window leaves at its own end + lateness + retention: [0, 250) and [0, 500) by 2,000, the others later.
    await page.engine.advanceWatermark(2_000)
    await world.run()
    expect(page.engine.results({ key: 'k1' }).map((r) => r.end)).toEqual([750, 1_000])
    expect(page.engine.results()).toEqual(engine.results())
    expect(page.engine.history('tumbling:1000', 'k1', 0, 999)).toEqual([])
  })

  it('feeds EngineFeed observers as an engine does: a window slice changes only in frames that changed its window', async () => {
    const world = new World()
    const host = await hosted(world)
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const scheduler = createManualScheduler()
    const feed = new EngineFeed(page.engine, scheduler)
    const minute = new EngineObserver(feed, windowSlice('tumbling:1000', 'k1', 0))
    const other = new EngineObserver(feed, windowSlice('tumbling:1000', 'k1', 5_000))
    const history = new EngineObserver(feed, windowHistorySlice('tumbling:1000', 'k1', 0))
    let renders = 0
    let otherRenders = 0
    minute.subscribe(() => renders++)
    other.subscribe(() => otherRenders++)
    history.subscribe(() => {})
    await page.engine.ingest(readings('d1', 1, 40, (seq) => seq * 20))
    await world.run()
    scheduler.flush()
    expect(minute.getSnapshot()?.count).toBe(page.engine.results({ window: 'tumbling:1000', key: 'k1', from: 0, to: 1 })[0]?.count)
    expect([renders, otherRenders]).toEqual([1, 0])
    await page.engine.advanceWatermark(1_600)
    await world.run()
    scheduler.flush()
    expect(minute.getSnapshot()).toMatchObject({ status: 'on_time', final: true })
    expect(history.getSnapshot().map((r) => r.status)).toEqual(['on_time'])
  })

  it('sends a page that does not acknowledge at most two frames; then one frame with every change since', async () => {
    const world = new World()
    const host = await hosted(world)
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const { toHost } = wires(page)
    let frames = 0
    const count = page.engine.subscribe(() => frames++)
    toHost.drop.add('ack')
    for (let b = 0; b < 20; b++) {
      void page.engine.ingest(readings('d1', 1 + b * 10, 10))
      await world.run(20)
    }
    expect(frames).toBe(2)
    toHost.drop.delete('ack')
    page.engine.subscribe(() => {})
    // The last frame it applied is acknowledged again with the next one: send one by hand.
    page.connector.link?.send({ t: 'ack', frame: 3 })
    await world.run(100)
    count()
    expect(frames).toBeGreaterThanOrEqual(3)
    expect(reads(page.engine)).toEqual(reads(host.host.engine as Engine))
  })

  it('keeps every discarding pane for a page that does not acknowledge, up to a bound; past it, each window\'s last one', async () => {
    const world = new World()
    // One reading at the start of a period changes its 100 cumulating windows: 100 early panes a batch.
    const host = await hosted(world, { engine: { windows: cumulating(1_000, 10), watermark: manual(), accumulation: 'discarding' } })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const engine = host.host.engine as Engine
    const emitted: WindowChange[] = []
    engine.subscribe((changes) => emitted.push(...changes))
    const seen: WindowChange[] = []
    page.engine.subscribe((changes) => seen.push(...changes))
    const batch = (n: number): StreamEvent[] => [{ id: `d1#${n}`, source: 'd1', ts: 5, key: 'k', value: n }]
    const catchUp = async (): Promise<void> => {
      wires(page).toHost.drop.delete('ack')
      // The frames it applied are acknowledged by hand (their acks were dropped).
      page.connector.link?.send({ t: 'ack', frame: 3 })
      await world.run(100)
    }
    wires(page).toHost.drop.add('ack')
    for (let n = 1; n <= 30; n++) {
      void page.engine.ingest(batch(n))
      await world.run(20)
    }
    await catchUp()
    expect(emitted).toHaveLength(3_000)
    expect(seen.map(plain)).toEqual(emitted.map(plain))
    // Past MAX_BACKLOG_PANES the waiting panes are cut down to each window's last one.
    seen.length = 0
    emitted.length = 0
    wires(page).toHost.drop.add('ack')
    for (let n = 31; n <= 260; n++) {
      void page.engine.ingest(batch(n))
      await world.run(20)
    }
    await catchUp()
    expect(emitted).toHaveLength(23_000)
    expect(MAX_BACKLOG_PANES).toBeLessThan(23_000)
    expect(seen.length).toBeLessThan(emitted.length)
    expect(page.engine.results()).toEqual(engine.results())
    expect(page.engine.results().every((r) => r.pane.index === 259 && r.count === 1 && r.sum === 260)).toBe(true)
  }, 60_000)

  it('runs app commands, nextSeq, advanceWatermark and tick on the host', async () => {
    const world = new World()
    const host = world.host({
      name: 'fleet',
      engine: (config) => ({ ...windows, allowedLateness: (config as { lateness: number }).lateness }),
      log: false,
      commands: { double: (payload) => (payload as number) * 2, fail: () => Promise.reject(new RangeError('no such device')) },
    })
    const page = world.page(() => host, { config: { lateness: 700 } })
    await world.run()
    await page.engine.ready
    const commands = Promise.allSettled([page.engine.command('double', 21), page.engine.command('fail'), page.engine.command('missing'), page.engine.nextSeq('d1')])
    await world.run()
    await page.engine.ingest(readings('d1', 1, 5))
    await world.run()
    const [double, fail, missing, seq] = await commands
    expect(double).toEqual({ status: 'fulfilled', value: 42 })
    expect((fail as PromiseRejectedResult).reason).toMatchObject({ name: 'RangeError', message: 'no such device' })
    expect(String((missing as PromiseRejectedResult).reason)).toContain("the host has no command 'missing' (hostEngine({ commands }) lists double, fail)")
    expect(seq).toEqual({ status: 'fulfilled', value: 1 })
    const moved = Promise.all([page.engine.nextSeq('d1'), page.engine.advanceWatermark(1_000).then(() => page.engine.tick())])
    await world.run()
    expect(await moved).toEqual([6, undefined])
    expect(page.engine.watermark()).toBe(1_000)
    expect(page.engine.results({ window: 'tumbling:1000' })[0]?.status).toBe('on_time')
  })

  it('shows each window\'s aggregates as the engine does: in results, in every change (a correction\'s previous too), in a watched history; typed by the aggregates', async () => {
    const aggregates = {
      latency: quantiles({ at: [0.5, 0.95] }),
      devices: distinct({ of: (event) => event.source }),
      // A user aggregate with a result of another shape: the alphabetically last source.
      lastSource: defineAggregate<string, { source: string }, string>({
        name: 'lastSource',
        of: (event) => event.source,
        checkInput: () => null,
        init: () => '',
        add: (a, source) => [a, source].sort()[1] as string,
        merge: (a, b) => [a, b].sort()[1] as string,
        result: (source) => ({ source }),
        encode: (source) => new TextEncoder().encode(source),
        decode: (bytes) => new TextDecoder().decode(bytes),
      }),
    }
    const world = new World()
    const host = await hosted(world, { engine: { windows: tumbling(1_000), watermark: manual(), allowedLateness: 2_000, aggregates } })
    const page = world.page(() => host, { aggregates })
    await world.run()
    await page.engine.ready
    // What connectEngine({ aggregates }) returns: results typed by the aggregates.
    const remote = page.engine as unknown as RemoteEngine<typeof aggregates>
    const engine = host.host.engine as unknown as Engine<typeof aggregates>
    const changes: WindowChange<typeof aggregates>[] = []
    remote.subscribe((batch) => changes.push(...batch))
    const reading = (source: string, seq: number, ts: number, value: number): StreamEvent => ({ id: `${source}#${seq}`, source, seq, ts, key: 'latency', value })
    void remote.ingest([reading('d1', 1, 100, 10), reading('d1', 2, 200, 20), reading('d2', 1, 300, 40)])
    await world.run()
    const early = remote.results()[0]
    expect(early?.aggregates.devices).toBe(2)
    expect(early?.aggregates.lastSource).toEqual({ source: 'd2' })
    expect(early?.aggregates.latency).toEqual(engine.results()[0]?.aggregates.latency)
    // The 0.95 quantile of 10, 20, 40 is the value of rank ⌊0.95 × 2⌋: 20, within 1%.
    expect(Math.abs((early?.aggregates.latency[1] ?? 0) - 20)).toBeLessThan(0.2)
    await remote.advanceWatermark(1_000)
    await world.run()
    expect(remote.history('tumbling:1000', 'latency', 0).map((r) => r.aggregates.devices)).toEqual([2])
    await world.run()
    // A late reading of a third device corrects the window: the correction carries what the page showed before.
    void remote.ingest([reading('d3', 1, 500, 400)])
    await world.run()
    const correction = changes.find((c) => c.type === 'correction')
    expect(correction?.result.aggregates).toMatchObject({ devices: 3, lastSource: { source: 'd3' } })
    expect(correction?.previous?.aggregates).toMatchObject({ devices: 2, lastSource: { source: 'd2' } })
    // With 400: 10, 20, 40, 400, rank ⌊0.95 × 3⌋ = 2: 40.
    expect(Math.abs((correction?.result.aggregates.latency[1] ?? 0) - 40)).toBeLessThan(0.4)
    expect(remote.results()).toEqual(engine.results())
    expect(remote.history('tumbling:1000', 'latency', 0)).toEqual(engine.history('tumbling:1000', 'latency', 0))
    expect(remote.history('tumbling:1000', 'latency', 0).map((r) => [r.status, r.aggregates.devices])).toEqual([['on_time', 2], ['corrected', 3]])
    // The history's arrival repeats the window's on-time change, so views re-read it.
    expect(changes.map((c) => [c.type, c.result.aggregates.devices])).toEqual([['provisional', 2], ['on_time', 2], ['on_time', 2], ['correction', 3]])
  })

  it('refuses a host whose engine has other aggregates than the page expects, saying which', async () => {
    const world = new World()
    const host = await hosted(world, { engine: { ...windows, aggregates: { latency: quantiles({ at: [0.95], relativeAccuracy: 0.02 }) } } })
    const names = world.page(() => host, { aggregates: { latency: quantiles({ at: [0.95] }), devices: distinct({ of: (event) => event.source }) } })
    const configured = world.page(() => host, { aggregates: { latency: quantiles({ at: [0.95] }) } })
    await world.run()
    await expect(names.engine.ready).rejects.toThrow(
      "the host's engine has the aggregates latency quantiles(relativeAccuracy=0.02,maxBuckets=2048), this page expects devices distinct(precision=14), latency quantiles(relativeAccuracy=0.01,maxBuckets=2048): reload the page",
    )
    await expect(configured.engine.ready).rejects.toThrow(
      "the host's engine has the aggregates latency quantiles(relativeAccuracy=0.02,maxBuckets=2048), this page expects latency quantiles(relativeAccuracy=0.01,maxBuckets=2048): reload the page",
    )
    expect(configured.engine.connection().state).toBe('failed')
  })

  it('tells every page why the host could not start', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: windows, log: false, setup: () => Promise.reject(new Error('the relay refused the token')) })
    const page = world.page(() => host)
    await world.run()
    await expect(page.engine.ready).rejects.toThrow("connectEngine: the engine's host could not start: Error: the relay refused the token")
    expect(page.engine.connection().state).toBe('failed')
    await expect(page.engine.ingest(readings('d1', 1, 1))).rejects.toThrow('the relay refused the token')
  })
})

describe('a takeover', () => {
  it('sends every batch not yet durable to the next host: nothing lost, nothing counted twice', async () => {
    const world = new World()
    let current: TestHost | null = world.host({ name: 'fleet', engine: windows })
    const first = current
    const page = world.page(() => current)
    await world.run()
    await page.engine.ready
    const receipts: Promise<unknown>[] = []
    let seq = 1
    for (let b = 0; b < 10; b++) {
      receipts.push(page.engine.ingest(readings('d1', seq, 25)).then((r) => r.durable))
      seq += 25
      await world.run(10)
    }
    // The host dies mid-stream: what it sends is lost, its locks are released.
    wires(page).toPage.cut = true
    wires(page).toHost.cut = true
    for (let b = 0; b < 4; b++) {
      receipts.push(page.engine.ingest(readings('d1', seq, 25)).then((r) => r.durable))
      seq += 25
    }
    const lostAt = world.time.now
    const states: string[] = []
    page.engine.onConnection((c) => states.push(`${c.state} at +${world.time.now - lostAt}`))
    world.locks.crash(first.id)
    current = world.host({ name: 'fleet', engine: windows })
    await world.run(50)
    page.connector.connect()
    await world.run(300)
    await Promise.all(receipts)
    const engine = current.host.engine as Engine
    expect([engine.nextSeq('d1'), engine.stats().applied, page.engine.stats().applied]).toEqual([seq, seq - 1, seq - 1])
    expect(page.engine.connection()).toMatchObject({ state: 'connected', takeovers: 1, epoch: 2 })
    // On the fake clock: the page lost the host when its lock was released (at lostAt) and the
    // next host welcomed it at lostAt + 100 (reconnected at lostAt + 50, welcomed 50 ms after).
    expect(states).toEqual(['reconnecting at +0', 'connected at +100'])
    expect(page.engine.connection().lastTakeoverMs).toBe(100)
    expect(reads(page.engine)).toEqual(reads(engine))
  })

  it('writable: a batch the host cannot take errors the stream, and the next writable is fresh, as the engine\'s', async () => {
    const world = new World()
    const current: TestHost = world.host({ name: 'fleet', engine: windows })
    const page = world.page(() => current)
    await world.run()
    await page.engine.ready
    const first = page.engine.writable.getWriter()
    const unsendable = [{ id: 'x', source: 'd1', seq: 1, ts: 10, value: (() => 1) as unknown as number }]
    await expect(first.write(unsendable)).rejects.toThrow(TypeError)
    first.releaseLock()
    const next = page.engine.writable.getWriter()
    const written = next.write(readings('d1', 1, 20))
    await world.run(100)
    await written
    expect((current.host.engine as Engine).stats().applied).toBe(20)
  })

  it('fences a host that lost the log while frozen: its late writes are refused, and the page moves on', async () => {
    const world = new World()
    let current: TestHost | null = world.host({ name: 'fleet', engine: windows })
    const frozen = current
    const page = world.page(() => current)
    await world.run()
    await page.engine.ready
    await (await page.engine.ingest(readings('d1', 1, 50))).durable
    // The host freezes: the page's batches reach it only when it thaws.
    const old = wires(page)
    old.toHost.held = true
    old.toPage.held = true
    const late = page.engine.ingest(readings('d1', 51, 50))
    await world.run(50)
    current = world.host({ name: 'fleet', engine: windows }, { mode: 'leader', steal: true })
    await world.run(50)
    page.connector.connect()
    await world.run(300)
    const receipt = await late
    await receipt.durable
    // The thawed host gets the batch now: it applies it in memory, but its log write is fenced.
    old.toHost.release()
    old.toPage.release()
    await world.run(300)
    const frozenEngine = frozen.host.engine
    expect(frozenEngine).toBeNull() // it stepped down
    const reopened = world.host({ name: 'fleet', engine: windows }, { mode: 'leader', steal: true })
    world.page(() => reopened)
    await world.run(300)
    const engine = reopened.host.engine as Engine
    expect([engine.stats().applied, engine.nextSeq('d1')]).toEqual([100, 101])
  })
})
