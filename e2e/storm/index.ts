/**
 * Storm driver: many devices and dashboards of one Tidemark app in real Chromium, devices
 * ingesting while their browser contexts drop offline and come back on a seeded random
 * schedule. After the storm it stops ingest, brings everyone back online, waits until every
 * page shows the ground truth computed from the readings the devices produced, and returns
 * the figures (see e2e/README.md, "Storming your own app").
 *
 * The pages it opens expose the `StormPageApi` of `e2e/pages/stormApi.ts` as `window.storm`
 * and report durable batches through the `stormReport` binding; `e2e/pages/storm.ts` is one.
 */
import type { Browser, BrowserContext } from '@playwright/test'
import type { StormSnapshot } from '../pages/stormApi.ts'
import { type DeviceNetworkMode, emulatedNetwork, type NetworkSwitch, partitionedNetwork } from './deviceNetwork.ts'
import { digestDiff, groundTruth, type StormTruth, stormPageTruth, type TruthFigures } from './groundTruth.ts'
import { NetworkToggles, type ToggleFigures } from './networkToggles.ts'
import { StormLedger } from './stormLedger.ts'
import { openStormPage, type StormPage, snapshotOf, transitionsOf, waitForConvergence } from './stormPage.ts'
import { type SyncProxy, startSyncProxy } from './syncProxy.ts'

export { type DeviceNetworkMode, emulatedNetwork, type NetworkSwitch, partitionedNetwork } from './deviceNetwork.ts'
export { type Distribution, distribution, formatDistribution } from './distribution.ts'
export { type DeviceOutcome, digestDiff, groundTruth, type StormTruth, stormPageTruth, type TruthFigures, tumblingTruth } from './groundTruth.ts'
export { NetworkToggles, type ToggleFigures, type ToggleRecord } from './networkToggles.ts'
export { seeded, stormSeed } from './seeded.ts'
export { type LedgerTotals, StormLedger } from './stormLedger.ts'
export { openStormPage, type StormPage, snapshotOf, statusChangesOf, stormReady, transitionsOf, waitForConvergence } from './stormPage.ts'
export { type SyncProxy, startSyncProxy } from './syncProxy.ts'
export { type SyncServer, startSyncServer } from '@tidemark/sync-server'

export interface StormOptions {
  readonly browser: Browser
  /** Origin serving the pages, e.g. `http://127.0.0.1:4183`. */
  readonly baseURL: string
  /** The sync server's ws URL (see `startSyncServer`); `ws://host:port` when `network` is `partition` (each device gets a TCP proxy to it). */
  readonly serverUrl: string
  /**
   * How devices go offline (deviceNetwork.ts): `partition` (default) cuts each device's own
   * proxy to the sync server and overrides its page's `navigator.onLine`; `emulate` is
   * Playwright's `context.setOffline`.
   */
  readonly network?: DeviceNetworkMode
  /** Device pages, each in its own browser context (own IndexedDB, Web Locks, network); default 6. */
  readonly devices?: number
  /** Dashboard tabs, all in one more context (they also sync through BroadcastChannel); default 2. */
  readonly dashboards?: number
  readonly seconds: number
  readonly seed: number
  /** Each device context stays online/offline for a uniform [min, max) ms before toggling; default [50, 500]. */
  readonly toggle?: readonly [number, number]
  /** Room on the server; default one per seed. */
  readonly room?: string
  /** Page path; default `/storm.html`. */
  readonly path?: string
  /** Each device ingests `batch` readings every `everyMs`; default 20 every 200 ms. */
  readonly ingest?: { readonly batch?: number; readonly everyMs?: number }
  /** Readings and window values of the app; default `stormPageTruth` (pages/storm.ts). */
  readonly truth?: StormTruth
  /** Runs alongside the storm (e.g. restart the server half way); the storm ends when both are done. */
  readonly during?: (storm: RunningStorm) => Promise<void>
  /** How long to wait for convergence after everyone is back online; default 60 s. */
  readonly settleMs?: number
}

export interface RunningStorm {
  readonly devices: readonly StormPage[]
  readonly dashboards: readonly StormPage[]
  /** Resolves after `ms`, or early when the storm ends. */
  sleep(ms: number): Promise<void>
  readonly endsAt: number
}

