/**
 * runStorm end to end against a stand-in browser: each "page" runs the real page side
 * (`beginStormPage`) over a real engine in this process, so the test sees what the driver opens,
 * in what order, with which query, how it toggles the devices and how it ends, on a fake clock.
 * A dashboard's engine shows the devices' windows as they stood when each was last online (a sync
 * that stops while a device is offline).
 */
import { createEngine, type Engine, tumbling, type WindowResult } from '@tidemark/engine'
import type { Browser, BrowserContext, Page } from '@playwright/test'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { STORM_REPORT_BINDING, type StormGlobals } from '../src/contract/stormPageApi.ts'
import { parseStormQuery } from '../src/contract/stormQuery.ts'
import { tumblingTruth } from '../src/driver/groundTruth.ts'
import { type StormOptions, type StormPageSlot, runStorm } from '../src/driver/runStorm.ts'
import type { StormResult } from '../src/driver/stormResult.ts'
import { beginStormPage } from '../src/page/beginStormPage.ts'
import type { StormEngine } from '../src/page/deviceIngest.ts'

const SEED = 4_242

const engineOptions = { windows: tumbling(1_000), allowedLateness: 2_000, retention: 1e12 }

/** Sets or removes the storm globals of `target` to `from`'s. */
function setGlobals(target: StormGlobals, from: StormGlobals): void {
  if (from.tidemarkStorm === undefined) delete target.tidemarkStorm
  else target.tidemarkStorm = from.tidemarkStorm
  if (from.tidemarkStormError === undefined) delete target.tidemarkStormError
  else target.tidemarkStormError = from.tidemarkStormError
}

/** Runs `fn` as the page would: with the page's globals as `globalThis`'s storm globals. */
function inPage<T>(globals: StormGlobals, fn: () => T): T {
  const shared = globalThis as StormGlobals
  const saved: StormGlobals = {}
  setGlobals(saved, shared)
  setGlobals(shared, globals)
  try {
    return fn()
  } finally {
    setGlobals(shared, saved)
  }
}

/** What the stand-in browser did, in order, and the pages it opened. */
interface BrowserLog {
  readonly events: string[]
  readonly contexts: FakeContext[]
  readonly devices: { readonly engine: Engine; readonly context: FakeContext; seen: readonly WindowResult[] }[]
  /** When a device was last switched online. */
  lastOnlineAt: number
}

interface FakeContext {
  readonly id: number
  readonly urls: string[]
  readonly offline: boolean[]
  isOffline: boolean
  closed: boolean
}

/** A Playwright `Browser` whose pages run the storm page side in this process. */
function fakeBrowser(options: { readonly deafDashboards?: boolean } = {}): { browser: Browser; log: BrowserLog } {
  const log: BrowserLog = { events: [], contexts: [], devices: [], lastOnlineAt: 0 }
  const browser = {
    newContext: async () => {
      const state: FakeContext = { id: log.contexts.length, urls: [], offline: [], isOffline: false, closed: false }
      log.contexts.push(state)
      log.events.push(`context ${state.id}`)
      const networks: EventTarget[] = []
      let report: ((source: unknown, reports: unknown) => unknown) | undefined
      const context = {
        exposeBinding: async (name: string, binding: (source: unknown, reports: unknown) => unknown) => {
          expect(name).toBe(STORM_REPORT_BINDING)
          log.events.push(`binding ${state.id}`)
          report = binding
        },
        setOffline: async (offline: boolean) => {
          state.offline.push(offline)
          log.lastOnlineAt = offline ? log.lastOnlineAt : Date.now()
          state.isOffline = offline
          for (const network of networks) network.dispatchEvent(new Event(offline ? 'offline' : 'online'))
          await new Promise((resolve) => setTimeout(resolve, 5)) // the browser acknowledges
        },
        close: async () => {
          state.closed = true
          log.events.push(`close ${state.id}`)
        },
        newPage: async () => {
          const globals: StormGlobals = {}
          const network = new EventTarget()
          networks.push(network)
          const page = {
            on: () => page,
            goto: async (url: string) => {
              state.urls.push(url)
              log.events.push(`page ${state.id}`)
              if (report !== undefined) {
                const binding = report
                globals.tidemarkStormReport = async (reports) => {
                  await binding({}, reports)
                }
              }
              // The app: a device ingests into its own engine, a dashboard shows the fleet.
              const session = beginStormPage({ search: new URL(url).search, globals, network, isOnline: () => !state.isOffline, now: () => Date.now() })
              const source = session.params.get('source') ?? ''
              if (session.query.role === 'device') {
                const engine = createEngine(engineOptions)
                log.devices.push({ engine, context: state, seen: [] })
                session.ready({ engine, source })
              } else {
                session.ready({ engine: options.deafDashboards === true ? createEngine(engineOptions) : fleetView(log), source })
              }
              return null
            },
            waitForFunction: async (fn: () => unknown) => {
              if (!inPage(globals, fn)) throw new Error('the page is not ready')
            },
            evaluate: async (fn: (argument: unknown) => unknown, argument?: unknown) => structuredClone(await inPage(globals, () => fn(argument))),
          }
          return page as unknown as Page
        },
      }
      return context as unknown as BrowserContext
    },
  }
  return { browser: browser as unknown as Browser, log }
}

