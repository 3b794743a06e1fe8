/**
 * demo-fleet: the fleet demo (apps/demo) as `pnpm start` serves it, at a given fleet size: how
 * long until every device's host worker is `relay connected`, the dashboard page's frame
 * interval (steady, and during a reconnect storm), and the memory of the page and its host
 * workers (a SharedWorker per device, one for the dashboard engine).
 *
 *   node --import tsx --conditions=@tidemark/source bench/browser/demo-fleet.ts [--devices=12,48] [--seconds=10] [--storm] [--url=http://127.0.0.1:5173/] [--json]
 *
 * Without `--url` it starts the demo itself (`scripts/demo.mjs`: build, relay on a temporary
 * store, vite preview on a free port) and stops it by PID at the end. Each fleet size runs in a
 * fresh browser profile (so a fresh fleet id: new rooms, new logs) of headless Chromium
 * (`--disable-gpu`, 1440×1000), through a raw CDP client, which sees the SharedWorker targets.
 *
 * - Frame interval: `requestAnimationFrame` timestamps for `--seconds`, starting 8 s after every
 *   device showed `relay connected`; long tasks (over 50 ms) by `PerformanceObserver`.
 * - Storm (`--storm`): the page's Reconnect storm (20 s), measured from 2 s after it starts.
 * - Memory: the JS heap of the page and of every worker of the origin after a forced GC
 *   (`Runtime.getHeapUsage`), and the proportional set size (PSS) of every process of the
 *   browser (`SystemInfo.getProcessInfo`, then `/proc/<pid>/smaps_rollup`) against the same
 *   browser on `about:blank` before the demo opened.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { RawBrowser, type RawPage } from '../../e2e/tests/workerRawCdp.ts'
import { isMain } from '../measure.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** Frame intervals of one measurement, ms. */
export interface Frames {
  readonly p50: number
  readonly p95: number
  readonly p99: number
  readonly max: number
  readonly frames: number
  readonly longTasks: number
  readonly longestTaskMs: number
}

/** One fleet size. */
export interface FleetRun {
  readonly devices: number
  /** From navigation until every device row reads `relay connected`, ms. */
  readonly connectedMs: number
  readonly steady: Frames
  readonly storm: Frames | null
  /** JS heap after a forced GC, MB: the page, the device host workers (sum, and the largest), the dashboard host worker. */
  readonly heap: { readonly pageMB: number; readonly devicesMB: number; readonly largestDeviceMB: number; readonly dashboardMB: number; readonly workers: number }
  /** PSS of the browser's processes, MB: with the demo open, and its growth over `about:blank`. */
  readonly pss: { readonly totalMB: number; readonly overBlankMB: number; readonly processes: number }
}

export interface DemoFleetResult {
  readonly browser: string
  readonly loadAverage: readonly [number, number]
  readonly runs: readonly FleetRun[]
}

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number
}

/** The page-side measurement: rAF intervals and long tasks for `ms`. */
const FRAMES = (ms: number): string => `(async () => {
  const intervals = []
  let last = null, longTasks = 0, longest = 0
  const observer = new PerformanceObserver((list) => { for (const e of list.getEntries()) { longTasks++; longest = Math.max(longest, e.duration) } })
  observer.observe({ type: 'longtask' })
  const end = performance.now() + ${ms}
  await new Promise((resolve) => {
    const step = (t) => { if (last !== null) intervals.push(t - last); last = t; if (t < end) requestAnimationFrame(step); else resolve() }
    requestAnimationFrame(step)
  })
  observer.disconnect()
  return { intervals, longTasks, longest }
})()`

async function frames(page: RawPage, seconds: number): Promise<Frames> {
  const { intervals, longTasks, longest } = await page.evaluate<{ intervals: number[]; longTasks: number; longest: number }>(FRAMES(seconds * 1_000), seconds * 1_000 + 30_000)
  const sorted = [...intervals].sort((a, b) => a - b)
  return { p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), p99: percentile(sorted, 0.99), max: sorted.at(-1) ?? Number.NaN, frames: intervals.length, longTasks, longestTaskMs: longest }
}

