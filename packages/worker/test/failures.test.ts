import { describe, expect, it } from 'vitest'
import { defineAggregate, type Engine, manual, session, type StreamEvent, tumbling } from '@tidemark/engine'
import { isLogConfigurationError, type LogConfigurationError } from '@tidemark/idb'
import { claimLog, type LogLocks } from '@tidemark/idb/log'
import { connectEngineWith } from '../src/page/connectEngine.ts'
import type { HostLink } from '../src/page/hostLink.ts'
import { CLOSE_WAIT_MS } from '../src/page/mirroredEngine.ts'
import type { WorkerLocks } from '../src/page/platform.ts'
import { EngineHost } from '../src/host/engineHost.ts'
import { LeaderElection } from '../src/page/leaderElection.ts'
import { PROTOCOL_VERSION } from '../src/protocol/messages.ts'
import { FakeLockManager } from './fakeLocks.ts'
import { FakeTime, settle } from './fakeTimers.ts'
import { TestHost, type Wire, World } from './hostHarness.ts'

const windows = { windows: tumbling(1_000) }

function readings(source: string, from: number, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${source}#${from + i}`, source, seq: from + i, ts: (from + i) * 10, key: 'k', value: 1 }))
}

/** A page welcomed by a host without a log, and its link to that host (to hand the page messages no host of this build sends). */
async function connectedPage() {
  const world = new World()
  const host = world.host({ name: 'fleet', engine: windows, log: false })
  const page = world.page(() => host)
  await world.run()
  await page.engine.ready
  return { page, link: page.connector.link as HostLink }
}

/** An event whose value the structured clone cannot copy (eventColumns sends it in the object form). */
const uncloneable = { id: 'bad#1', source: 'bad', seq: 1, ts: 5, key: 'k', value: (() => 1) as unknown as number }

describe('bad input', () => {
  it('rejects a batch with an event that cannot be sent to the host, naming it; the page keeps serving and closes', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: windows, log: false })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    let refused: Promise<unknown> | null = null
    expect(() => {
      refused = page.engine.ingest([uncloneable])
    }).not.toThrow()
    await expect(refused).rejects.toThrow(new TypeError("ingest: event 0 (id 'bad#1') cannot be sent to the engine's host: DataCloneError: () => 1 could not be cloned."))
    expect(page.engine.connection()).toMatchObject({ state: 'connected', inFlightEvents: 0, queuedEvents: 0 })
    const good = page.engine.ingest(readings('d1', 1, 3))
    await world.run()
    expect((await good).accepted).toBe(3)
    const closing = page.engine.close()
    await world.run()
    await closing
    expect(page.engine.connection().state).toBe('closed')
  })

  it('rejects such a batch made before the first welcome too, and the welcome still comes', async () => {
    const world = new World()
    let target: TestHost | null = null
    const page = world.page(() => target)
    const refused = page.engine.ingest([uncloneable])
    const good = page.engine.ingest(readings('d1', 1, 2))
    await expect(refused).rejects.toThrow("ingest: event 0 (id 'bad#1') cannot be sent to the engine's host")
    target = world.host({ name: 'fleet', engine: windows, log: false })
    page.connector.connect()
    await world.run(200)
    await page.engine.ready
    expect(page.engine.connection().state).toBe('connected')
    expect((await good).accepted).toBe(2)
  })

  it('rejects a command whose payload cannot be sent to the host; later calls still go', async () => {
    const world = new World()
    let target: TestHost | null = null
    const page = world.page(() => target)
    const refused = page.engine.command('echo', () => 1).then(
      () => null,
      (error: unknown) => error,
    )
    const seq = page.engine.nextSeq('d1')
    target = world.host({ name: 'fleet', engine: windows, log: false, commands: { echo: (payload) => payload } })
    page.connector.connect()
    await world.run(200)
    expect(String(await refused)).toContain("TypeError: command cannot be sent to the engine's host (its arguments must be structured-cloneable): DataCloneError")
    expect(await seq).toBe(1)
    expect(page.engine.connection().state).toBe('connected')
  })
})

describe('a frame the page cannot read', () => {
  it('fails the page with the reason, instead of leaving it showing stale windows without a word', async () => {
    const { page, link } = await connectedPage()
    page.engine.message(link, { t: 'frame', frame: 9, rows: { strings: ['w'], ints: Uint32Array.of(0, 1, 0, 0), nums: new Float64Array(9) }, watermark: 0 })
    expect(page.engine.connection()).toMatchObject({ state: 'failed', reason: 'the host sent a frame this page cannot read (a row names a string out of range): reload the page' })
    await expect(page.engine.ingest(readings('d1', 1, 1))).rejects.toThrow('connectEngine: the host sent a frame this page cannot read')
  })
})

