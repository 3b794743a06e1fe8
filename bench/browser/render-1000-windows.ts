/**
 * render-1000-windows: 1,000 `useWindow` cells of @tidemark/react in Chromium
 * while the engine ingests 20k events/s for 10 s (each event updates one of
 * 1,000 open tumbling windows, round robin). Prints frame times, renders per
 * component per frame and long tasks, against the targets of issue 6
 * (p95 frame < 16 ms, <= 1 render per component per frame).
 *
 *   node --import tsx --conditions=@tidemark/source bench/browser/render-1000-windows.ts [--build] [--seconds=10] [--rate=20000] [--components=1000]
 *
 * Starts Vite on 127.0.0.1 (the dev server; with `--build`, a production
 * build served by `vite preview`, i.e. production React), and Debian's
 * Chromium through playwright-core (`CHROMIUM` overrides the executable).
 */
import { execFileSync } from 'node:child_process'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import react from '@vitejs/plugin-react'
import { type Browser, chromium } from 'playwright-core'
import { build, createServer, defaultClientConditions, type InlineConfig, preview } from 'vite'
import { isMain } from '../measure.ts'
import type { PageResult } from './render-1000-windows/result.ts'

const here = dirname(fileURLToPath(import.meta.url))
const pageRoot = join(here, 'render-1000-windows')

export interface RunOptions {
  /** Serve a production build (production React) instead of the dev server. */
  readonly build?: boolean
  readonly seconds?: number
  readonly rate?: number
  readonly components?: number
}

export interface RunResult extends PageResult {
  readonly mode: 'dev' | 'build'
  readonly browser: string
  readonly targets: { readonly p95FrameBelow16ms: boolean; readonly atMostOneRenderPerFrame: boolean }
}

interface Served {
  readonly url: string
  close(): Promise<void>
}

function viteConfig(): InlineConfig {
  return {
    root: pageRoot,
    configFile: false,
    logLevel: 'warn',
    plugins: [react()],
    resolve: {
      conditions: ['@tidemark/source', ...defaultClientConditions],
      dedupe: ['react', 'react-dom'],
    },
    optimizeDeps: {
      // Listed so the first load does not discover them and reload the page mid-run.
      include: ['react', 'react-dom', 'react-dom/client', 'react/jsx-runtime', 'react/jsx-dev-runtime'],
    },
  }
}

function urlOf(server: { address(): AddressInfo | string | null } | null | undefined): string {
  const address = server?.address()
  if (address === null || address === undefined || typeof address === 'string') throw new Error('server has no TCP address')
  return `http://127.0.0.1:${address.port}/`
}

async function serve(production: boolean): Promise<Served> {
  if (!production) {
    const server = await createServer({ ...viteConfig(), server: { host: '127.0.0.1', port: 0, hmr: false } })
    try {
      await server.listen()
      return { url: urlOf(server.httpServer), close: () => server.close() }
    } catch (error) {
      await server.close()
      throw error
    }
  }
  const outDir = join(tmpdir(), `tidemark-render-1000-windows-${process.pid}`)
  await build({ ...viteConfig(), mode: 'production', build: { outDir, emptyOutDir: true } })
  const server = await preview({ ...viteConfig(), build: { outDir }, preview: { host: '127.0.0.1', port: 0 } })
  return { url: urlOf(server.httpServer), close: () => server.close() }
}

