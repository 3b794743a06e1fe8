/**
 * The storm: many devices and dashboards of one app in real Chromium, devices ingesting while
 * their network drops and returns on a seeded schedule. After the storm it stops ingest,
 * brings everyone back online, waits until every page shows the ground truth computed from the
 * readings the devices produced, and returns the figures.
 */
import type { Browser, BrowserContext } from '@playwright/test'
import type { StormRole } from '../contract/stormPageApi.ts'
import { stormPageUrl } from '../contract/stormQuery.ts'
import { type DeviceNetworkMode, emulatedNetwork, type NetworkSwitch, partitionedNetwork } from './deviceNetwork.ts'
import { type DeviceOutcome, deviceOutcome, groundTruth, type StormTruth, type TruthFigures } from './groundTruth.ts'
import { NetworkToggles } from './networkToggles.ts'
import { StormLedger } from './stormLedger.ts'
import { openStormPage, type StormPage, snapshotOf, startIngest, stopIngest, transitionsOf, waitForTruth } from './stormPage.ts'
import { stormProblems } from './stormProblems.ts'
import type { StormFigures, StormResult } from './stormResult.ts'
import { describeStorm } from './stormSummary.ts'
import { type SyncProxy, startSyncProxy } from './syncProxy.ts'
import { toggleRange } from './toggleSchedule.ts'

/**
 * A sync server the storm started and will stop (`StormOptions.server` as a function).
 *
 * @example
 * const server: StormServer = { url: 'ws://127.0.0.1:4001', stop: async () => {} }
 */
export interface StormServer {
  /** The URL pages sync through; `ws://host:port` for `network: 'partition'`. */
  readonly url: string
  /** Stops the server; resolves once it has exited. */
  stop(): Promise<void>
}

/**
 * Which page of the storm is about to open, for `StormOptions.params`.
 *
 * @example
 * params: async ({ role, index, room }) => ({ token: await tokenFor(role, `${room}/device-${index}`) })
 */
export interface StormPageSlot {
  readonly role: StormRole
  /** Its place among the devices, or among the dashboards, from 0. */
  readonly index: number
  /** The seed it is opened with (`seed + index` for devices, `seed + 100 + index` for dashboards). */
  readonly seed: number
  readonly room: string
  /** The sync server's URL. */
  readonly serverUrl: string
  /** The URL the page is told to sync through (its `server` query parameter): for a partitioned device, its own proxy to `serverUrl`. */
  readonly server: string
}

/**
 * What to storm and how.
 *
 * @example
 * const options: StormOptions = { browser, baseURL, path: '/storm.html', server: server.url, truth, seconds: 60, seed: stormSeed() }
 */
export interface StormOptions {
  readonly browser: Browser
  /** Origin serving the pages, e.g. `http://127.0.0.1:4183`. */
  readonly baseURL: string
  /** The storm page's path (it may carry the app's own query parameters), e.g. `/storm.html`. */
  readonly path: string
  /**
   * The sync server: its URL (the caller starts and stops it), or a function that starts one
   * (the storm stops it in `close()`). The storm does not care which server it is.
   */
  readonly server: string | (() => Promise<StormServer>)
  /** The app's readings and window values (`tumblingTruth(...)` or your own). */
  readonly truth: StormTruth
  /** How long devices toggle, s. */
  readonly seconds: number
  /** Seeds the toggle schedule and the pages' readings (`stormSeed()`). */
  readonly seed: number
  /**
   * How devices go offline: `partition` (default) cuts each device's own proxy to the sync
   * server and overrides its page's `navigator.onLine` (CDP); `emulate` is Playwright's
   * `context.setOffline`.
   */
  readonly network?: DeviceNetworkMode
  /** Device pages, each in its own browser context (own IndexedDB, Web Locks, network); default 6. */
  readonly devices?: number
  /** Dashboard tabs, all in one more context (so they also sync between tabs); default 2. */
  readonly dashboards?: number
  /** Each device stays online/offline for a uniform [min, max) ms before toggling; default [50, 500]. */
  readonly toggle?: readonly [number, number]
  /** Room on the server; default `storm-<seed>`. */
  readonly room?: string
  /** Each device ingests `batch` readings every `everyMs`; default 20 every 200 ms. */
  readonly ingest?: { readonly batch?: number; readonly everyMs?: number }
  /** Runs alongside the storm (e.g. restart the server half way); the storm ends when both are done. */
  readonly during?: (storm: RunningStorm) => Promise<void>
  /** How long to wait for convergence after everyone is back online; default 60 s. */
  readonly settleMs?: number
  /**
   * What a device page must show once everyone has synced: `own` (default), the truth of its
   * own readings, for an app whose devices never receive each other's state (each writes its
   * own room on a Tidemark relay); `fleet`, the whole fleet's truth, for devices that share one
   * document. Dashboards always show the whole fleet's.
   */
  readonly devicesShow?: 'own' | 'fleet'
  /**
   * The app's own query parameters of each page, added to its URL (e.g. the identity and the
   * access token the sync server wants from it); called once per page, before it opens. May not
   * name a storm parameter (`role`, `server`, `room`, `seed`).
   */
  readonly params?: (page: StormPageSlot) => Readonly<Record<string, string>> | Promise<Readonly<Record<string, string>>>
}

