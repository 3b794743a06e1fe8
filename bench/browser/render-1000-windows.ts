/**
 * render-1000-windows: 1,000 `useWindow` tiles of @tidemark/react in Chromium
 * while the engine ingests 20k events/s for 10 s (each event updates one of
 * 1,000 open tumbling windows, round robin). Prints frame time (p50/p95/p99),
 * what it consists of (engine ingest, the bindings' fan-out, React, style,
 * layout, paint, GC, from a Chrome trace of the run), renders per component
 * per frame, long tasks and the events/s achieved, against the targets of
 * the React bindings (p95 frame < 16 ms, <= 1 render per component per frame). Four
 * views of the tiles: `dom` (text in a fixed grid), `canvas` (cells of one
 * canvas painted in layout effects), and their floors `dom-floor` and
 * `canvas-floor` (the same DOM or canvas work with no engine, bindings or
 * React: what the browser alone costs).
 *
 *   node --import tsx --conditions=@tidemark/source bench/browser/render-1000-windows.ts [--build]
 *     [--view=dom,dom-floor,canvas,canvas-floor] [--seconds=10] [--rate=20000] [--components=1000] [--message=100]
 *     [--trace=run.json] [--cpu-profile=run.cpuprofile] [--bindings=dir] [--json]
 *
 * A/B against earlier bindings (the figures in packages/react-bindings/README.md):
 *
 *   mkdir -p bench/node_modules/.ab && git archive 727b920 packages/react-bindings/src | tar -x -C bench/node_modules/.ab
 *   … render-1000-windows.ts --build --view=dom,canvas --bindings=bench/node_modules/.ab/packages/react-bindings/src
 *
 * Starts Vite on 127.0.0.1 (the dev server; with `--build`, a production
 * build served by `vite preview`, i.e. production React, split into engine,
 * bindings, React and page chunks so a CPU profile says whose code ran), and
 * Debian's Chromium through playwright-core (`CHROMIUM` overrides the
 * executable).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { Profiler } from 'node:inspector'
import type { AddressInfo } from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import react from '@vitejs/plugin-react'
import type { Browser, Page } from 'playwright-core'
import { build, createServer, defaultClientConditions, type InlineConfig, preview } from 'vite'
import { isMain } from '../measure.ts'
import { launchChromium } from './chromium.ts'
import { summarizeProfile } from './render-1000-windows/cpuProfile.ts'
import { analyzeTrace, type FrameTrace, PHASES, TRACE_CATEGORIES } from './render-1000-windows/frameTrace.ts'
import type { PageResult, Percentiles } from './render-1000-windows/result.ts'

const here = dirname(fileURLToPath(import.meta.url))
const pageRoot = join(here, 'render-1000-windows')

export interface RunOptions {
  /** Serve a production build (production React) instead of the dev server. */
  readonly build?: boolean
  readonly seconds?: number
  readonly rate?: number
  readonly components?: number
  /** Events per network message. */
  readonly message?: number
  /** How tiles show their value; each view is a page load of its own. Default all four. */
  readonly views?: readonly View[]
  /** Keep the Chrome trace of the run at this path (it is always recorded and analysed). */
  readonly trace?: string
  /** Record a CPU profile of the page during the run and write it here (adds sampling overhead). */
  readonly cpuProfile?: string
  /**
   * Another copy of the bindings' `src` to measure instead of
   * packages/react-bindings/src (A/B runs against an earlier commit); it must
   * sit where `@tidemark/engine` and `react` resolve, e.g. under bench/node_modules.
   */
  readonly bindings?: string
}

export type View = PageResult['view']
const ALL_VIEWS: readonly View[] = ['dom', 'dom-floor', 'canvas', 'canvas-floor']

export interface RunResult extends Omit<PageResult, 'spans'> {
  readonly mode: 'dev' | 'build'
  readonly browser: string
  readonly loadAverage: readonly [number, number]
  readonly trace: FrameTrace
  readonly cpuProfileSummary?: string
  readonly targets: { readonly p95FrameBelow16ms: boolean; readonly atMostOneRenderPerFrame: boolean }
}