/** A dashboard's engine: every device's windows as they were the last time it was online, summed. */
function fleetView(log: BrowserLog): StormEngine {
  const own = createEngine(engineOptions)
  return {
    ingest: (events) => own.ingest(events),
    stats: () => own.stats(),
    lateEvents: () => own.lateEvents(),
    syncStatus: () => own.syncStatus(),
    results: () => {
      const rows = new Map<string, { window: string; key: string; start: number; count: number; sum: number }>()
      for (const device of log.devices) {
        if (!device.context.isOffline) device.seen = device.engine.results()
        for (const r of device.seen) {
          const id = `${r.window}|${r.key}|${r.start}`
          const row = rows.get(id) ?? { window: r.window, key: r.key, start: r.start, count: 0, sum: 0 }
          row.count += r.count
          row.sum += r.sum
          rows.set(id, row)
        }
      }
      return [...rows.values()] as unknown as WindowResult[]
    },
  }
}

/** Runs `storm` on the fake clock until it settles. */
async function settle<T>(storm: Promise<T>): Promise<T> {
  let done = false
  storm.then(
    () => (done = true),
    () => (done = true),
  )
  for (let step = 0; !done && step < 10_000; step++) await vi.advanceTimersByTimeAsync(50)
  return storm
}

/** The options the tests start from (an emulated network, 1 s, each page's source named after its slot), `overrides` on top. */
function stormOptions(browser: Browser, overrides: Partial<StormOptions> = {}): StormOptions {
  return {
    browser,
    baseURL: 'http://127.0.0.1:4183',
    path: '/storm.html',
    server: 'ws://127.0.0.1:4001',
    params: ({ role, index }) => ({ source: `${role}-${index}` }),
    truth: tumblingTruth({ windowMs: 1_000, allowedLateness: 2_000 }),
    seconds: 1,
    seed: SEED,
    network: 'emulate',
    ...overrides,
  }
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_764_000_000_000 })
})
afterEach(() => {
  vi.useRealTimers()
})