/**
 * The storm while it runs, as `during` sees it.
 *
 * @example
 * during: async (storm) => {
 *   await storm.sleep(2_000)
 *   await stormCommand(storm.devices[0].page, 'writeMalformed', 20)
 * }
 */
export interface RunningStorm {
  readonly devices: readonly StormPage[]
  readonly dashboards: readonly StormPage[]
  /** The sync server's URL (the pages of a partitioned storm reach it through their proxies). */
  readonly serverUrl: string
  /** Resolves after `ms`, or early when the storm ends. */
  sleep(ms: number): Promise<void>
  readonly endsAt: number
}

/** The server a partitioned device's proxy forwards to: a plain `ws://host:port` URL, or a RangeError saying why not. */
function partitionUpstream(serverUrl: string): URL {
  const upstream = URL.canParse(serverUrl) ? new URL(serverUrl) : null
  if (upstream === null || upstream.protocol !== 'ws:' || upstream.port === '') throw new RangeError(`runStorm: network 'partition' proxies plain ws://host:port servers, not ${JSON.stringify(serverUrl)}`)
  return upstream
}

function count(name: string, value: number, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`runStorm: ${name} must be an integer >= ${min}, got ${value}`)
  return value
}

/**
 * Runs a storm and returns its figures; the contexts stay open until `close()`.
 *
 * @example
 * const storm = await runStorm({ browser, baseURL, path: '/storm.html', server: server.url, truth, seconds: 60, seed: stormSeed() })
 * console.log(storm.summary())
 * expect(storm.problems).toEqual([])
 * await storm.close()
 */
