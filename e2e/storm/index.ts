/**
 * Storm driver: many devices and dashboards of one Tidemark app in real Chromium, devices
 * ingesting while their browser contexts drop offline and come back at seeded random intervals.
 * After the storm it brings everyone online, waits until every page shows the same window
 * values, and returns the figures a test asserts on (see e2e/README.md, "Storming your own app").
 *
 * The pages it opens must expose the `StormPageApi` of `e2e/pages/stormApi.ts` as `window.storm`
 * and call the exposed `stormReport` binding once per durable batch.
 */
import type { Browser, BrowserContext, Page } from '@playwright/test'
import type { StormBatchReport, StormPageApi, StormSnapshot } from '../pages/stormApi.ts'

export { type SyncServer, startSyncServer } from './syncServer.ts'

/** Mulberry32: a small seeded generator (the same sequence in Node and in the pages). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** The seed from `STORM_SEED` when set, else a fresh one (print it: a failure replays with it). */
export function stormSeed(): number {
  const fromEnv = Number(process.env.STORM_SEED)
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : Math.floor(Math.random() * 2 ** 31) + 1
}

export interface StormOptions {
  readonly browser: Browser
  /** Origin serving the pages, e.g. `http://127.0.0.1:4183`. */
  readonly baseURL: string
  /** The sync server's ws URL (see `startSyncServer`). */
  readonly serverUrl: string
  readonly devices?: number
  /** Dashboard tabs, all in one browser context (they also sync through BroadcastChannel). */
  readonly dashboards?: number
  readonly seconds: number
  readonly seed: number
  /** Each device context stays online/offline for a uniform [min, max) ms before toggling; default [50, 500]. */
  readonly toggle?: readonly [number, number]
  /** Room on the server; default one per seed. */
  readonly room?: string
  /** Page path; default `/storm.html`. */
  readonly path?: string
  readonly ingest?: { readonly batch?: number; readonly everyMs?: number; readonly stragglerEvery?: number }
  /** Runs alongside the storm (e.g. restart the server half way); the storm ends when both are done. */
  readonly during?: (storm: RunningStorm) => Promise<void>
  /** How long to wait for convergence after everyone is back online; default 60 s. */
  readonly settleMs?: number
}

export interface RunningStorm {
  readonly devices: readonly StormPage[]
  readonly dashboards: readonly StormPage[]
  /** Resolves after `ms`, or early if the storm is over. */
  sleep(ms: number): Promise<void>
  readonly endsAt: number
}

export interface StormPage {
  readonly context: BrowserContext
  readonly page: Page
  readonly source: string
}

export interface StormResult {
  readonly seed: number
  readonly seconds: number
  readonly pages: number
  readonly toggles: number
  /** Toggles of the device that toggled least. */
  readonly minTogglesPerDevice: number
  /** Mean ms one `context.setOffline` call took (the storm's real toggle pace is the drawn delay plus this). */
  readonly toggleLatencyMs: number
  /** How long the storm really ran, ms (the last toggles finish after `seconds`). */
  readonly stormMs: number
  /** Events the devices produced (and reported durable), and what their receipts say happened to them. */
  readonly produced: number
  readonly accepted: number
  readonly beyondLateness: number
  readonly duplicates: number
  readonly rejected: number
  /** Seqs a device produced but never reported durable, or reported twice. */
  readonly gaps: readonly string[]
  /** Late-lane entries over all devices (each device keeps its own). */
  readonly lateLane: number
  readonly dashboardCounts: readonly number[]
  readonly converged: boolean
  /** ms from the last context coming back online until every page showed the same values. */
  readonly convergenceMs: number
  readonly snapshots: readonly StormSnapshot[]
  summary(): string
  close(): Promise<void>
}

/** Opens a storm page and waits for its engine; `stormReport` must already be exposed on the context. */
export async function openStormPage(context: BrowserContext, url: string): Promise<StormPage> {
  const page = await context.newPage()
  page.on('pageerror', (error) => console.error(`storm page error: ${error.message}`))
  await page.goto(url)
  await page.waitForFunction(() => window.storm !== undefined || window.stormError !== undefined)
  const failure = await page.evaluate(() => window.stormError)
  if (failure !== undefined) throw new Error(`storm page failed to open: ${failure}`)
  const source = await page.evaluate(() => (window.storm as StormPageApi).source)
  return { context, page, source }
}

export function snapshotOf(page: Page): Promise<StormSnapshot> {
  return page.evaluate(() => (window.storm as StormPageApi).snapshot())
}

/** Collects every device's durable batch reports by source. */
export class StormLedger {
  readonly batches = new Map<string, StormBatchReport[]>()
  async listen(context: BrowserContext): Promise<void> {
    await context.exposeBinding('stormReport', (_source, report: StormBatchReport) => {
      const list = this.batches.get(report.source) ?? []
      list.push(report)
      this.batches.set(report.source, list)
    })
  }
  /** Totals over every reported batch, and any seq missing or reported twice (per source, up to `produced[source]`). */
  totals(produced: ReadonlyMap<string, number>): { produced: number; accepted: number; beyondLateness: number; duplicates: number; rejected: number; gaps: string[] } {
    let total = 0
    let accepted = 0
    let beyondLateness = 0
    let duplicates = 0
    let rejected = 0
    const gaps: string[] = []
    for (const [source, last] of produced) {
      const list = [...(this.batches.get(source) ?? [])].sort((a, b) => a.from - b.from)
      let next = 1
      for (const batch of list) {
        if (batch.from !== next) gaps.push(`${source}: expected seq ${next}, batch starts at ${batch.from}`)
        next = batch.to + 1
        total += batch.to - batch.from + 1
        accepted += batch.accepted
        beyondLateness += batch.beyondLateness
        duplicates += batch.duplicates
        rejected += batch.rejected
      }
      if (next !== last + 1) gaps.push(`${source}: produced up to ${last}, durable reports end at ${next - 1}`)
    }
    return { produced: total, accepted, beyondLateness, duplicates, rejected, gaps }
  }
}