export interface StormResult {
  readonly seed: number
  readonly seconds: number
  /** Pages open (devices + dashboards). */
  readonly pages: number
  /** How long toggling ran, ms (the last toggles are acknowledged after `seconds`). */
  readonly stormMs: number
  readonly network: DeviceNetworkMode
  readonly toggles: ToggleFigures
  /** The truth from the readings the devices reported: produced, counted, late lane, window values. */
  readonly truth: TruthFigures
  /** What the receipts of the batches reported durable said, summed over devices. */
  readonly receipts: { readonly accepted: number; readonly beyondLateness: number; readonly duplicates: number; readonly rejected: number }
  /** Seqs produced but never reported durable, or reported twice. */
  readonly gaps: readonly string[]
  /** Events counted by each dashboard (`counted` of its snapshot). */
  readonly dashboardCounts: readonly number[]
  readonly converged: boolean
  /** ms from the moment the last device was back online until every page was read showing the truth (an upper bound: 250 ms polls). */
  readonly convergenceMs: number
  readonly snapshots: readonly StormSnapshot[]
  /** Everything that contradicts "nothing lost, nothing counted twice, everyone converged"; empty when the storm passed. */
  readonly problems: readonly string[]
  summary(): string
  close(): Promise<void>
}

/**
 * Runs a storm and returns its figures; the contexts stay open until `close()`.
 *
 * @example
 * const storm = await runStorm({ browser, baseURL, serverUrl: server.url, seconds: 60, seed: stormSeed() })
 * console.log(storm.summary())
 * expect(storm.problems).toEqual([])
 * await storm.close()
 */
export async function runStorm(options: StormOptions): Promise<StormResult> {
  const room = options.room ?? `storm-${options.seed}`
  const path = options.path ?? '/storm.html'
  const truth = options.truth ?? stormPageTruth
  const network = options.network ?? 'partition'
  const url = (role: string, pageSeed: number, serverUrl = options.serverUrl): string =>
    `${options.baseURL}${path}?role=${role}&server=${encodeURIComponent(serverUrl)}&room=${encodeURIComponent(room)}&seed=${pageSeed}`
  const ledger = new StormLedger()
  const contexts: BrowserContext[] = []
  const proxies: SyncProxy[] = []
  const devices: StormPage[] = []
  const switches: NetworkSwitch[] = []
  const dashboards: StormPage[] = []
  const close = async (): Promise<void> => {
    for (const context of contexts) await context.close()
    for (const proxy of proxies) await proxy.close()
  }
  try {
    for (let k = 0; k < (options.devices ?? 6); k++) {
      const context = await options.browser.newContext()
      contexts.push(context)
      await ledger.listen(context)
      if (network === 'partition') {
        const upstream = new URL(options.serverUrl)
        if (upstream.protocol !== 'ws:' || upstream.port === '') throw new Error(`runStorm: network 'partition' proxies plain ws://host:port servers, not ${options.serverUrl}`)
        const proxy = await startSyncProxy(Number(upstream.port), upstream.hostname)
        proxies.push(proxy)
        const device = await openStormPage(context, url('device', options.seed + k, proxy.url))
        devices.push(device)
        switches.push(await partitionedNetwork(device.page, proxy))
      } else {
        devices.push(await openStormPage(context, url('device', options.seed + k)))
        switches.push(emulatedNetwork(context))
      }
    }
    const board = await options.browser.newContext()
    contexts.push(board)
    await ledger.listen(board)
    for (let k = 0; k < (options.dashboards ?? 2); k++) dashboards.push(await openStormPage(board, url('dashboard', options.seed + 100 + k)))

    const ingest = { batch: options.ingest?.batch ?? 20, everyMs: options.ingest?.everyMs ?? 200 }
    await Promise.all(devices.map((device) => device.page.evaluate((o) => window.storm?.start(o), ingest)))
    const endsAt = Date.now() + options.seconds * 1_000
    const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(ms, endsAt - Date.now()))))
    const toggles = new NetworkToggles(switches, { seed: options.seed, intervalMs: options.toggle ?? [50, 500] })
    await Promise.all([toggles.run(endsAt), options.during?.({ devices, dashboards, sleep, endsAt })])
    const { startedAt, endedAt } = toggles.window

    await Promise.all(devices.map((device) => device.page.evaluate(() => window.storm?.stop())))
    const transitions = await Promise.all(devices.map((device) => transitionsOf(device.page)))
    const stopped = await Promise.all(devices.map((device) => snapshotOf(device.page)))
    const totals = ledger.totals(new Map(stopped.map((s) => [s.source, s.produced])))
    const truthFigures = groundTruth(
      truth,
      stopped.map((s) => ({ source: s.source, seed: s.seed, produced: s.produced, lateIds: s.lateIds, firstBatchEnd: ingest.batch })),
    )
    // Everyone back online at once: the reconnect storm proper.
    await Promise.all(switches.map((toggle) => toggle(false)))
    const backAt = Date.now()
    const all = [...devices, ...dashboards].map((p) => p.page)
    const { converged, convergedAt, snapshots } = await waitForConvergence(all, options.settleMs ?? 60_000, (s) => s[0]?.digest === truthFigures.digest)
    const convergenceMs = converged ? Math.max(0, convergedAt - backAt) : Number.NaN

    const { accepted, beyondLateness, duplicates, rejected } = totals
    const receipts = { accepted, beyondLateness, duplicates, rejected }
    const dashboardCounts = snapshots.filter((s) => s.role === 'dashboard').map((s) => s.counted)
    const toggleFigures = toggles.figures(transitions)
    const problems = stormProblems({ truth: truthFigures, receipts, totals, snapshots, converged, stopped })
    return {
      seed: options.seed,
      seconds: options.seconds,
      pages: all.length,
      stormMs: endedAt - startedAt,
      network,
      toggles: toggleFigures,
      truth: truthFigures,
      receipts,
      gaps: totals.gaps,
      dashboardCounts,
      converged,
      convergenceMs,
      snapshots,
      problems,
      summary: () =>
        [
          `storm seed=${options.seed} (replay: STORM_SEED=${options.seed}) seconds=${options.seconds} stormMs=${endedAt - startedAt} network=${network} ` +
            `pages=${all.length} (${devices.length} devices in their own contexts, ${dashboards.length} dashboard tabs) ingest=${ingest.batch} every ${ingest.everyMs} ms`,
          toggles.describe(toggleFigures),
          `events: produced=${truthFigures.produced} counted=${truthFigures.counted} lateLane=${truthFigures.lateLane} ` +
            `(receipts: accepted=${receipts.accepted} beyondLateness=${receipts.beyondLateness} duplicates=${receipts.duplicates} rejected=${receipts.rejected}) ` +
            `windows=${truthFigures.windows} dashboards=[${dashboardCounts.join(', ')}]`,
          `converged=${converged} convergenceMs=${convergenceMs} (after the last device was back online) problems=${problems.length}`,
        ].join('\n'),
      close,
    }
  } catch (error) {
    await close().catch((closeError: unknown) => console.error(`storm: closing contexts after a failure also failed: ${String(closeError)}`))
    throw error
  }
}