describe('a refusal that is not a takeover', () => {
  it('fails the page even when its reason is not a string (a host of another build): it does not go to the next host, which would refuse it again', async () => {
    const { page, link } = await connectedPage()
    page.engine.message(link, { t: 'refused', reason: null, error: { name: 'QuotaExceededError', message: 'full' } })
    expect(page.engine.connection().state).toBe('failed')
    const error = (await page.engine.ingest(readings('d1', 1, 1)).catch((e: unknown) => e)) as Error
    expect([error.name, error.message, String(error.cause)]).toEqual(['QuotaExceededError', 'connectEngine: null', 'QuotaExceededError: full'])
  })
})

describe('a host fenced out while it starts', () => {
  it('tells its waiting page to go to the next host (not that it failed), and the page moves on', async () => {
    const world = new World()
    let current: TestHost | null = world.host(
      {
        name: 'fleet',
        // Another leader steals the log while this host is starting.
        engine: async () => {
          await claimLog({ name: 'fleet', steal: true, locks: world.locks.as('thief') as LogLocks, indexedDB: world.indexedDB })
          return windows
        },
      },
      { mode: 'leader', steal: false },
    )
    const first = current
    const page = world.page(() => current)
    const states: string[] = []
    page.engine.onConnection((c) => states.push(c.state))
    await world.run(500)
    await expect(first.started).rejects.toThrow()
    expect([first.host.engine, page.engine.connection().state, states]).toEqual([null, 'reconnecting', []])
    expect(page.connector.link).toBeNull() // told the connector its host is gone
    world.locks.crash('thief')
    current = world.host({ name: 'fleet', engine: windows }, { mode: 'leader', steal: true })
    page.connector.connect()
    await world.run(300)
    expect(page.engine.connection()).toMatchObject({ state: 'connected' })
  })

  it('undoes its setup and closes its engine when the log is taken during setup; the page moves on', async () => {
    const world = new World()
    let cleaned = 0
    let current: TestHost | null = world.host({
      name: 'fleet',
      engine: windows,
      setup: async () => {
        await claimLog({ name: 'fleet', steal: true, locks: world.locks.as('thief') as LogLocks, indexedDB: world.indexedDB })
        await new Promise<void>((resolve) => setImmediate(resolve))
        return () => {
          cleaned++
        }
      },
    })
    const first = current
    const page = world.page(() => current)
    await world.run(500)
    const why = await first.started.then(
      () => null,
      (error: unknown) => String(error),
    )
    expect(why).toContain('the host stopped starting: another host took the log')
    expect([first.host.engine, first.host.ready, cleaned, page.engine.connection().state]).toEqual([null, false, 1, 'reconnecting'])
    world.locks.crash('thief')
    current = world.host({ name: 'fleet', engine: windows })
    page.connector.connect()
    await world.run(300)
    expect(page.engine.connection().state).toBe('connected')
  })

  it('lets go of the log when stopped while it waits for the first page', async () => {
    const world = new World()
    const first = world.host({ name: 'fleet', engine: windows })
    await world.run(50)
    await first.host.stop()
    await expect(first.started).rejects.toThrow('the host stopped starting: it was stopped')
    const second = world.host({ name: 'fleet', engine: windows })
    const page = world.page(() => second)
    await world.run(300)
    expect([page.engine.connection().state, second.host.epoch]).toEqual(['connected', 2])
  })
})

