import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { type Engine, isOverflowError, type StreamEvent, tumbling } from '@tidemark/engine'
import { MAX_BACKLOG_PANES } from '../src/host/hostClient.ts'
import { recoveryReport } from '@tidemark/idb'
import { connectEngineWith } from '../src/page/connectEngine.ts'
import { MAX_PENDING_CALLS } from '../src/page/hostCalls.ts'
import { CLOSE_WAIT_MS } from '../src/page/mirroredEngine.ts'
import { HELLO_ANSWER_MS } from '../src/page/sharedConnector.ts'
import { type TestHost, World } from './hostHarness.ts'
import { workerOf } from './inProcessWorkers.ts'
import { FakeLockManager } from './fakeLocks.ts'
import { FakeTime, settle } from './fakeTimers.ts'

// Sentences of packages/worker/README.md that no other test pins.

const windows = { windows: tumbling(1_000) }

function readings(source: string, from: number, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${source}#${from + i}`, source, seq: from + i, ts: (from + i) * 10, key: 'k', value: 1 }))
}

/** A page of this tab connected through `connectEngineWith` in single mode, to `host` in this process; `cut()` stops what the page sends. */
function singleTab(world: World, host: TestHost, signal?: AbortSignal) {
  let cut = false
  const dedicated = (): Worker => {
    const worker = workerOf(host) as unknown as { postMessage(message: unknown): void }
    const post = worker.postMessage.bind(worker)
    worker.postMessage = (message) => {
      if (!cut) post(message)
    }
    return worker as unknown as Worker
  }
  const connecting = connectEngineWith(
    { name: 'fleet', dedicated, mode: 'single', ...(signal === undefined ? {} : { signal }) },
    { locks: null, sharedWorkers: false, clock: world.time.clock('tab'), lifecycle: null, unload: null },
  )
  return { connecting, cut: () => (cut = true) }
}

describe('Flow control: the defaults', () => {
  it('a host grants 50,000 events in flight; 200,000 more wait on the page, and one past that is refused with an OverflowError', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: windows, log: false }, { mode: 'single', steal: false }, true)
    const tab = singleTab(world, host)
    await world.run()
    const engine = await tab.connecting
    // Nothing more reaches the host: what the page holds stays where the credits put it.
    tab.cut()
    void engine.ingest(readings('d1', 1, 49_999))
    void engine.ingest(readings('d1', 50_000, 2))
    expect([engine.connection().inFlightEvents, engine.connection().queuedEvents]).toEqual([49_999, 2])
    void engine.ingest(readings('d2', 1, 199_998))
    expect([engine.connection().inFlightEvents, engine.connection().queuedEvents]).toEqual([49_999, 200_000])
    const over = engine.ingest(readings('d3', 1, 1)).then(
      () => 'accepted',
      (error: unknown) => error,
    )
    const refused = await Promise.race([over, settle().then(() => 'still waiting')])
    expect(isOverflowError(refused)).toBe(true)
    expect(refused).toMatchObject({ buffer: 'worker ingest queue' })
    expect(String(refused)).toContain('200000')
  })
})

describe('Options: frameMs', () => {
  it('defaults to 16: a change reaches the page 16 ms after the host applied it, not sooner', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: windows, log: false })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const receipt = page.engine.ingest(readings('d1', 1, 3))
    for (let i = 0; i < 10 && (host.host.engine as Engine).stats().applied < 3; i++) await settle()
    expect((host.host.engine as Engine).stats().applied).toBe(3)
    await receipt
    await world.time.run(15, 1)
    expect(page.engine.results()).toEqual([])
    await world.time.run(1, 1)
    expect(page.engine.results().map((r) => r.count)).toEqual([3])
  })
})

describe('Options: config, engine as a function, setup', () => {
  it("see the first page's config only; setup runs before any page is welcomed, and the cleanup it resolves to runs when the host stops", async () => {
    const world = new World()
    const seen: unknown[] = []
    const welcomedDuringSetup: number[] = []
    let cleanups = 0
    const host = world.host({
      name: 'fleet',
      log: false,
      engine: (config) => {
        seen.push(['engine', config])
        return { ...windows, allowedLateness: (config as { lateness: number }).lateness }
      },
      setup: async ({ config }) => {
        seen.push(['setup', config])
        welcomedDuringSetup.push(host.host.clients)
        await world.time.run(50)
        welcomedDuringSetup.push(host.host.clients)
        return () => cleanups++
      },
    })
    const first = world.page(() => host, { config: { lateness: 700 } })
    const second = world.page(() => host, { config: { lateness: 100 } })
    await world.run(300)
    await Promise.all([first.engine.ready, second.engine.ready])
    const later = world.page(() => host, { config: { lateness: 5 } })
    await world.run()
    await later.engine.ready
    expect(seen).toEqual([
      ['engine', { lateness: 700 }],
      ['setup', { lateness: 700 }],
    ])
    expect(welcomedDuringSetup).toEqual([0, 0])
    expect([host.host.clients, cleanups]).toEqual([3, 0])
    await host.host.stop()
    expect(cleanups).toBe(1)
  })
})

