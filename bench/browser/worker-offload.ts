/**
 * worker-offload: what moving the engine into a worker (`@tidemark/worker`) takes off the
 * main thread, measured in one run against the same app with the engine on the page
 * (`openEngine` over IndexedDB). Four scenarios, each page in a fresh browser context:
 *
 * 1. `devices` at 48 and 200 simulated devices (20 readings per device per second, one
 *    message for the fleet every 100 ms, arriving where the socket is: on the page, or in the
 *    worker; also 200 devices at 100 readings/s, and at none, the dashboard's floor), with a
 *    dashboard of one tile per device: main-thread busy time per second and the p95
 *    animation-frame interval, from a Chrome trace of the page's main thread.
 * 2. `million`: the page ingests 10^6 events in batches of 10,000; the longest main-thread task.
 *    Beside them a control with no Tidemark code: the page posts the same batches to a worker
 *    that spends the host's measured time on each, which shows what this machine alone makes of
 *    a page feeding a worker that keeps a core busy.
 * 3. `memory`: four tabs, each with its engine on the page, against four tabs of one
 *    SharedWorker engine (the pages keep only their mirrors), a minute of 200 devices each;
 *    JS heap of every page and worker target after a forced GC (`Runtime.getHeapUsage`
 *    through a raw CDP client, which sees SharedWorker targets).
 * 4. `takeover` without SharedWorker (leader mode): the leader tab closed (Playwright) and
 *    frozen (raw CDP: Playwright's pages cannot freeze), with the `freeze` event the browser
 *    fires and without it (swallowed: a hung tab), the time until the other tabs are
 *    welcomed by the next host.
 *
 *   node --import tsx --conditions=@tidemark/source bench/browser/worker-offload.ts [--seconds=10] [--only=devices,million,memory,takeover] [--json]
 *
 * Targets (from the worker's introduction): at 200 devices p95 frame interval <= 16.7 ms with
 * the worker, and main-thread busy time <= 25% of the page engine's; longest task while 10^6
 * events are ingested < 16 ms.
 */
import { readFileSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import react from '@vitejs/plugin-react'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { build, defaultClientConditions, type InlineConfig, preview } from 'vite'
import { RawBrowser, type RawPage } from '../../e2e/tests/workerRawCdp.ts'
import { isMain } from '../measure.ts'
import { launchChromium } from './chromium.ts'
import { controlSpinMs, DEVICE_LOADS, MILLION, parseOffloadArgs, SCENARIOS, type Scenario, TAKEOVER_TRIALS } from './offloadPlan.ts'
import { type Heap, type MainThread, mainThread, type OffloadReport, report, type TraceEvent, writeLatest } from './offloadReport.ts'
import type { OffloadResult } from './worker-offload/result.ts'

const here = dirname(fileURLToPath(import.meta.url))
const pageRoot = join(here, 'worker-offload')

export interface OffloadOptions {
  readonly seconds?: number
  readonly only?: readonly Scenario[]
}

function viteConfig(): InlineConfig {
  return {
    root: pageRoot,
    configFile: false,
    logLevel: 'warn',
    plugins: [react()],
    resolve: { conditions: ['@tidemark/source', ...defaultClientConditions], dedupe: ['react', 'react-dom'] },
    worker: { format: 'es' },
  }
}

async function serve(): Promise<{ url: string; close(): Promise<void> }> {
  const outDir = join(tmpdir(), `tidemark-worker-offload-${process.pid}`)
  await build({ ...viteConfig(), mode: 'production', build: { outDir, emptyOutDir: true } })
  const server = await preview({ ...viteConfig(), build: { outDir }, preview: { host: '127.0.0.1', port: 0 } })
  const address = server.httpServer.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${address.port}/`,
    close: async () => {
      await server.close()
      rmSync(outDir, { recursive: true, force: true })
    },
  }
}

async function waitForResult(page: Page, timeoutMs: number): Promise<OffloadResult> {
  await page.waitForFunction(() => window.__offloadResult !== undefined || window.__offloadError !== undefined, null, { timeout: timeoutMs, polling: 250 })
  const outcome = await page.evaluate(() => ({ result: window.__offloadResult, error: window.__offloadError }))
  if (outcome.error !== undefined) throw new Error(`page failed: ${outcome.error}`)
  return outcome.result as OffloadResult
}

/** Runs one page with a trace of its main thread; the page waits for `bench:go` after loading. */
async function traced(browser: Browser, url: string, timeoutMs: number): Promise<MainThread> {
  const context: BrowserContext = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  const path = join(tmpdir(), `tidemark-worker-offload-${process.pid}-${Date.now()}.trace.json`)
  try {
    const page = await context.newPage()
    page.on('pageerror', (error) => console.error(`page error: ${error.message}`))
    await page.goto(`${url}&wait=1`, { waitUntil: 'load', timeout: 60_000 })
    await page.waitForFunction(() => window.__offloadReady === true || window.__offloadError !== undefined, null, { timeout: 60_000 })
    await browser.startTracing(page, { path, categories: ['toplevel', 'blink.user_timing', 'devtools.timeline'] })
    await page.evaluate(() => window.dispatchEvent(new Event('bench:go')))
    const result = await waitForResult(page, timeoutMs)
    await browser.stopTracing()
    const events = (JSON.parse(readFileSync(path, 'utf8')) as { traceEvents: TraceEvent[] }).traceEvents
    return mainThread(events, result)
  } finally {
    if (process.env.KEEP_TRACE === undefined) rmSync(path, { force: true })
    else console.error(`trace kept: ${path}`)
    await context.close()
  }
}

async function heapOf(browser: RawBrowser, origin: string): Promise<Heap> {
  const { targetInfos } = await browser.send<{ targetInfos: { targetId: string; type: string; url: string }[] }>('Target.getTargets')
  const ours = targetInfos.filter((t) => t.url.startsWith(origin) && ['page', 'shared_worker', 'worker'].includes(t.type))
  const targets: { type: string; usedMB: number }[] = []
  for (const target of ours) {
    const { sessionId } = await browser.send<{ sessionId: string }>('Target.attachToTarget', { targetId: target.targetId, flatten: true })
    await browser.send('HeapProfiler.collectGarbage', {}, sessionId)
    const { usedSize } = await browser.send<{ usedSize: number }>('Runtime.getHeapUsage', {}, sessionId)
    targets.push({ type: target.type, usedMB: usedSize / 1e6 })
  }
  return { totalMB: targets.reduce((sum, t) => sum + t.usedMB, 0), targets }
}

async function memory(url: string, engine: 'page' | 'worker'): Promise<Heap> {
  const browser = new RawBrowser()
  try {
    const pages: RawPage[] = []
    for (let tab = 0; tab < 4; tab++) {
      const page = await browser.open(`${url}?engine=${engine}&scenario=fill&devices=200&filler=${tab === 0 ? 1 : 0}`, { newWindow: true })
      await page.waitFor('window.__offloadReady === true || window.__offloadError !== undefined', 60_000)
      pages.push(page)
    }
    for (const page of pages) await page.waitFor('window.__offloadResult !== undefined || window.__offloadError !== undefined', 120_000)
    const error = await pages[0]?.evaluate<string | undefined>('window.__offloadError')
    if (error !== undefined && error !== null) throw new Error(`memory page failed: ${error}`)
    const windows = await Promise.all(pages.map((page) => page.evaluate<number>('window.__offloadResult.windows')))
    if (windows.some((w) => w !== windows[0])) throw new Error(`the four tabs show different windows: ${windows.join(', ')}`)
    return await heapOf(browser, url)
  } finally {
    await browser.close()
  }
}

const NO_SHARED_WORKER = 'delete globalThis.SharedWorker'

/** Leader mode: the leader tab closes; ms until the other tabs are welcomed by a new host. */
async function closeTakeovers(browser: Browser, url: string, trials: number): Promise<number[]> {
  const context = await browser.newContext()
  await context.addInitScript(NO_SHARED_WORKER)
  const times: number[] = []
  try {
    const open = async (): Promise<Page> => {
      const page = await context.newPage()
      await page.goto(`${url}?engine=worker&scenario=idle`)
      await page.waitForFunction(() => window.__offloadReady === true || window.__offloadError !== undefined)
      return page
    }
    const tabs = [await open(), await open(), await open()]
    for (let trial = 0; trial < trials; trial++) {
      const hosts = await Promise.all(tabs.map((tab) => tab.evaluate(() => window.__offloadHosts?.at(-1))))
      const at = hosts.findIndex((h) => h?.leader === true)
      const leader = tabs[at]
      if (leader === undefined) throw new Error('no leader tab')
      const before = hosts[at]?.instance
      tabs.splice(at, 1)
      const closedAt = Date.now()
      await leader.close()
      const welcomed = await Promise.all(
        tabs.map(async (tab) => {
          await tab.waitForFunction((old) => window.__offloadHosts?.at(-1)?.instance !== old, before, { timeout: 20_000, polling: 20 })
          return tab.evaluate(() => window.__offloadHosts?.at(-1)?.at ?? Number.NaN)
        }),
      )
      times.push(Math.max(...welcomed) - closedAt)
      tabs.push(await open())
    }
    return times
  } finally {
    await context.close()
  }
}

/** Swallows the page's `freeze` event before the library hears it: a tab frozen without one (hung, or its process suspended). */
const UNTOLD_FREEZE = "window.addEventListener('freeze', (event) => event.stopImmediatePropagation(), { capture: true })"

/**
 * Leader mode: the leader tab, hidden a while, freezes for real (raw CDP); ms until the other
 * tabs are welcomed by a new host. `told`: the page hears `freeze` first (as browsers fire it);
 * else the event is swallowed and only the missing heartbeats tell.
 */
async function freezeTakeover(url: string, told: boolean): Promise<number> {
  const browser = new RawBrowser()
  try {
    const open = async (newWindow: boolean, initScript = NO_SHARED_WORKER): Promise<RawPage> => {
      const page = await browser.open(`${url}?engine=worker&scenario=idle`, { newWindow, initScript })
      await page.waitFor('window.__offloadReady === true || window.__offloadError !== undefined', 60_000)
      return page
    }
    const leader = await open(false, told ? NO_SHARED_WORKER : `${NO_SHARED_WORKER}; ${UNTOLD_FREEZE}`)
    await browser.send('Target.createTarget', { url: 'about:blank', newWindow: false })
    await leader.waitFor("document.visibilityState === 'hidden'")
    const followers = [await open(true), await open(true)]
    // A tab is frozen after minutes in the background, not at once: two seconds hidden with followers.
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    const before = await leader.evaluate<string>('window.__offloadHosts.at(-1).instance')
    const frozenAt = Date.now()
    await leader.freeze()
    const welcomed: number[] = []
    for (const follower of followers) {
      await follower.waitFor(`window.__offloadHosts.at(-1).instance !== ${JSON.stringify(before)}`, 20_000)
      welcomed.push(await follower.evaluate<number>('window.__offloadHosts.at(-1).at'))
    }
    await leader.thaw()
    return Math.max(...welcomed) - frozenAt
  } finally {
    await browser.close()
  }
}

export async function run(options: OffloadOptions = {}): Promise<OffloadReport> {
  const only = options.only ?? SCENARIOS
  const seconds = options.seconds ?? 10
  const load = loadavg()
  const served = await serve()
  const browser = await launchChromium()
  try {
    const devices: { devices: number; rate: number; page: MainThread; worker: MainThread }[] = []
    if (only.includes('devices')) {
      for (const { devices: n, rate } of DEVICE_LOADS) {
        const at = (engine: string): string => `${served.url}?engine=${engine}&scenario=devices&devices=${n}&rate=${rate}&seconds=${seconds}`
        const page = await traced(browser, at('page'), (seconds + 60) * 1000)
        const worker = await traced(browser, at('worker'), (seconds + 60) * 1000)
        devices.push({ devices: n, rate, page, worker })
      }
    }
    let million: OffloadReport['million'] = null
    if (only.includes('million')) {
      const at = (engine: string): string => `${served.url}?engine=${engine}&scenario=million&events=${MILLION.events}&batch=${MILLION.batch}`
      const page = await traced(browser, at('page'), 180_000)
      const worker = await traced(browser, at('worker'), 180_000)
      // The control spends the host's measured time per batch, with no Tidemark code anywhere.
      const spinMs = controlSpinMs(worker.runMs)
      const control = await traced(browser, `${at('control')}&spinMs=${spinMs}`, 180_000)
      million = { page, worker, control: { ...control, spinMs } }
    }
    const memoryFigures = only.includes('memory') ? { page: await memory(served.url, 'page'), worker: await memory(served.url, 'worker') } : null
    let takeover: OffloadReport['takeover'] = null
    if (only.includes('takeover')) {
      const closeMs = await closeTakeovers(browser, served.url, TAKEOVER_TRIALS.closed)
      const freezeMs: number[] = []
      const silentFreezeMs: number[] = []
      for (let trial = 0; trial < TAKEOVER_TRIALS.frozen; trial++) {
        freezeMs.push(await freezeTakeover(served.url, true))
        silentFreezeMs.push(await freezeTakeover(served.url, false))
      }
      takeover = { closeMs, freezeMs, silentFreezeMs }
    }
    return { browser: `Chromium ${browser.version()}`, loadAverage: [load[0] ?? Number.NaN, loadavg()[0] ?? Number.NaN], devices, million, memory: memoryFigures, takeover }
  } finally {
    await browser.close().catch((error: unknown) => console.error(error))
    await served.close().catch((error: unknown) => console.error(error))
  }
}

if (isMain(import.meta.url)) {
  const args = parseOffloadArgs(process.argv.slice(2))
  run({ only: args.only, seconds: args.seconds })
    .then((r) => {
      console.log(args.json ? JSON.stringify(r, null, 2) : report(r))
      // A full run (every scenario, default length) is the record: bench/results keeps the last one.
      if (args.full) writeLatest(r)
    })
    .catch((error: unknown) => {
      console.error(error)
      process.exitCode = 1
    })
}