describe('a host that cannot open its log', () => {
  it('rejects its pages with the typed error: isLogConfigurationError holds and its fields cross', async () => {
    const world = new World()
    const before = world.host({ name: 'fleet', engine: { ...windows, replicaId: 'r1' } })
    const writer = world.page(() => before)
    await world.run(300)
    const written = writer.engine.ingest(readings('d1', 1, 3))
    await world.run(300)
    expect((await written).accepted).toBe(3)
    const closing = writer.engine.close()
    await world.run(300)
    await closing
    await before.host.stop()
    // A new build counts other windows over the same log.
    const after = world.host({ name: 'fleet', engine: { windows: tumbling(5_000), replicaId: 'r1' } })
    const page = world.page(() => after)
    await world.run(300)
    const error = await page.engine.ready.then(() => null, (failure: unknown) => failure)
    expect(isLogConfigurationError(error)).toBe(true)
    const { logged, expected, message, cause } = error as LogConfigurationError
    expect(logged).toContain('1000')
    expect(expected).toContain('5000')
    expect(message).toMatch(/^connectEngine: the engine's host could not start: LogConfigurationError: /)
    expect(isLogConfigurationError(cause)).toBe(true)
    // Every later call fails the same way, as does a page that comes after the failure.
    await expect(page.engine.command('anything', null)).rejects.toBe(error)
    const late = world.page(() => after)
    await world.run(300)
    const lateError = await late.engine.ready.then(() => null, (failure: unknown) => failure)
    expect([isLogConfigurationError(lateError), (lateError as LogConfigurationError).logged]).toEqual([true, logged])
  })
})

/** What a promise did so far, read without waiting for it: 'pending' while it has not settled. */
function outcome(promise: Promise<unknown>): () => string {
  let state = 'pending'
  promise.then(
    () => {
      state = 'resolved'
    },
    (error: unknown) => {
      state = `rejected: ${String(error)}`
    },
  )
  return () => state
}

describe('flow control after a batch the host refuses for good', () => {
  it('sends the batches that waited for credits once a refused batch gives its credits back', async () => {
    // A user aggregate that throws on one value: the host's engine.ingest throws for that batch
    // and the host refuses it (not to be sent again). The batch queued behind it for credits must
    // still be sent (and answered), not wait forever.
    const picky = defineAggregate<number, number>({
      name: 'picky',
      init: () => 0,
      add: (state, value) => {
        if (value === 13) throw new Error('unlucky')
        return state + value
      },
      merge: (a, b) => a + b,
      result: (state) => state,
      encode: (state) => new Uint8Array(Float64Array.of(state).buffer),
      decode: (bytes) => new Float64Array(bytes.slice().buffer)[0] as number,
    })
    const world = new World()
    const host = world.host({ name: 'fleet', engine: { windows: tumbling(1_000), aggregates: { picky } }, log: false, credits: 10 })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const bad = outcome(page.engine.ingest(readings('d1', 1, 10).map((event) => ({ ...event, value: 13 }))))
    const next = outcome(page.engine.ingest(readings('d2', 1, 5)))
    const closing = outcome(page.engine.close())
    await world.run(1_000)
    expect(bad()).toContain('rejected')
    // The second batch waited for the first one's credits: it must have been sent and answered
    // (here refused too: the engine stopped), and close() must have settled.
    expect([next(), closing(), page.engine.connection().queuedEvents]).toEqual([expect.stringContaining('rejected: Error: engine stopped'), 'resolved', 0])
  })
})

describe('a host that crashes while it starts', () => {
  it('is noticed by the pages it told it was starting: they look for the next host, and their batches reach it', async () => {
    const world = new World()
    // The first host hangs while it opens the engine (a long replay), then its worker crashes.
    let current = world.host({ name: 'fleet', engine: () => new Promise(() => {}) })
    const first = current
    const page = world.page(() => current)
    const states: string[] = []
    page.engine.onConnection((c) => states.push(c.state))
    const receipt = page.engine.ingest(readings('d1', 1, 3))
    await world.run(200)
    expect(page.engine.connection().state).toBe('reconnecting')
    // The crash: its messages are lost, its locks (the host lock, the log's) are released.
    ;(page.connector.toPage as { cut: boolean }).cut = true
    ;(page.connector.toHost as { cut: boolean }).cut = true
    world.locks.crash(first.id)
    current = world.host({ name: 'fleet', engine: { windows: tumbling(1_000) } })
    await world.run(200)
    // The page must have noticed that its host is gone (it tells its connector, which makes the next one).
    expect(page.connector.link).toBeNull()
    page.connector.connect()
    await world.run(300)
    await page.engine.ready
    await (await receipt).durable
    expect([page.engine.connection().state, current.host.engine?.stats().applied]).toEqual(['connected', 3])
  })
})

describe('pages that leave while the host starts', () => {
  it('are not welcomed once it is ready, nor kept as clients', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: windows, log: false }, { mode: 'shared', steal: false }, true)
    const sent: string[] = []
    // Pages that mount and unmount at once (React StrictMode, a route change) while the host starts.
    for (let i = 0; i < 20; i++) {
      const link = { send: (message: { t: string }) => sent.push(message.t) }
      host.host.receive(link, { t: 'hello', v: PROTOCOL_VERSION, tab: '', config: {} })
      host.host.receive(link, { t: 'bye' })
    }
    const stays = { send: (message: { t: string }) => sent.push(`stays:${message.t}`) }
    host.host.receive(stays, { t: 'hello', v: PROTOCOL_VERSION, tab: '', config: {} })
    await world.run(500)
    await host.started
    expect(host.host.ready).toBe(true)
    expect(host.host.clients).toBe(1)
    // Each hello is answered at once (the host is starting); only the page that stayed is welcomed.
    expect(sent).toEqual([...Array.from({ length: 20 }, () => 'waiting'), 'stays:waiting', 'stays:welcome'])
  })
})