interface Served {
  readonly url: string
  close(): Promise<void>
}

function viteConfig(bindings?: string): InlineConfig {
  const zustand = join(here, '../../packages/react-bindings/node_modules/zustand/esm/vanilla.mjs')
  const alias = bindings === undefined ? {} : { '@tidemark/react': resolve(bindings, 'index.ts'), 'zustand/vanilla': zustand }
  return {
    root: pageRoot,
    configFile: false,
    logLevel: 'warn',
    plugins: [react()],
    resolve: {
      conditions: ['@tidemark/source', ...defaultClientConditions],
      dedupe: ['react', 'react-dom'],
      alias,
    },
    optimizeDeps: {
      // Listed so the first load does not discover them and reload the page mid-run.
      include: ['react', 'react-dom', 'react-dom/client', 'react/jsx-runtime', 'react/jsx-dev-runtime'],
    },
  }
}

/** Whose code a chunk holds, so a CPU profile of the page can be read per owner. */
const chunkGroups = [
  { name: 'engine', test: /packages[\\/]engine[\\/]/ },
  { name: 'bindings', test: /packages[\\/]react-bindings[\\/]/ },
  { name: 'react', test: /node_modules[\\/].*(react|react-dom|scheduler)[\\/]/ },
  { name: 'vendor', test: /node_modules[\\/]/ },
]

function urlOf(server: { address(): AddressInfo | string | null } | null | undefined): string {
  const address = server?.address()
  if (address === null || address === undefined || typeof address === 'string') throw new Error('server has no TCP address')
  return `http://127.0.0.1:${address.port}/`
}

async function serve(production: boolean, minify: boolean, bindings?: string): Promise<Served> {
  if (!production) {
    const server = await createServer({ ...viteConfig(bindings), server: { host: '127.0.0.1', port: 0, hmr: false } })
    try {
      await server.listen()
      return { url: urlOf(server.httpServer), close: () => server.close() }
    } catch (error) {
      await server.close()
      throw error
    }
  }
  const outDir = join(tmpdir(), `tidemark-render-1000-windows-${process.pid}`)
  await build({
    ...viteConfig(bindings),
    mode: 'production',
    build: {
      outDir,
      emptyOutDir: true,
      minify,
      rolldownOptions: { output: { codeSplitting: { groups: chunkGroups } } },
    },
  })
  const server = await preview({ ...viteConfig(bindings), build: { outDir }, preview: { host: '127.0.0.1', port: 0 } })
  return {
    url: urlOf(server.httpServer),
    close: async () => {
      await server.close()
      rmSync(outDir, { recursive: true, force: true })
    },
  }
}