/** Sum of the PSS of every process of the browser, MB. */
async function pssOf(browser: RawBrowser): Promise<{ totalMB: number; processes: number }> {
  const { processInfo } = await browser.send<{ processInfo: { id: number; type: string }[] }>('SystemInfo.getProcessInfo')
  let kb = 0
  let processes = 0
  for (const { id } of processInfo) {
    try {
      const rollup = readFileSync(`/proc/${id}/smaps_rollup`, 'utf8')
      const pss = /^Pss:\s+(\d+) kB$/m.exec(rollup)
      if (pss !== null) {
        kb += Number(pss[1])
        processes++
      }
    } catch {
      // A process that ended meanwhile.
    }
  }
  return { totalMB: kb / 1024, processes }
}

async function heapOf(browser: RawBrowser, origin: string): Promise<FleetRun['heap']> {
  const { targetInfos } = await browser.send<{ targetInfos: { targetId: string; type: string; url: string; title: string }[] }>('Target.getTargets')
  let pageMB = 0
  let dashboardMB = 0
  const devices: number[] = []
  for (const target of targetInfos.filter((t) => t.url.startsWith(origin) && ['page', 'shared_worker', 'worker'].includes(t.type))) {
    const { sessionId } = await browser.send<{ sessionId: string }>('Target.attachToTarget', { targetId: target.targetId, flatten: true })
    await browser.send('HeapProfiler.collectGarbage', {}, sessionId)
    const { usedSize } = await browser.send<{ usedSize: number }>('Runtime.getHeapUsage', {}, sessionId)
    const mb = usedSize / 1e6
    if (target.type === 'page') pageMB += mb
    else if (target.url.includes('dashboardHost')) dashboardMB += mb
    else devices.push(mb)
  }
  return { pageMB, devicesMB: devices.reduce((sum, mb) => sum + mb, 0), largestDeviceMB: Math.max(0, ...devices), dashboardMB, workers: devices.length + (dashboardMB > 0 ? 1 : 0) }
}

async function fleetRun(url: string, devices: number, seconds: number, storm: boolean): Promise<FleetRun> {
  const browser = new RawBrowser()
  try {
    const blank = await browser.open('about:blank')
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    const before = await pssOf(browser)
    await blank.close()
    const started = Date.now()
    const page = await browser.open(`${url}?devices=${devices}&tour=off`)
    await page.send('Emulation.setDeviceMetricsOverride', { width: 1440, height: 1000, deviceScaleFactor: 1, mobile: false })
    await page.send('Emulation.setFocusEmulationEnabled', { enabled: true })
    await page.waitFor(`[...document.querySelectorAll('.device-row td')].filter((td) => td.textContent === 'relay connected').length === ${devices}`, 120_000)
    const connectedMs = Date.now() - started
    await new Promise((resolve) => setTimeout(resolve, 8_000))
    const steady = await frames(page, seconds)
    let stormFrames: Frames | null = null
    if (storm) {
      await page.evaluate<void>(`[...document.querySelectorAll('button')].find((b) => b.textContent === 'Reconnect storm')?.click()`)
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      stormFrames = await frames(page, seconds)
      // The storm is over and every device back before memory is read.
      await page.waitFor(`!document.querySelector('.chip-storm') && [...document.querySelectorAll('.device-row td')].filter((td) => td.textContent === 'relay connected').length === ${devices}`, 60_000)
    }
    const heap = await heapOf(browser, new URL(url).origin)
    const after = await pssOf(browser)
    return { devices, connectedMs, steady, storm: stormFrames, heap, pss: { totalMB: after.totalMB, overBlankMB: after.totalMB - before.totalMB, processes: after.processes } }
  } finally {
    await browser.close()
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0))
    })
  })
}

