import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  boundedOutOfOrderness,
  createManualScheduler,
  EngineFeed,
  EngineObserver,
  type Engine,
  session,
  type StreamEvent,
  sliding,
  tumbling,
  windowHistorySlice,
  windowSlice,
} from '@tidemark/engine'
import { assertSeededAsync } from '@tidemark/seeded-random/property'
import type { HostEngineOptions } from '../src/host/hostOptions.ts'
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
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('batch' as const), source: fc.constantFrom('d1', 'd2'), count: fc.integer({ min: 1, max: 30 }), jitter: fc.integer({ min: 0, max: 900 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resend' as const), source: fc.constantFrom('d1', 'd2'), back: fc.integer({ min: 1, max: 20 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('advance' as const), by: fc.integer({ min: 0, max: 3_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('frame' as const) }) },
)

describe('a page mirroring a hosted engine', () => {
  it('reads what the engine holds: windows (sessions, expiry), watermark, late lane, stats, watched histories', async () => {
    await assertSeededAsync(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), fc.integer({ min: 0, max: 10 }), async (ops, watchAt) => {
        const world = new World()
        const host = await hosted(world)
        const page = world.page(() => host)
        await world.run()
        await page.engine.ready
        const engine = host.host.engine as Engine
        const next = new Map([['d1', 1], ['d2', 1]])
        let watched: { window: string; key: string; start: number } | null = null
        for (const [i, step] of ops.entries()) {
          if (step.kind === 'batch') {
            const from = next.get(step.source) as number
            next.set(step.source, from + step.count)
            // Mostly rising, some readings far behind: corrections, late lane, session merges.
            void page.engine.ingest(readings(step.source, from, step.count, (seq) => seq * 40 - (seq % 5 === 0 ? step.jitter : 0)))
          } else if (step.kind === 'resend') {
            const to = (next.get(step.source) as number) - 1
            if (to >= 1) void page.engine.ingest(readings(step.source, Math.max(1, to - step.back), Math.min(step.back, to)))
          } else if (step.kind === 'advance') void page.engine.advanceWatermark(engine.watermark() + step.by)
          else await world.run(20)
          if (i === watchAt && watched === null) {
            const first = page.engine.results({ window: 'tumbling:1000' })[0]
            if (first !== undefined) {
              watched = { window: first.window, key: first.key, start: first.start }
              page.engine.history(first.window, first.key, first.start)
            }
          }
        }
        await world.run(200)
        expect(reads(page.engine)).toEqual(reads(engine))
        if (watched !== null && engine.results(watched).length > 0) {
          expect(page.engine.history(watched.window, watched.key, watched.start)).toEqual(engine.history(watched.window, watched.key, watched.start))
        }
      }),
      FILE,
      'reads what the engine holds',
      40,
    )
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
    world.locks.crash(first.id)
    const lostAt = world.time.now
    current = world.host({ name: 'fleet', engine: windows })
    await world.run(50)
    page.connector.connect()
    await world.run(300)
    await Promise.all(receipts)
    const engine = current.host.engine as Engine
    expect([engine.nextSeq('d1'), engine.stats().applied, page.engine.stats().applied]).toEqual([seq, seq - 1, seq - 1])
    expect(page.engine.connection()).toMatchObject({ state: 'connected', takeovers: 1, epoch: 2 })
    expect(page.engine.connection().lastTakeoverMs).toBeGreaterThanOrEqual(0)
    expect(world.time.now).toBeGreaterThan(lostAt)
    expect(reads(page.engine)).toEqual(reads(engine))
  })

  it('keeps a batch whose write the fence refused, and sends it to the host that took the log', async () => {
    const world = new World()
    // No Web Locks (single mode): nothing tells the first host that a second one claimed the log, but the writer epoch does.
    let current: TestHost | null = world.host({ name: 'fleet', engine: windows }, { mode: 'single', steal: false }, true)
    const first = current
    const page = world.page(() => current, { withoutLocks: true })
    await world.run()
    await page.engine.ready
    await (await page.engine.ingest(readings('d1', 1, 30))).durable
    current = world.host({ name: 'fleet', engine: windows }, { mode: 'single', steal: false }, true)
    await world.run(50)
    const refused = await page.engine.ingest(readings('d1', 31, 30))
    await world.run(100)
    expect([first.host.engine, page.engine.connection().state]).toEqual([null, 'reconnecting'])
    page.connector.connect()
    await world.run(300)
    await refused.durable
    const engine = current.host.engine as Engine
    expect([engine.stats().applied, engine.nextSeq('d1'), engine.stats().duplicates]).toEqual([60, 61, 0])
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