describe('runStorm', () => {
  it('opens each device in its own context and the dashboards in one more, with the seeded query and the params, toggles, brings all back online and checks the truth', async () => {
    const { browser, log } = fakeBrowser()
    const slots: StormPageSlot[] = []
    const server = { started: 0, stopped: 0 }
    let storm: StormResult | undefined
    try {
      storm = await settle(
        runStorm({
          browser,
          baseURL: 'http://127.0.0.1:4183',
          path: '/storm.html?shell=0',
          server: async () => {
            server.started++
            log.events.push('server')
            return {
              url: 'ws://127.0.0.1:4001',
              stop: async () => {
                server.stopped++
              },
            }
          },
          params: async (slot) => {
            slots.push(slot)
            return { source: `${slot.role}-${slot.index}` }
          },
          truth: tumblingTruth({ windowMs: 1_000, allowedLateness: 2_000 }),
          seconds: 3,
          seed: SEED,
          network: 'emulate',
          devices: 3,
        }),
      )

      // The server first, then per device a context with the report binding before its page, then the dashboards' one context.
      expect(log.events.slice(0, 11)).toEqual(['server', 'context 0', 'binding 0', 'page 0', 'context 1', 'binding 1', 'page 1', 'context 2', 'binding 2', 'page 2', 'context 3'])
      expect(log.events.slice(11)).toEqual(['binding 3', 'page 3', 'page 3'])
      expect(log.contexts.map((c) => c.urls.length)).toEqual([1, 1, 1, 2])

      // Devices are seeded seed + k, dashboards seed + 100 + k; the room defaults to storm-<seed>.
      const room = `storm-${SEED}`
      const server0 = 'ws://127.0.0.1:4001'
      expect(slots).toEqual([
        { role: 'device', index: 0, seed: SEED, room, serverUrl: server0, server: server0 },
        { role: 'device', index: 1, seed: SEED + 1, room, serverUrl: server0, server: server0 },
        { role: 'device', index: 2, seed: SEED + 2, room, serverUrl: server0, server: server0 },
        { role: 'dashboard', index: 0, seed: SEED + 100, room, serverUrl: server0, server: server0 },
        { role: 'dashboard', index: 1, seed: SEED + 101, room, serverUrl: server0, server: server0 },
      ])
      const urls = log.contexts.flatMap((c) => c.urls.map((u) => new URL(u)))
      expect(urls.map((u) => parseStormQuery(u.search))).toEqual(slots.map(({ role, seed }) => ({ role, server: server0, room, seed })))
      for (const [k, url] of urls.entries()) {
        expect(url.pathname).toBe('/storm.html')
        expect(url.searchParams.get('shell')).toBe('0') // the path's own parameter stays
        expect(url.searchParams.get('source')).toBe(`${slots[k]?.role}-${slots[k]?.index}`)
      }

      // Each device toggled on its own schedule, offline first, and ended online; the dashboards' context never toggles.
      for (const device of log.contexts.slice(0, 3)) {
        expect(device.offline.length).toBeGreaterThan(2)
        expect(device.offline[0]).toBe(true)
        expect(device.offline.at(-1)).toBe(false)
        expect(device.isOffline).toBe(false)
      }
      expect(log.contexts[3]?.offline).toEqual([])

      // Default ingest, 20 readings every 200 ms; every page on its truth; devices first in the snapshots.
      expect(storm.ingest).toEqual({ batch: 20, everyMs: 200 })
      expect(storm).toMatchObject({ seed: SEED, seconds: 3, pages: 5, devices: 3, dashboards: 2, network: 'emulate', converged: true, problems: [] })
      expect(storm.snapshots.map((s) => `${s.role}:${s.source}`)).toEqual(['device:device-0', 'device:device-1', 'device:device-2', 'dashboard:dashboard-0', 'dashboard:dashboard-1'])
      expect(storm.truth.produced).toBeGreaterThan(3 * 20 * 10)
      expect(storm.truth.produced).toBe(storm.truth.counted + storm.truth.lateLane)
      expect(storm.dashboardCounts).toEqual([storm.truth.counted, storm.truth.counted])
      expect(storm.gaps).toEqual([])
      expect(storm.toggles.issued).toBe(storm.toggles.acknowledged)

      // The pages stay open until close(), which closes every context and stops the server the storm started.
      expect(log.contexts.some((c) => c.closed)).toBe(false)
      expect(server).toEqual({ started: 1, stopped: 0 })
      await storm.close()
      expect(log.contexts.every((c) => c.closed)).toBe(true)
      expect(server).toEqual({ started: 1, stopped: 1 })
    } finally {
      await storm?.close()
    }
  })

  it('with dashboards: 0 opens no dashboard context, and a device shows its own readings; during runs alongside, its sleep ending with the storm', async () => {
    const { browser, log } = fakeBrowser()
    const slept: number[] = []
    const storm = await settle(
      runStorm({
        ...stormOptions(browser),
        devices: 2,
        dashboards: 0,
        room: 'my-room',
        ingest: { batch: 5, everyMs: 100 },
        during: async (running) => {
          expect(running.devices.map((d) => d.source)).toEqual(['device-0', 'device-1'])
          expect(running.dashboards).toEqual([])
          expect(running.serverUrl).toBe('ws://127.0.0.1:4001')
          const from = Date.now()
          await running.sleep(60_000)
          slept.push(Date.now() - from)
        },
      }),
    )
    try {
      expect(log.contexts).toHaveLength(2)
      expect(new URL(log.contexts[0]?.urls[0] ?? '').searchParams.get('room')).toBe('my-room')
      expect(storm).toMatchObject({ pages: 2, dashboards: 0, dashboardCounts: [], converged: true, problems: [], ingest: { batch: 5, everyMs: 100 } })
      // Each device's digest is the truth of its own readings, not the fleet's.
      const [a, b] = storm.snapshots
      expect(a?.digest).toBe(storm.deviceTruths['device-0']?.digest)
      expect(b?.digest).toBe(storm.deviceTruths['device-1']?.digest)
      expect(a?.digest).not.toBe(storm.truth.digest)
      expect(slept).toHaveLength(1)
      expect(slept[0]).toBeLessThanOrEqual(1_000) // seconds: 1
    } finally {
      await storm.close()
    }
  })

  it('waits settleMs (default 60 s) for the truth once everyone is back online, then reports the pages that never showed it', async () => {
    const { browser, log } = fakeBrowser({ deafDashboards: true })
    const storm = await settle(
      runStorm(stormOptions(browser, { devices: 1, dashboards: 1 })),
    )
    try {
      const waited = Date.now() - log.lastOnlineAt
      expect(waited).toBeGreaterThanOrEqual(60_000)
      expect(waited).toBeLessThan(60_000 + 2 * 250 + 100) // one more poll, 250 ms apart
      expect(storm.converged).toBe(false)
      expect(storm.convergenceMs).toBeNaN()
      expect(storm.problems.join('\n')).toMatch(/dashboard/)
    } finally {
      await storm.close()
    }
  })

  it('opens 6 devices by default, and refuses params that name a storm parameter', async () => {
    const { browser, log } = fakeBrowser()
    const options: StormOptions = {
      browser,
      baseURL: 'http://127.0.0.1:4183',
      path: '/storm.html',
      server: 'ws://127.0.0.1:4001',
      params: ({ role, index }) => (role === 'device' ? { source: `device-${index}` } : { room: 'mine' }),
      truth: tumblingTruth({ windowMs: 1_000, allowedLateness: 2_000 }),
      seconds: 1,
      seed: SEED,
      network: 'emulate',
    }
    await expect(settle(runStorm(options))).rejects.toThrow(/the page parameter "room" is the storm's own/)
    expect(log.contexts.map((c) => c.urls.length)).toEqual([1, 1, 1, 1, 1, 1, 0]) // the dashboards' context opened no page
    expect(log.contexts.every((c) => c.closed)).toBe(true) // closed after the failure
  })

  it('refuses a non-positive seconds and a fractional devices, naming the option, before any browser context opens', async () => {
    const { browser, log } = fakeBrowser()
    const base: StormOptions = { browser, baseURL: 'http://127.0.0.1:1', path: '/storm.html', server: 'ws://127.0.0.1:2', truth: tumblingTruth({ windowMs: 1_000, allowedLateness: 0 }), seconds: 1, seed: 1 }
    await expect(runStorm({ ...base, seconds: 0 })).rejects.toThrow(new RangeError('runStorm: seconds must be positive, got 0'))
    await expect(runStorm({ ...base, seconds: Number.NaN })).rejects.toThrow(/runStorm: seconds/)
    await expect(runStorm({ ...base, devices: 1.5 })).rejects.toThrow(new RangeError('runStorm: devices must be an integer >= 1, got 1.5'))
    await expect(runStorm({ ...base, dashboards: -1 })).rejects.toThrow(/runStorm: dashboards must be an integer >= 0/)
    await expect(runStorm({ ...base, toggle: [500, 50] })).rejects.toThrow(/runStorm: toggle/)
    expect(log.contexts).toEqual([])
  })

  it("with network 'partition', refuses a server URL that is not plain ws://host:port before any browser context opens, also one a server function started", async () => {
    const { browser, log } = fakeBrowser()
    const base: StormOptions = { browser, baseURL: 'http://127.0.0.1:1', path: '/storm.html', server: 'ws://127.0.0.1:2', truth: tumblingTruth({ windowMs: 1_000, allowedLateness: 0 }), seconds: 1, seed: 1 }
    for (const server of ['wss://127.0.0.1:2', 'ws://127.0.0.1', 'http://127.0.0.1:2', '127.0.0.1:2', '']) {
      await expect(runStorm({ ...base, server }), server).rejects.toThrow(new RangeError(`runStorm: network 'partition' proxies plain ws://host:port servers, not ${JSON.stringify(server)}`))
    }
    let stopped = 0
    const started = async () => ({ url: 'wss://relay.example:443', stop: async () => void stopped++ })
    await expect(runStorm({ ...base, server: started })).rejects.toThrow(/proxies plain ws:\/\/host:port servers, not "wss:\/\/relay.example:443"/)
    expect(stopped).toBe(1) // the server it started is stopped
    expect(log.contexts).toEqual([])
  })
})
