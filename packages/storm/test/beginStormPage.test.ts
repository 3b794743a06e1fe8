import { createEngine, tumbling } from '@tidemark/engine'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { StormBatchReport, StormGlobals } from '../src/contract/stormPageApi.ts'
import { stormPageUrl } from '../src/contract/stormQuery.ts'
import { stormReading } from '../src/contract/stormReading.ts'
import { windowDigest } from '../src/contract/windowDigest.ts'
import { groundTruth, tumblingTruth } from '../src/driver/groundTruth.ts'
import { StormLedger } from '../src/driver/stormLedger.ts'
import { beginStormPage } from '../src/page/beginStormPage.ts'
import type { StormEngine } from '../src/page/deviceIngest.ts'
import type { StormPageEnvironment } from '../src/page/stormPageEnvironment.ts'

/** A page as the driver opens it, with a driver-side ledger behind its report binding. */
function page(role: 'device' | 'dashboard', seed = 7) {
  const ledger = new StormLedger()
  const calls: (readonly StormBatchReport[])[] = []
  const globals: StormGlobals = {
    tidemarkStormReport: async (reports) => {
      calls.push(reports)
      ledger.record(reports)
    },
  }
  let online = true
  const network = new EventTarget()
  const environment: StormPageEnvironment = {
    search: new URL(stormPageUrl('http://127.0.0.1/storm.html', { role, server: 'ws://127.0.0.1:1', room: 'r', seed })).search,
    globals,
    network,
    isOnline: () => online,
    now: () => Date.now(),
  }
  const goOffline = (offline: boolean): void => {
    online = !offline
    network.dispatchEvent(new Event(offline ? 'offline' : 'online'))
  }
  return { ledger, calls, globals, environment, goOffline }
}

const engineOptions = { windows: tumbling(1_000), allowedLateness: 2_000, retention: 1e12 }

beforeEach(() => {
  vi.useFakeTimers({ now: 1_764_000_000_000 })
})
afterEach(() => {
  vi.useRealTimers()
})