/** Starts `scripts/demo.mjs` on a free port with a temporary relay store; resolves with its URL and the way to stop it. */
async function startDemo(): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort()
  const store = mkdtempSync(join(tmpdir(), 'tidemark-demo-fleet-'))
  const child: ChildProcess = spawn(process.execPath, [join(root, 'scripts/demo.mjs')], {
    cwd: root,
    env: { ...process.env, DEMO_PORT: String(port), DEMO_OUT_DIR: `node_modules/.demo-fleet-bench-${port}`, DEMO_RELAY_DIR: join(store, 'relay') },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const url = `http://127.0.0.1:${port}/`
  await new Promise<void>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new Error('the demo did not start within 300 s')), 300_000)
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8')
      if (out.includes(`Tidemark fleet demo: ${url}`)) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.once('exit', (code) => reject(new Error(`the demo exited (${code}) before it was ready:\n${out}`)))
  })
  const stop = async (): Promise<void> => {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGTERM')
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 20_000))])
    rmSync(store, { recursive: true, force: true })
    rmSync(join(root, `apps/demo/node_modules/.demo-fleet-bench-${port}`), { recursive: true, force: true })
  }
  return { url, stop }
}

export async function run(options: { readonly devices?: readonly number[]; readonly seconds?: number; readonly storm?: boolean; readonly url?: string } = {}): Promise<DemoFleetResult> {
  const { devices = [12, 48], seconds = 10, storm = false } = options
  const load = loadavg()
  const demo = options.url === undefined ? await startDemo() : { url: options.url, stop: async () => {} }
  try {
    const runs: FleetRun[] = []
    let version = ''
    for (const n of devices) {
      runs.push(await fleetRun(demo.url, n, seconds, storm))
      if (version === '') {
        const browser = new RawBrowser()
        version = (await browser.send<{ product: string }>('Browser.getVersion')).product
        await browser.close()
      }
    }
    return { browser: version, loadAverage: [load[0] ?? Number.NaN, loadavg()[0] ?? Number.NaN], runs }
  } finally {
    await demo.stop()
  }
}

function report(result: DemoFleetResult): string {
  const f = (n: number, digits = 1): string => n.toFixed(digits)
  const frameLine = (label: string, x: Frames): string => `    ${label}  p50 ${f(x.p50)} / p95 ${f(x.p95)} / p99 ${f(x.p99)} / max ${f(x.max)} ms, ${x.longTasks} long tasks (longest ${f(x.longestTaskMs, 0)} ms)`
  const lines = [`demo-fleet, ${result.browser}, load average ${f(result.loadAverage[0], 2)} -> ${f(result.loadAverage[1], 2)}`]
  for (const r of result.runs) {
    lines.push(`  ${r.devices} devices: all relay connected after ${f(r.connectedMs / 1000)} s`)
    lines.push(frameLine('steady', r.steady))
    if (r.storm !== null) lines.push(frameLine('storm ', r.storm))
    lines.push(
      `    JS heap after GC: page ${f(r.heap.pageMB)} MB, ${r.heap.workers - 1} device workers ${f(r.heap.devicesMB)} MB (largest ${f(r.heap.largestDeviceMB)}), dashboard worker ${f(r.heap.dashboardMB)} MB`,
      `    PSS of the browser's ${r.pss.processes} processes: ${f(r.pss.totalMB, 0)} MB, ${f(r.pss.overBlankMB, 0)} MB over about:blank`,
    )
  }
  return lines.join('\n')
}

if (isMain(import.meta.url)) {
  const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
  const devices = arg('devices')?.split(',').map(Number)
  if (devices?.some((n) => !Number.isInteger(n) || n < 1 || n > 64)) throw new Error('--devices takes fleet sizes from 1 to 64, comma-separated')
  const seconds = arg('seconds')
  const url = arg('url')
  run({ ...(devices === undefined ? {} : { devices }), ...(seconds === undefined ? {} : { seconds: Number(seconds) }), storm: process.argv.includes('--storm'), ...(url === undefined ? {} : { url }) })
    .then((r) => console.log(process.argv.includes('--json') ? JSON.stringify(r, null, 2) : report(r)))
    .catch((error: unknown) => {
      console.error(error)
      process.exitCode = 1
    })
}