describe('a host worker that cannot be started', () => {
  it('leader mode: fails the page with the reason and leaves the election, instead of taking leadership again and again', async () => {
    const time = new FakeTime()
    const locks = new FakeLockManager()
    let made = 0
    const dedicated = (): Worker => {
      made++
      // Without the fix this tab takes leadership again at once, forever: end its locks to end the test.
      if (made > 10) locks.crash('tab-1')
      throw new Error('the worker file is missing')
    }
    const connecting = connectEngineWith(
      { name: 'fleet', dedicated, mode: 'leader' },
      { locks: locks.as('tab-1'), clock: time.clock('tab-1'), sharedWorkers: false, lifecycle: null, channel: () => ({ postMessage() {}, addEventListener() {}, close() {} }) },
    )
    await expect(connecting).rejects.toThrow('connectEngine: the host worker could not be started: Error: the worker file is missing (check connectEngine({ dedicated }))')
    await time.run(3_000)
    expect([made, locks.holder('tidemark-worker:fleet:leader'), locks.query().pending]).toEqual([1, undefined, []])
  })

  it('leader election: a lead callback that throws stops this tab\'s election and lets the lock go, once', async () => {
    const time = new FakeTime()
    const locks = new FakeLockManager()
    let leads = 0
    const reported: unknown[] = []
    const report = globalThis.reportError
    globalThis.reportError = (error) => reported.push(error)
    try {
      const election = new LeaderElection({
        name: 'fleet',
        tab: 'tab-1',
        locks: locks.as('tab-1'),
        clock: time.clock('tab-1'),
        heartbeatMs: 250,
        staleMs: 1_500,
        lead: () => {
          leads++
          // Without the fix this tab is granted the lock again at once, forever: stop it to end the test.
          if (leads > 10) election.stop()
          throw new Error('cannot lead')
        },
        deposed: () => {},
        announceSteal: () => {},
      })
      election.start()
      await time.run(2_000)
      expect([leads, election.role, locks.holder('tidemark-worker:fleet:leader'), reported.map(String)]).toEqual([1, 'stopped', undefined, ['Error: cannot lead']])
    } finally {
      globalThis.reportError = report
    }
  })

  it('single mode: fails the page with the reason', async () => {
    const dedicated = (): Worker => {
      throw new Error('the worker file is missing')
    }
    await expect(connectEngineWith({ name: 'fleet', dedicated, mode: 'single' }, { locks: null, sharedWorkers: false })).rejects.toThrow(
      'connectEngine: the host worker could not be started: Error: the worker file is missing',
    )
  })
})

describe('a page that failed', () => {
  it('stops looking for a host when its signal gives up: leadership, host worker, channel and tab lock all let go', async () => {
    const time = new FakeTime()
    const locks = new FakeLockManager()
    let workers = 0
    let terminated = 0
    const dedicated = (): Worker => {
      workers++
      return { postMessage() {}, addEventListener() {}, terminate: () => terminated++ } as unknown as Worker
    }
    let channelClosed = false
    const controller = new AbortController()
    const connecting = connectEngineWith(
      { name: 'fleet', dedicated, mode: 'leader', signal: controller.signal },
      {
        locks: locks.as('tab-1'),
        clock: time.clock('tab-1'),
        sharedWorkers: false,
        lifecycle: null,
        channel: () => ({
          postMessage() {},
          addEventListener() {},
          close: () => {
            channelClosed = true
          },
        }),
      },
    )
    await settle()
    await settle()
    expect(locks.holder('tidemark-worker:fleet:leader')).toBe('tab-1')
    controller.abort('the user navigated away')
    await expect(connecting).rejects.toThrow("connectEngine: gave up waiting for the engine's host: the user navigated away")
    await time.run(5_000)
    expect([workers, terminated, channelClosed, locks.query().held, locks.query().pending]).toEqual([1, 1, true, [], []])
  })

  it('never turns connected again: a welcome that comes after the failure is ignored', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: windows, log: false })
    const page = world.page(() => host)
    page.engine.failed('gave up waiting')
    await world.run(300)
    expect(page.engine.connection()).toMatchObject({ state: 'failed', reason: 'gave up waiting' })
    page.engine.opened(page.connector.link as HostLink)
    await world.run(300)
    expect(page.engine.connection().state).toBe('failed')
    await expect(page.engine.ingest(readings('d1', 1, 1))).rejects.toThrow('connectEngine: gave up waiting')
  })

  it('lets the tab lock go when the connector throws as it starts', async () => {
    const locks = new FakeLockManager()
    const shared = (): SharedWorker => ({}) as SharedWorker
    await expect(
      connectEngineWith({ name: 'fleet', dedicated: () => ({}) as Worker, shared, mode: 'shared' }, { locks: locks.as('tab-1'), sharedWorkers: true, lifecycle: null }),
    ).rejects.toThrow(TypeError)
    await settle()
    expect([locks.query().held, locks.query().pending]).toEqual([[], []])
  })

  it('refuses a config that cannot be sent to the host', async () => {
    await expect(connectEngineWith({ name: 'fleet', dedicated: () => ({}) as Worker, mode: 'single', config: { token: () => 'x' } }, { locks: null, sharedWorkers: false })).rejects.toThrow(
      "connectEngine: config must be structured-cloneable (it goes to the host's worker): DataCloneError",
    )
  })
})