/** Resolves with `promise`, or rejects after `ms`. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

async function startProfiler(page: Page): Promise<() => Promise<unknown>> {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('Profiler.enable')
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 })
  await cdp.send('Profiler.start')
  return async () => (await cdp.send('Profiler.stop')).profile
}

export async function run(options: RunOptions = {}): Promise<RunResult[]> {
  const views = options.views ?? ALL_VIEWS
  let served: Served | undefined
  let browser: Browser | undefined
  try {
    // Unminified when profiling, so the profile names functions.
    served = await within(120_000, 'vite', serve(options.build === true, options.cpuProfile === undefined, options.bindings))
    browser = await launchChromium()
    const results: RunResult[] = []
    for (const view of views) {
      const suffix = views.length > 1 ? `.${view}` : ''
      results.push(
        await runPage(browser, served.url, view, {
          ...options,
          ...(options.trace === undefined ? {} : { trace: `${options.trace}${suffix}` }),
          ...(options.cpuProfile === undefined ? {} : { cpuProfile: `${options.cpuProfile}${suffix}` }),
        }),
      )
    }
    return results
  } finally {
    if (browser !== undefined) await within(10_000, 'browser.close', browser.close()).catch((e: unknown) => console.error(e))
    if (served !== undefined) await within(10_000, 'server.close', served.close()).catch((e: unknown) => console.error(e))
  }
}

async function runPage(browser: Browser, url: string, view: View, options: RunOptions): Promise<RunResult> {
  const seconds = options.seconds ?? 10
  const query = new URLSearchParams({
    view,
    seconds: String(seconds),
    rate: String(options.rate ?? 20_000),
    components: String(options.components ?? 1000),
    message: String(options.message ?? 100),
  })
  const tracePath = options.trace ?? join(tmpdir(), `tidemark-render-1000-windows-${process.pid}.trace.json`)
  const load = loadavg()
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
  try {
    page.on('pageerror', (error) => console.error(`page error: ${error.message}`))
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') console.error(`page ${message.type()}: ${message.text()}`)
    })
    await browser.startTracing(page, { path: tracePath, categories: TRACE_CATEGORIES })
    await page.goto(`${url}?${query}`, { waitUntil: 'load', timeout: 60_000 })
    // After load: module evaluation and making the events are not part of the run.
    const stopProfiler = options.cpuProfile === undefined ? null : await startProfiler(page)
    await page.waitForFunction(() => window.__result !== undefined || window.__error !== undefined, null, {
      timeout: (seconds + 60) * 1000,
      polling: 1000,
    })
    const profile = stopProfiler === null ? null : await stopProfiler()
    await browser.stopTracing()
    const outcome = await page.evaluate(() => ({ result: window.__result, error: window.__error }))
    if (outcome.error !== undefined) throw new Error(`page failed: ${outcome.error}`)
    if (outcome.result === undefined) throw new Error('page left no result')
    const result = outcome.result
    const trace = analyzeTrace(
      (JSON.parse(readFileSync(tracePath, 'utf8')) as { traceEvents: never[] }).traceEvents,
      result.spans,
    )
    if (options.trace === undefined) rmSync(tracePath, { force: true })
    let cpuProfileSummary: string | undefined
    if (profile !== null && options.cpuProfile !== undefined) {
      writeFileSync(options.cpuProfile, JSON.stringify(profile))
      cpuProfileSummary = summarizeProfile(profile as Profiler.Profile)
    }
    const { spans: _spans, ...figures } = result
    return {
      ...figures,
      mode: options.build === true ? 'build' : 'dev',
      browser: `Chromium ${browser.version()}`,
      loadAverage: [load[0] ?? Number.NaN, loadavg()[0] ?? Number.NaN],
      trace,
      ...(cpuProfileSummary === undefined ? {} : { cpuProfileSummary }),
      targets: {
        p95FrameBelow16ms: trace.work.wall.p95 < 16,
        atMostOneRenderPerFrame: result.maxRendersPerComponentPerFrame <= 1,
      },
    }
  } finally {
    await page.close()
  }
}

export function report(r: RunResult): string {
  const f = (v: number): string => (Number.isNaN(v) ? '–' : v.toFixed(1))
  const pct = (p: Percentiles): string => `p50 ${f(p.p50)}  p95 ${f(p.p95)}  p99 ${f(p.p99)}  max ${f(p.max)}`
  const mark = (ok: boolean): string => (ok ? 'PASS' : 'FAIL')
  const t = r.trace
  const cpu = t.totals.rendering.cpu
  const busyCpu = t.totals.busy.cpu
  const share = (ms: number): string => `${((ms / busyCpu) * 100).toFixed(0)}%`
  const per = (ms: number, count: number): string => `${((ms * 1000) / Math.max(1, count)).toFixed(1)} µs`
  const browserCpu = cpu.style + cpu.layout + cpu.paint
  const floor = r.view.endsWith('-floor')
  const ingestName = floor ? 'floor ingest (running means)' : 'engine ingest'
  const scriptName = floor ? 'floor painting' : 'bindings + React'
  const gcCpu = cpu.gc
  const lines = [
    `render-1000-windows, ${r.view} view (${r.mode}, ${r.browser}, headless, --disable-gpu; load average ${r.loadAverage[0].toFixed(1)} → ${r.loadAverage[1].toFixed(1)})`,
    `  load           ${r.components} tiles, ${r.events} events in ${(r.runMs / 1000).toFixed(2)} s = ${r.eventsPerSecond} events/s (asked ${r.targetRate}), ${r.ingestCalls} messages`,
    `  renders        ${r.meanRendersPerComponentPerFrame.toFixed(2)} per tile per frame, at most ${r.maxRendersPerComponentPerFrame} in one frame [target <= 1: ${mark(r.targets.atMostOneRenderPerFrame)}]; ${r.measuredRenders} renders`,
    `  frame time     main-thread work per frame: the rendering update plus the tasks since the previous frame (${t.frames} frames), ms`,
    `    wall         ${pct(t.work.wall)}  [target p95 < 16 ms: ${mark(r.targets.p95FrameBelow16ms)}]`,
    `    cpu          ${pct(t.work.cpu)}  (thread CPU; the wall/CPU gap is time the thread waited for a core)`,
    `  of which (cpu) rendering update ${pct(t.rendering.cpu)}`,
    `                 ingest tasks     ${pct(t.ingest.cpu)}`,
    ...PHASES.map((p) => `    ${p.padEnd(12)} ${pct(t.renderingPhases[p].cpu)}`),
    `  frame interval ${pct(r.frameIntervalMs)} (rAF timestamps)`,
    r.longTaskSupported
      ? `  long tasks     ${r.longTasks}, total ${f(r.longTaskTotalMs)} ms, longest ${f(r.longTaskMaxMs)} ms`
      : '  long tasks     not reported by this browser',
    `  main thread    ${f(busyCpu)} ms CPU in ${f(t.totals.runWall)} ms: ${ingestName} ${share(t.totals.ingestTasks.cpu)}, script in frames (${scriptName}) ${share(cpu.script)}, ` +
      `style+layout+paint ${share(browserCpu)}, GC ${share(gcCpu)}, other ${share(busyCpu - t.totals.ingestTasks.cpu - cpu.script - browserCpu - gcCpu)}`,
    `  cost (cpu)     ${ingestName} ${per(t.totals.ingestTasks.cpu, r.events)}/event; ${scriptName} ${per(cpu.script, r.measuredRenders)}/render; ` +
      `style+layout+paint ${per(browserCpu, r.measuredRenders)}/render`,
    `  in page (wall) fan-out ${pct(r.fanOutMs)} per feed frame (${r.feedFrames})`,
    `                 React    ${pct(r.reactMs)}`,
    `                 ingest   ${pct(r.ingestCallMs)} per call`,
  ]
  if (r.cpuProfileSummary !== undefined) lines.push('', r.cpuProfileSummary)
  return lines.join('\n')
}

if (isMain(import.meta.url)) {
  const arg = (name: string): string | undefined =>
    process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
  const num = (name: string): number | undefined => {
    const value = arg(name)
    return value === undefined ? undefined : Number(value)
  }
  const options: { -readonly [K in keyof RunOptions]: RunOptions[K] } = { build: process.argv.includes('--build') }
  for (const name of ['seconds', 'rate', 'components', 'message'] as const) {
    const value = num(name)
    if (value !== undefined) options[name] = value
  }
  const trace = arg('trace')
  if (trace !== undefined) options.trace = trace
  const bindings = arg('bindings')
  if (bindings !== undefined) options.bindings = bindings
  const cpuProfile = arg('cpu-profile')
  if (cpuProfile !== undefined) options.cpuProfile = cpuProfile
  const views = arg('view')?.split(',')
  if (views !== undefined) {
    const unknown = views.filter((v) => !ALL_VIEWS.includes(v as View))
    if (unknown.length > 0) throw new Error(`--view takes ${ALL_VIEWS.join(', ')} (comma-separated), not ${unknown.join(', ')}`)
    options.views = views as View[]
  }
  run(options)
    .then((results) =>
      console.log(process.argv.includes('--json') ? JSON.stringify(results, null, 2) : results.map(report).join('\n\n')),
    )
    .catch((error: unknown) => {
      console.error(error)
      process.exitCode = 1
    })
}