/** Every failed expectation of a storm, one line each. */
function stormProblems(run: {
  readonly truth: TruthFigures
  readonly receipts: StormResult['receipts']
  readonly totals: { readonly produced: number; readonly gaps: readonly string[] }
  readonly snapshots: readonly StormSnapshot[]
  readonly stopped: readonly StormSnapshot[]
  readonly converged: boolean
}): string[] {
  const problems = [...run.totals.gaps, ...run.truth.problems]
  for (const s of run.snapshots) for (const error of s.errors) problems.push(`${s.source}: ${error}`)
  if (!run.converged) problems.push('pages did not converge on the ground truth')
  for (const s of run.snapshots) {
    if (s.digest !== run.truth.digest) {
      problems.push(`${s.role} ${s.source}: window values differ from the ground truth (counted ${s.counted}, truth ${run.truth.counted}): ${digestDiff(run.truth.digest, s.digest).join('; ')}`)
    }
  }
  if (run.totals.produced !== run.truth.produced) problems.push(`durable reports cover ${run.totals.produced} readings, devices produced ${run.truth.produced}`)
  if (run.receipts.accepted + run.receipts.beyondLateness !== run.truth.produced) {
    problems.push(`receipts: accepted ${run.receipts.accepted} + beyond lateness ${run.receipts.beyondLateness} != produced ${run.truth.produced}`)
  }
  if (run.receipts.beyondLateness !== run.truth.lateLane) problems.push(`receipts say ${run.receipts.beyondLateness} beyond lateness, late lanes hold ${run.truth.lateLane}`)
  if (run.receipts.duplicates !== 0 || run.receipts.rejected !== 0) problems.push(`receipts: ${run.receipts.duplicates} duplicates, ${run.receipts.rejected} rejected`)
  for (const s of run.stopped) if (s.durable !== s.produced) problems.push(`${s.source}: produced ${s.produced}, durable ${s.durable}`)
  return problems
}