describe('app commands', () => {
  it("find only the host's own commands: names every object inherits get the RangeError", async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: windows, log: false, commands: { peers: () => 3 } })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const calls = ['toString', '__proto__', 'hasOwnProperty', 'constructor', 'peers'].map((name) =>
      page.engine.command(name).then(
        (value) => value,
        (error: unknown) => `${(error as Error).name}: ${(error as Error).message}`,
      ),
    )
    await world.run()
    expect(await Promise.all(calls)).toEqual([
      "RangeError: the host has no command 'toString' (hostEngine({ commands }) lists peers)",
      "RangeError: the host has no command '__proto__' (hostEngine({ commands }) lists peers)",
      "RangeError: the host has no command 'hasOwnProperty' (hostEngine({ commands }) lists peers)",
      "RangeError: the host has no command 'constructor' (hostEngine({ commands }) lists peers)",
      3,
    ])
  })
})

/** Runs `body` with `reportError` recording what is reported. */
async function reporting(body: (reported: unknown[]) => Promise<void>): Promise<void> {
  const reported: unknown[] = []
  const report = globalThis.reportError
  globalThis.reportError = (error) => reported.push(error)
  try {
    await body(reported)
  } finally {
    globalThis.reportError = report
  }
}

/** `locks` whose requests for names containing `part` fail with `error` (a browser refusing them). */
function failingLocks(locks: WorkerLocks, part: string, error: Error): WorkerLocks & LogLocks {
  return {
    request: (name: string, options: object, callback: (lock: unknown) => Promise<void> | undefined) =>
      name.includes(part) ? Promise.reject(error) : locks.request(name, options, callback),
    query: locks.query,
  } as unknown as WorkerLocks & LogLocks
}