describe('beginStormPage', () => {
  it("a device ingests the readings of its seed, reports every durable batch once, and shows the driver's ground truth", async () => {
    const device = page('device')
    const session = beginStormPage(device.environment)
    expect(session.query).toEqual({ role: 'device', server: 'ws://127.0.0.1:1', room: 'r', seed: 7 })
    const engine = createEngine(engineOptions)
    const api = session.ready({ engine, source: 'device-a' })
    expect(device.globals.tidemarkStorm).toBe(api)

    api.start({ batch: 20, everyMs: 100 })
    api.start({ batch: 99, everyMs: 1 }) // already running: ignored
    await vi.advanceTimersByTimeAsync(1_050)
    // Reports travel together, a few times a second: fewer sends than batches.
    expect(device.calls.length).toBeGreaterThan(0)
    expect(device.calls.length).toBeLessThan(11)
    await api.stop()
    const snapshot = api.snapshot()
    expect(snapshot.produced).toBe(220) // batches at 0, 100, …, 1000 ms
    expect(snapshot.durable).toBe(220)
    expect(device.ledger.totals(new Map([['device-a', 220]])).gaps).toEqual([])

    const truth = groundTruth(tumblingTruth({ windowMs: 1_000, allowedLateness: 2_000 }), [
      { source: 'device-a', seed: 7, produced: snapshot.produced, lateIds: snapshot.lateIds, firstBatchEnd: 20 },
    ])
    expect(truth.problems).toEqual([])
    expect(snapshot.digest).toBe(truth.digest)
    expect(snapshot.digest).toBe(windowDigest(engine.results()))
    expect(snapshot.counted).toBe(truth.counted)
    expect(snapshot.accepted + snapshot.beyondLateness).toBe(220)
    expect(snapshot).toMatchObject({ role: 'device', source: 'device-a', seed: 7, online: true, errors: [], syncState: 'local', pendingLocalUpdates: 0, refusal: null })
  })

  it('durable reports wait reportEveryMs, default 250 ms, to travel together', async () => {
    const timed = async (reportEveryMs?: number) => {
      const device = page('device')
      const api = beginStormPage(device.environment).ready({ engine: createEngine(engineOptions), source: 'device-a', ...(reportEveryMs === undefined ? {} : { reportEveryMs }) })
      api.start({ batch: 1, everyMs: 10 })
      await vi.advanceTimersByTimeAsync(240)
      const before = device.calls.length
      await vi.advanceTimersByTimeAsync(20)
      await api.stop()
      return { before, after: device.calls.length - before }
    }
    // Default: nothing before 250 ms, then the first 25 batches in one send (and the rest at stop()).
    expect(await timed()).toEqual({ before: 0, after: 2 })
    expect((await timed(50)).before).toBe(4)
  })

  it('records every offline/online event from the moment it begins, and the sync statuses the app reports', async () => {
    const device = page('device')
    const session = beginStormPage(device.environment)
    device.goOffline(true) // before the engine is open: still recorded
    session.syncStatus('disconnected')
    await vi.advanceTimersByTimeAsync(50)
    const api = session.ready({ engine: createEngine(engineOptions), source: 'device-a' })
    device.goOffline(false)
    session.syncStatus('connected')
    expect(api.transitions()).toEqual([
      { at: 1_764_000_000_000, online: false },
      { at: 1_764_000_000_050, online: true },
    ])
    expect(api.statusChanges().map((c) => c.status)).toEqual(['disconnected', 'connected'])
    expect(api.snapshot().online).toBe(true)
  })

  it('resumes after the seqs its engine restored, and a dashboard never ingests', async () => {
    const engine = createEngine(engineOptions)
    engine.ingest([1, 2, 3].map((seq) => stormReading(7, 'device-a', seq)))
    const device = page('device')
    const api = beginStormPage(device.environment).ready({ engine, source: 'device-a' })
    api.start({ batch: 2, everyMs: 10 })
    await api.stop()
    expect(api.snapshot()).toMatchObject({ produced: 5, durable: 5 })
    expect(device.ledger.batches.get('device-a')).toEqual([{ source: 'device-a', from: 4, to: 5, accepted: 2, beyondLateness: 0, duplicates: 0, rejected: 0 }])

    const board = page('dashboard')
    const dashboard = beginStormPage(board.environment).ready({ engine: createEngine(engineOptions), source: 'board-1' })
    dashboard.start({ batch: 20, everyMs: 10 })
    await vi.advanceTimersByTimeAsync(100)
    await dashboard.stop()
    expect(dashboard.snapshot()).toMatchObject({ role: 'dashboard', produced: 0, counted: 0 })
    expect(board.calls).toEqual([])
  })

  it('shows app errors and failed durability in snapshot().errors', async () => {
    const device = page('device')
    const session = beginStormPage(device.environment)
    const engine = createEngine(engineOptions)
    // A log that refuses every commit (quota): the receipt's durable promise rejects.
    const failing: StormEngine = {
      ingest: (events) => ({ ...engine.ingest(events), durable: Promise.reject(new Error('quota exceeded')) }),
      stats: () => engine.stats(),
      results: (query) => engine.results(query),
      lateEvents: () => engine.lateEvents(),
      syncStatus: () => engine.syncStatus(),
    }
    const api = session.ready({ engine: failing, source: 'device-a' })
    session.error('replication: peer has another window configuration')
    api.start({ batch: 5, everyMs: 10 })
    await api.stop()
    expect(api.snapshot().errors).toEqual(['replication: peer has another window configuration', 'durable 1..5: quota exceeded'])
    expect(api.snapshot().durable).toBe(0)
  })

  it('runs the commands the app registered, refuses others naming the known ones, and closes the app after ingest stopped', async () => {
    const device = page('device')
    const session = beginStormPage(device.environment)
    const closed: string[] = []
    const api = session.ready({
      engine: createEngine(engineOptions),
      source: 'device-a',
      commands: { double: (n) => Number(n) * 2 },
      close: () => {
        closed.push('app')
      },
    })
    await expect(api.command('double', 21)).resolves.toBe(42)
    await expect(api.command('explode')).rejects.toThrow('storm page: no command "explode" (this page has: double)')
    await expect(api.command('toString')).rejects.toThrow(/no command "toString"/)
    api.start({ batch: 3, everyMs: 10 })
    await api.close()
    expect(closed).toEqual(['app'])
    expect(device.ledger.durable('device-a')).toBe(3)
  })

  it('refuses a bad ingest, a second ready() and an empty source', () => {
    const device = page('device')
    const session = beginStormPage(device.environment)
    expect(() => session.ready({ engine: createEngine(engineOptions), source: '' })).toThrow('storm page: source must be a non-empty string, got ""')
    const api = session.ready({ engine: createEngine(engineOptions), source: 'device-a' })
    expect(() => api.start({ batch: 0, everyMs: 10 })).toThrow('storm page: ingest batch must be a positive integer, got 0')
    expect(() => api.start({ batch: 1, everyMs: -1 })).toThrow(/everyMs must be a non-negative number, got -1/)
    expect(() => session.ready({ engine: createEngine(engineOptions), source: 'device-b' })).toThrow('storm page: ready() was already called (source device-a)')
  })

  it('publishes why it cannot begin (a malformed query) or open, for the driver waiting on it', () => {
    const globals: StormGlobals = {}
    expect(() => beginStormPage({ search: '?role=device', globals, network: new EventTarget(), isOnline: () => true, now: Date.now })).toThrow(/server \(the sync URL\) is missing/)
    expect(globals.tidemarkStormError).toMatch(/^Error: storm page query "\?role=device": /)

    const device = page('device')
    const reason = beginStormPage(device.environment).failed(new TypeError('IndexedDB is closed'))
    expect(reason).toBe('TypeError: IndexedDB is closed')
    expect(device.globals.tidemarkStormError).toBe(reason)
  })

  it('outside a browser, asks for an environment instead of guessing', () => {
    expect(() => beginStormPage()).toThrow('storm page: no browser here (location, navigator, addEventListener); pass a StormPageEnvironment to beginStormPage')
  })
})