function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim()
  } catch {
    throw new Error('chromium not found: install Debian chromium or set CHROMIUM=/path/to/chrome')
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

export async function run(options: RunOptions = {}): Promise<RunResult> {
  const seconds = options.seconds ?? 10
  const query = new URLSearchParams({
    seconds: String(seconds),
    rate: String(options.rate ?? 20_000),
    components: String(options.components ?? 1000),
  })
  let served: Served | undefined
  let browser: Browser | undefined
  try {
    served = await within(120_000, 'vite', serve(options.build === true))
    browser = await chromium.launch({
      executablePath: chromiumPath(),
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--headless=new'],
      timeout: 30_000,
    })
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    page.on('pageerror', (error) => console.error(`page error: ${error.message}`))
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') console.error(`page ${message.type()}: ${message.text()}`)
    })
    await page.goto(`${served.url}?${query}`, { waitUntil: 'load', timeout: 60_000 })
    await page.waitForFunction(() => window.__result !== undefined || window.__error !== undefined, null, {
      timeout: (seconds + 60) * 1000,
      polling: 1000,
    })
    const outcome = await page.evaluate(() => ({ result: window.__result, error: window.__error }))
    if (outcome.error !== undefined) throw new Error(`page failed: ${outcome.error}`)
    if (outcome.result === undefined) throw new Error('page left no result')
    const result = outcome.result
    return {
      ...result,
      mode: options.build === true ? 'build' : 'dev',
      browser: `Chromium ${browser.version()}`,
      targets: {
        p95FrameBelow16ms: result.frameWorkMs.p95 < 16,
        atMostOneRenderPerFrame: result.maxRendersPerComponentPerFrame <= 1,
      },
    }
  } finally {
    if (browser !== undefined) await within(10_000, 'browser.close', browser.close()).catch((e: unknown) => console.error(e))
    if (served !== undefined) await within(10_000, 'server.close', served.close()).catch((e: unknown) => console.error(e))
  }
}

function print(r: RunResult): void {
  const ms = (v: number): string => `${v.toFixed(2)} ms`
  const pct = (p: { p50: number; p95: number; max: number }): string => `p50 ${ms(p.p50)}  p95 ${ms(p.p95)}  max ${ms(p.max)}`
  const mark = (ok: boolean): string => (ok ? 'PASS' : 'FAIL')
  console.log(`render-1000-windows (${r.mode}, ${r.browser}, headless, --disable-gpu)`)
  console.log(`  ${r.components} components, ${r.events} events in ${(r.ingestMs / 1000).toFixed(2)} s = ${r.eventsPerSecond} events/s, ${r.ingestCalls} ingest calls, ${r.windowsWithValue} windows`)
  console.log(`  frame work      ${pct(r.frameWorkMs)}  [target p95 < 16 ms: ${mark(r.targets.p95FrameBelow16ms)}]`)
  console.log(`  frame interval  ${pct(r.frameIntervalMs)}  (${r.frames} frames, ${r.droppedFrames} longer than 1.5 x median)`)
  console.log(`  ingest call     ${pct(r.ingestCallMs)}`)
  console.log(
    `  renders/component/frame  max ${r.maxRendersPerComponentPerFrame}  mean ${r.meanRendersPerRenderingFrame.toFixed(3)} (frames it rendered)  ${r.meanRendersPerComponentPerFrame.toFixed(3)} (all frames)  [target <= 1: ${mark(r.targets.atMostOneRenderPerFrame)}]`,
  )
  console.log(
    r.longTaskSupported
      ? `  long tasks      ${r.longTasks}, total ${ms(r.longTaskTotalMs)}, longest ${ms(r.longTaskMaxMs)}`
      : '  long tasks      not reported by this browser',
  )
}

if (isMain(import.meta.url)) {
  const arg = (name: string): number | undefined => {
    const found = process.argv.find((a) => a.startsWith(`--${name}=`))
    return found === undefined ? undefined : Number(found.slice(name.length + 3))
  }
  const options: { -readonly [K in keyof RunOptions]: RunOptions[K] } = { build: process.argv.includes('--build') }
  const seconds = arg('seconds')
  const rate = arg('rate')
  const components = arg('components')
  if (seconds !== undefined) options.seconds = seconds
  if (rate !== undefined) options.rate = rate
  if (components !== undefined) options.components = components
  run(options)
    .then(print)
    .catch((error: unknown) => {
      console.error(error)
      process.exitCode = 1
    })
}