describe('lock requests that fail', () => {
  it("a host whose own lock cannot be taken fails to start, saying why, and tells its pages", async () => {
    const world = new World()
    const locks = failingLocks(world.locks.as('host-x'), ':host:', new TypeError('locks are not allowed here'))
    const host = new TestHost('host-x', new EngineHost({ name: 'fleet', engine: windows }, { locks, indexedDB: world.indexedDB, clock: world.time.clock('host-x') }, { mode: 'shared', steal: false }))
    const page = world.page(() => host)
    await world.run(300)
    await expect(host.started).rejects.toThrow('locks are not allowed here')
    expect(page.engine.connection()).toMatchObject({ state: 'failed', reason: "the engine's host could not start: TypeError: locks are not allowed here" })
    // The page rejects with the host's error's name; a plain error has no fields to carry.
    const error = await page.engine.ready.then(() => null, (failure: unknown) => failure)
    expect([(error as Error).name, Object.keys(error as Error), ((error as Error).cause as Error).message]).toEqual(['TypeError', ['name', 'cause'], 'locks are not allowed here'])
  })

  it("reports a failed watch of a page's tab, but not the watch the host withdraws when the page leaves", async () => {
    await reporting(async (reported) => {
      const world = new World()
      const host = world.host({ name: 'fleet', engine: windows, log: false })
      const leaving = world.page(() => host)
      await world.run()
      await leaving.engine.close()
      await world.run()
      expect(reported).toEqual([])
      const locks = failingLocks(world.locks.as('host-y'), ':tab:', new TypeError('no such lock'))
      const watching = new TestHost('host-y', new EngineHost({ name: 'fleet', engine: windows, log: false }, { locks, clock: world.time.clock('host-y') }, { mode: 'shared', steal: false }))
      const page = world.page(() => watching)
      await world.run()
      expect(page.engine.connection().state).toBe('connected')
      expect(reported.map(String)).toEqual(['TypeError: no such lock'])
    })
  })

  it('reports a steal request that fails for another reason than a stealer breaking it', async () => {
    await reporting(async (reported) => {
      const time = new FakeTime()
      const fake = new FakeLockManager()
      // A leader that never beats (frozen without a word).
      void fake.as('tab-0').request('tidemark-worker:fleet:leader', {}, () => new Promise<void>(() => {}))
      const election = new LeaderElection({
        name: 'fleet',
        tab: 'tab-1',
        locks: failingLocks(fake.as('tab-1'), ':leader-steal', new TypeError('the steal lock is refused')),
        clock: time.clock('tab-1'),
        heartbeatMs: 250,
        staleMs: 1_500,
        lead: () => {},
        deposed: () => {},
        announceSteal: () => {},
      })
      election.start()
      await time.run(2_000)
      election.stop()
      await settle()
      expect(reported.map(String)).toContain('TypeError: the steal lock is refused')
      expect(reported.filter((error) => String(error).includes('Abort'))).toEqual([])
    })
  })
})

describe('close()', () => {
  it("a leader tab's page no longer says it runs the host once closed or failed", async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: windows, log: false }, { mode: 'leader', steal: false })
    const closing = world.page(() => host, { mode: 'leader', ownsHost: true })
    const failing = world.page(() => host, { mode: 'leader', ownsHost: true })
    await world.run()
    expect([closing.engine.connection().leader, failing.engine.connection().leader]).toEqual([true, true])
    const closed = closing.engine.close()
    await world.run()
    await closed
    failing.engine.failed('gave up')
    expect([closing.engine.connection(), failing.engine.connection()]).toMatchObject([
      { state: 'closed', leader: false },
      { state: 'failed', leader: false },
    ])
  })

  it('while a takeover is under way waits for the next host to make the batches durable', async () => {
    const world = new World()
    let current: TestHost | null = world.host({ name: 'fleet', engine: windows, log: false })
    const page = world.page(() => current)
    await world.run()
    await page.engine.ready
    // The host stops before it got the batch.
    ;(page.connector.toHost as Wire).held = true
    const receipt = page.engine.ingest(readings('d1', 1, 3))
    await world.run(10)
    const old = page.connector.link as HostLink
    page.engine.lost(old, 'the host stopped')
    page.connector.gone(old)
    let closed = false
    const closing = page.engine.close().then(() => {
      closed = true
    })
    await expect(page.engine.close()).rejects.toThrow('the remote engine is closed')
    await expect(page.engine.ingest(readings('d1', 4, 1))).rejects.toThrow('the remote engine is closed')
    await world.run(1_000)
    expect(closed).toBe(false)
    current = world.host({ name: 'fleet', engine: windows, log: false })
    page.connector.connect()
    await world.run(300)
    await closing
    await (await receipt).durable
    expect([(await receipt).accepted, current.host.engine?.stats().applied, page.engine.connection().state]).toEqual([3, 3, 'closed'])
  })

  it(`gives up waiting for a host after CLOSE_WAIT_MS, rejecting the batches it held, each saying whether it may be in the log`, async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: windows, log: false })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    ;(page.connector.toHost as Wire).held = true
    const receipt = page.engine.ingest(readings('d1', 1, 3)).then(
      () => 'applied',
      (error: unknown) => String(error),
    )
    await world.run(10)
    page.engine.lost(page.connector.link as HostLink, 'the host stopped')
    // Ingested while no host serves the page: it waits, and never goes anywhere.
    const unsent = page.engine.ingest(readings('d1', 4, 1)).then(
      () => 'applied',
      (error: unknown) => String(error),
    )
    let closed = false
    const closing = page.engine.close().then(() => {
      closed = true
    })
    await world.time.run(CLOSE_WAIT_MS - 100, 100)
    expect(closed).toBe(false)
    await world.time.run(200, 100)
    await closing
    // The host may have logged the batch before it went away (its answer was held on the way).
    expect(await receipt).toBe(
      `Error: the remote engine is closed: no host served this page within ${CLOSE_WAIT_MS} ms of close(); this batch's host went away before saying it was durable: it may be in the log (nextSeq(source) tells)`,
    )
    expect(await unsent).toBe(`Error: the remote engine is closed: no host served this page within ${CLOSE_WAIT_MS} ms of close(); this batch never reached a host: not in the log`)
  })
})