describe('Options: signal', () => {
  it('once a host welcomed the page, aborting it changes nothing', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: windows, log: false }, { mode: 'single', steal: false }, true)
    const controller = new AbortController()
    const tab = singleTab(world, host, controller.signal)
    await world.run()
    const engine = await tab.connecting
    controller.abort('the user navigated away')
    await world.run()
    expect(engine.connection()).toMatchObject({ state: 'connected', reason: null })
    const receipt = engine.ingest(readings('d1', 1, 2))
    await world.run()
    expect((await receipt).accepted).toBe(2)
  })
})

describe('Takeovers: calls in flight when the host goes away', () => {
  it('a command rejects saying it may or may not have run; nextSeq is sent again to the next host', async () => {
    const world = new World()
    let current: TestHost | null = world.host({ name: 'fleet', engine: windows, commands: { hang: () => new Promise(() => {}) } })
    const first = current
    const page = world.page(() => current)
    await world.run()
    await page.engine.ready
    await (await page.engine.ingest(readings('d1', 1, 4))).durable
    const { toHost, toPage } = page.connector
    if (toHost === null || toPage === null) throw new Error('the page has no link')
    // The host gets both calls, and dies before answering them.
    toPage.held = true
    const command = page.engine.command('hang', { device: 'd1' }).then(
      () => 'ran',
      (error: unknown) => String(error),
    )
    const seq = page.engine.nextSeq('d1')
    await world.run(10)
    toPage.cut = true
    toHost.cut = true
    world.locks.crash(first.id)
    current = world.host({ name: 'fleet', engine: windows })
    await world.run(50)
    page.connector.connect()
    await world.run(300)
    expect(await command).toMatch(/^Error: the engine's host went away before answering command \(.*\); it may or may not have run it$/)
    expect(await seq).toBe(5)
    expect(page.engine.connection()).toMatchObject({ state: 'connected', takeovers: 1 })
  })
})

describe('log: false', () => {
  it("a host's epoch is its start time, and a takeover starts from an empty engine", async () => {
    const world = new World()
    let current: TestHost | null = world.host({ name: 'fleet', engine: windows, log: false })
    const first = current
    const startedAt = world.time.now
    const page = world.page(() => current)
    await world.run()
    await page.engine.ready
    await (await page.engine.ingest(readings('d1', 1, 4))).durable
    await world.run()
    expect(page.engine.connection().epoch).toBe(startedAt)
    expect(page.engine.results().map((r) => r.count)).toEqual([4])

    const { toHost, toPage } = page.connector
    if (toHost === null || toPage === null) throw new Error('the page has no link')
    toPage.cut = true
    toHost.cut = true
    world.locks.crash(first.id)
    await world.run(500)
    const secondAt = world.time.now
    current = world.host({ name: 'fleet', engine: windows, log: false })
    page.connector.connect()
    await world.run(300)
    expect(page.engine.connection()).toMatchObject({ state: 'connected', takeovers: 1, epoch: secondAt })
    // How long the takeover took: from losing the first host to the second one's welcome.
    const { lastTakeoverMs } = page.engine.connection()
    expect(lastTakeoverMs).toBeGreaterThanOrEqual(500)
    expect(lastTakeoverMs).toBeLessThan(800)
    expect([(current.host.engine as Engine).stats().applied, page.engine.results()]).toEqual([0, []])
  })
})

describe('Options: election', () => {
  it('defaults to { heartbeatMs: 250, staleMs: 1_500 }: the leader tab starts its host to beat every 250 ms, and a follower steals after 1,500 ms without a beat', async () => {
    const time = new FakeTime()
    const locks = new FakeLockManager()
    const starts: unknown[] = []
    // Host workers that take their start message and never answer: a leader frozen without a word.
    const dedicated = (): Worker =>
      ({
        postMessage: (message: unknown) => {
          if ((message as { t?: string }).t === 'start') starts.push(message)
        },
        addEventListener() {},
        terminate() {},
      }) as unknown as Worker
    const silentChannel = () => ({ postMessage() {}, addEventListener() {}, close() {} })
    const tab = (id: string) =>
      void connectEngineWith({ name: 'fleet', dedicated, mode: 'leader' }, { locks: locks.as(id), clock: time.clock(id), sharedWorkers: false, lifecycle: null, channel: silentChannel }).catch(() => {})
    tab('tab-1')
    await settle()
    await settle()
    expect(locks.holder('tidemark-worker:fleet:leader')).toBe('tab-1')
    expect(starts).toMatchObject([{ t: 'start', mode: 'leader', heartbeatMs: 250, steal: false }])
    tab('tab-2')
    await time.run(1_400)
    expect(locks.holder('tidemark-worker:fleet:leader')).toBe('tab-1')
    await time.run(400)
    expect(locks.holder('tidemark-worker:fleet:leader')).toBe('tab-2')
    expect(starts).toMatchObject([{ heartbeatMs: 250, steal: false }, { heartbeatMs: 250, steal: true }])
  })
})

/** The README as prose: its line breaks are wrapping, so a sentence split across lines still matches. */
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ')

/** Every figure the README states in the sentences `pattern` matches (its first group, `10,000` or `1.5`), as numbers; throws when none does. */
function stated(pattern: RegExp): number[] {
  const figures = [...README.matchAll(new RegExp(pattern.source, 'g'))].map((m) => Number(m[1]?.replaceAll(',', '')))
  if (figures.length === 0) throw new Error(`the README no longer says ${pattern}`)
  return figures
}

describe("the README's figures", () => {
  it('match the bounds the code uses: the SharedWorker answer wait, the close() wait, the host calls, the backlog rows', () => {
    const seconds = (figures: number[]) => figures.map((s) => s * 1_000)
    expect({
      helloAnswerMs: seconds(stated(/a page that hears nothing within ([\d.,]+) s\b/)),
      closeWaitMs: seconds(stated(/it waits up to ([\d.,]+) s for the next one/)),
      pendingCalls: stated(/past ([\d,]+) (?:waiting calls|calls unanswered)/),
      backlogPanes: stated(/(?:every pane, up to|live windows by|live windows plus) ([\d,]+)/),
    }).toEqual({
      helloAnswerMs: [HELLO_ANSWER_MS],
      closeWaitMs: [CLOSE_WAIT_MS],
      pendingCalls: [MAX_PENDING_CALLS, MAX_PENDING_CALLS],
      backlogPanes: [MAX_BACKLOG_PANES, MAX_BACKLOG_PANES, MAX_BACKLOG_PANES, MAX_BACKLOG_PANES],
    })
  })
})

describe('Options: name and log; recovery()', () => {
  it("a host with the default log ({}) keeps it in the origin's IndexedDB database tidemark-log-<name>; the next host reopens it, and its pages' recovery() is what it recovered", async () => {
    const world = new World()
    const first = world.host({ name: 'fleet', engine: windows })
    const page = world.page(() => first)
    await world.run()
    await page.engine.ready
    await (await page.engine.ingest(readings('d1', 1, 3))).durable
    expect((await world.indexedDB.databases()).map((db) => db.name)).toEqual(['tidemark-log-fleet'])
    const closing = page.engine.close()
    await world.run()
    await closing
    await first.host.stop()
    const next = world.host({ name: 'fleet', engine: windows })
    const later = world.page(() => next)
    await world.run(300)
    await later.engine.ready
    expect([later.engine.stats().applied, later.engine.results().map((r) => r.count)]).toEqual([3, [3]])
    // recovery(): what the host's openEngine recovered from that log.
    const recovered = recoveryReport(next.host.engine as Engine)
    expect(recovered).toMatchObject({ lostEvents: 0 })
    expect(later.engine.recovery()).toEqual(recovered)
  })
})

describe("Modes: single, with Web Locks (mode: 'single' asked for)", () => {
  it("a second tab's host waits for the log, and its page is welcomed once the first tab closed; nothing the first tab logged is lost", async () => {
    const world = new World()
    const single = { mode: 'single', steal: false } as const
    const firstHost = world.host({ name: 'fleet', engine: windows }, single)
    const firstTab = world.page(() => firstHost, { mode: 'single' })
    await world.run()
    await firstTab.engine.ready
    await (await firstTab.engine.ingest(readings('d1', 1, 3))).durable
    const secondHost = world.host({ name: 'fleet', engine: windows }, single)
    const secondTab = world.page(() => secondHost, { mode: 'single' })
    let welcomed = false
    void secondTab.engine.ready.then(() => (welcomed = true))
    await world.run(5_000)
    expect([welcomed, secondHost.host.ready, firstTab.engine.connection().state]).toEqual([false, false, 'connected'])
    // The first tab closes: its worker ends, and with it its host.
    const closing = firstTab.engine.close()
    await world.run()
    await closing
    await firstHost.host.stop()
    await world.run(300)
    expect(welcomed).toBe(true)
    expect([secondTab.engine.stats().applied, secondTab.engine.results().map((r) => r.count)]).toEqual([3, [3]])
  })
})

describe("every page's syncStatus()", () => {
  it("is the host engine's: a refusal its transport reports reaches every page at the next frame", async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: windows, log: false })
    const pages = [world.page(() => host), world.page(() => host)]
    await world.run()
    await Promise.all(pages.map((page) => page.engine.ready))
    expect(pages.map((page) => page.engine.syncStatus().state)).toEqual(['local', 'local'])
    const status = { state: 'connected', lastSync: world.time.now, pendingLocalUpdates: 0, peers: 1, refusal: 'tidemark:refused foreign-source d07' } as const
    ;(host.host.engine as Engine).replica.setSyncStatus(status, 0)
    await world.run()
    expect(pages.map((page) => page.engine.syncStatus())).toEqual([status, status])
  })
})