export async function runStorm(options: StormOptions): Promise<StormResult> {
  if (!Number.isFinite(options.seconds) || options.seconds <= 0) throw new RangeError(`runStorm: seconds must be positive, got ${options.seconds}`)
  count('seed', options.seed, 0)
  const deviceCount = count('devices', options.devices ?? 6, 1)
  const dashboardCount = count('dashboards', options.dashboards ?? 2, 0)
  const ingest = { batch: count('ingest.batch', options.ingest?.batch ?? 20, 1), everyMs: count('ingest.everyMs', options.ingest?.everyMs ?? 200, 0) }
  const settleMs = options.settleMs ?? 60_000
  if (!(settleMs >= 0)) throw new RangeError(`runStorm: settleMs must be a number of ms >= 0, got ${settleMs}`)
  const network = options.network ?? 'partition'
  if (network !== 'partition' && network !== 'emulate') throw new RangeError(`runStorm: network must be 'partition' or 'emulate', got ${JSON.stringify(network)}`)
  const devicesShow = options.devicesShow ?? 'own'
  if (devicesShow !== 'own' && devicesShow !== 'fleet') throw new RangeError(`runStorm: devicesShow must be 'own' or 'fleet', got ${JSON.stringify(devicesShow)}`)
  const intervalMs = options.toggle ?? [50, 500]
  try {
    toggleRange(intervalMs)
  } catch (error) {
    throw new RangeError(`runStorm: toggle: ${(error as Error).message}`)
  }
  const room = options.room ?? `storm-${options.seed}`
  const page = new URL(options.path, options.baseURL).href
  const ledger = new StormLedger()
  const contexts: BrowserContext[] = []
  const proxies: SyncProxy[] = []
  const devices: StormPage[] = []
  const switches: NetworkSwitch[] = []
  const dashboards: StormPage[] = []
  let started: StormServer | undefined
  const close = async (): Promise<void> => {
    for (const context of contexts) await context.close()
    for (const proxy of proxies) await proxy.close()
    await started?.stop()
  }
  try {
    let serverUrl: string
    if (typeof options.server === 'string') serverUrl = options.server
    else {
      started = await options.server()
      serverUrl = started.url
    }
    // Before any browser context opens: a URL the proxies cannot reach fails the storm at once.
    const upstream = network === 'partition' ? partitionUpstream(serverUrl) : null
    const url = async (role: StormRole, index: number, seed: number, server = serverUrl): Promise<string> =>
      stormPageUrl(page, { role, server, room, seed }, (await options.params?.({ role, index, seed, room, serverUrl, server })) ?? {})
    for (let k = 0; k < deviceCount; k++) {
      const context = await options.browser.newContext()
      contexts.push(context)
      await ledger.listen(context)
      if (upstream !== null) {
        const proxy = await startSyncProxy(Number(upstream.port), upstream.hostname)
        proxies.push(proxy)
        const device = await openStormPage(context, await url('device', k, options.seed + k, proxy.url))
        devices.push(device)
        switches.push(await partitionedNetwork(device.page, proxy))
      } else {
        devices.push(await openStormPage(context, await url('device', k, options.seed + k)))
        switches.push(emulatedNetwork(context))
      }
    }
    if (dashboardCount > 0) {
      const board = await options.browser.newContext()
      contexts.push(board)
      await ledger.listen(board)
      for (let k = 0; k < dashboardCount; k++) dashboards.push(await openStormPage(board, await url('dashboard', k, options.seed + 100 + k)))
    }

    await Promise.all(devices.map((device) => startIngest(device.page, ingest)))
    const endsAt = Date.now() + options.seconds * 1_000
    const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(ms, endsAt - Date.now()))))
    const toggles = new NetworkToggles(switches, { seed: options.seed, intervalMs })
    await Promise.all([toggles.run(endsAt), options.during?.({ devices, dashboards, serverUrl, sleep, endsAt })])
    const { startedAt, endedAt } = toggles.window

    await Promise.all(devices.map((device) => stopIngest(device.page)))
    const transitions = await Promise.all(devices.map((device) => transitionsOf(device.page)))
    const stopped = await Promise.all(devices.map((device) => snapshotOf(device.page)))
    const totals = ledger.totals(new Map(stopped.map((s) => [s.source, s.produced])))
    const outcomes: DeviceOutcome[] = stopped.map((s) => deviceOutcome(s, ingest.batch))
    const truth = groundTruth(options.truth, outcomes)
    const deviceTruths: Record<string, TruthFigures> = Object.fromEntries(outcomes.map((outcome) => [outcome.source, groundTruth(options.truth, [outcome])]))
    // Everyone back online at once: the reconnect storm proper.
    await Promise.all(switches.map((toggle) => toggle(false)))
    const backAt = Date.now()
    const all = [...devices, ...dashboards].map((p) => p.page)
    const expected = (s: { readonly role: string; readonly source: string }): string =>
      s.role === 'device' && devicesShow === 'own' ? (deviceTruths[s.source]?.digest ?? truth.digest) : truth.digest
    const { converged, convergedAt, snapshots } = await waitForTruth(all, settleMs, expected)

    const { accepted, beyondLateness, duplicates, rejected } = totals
    const receipts = { accepted, beyondLateness, duplicates, rejected }
    const figures: StormFigures = {
      seed: options.seed,
      seconds: options.seconds,
      pages: all.length,
      devices: devices.length,
      dashboards: dashboards.length,
      ingest,
      stormMs: endedAt - startedAt,
      network,
      toggles: toggles.figures(transitions),
      truth,
      devicesShow,
      deviceTruths,
      receipts,
      gaps: totals.gaps,
      dashboardCounts: snapshots.filter((s) => s.role === 'dashboard').map((s) => s.counted),
      converged,
      convergenceMs: converged ? Math.max(0, convergedAt - backAt) : Number.NaN,
      snapshots,
      ledger,
      problems: stormProblems({ truth, receipts, totals, snapshots, converged, stopped, ...(devicesShow === 'own' ? { deviceTruths } : {}) }),
    }
    return { ...figures, summary: () => describeStorm(figures), close }
  } catch (error) {
    await close().catch((closeError: unknown) => console.error(`storm: closing after a failure also failed: ${String(closeError)}`))
    throw error
  }
}