describe('close() waiting for a host', () => {
  it('counts its CLOSE_WAIT_MS again each time a host goes away: a host that served the page meanwhile restarts the wait', async () => {
    const world = new World()
    let current: TestHost | null = world.host({ name: 'fleet', engine: windows, log: false })
    const page = world.page(() => current)
    await world.run()
    await page.engine.ready
    ;(page.connector.toHost as Wire).held = true
    const receipt = page.engine.ingest(readings('d1', 1, 3)).then(
      () => 'applied',
      (error: unknown) => String(error),
    )
    let closed = false
    const closing = page.engine.close().then(() => {
      closed = true
    })
    await world.run(10)
    page.engine.lost(page.connector.link as HostLink, 'the host stopped')
    await world.time.run(6_000, 100)
    // The next host welcomes the page, which sends it the batch; it never arrives (dropped on the way).
    current = world.host({ name: 'fleet', engine: windows, log: false })
    page.connector.connect()
    ;(page.connector.toHost as Wire).drop.add('ingest')
    await world.run(100)
    expect(page.engine.connection().takeovers).toBe(1)
    page.engine.lost(page.connector.link as HostLink, 'the host stopped')
    // 9.9 s after the second host went away (16 s after close()): still waiting for a host.
    await world.time.run(CLOSE_WAIT_MS - 100, 100)
    expect(closed).toBe(false)
    await world.time.run(200, 100)
    await closing
    expect(await receipt).toMatch(/no host served this page within 10000 ms of close\(\); this batch's host went away before saying it was durable: it may be in the log/)
  })
})

describe('close() giving up on a host', () => {
  it("rejects the durable of a batch its host applied but never said was durable, saying it may be in the log", async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: windows })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    // The host's word that the batch is durable never reaches the page.
    ;(page.connector.toPage as Wire).drop.add('durable')
    const receipt = await page.engine.ingest(readings('d1', 1, 3)).then(
      (r) => r,
      () => null,
    )
    await world.run()
    expect(receipt?.accepted).toBe(3)
    const durable = receipt?.durable.then(
      () => 'durable',
      (error: unknown) => String(error),
    )
    page.engine.lost(page.connector.link as HostLink, 'the host stopped')
    const closing = page.engine.close()
    await world.time.run(CLOSE_WAIT_MS + 100, 100)
    await closing
    expect(await Promise.race([durable, settle().then(() => 'still pending')])).toBe(
      `Error: the remote engine is closed: no host served this page within ${CLOSE_WAIT_MS} ms of close(); this batch's host went away before saying it was durable: it may be in the log (nextSeq(source) tells)`,
    )
  })
})

describe('without Web Locks, a host fenced out by another', () => {
  it.each([
    // A second tab: its own host claims the log.
    ['single mode: another tab', 'single', 'single mode serves one tab'],
    // The older build's SharedWorker; then a page of the newer build, whose SharedWorker (another URL) is another host.
    ['shared mode: the SharedWorker of another build', 'shared', 'the SharedWorkers of two builds of this app cannot share the engine'],
  ] as const)('%s: the page fails with the reason, instead of taking the log back again and again', async (_, mode, reason) => {
    const world = new World()
    let hosts = 0
    const start = (): TestHost => {
      hosts++
      return world.host({ name: 'fleet', engine: windows }, { mode, steal: false }, true)
    }
    const hostA = start()
    const pageA = world.page(() => hostA, { withoutLocks: true, mode })
    await world.run()
    await (await pageA.engine.ingest(readings('d1', 1, 5))).durable
    // No Web Locks keep the second host waiting: it claims the log.
    const hostB = start()
    const pageB = world.page(() => hostB, { withoutLocks: true, mode })
    await world.run(100)
    // The first host learns it was fenced out when it next writes.
    const fenced = (async () => {
      try {
        await (await pageA.engine.ingest(readings('d1', 6, 5))).durable
        return 'durable'
      } catch (error) {
        return String(error)
      }
    })()
    await world.run(300)
    expect(pageA.engine.connection()).toMatchObject({ state: 'failed' })
    expect(pageA.engine.connection().reason).toContain(reason)
    expect(await fenced).toContain(reason)
    await (await pageB.engine.ingest(readings('d2', 1, 5))).durable
    expect([hosts, pageB.engine.connection().state, hostB.host.engine?.stats().applied, hostA.host.engine]).toEqual([2, 'connected', 10, null])
  })
})