/** Polls every page until all show the same window values and `done(snapshots)` holds. */
export async function waitForConvergence(
  pages: readonly Page[],
  timeoutMs: number,
  done: (snapshots: readonly StormSnapshot[]) => boolean = () => true,
): Promise<{ converged: boolean; snapshots: StormSnapshot[] }> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const snapshots = await Promise.all(pages.map(snapshotOf))
    const first = snapshots[0]?.digest
    if (snapshots.every((s) => s.digest === first) && done(snapshots)) return { converged: true, snapshots }
    if (Date.now() > deadline) return { converged: false, snapshots }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

export async function runStorm(options: StormOptions): Promise<StormResult> {
  const random = seeded(options.seed)
  const [minMs, maxMs] = options.toggle ?? [50, 500]
  const room = options.room ?? `storm-${options.seed}`
  const path = options.path ?? '/storm.html'
  const url = (role: string, k: number): string =>
    `${options.baseURL}${path}?role=${role}&server=${encodeURIComponent(options.serverUrl)}&room=${encodeURIComponent(room)}&seed=${options.seed + k}`
  const ledger = new StormLedger()
  const contexts: BrowserContext[] = []
  const devices: StormPage[] = []
  const dashboards: StormPage[] = []
  const close = async (): Promise<void> => {
    for (const context of contexts) await context.close().catch(() => {})
  }
  try {
    for (let k = 0; k < (options.devices ?? 6); k++) {
      const context = await options.browser.newContext()
      contexts.push(context)
      await ledger.listen(context)
      devices.push(await openStormPage(context, url('device', k)))
    }
    const board = await options.browser.newContext()
    contexts.push(board)
    await ledger.listen(board)
    for (let k = 0; k < (options.dashboards ?? 2); k++) dashboards.push(await openStormPage(board, url('dashboard', 100 + k)))

    const ingest = { batch: options.ingest?.batch ?? 10, everyMs: options.ingest?.everyMs ?? 100, stragglerEvery: options.ingest?.stragglerEvery ?? 20 }
    for (const [k, device] of devices.entries()) {
      await device.page.evaluate(([o, seed]) => window.storm?.start({ ...o, seed }), [ingest, options.seed * 31 + k] as const)
    }
    const endsAt = Date.now() + options.seconds * 1_000
    const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(ms, endsAt - Date.now()))))
    let toggles = 0
    let toggleMs = 0
    const stormStart = Date.now()
    const delays = devices.map(() => () => minMs + random() * (maxMs - minMs))
    const perDevice = devices.map(() => 0)
    const storm = async (device: StormPage, delay: () => number, k: number): Promise<void> => {
      let offline = false
      while (Date.now() < endsAt) {
        await sleep(delay())
        if (Date.now() >= endsAt) break
        offline = !offline
        const before = Date.now()
        await device.context.setOffline(offline)
        toggleMs += Date.now() - before
        toggles++
        perDevice[k] = (perDevice[k] ?? 0) + 1
      }
    }
    const running: RunningStorm = { devices, dashboards, sleep, endsAt }
    await Promise.all([...devices.map((device, k) => storm(device, delays[k] as () => number, k)), options.during?.(running)])

    const stormMs = Date.now() - stormStart
    for (const device of devices) await device.page.evaluate(() => window.storm?.stop())
    const produced = new Map<string, number>()
    for (const device of devices) produced.set(device.source, (await snapshotOf(device.page)).produced)
    const totals = ledger.totals(produced)
    // Everyone back online at once: the reconnect storm proper.
    const back = Date.now()
    await Promise.all(devices.map((device) => device.context.setOffline(false)))
    const all = [...devices, ...dashboards].map((p) => p.page)
    const { converged, snapshots } = await waitForConvergence(all, options.settleMs ?? 60_000, (s) =>
      s.filter((x) => x.role === 'dashboard').every((x) => x.counted === totals.accepted),
    )
    const convergenceMs = Date.now() - back
    const lateLane = snapshots.filter((s) => s.role === 'device').reduce((sum, s) => sum + s.lateLane, 0)
    const dashboardCounts = snapshots.filter((s) => s.role === 'dashboard').map((s) => s.counted)
    const result: StormResult = {
      seed: options.seed,
      seconds: options.seconds,
      pages: all.length,
      toggles,
      minTogglesPerDevice: Math.min(...perDevice),
      toggleLatencyMs: toggles === 0 ? 0 : Math.round(toggleMs / toggles),
      stormMs,
      ...totals,
      lateLane,
      dashboardCounts,
      converged,
      convergenceMs,
      snapshots,
      summary: () =>
        `storm seed=${options.seed} seconds=${options.seconds} pages=${all.length} (${devices.length} devices, ${dashboards.length} dashboards) ` +
        `stormMs=${stormMs} toggles=${toggles} (min ${Math.min(...perDevice)} per device, setOffline ${toggles === 0 ? 0 : Math.round(toggleMs / toggles)} ms each) produced=${totals.produced} counted=${totals.accepted} beyondLateness=${totals.beyondLateness} lateLane=${lateLane} ` +
        `duplicates=${totals.duplicates} rejected=${totals.rejected} dashboards=[${dashboardCounts.join(', ')}] converged=${converged} ` +
        `convergenceMs=${convergenceMs} windows=${snapshots[0]?.windows ?? 0}`,
      close,
    }
    return result
  } catch (error) {
    await close()
    throw error
  }
}