describe('history watches', () => {
  /** Records the history watches `page` asks of its host, from now on. */
  function watchLog(page: { readonly connector: { link: HostLink | null } }): string[] {
    const log: string[] = []
    const link = page.connector.link as HostLink
    const send = link.send.bind(link)
    link.send = (message) => {
      if (message.t === 'watch-history' || message.t === 'unwatch-history') log.push(`${message.t} ${message.window} ${message.key} ${message.start}`)
      send(message)
    }
    return log
  }

  it('are released when the watched session is withdrawn', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: { windows: session(300), watermark: manual(), allowedLateness: 10_000 }, log: false })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const log = watchLog(page)
    const at = (seq: number, ts: number): StreamEvent => ({ id: `d1#${seq}`, source: 'd1', seq, ts, key: 'k', value: 1 })
    await page.engine.ingest([at(1, 100), at(2, 600)])
    await world.run()
    expect(page.engine.results().map((r) => r.start)).toEqual([100, 600])
    page.engine.history('session:300', 'k', 600)
    await world.run()
    // A reading at 350 joins the two sessions: the one at 600 is withdrawn.
    await page.engine.ingest([at(3, 350)])
    await world.run()
    expect(page.engine.results().map((r) => r.start)).toEqual([100])
    expect(log).toEqual(['watch-history session:300 k 600', 'unwatch-history session:300 k 600'])
  })

  it('are released once the watched window can no longer be (the watermark passed its end plus allowedLateness)', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: { windows: tumbling(1_000), watermark: manual(), allowedLateness: 500 }, log: false })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const log = watchLog(page)
    // A minute nobody sends readings for.
    expect(page.engine.history('tumbling:1000', 'k', 5_000)).toEqual([])
    await page.engine.advanceWatermark(6_500)
    await world.run()
    expect(log).toEqual(['watch-history tumbling:1000 k 5000'])
    await page.engine.advanceWatermark(6_501)
    await world.run()
    expect(log).toEqual(['watch-history tumbling:1000 k 5000', 'unwatch-history tumbling:1000 k 5000'])
  })

  it('are kept while the watched window is final and in the mirror, and released when it leaves the mirror at the watermark the engine drops it', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: { windows: tumbling(1_000), watermark: manual(), allowedLateness: 500, retention: 2_000 }, log: false })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const log = watchLog(page)
    await page.engine.ingest(readings('d1', 1, 3))
    await world.run()
    expect(page.engine.history('tumbling:1000', 'k', 0)).toEqual([]) // not fired yet
    // Fired at 1,000, final at 1,500, kept for its retention: still in the mirror, its history with it.
    await page.engine.advanceWatermark(3_499)
    await world.run()
    expect(page.engine.results().map((r) => [r.start, r.final])).toEqual([[0, true]])
    expect(page.engine.history('tumbling:1000', 'k', 0).map((r) => r.count)).toEqual([3])
    expect(log).toEqual(['watch-history tumbling:1000 k 0'])
    await page.engine.advanceWatermark(3_500)
    await world.run()
    expect([page.engine.results(), (host.host.engine as Engine).results()]).toEqual([[], []])
    expect(log).toEqual(['watch-history tumbling:1000 k 0', 'unwatch-history tumbling:1000 k 0'])
  })

  it('are not asked of the next host for windows its snapshot lacks', async () => {
    const world = new World()
    let current: TestHost | null = world.host({ name: 'fleet', engine: { windows: tumbling(1_000), watermark: manual(), allowedLateness: 500 }, log: false })
    const page = world.page(() => current)
    await world.run()
    await page.engine.ready
    await page.engine.ingest(readings('d1', 1, 3))
    await world.run()
    page.engine.history('tumbling:1000', 'k', 0)
    await world.run()
    // The next host starts empty (log: false): the window is gone.
    const old = page.connector.link as HostLink
    page.engine.lost(old, 'the host stopped')
    current = world.host({ name: 'fleet', engine: { windows: tumbling(1_000), watermark: manual(), allowedLateness: 500 }, log: false })
    page.connector.connect()
    const log = watchLog(page)
    await world.run(300)
    expect(page.engine.connection().takeovers).toBe(1)
    expect(log).toEqual([])
  })
})
