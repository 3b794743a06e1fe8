/**
 * Shared driver of the WAL browser benches: builds the bench page (bench/browser/wal-bench)
 * with Vite, serves it with `vite preview` on 127.0.0.1, launches Debian's Chromium through
 * playwright-core (`CHROMIUM` overrides the executable) and reads the page's timings.
 */
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser, BrowserContext } from 'playwright-core'
import { build, defaultClientConditions, type InlineConfig, preview } from 'vite'
import { launchChromium } from './chromium.ts'
import type { PageOutcome, Timing } from './wal-bench/result.ts'

const pageRoot = join(dirname(fileURLToPath(import.meta.url)), 'wal-bench')

export interface WalBenchSession {
  readonly browser: string
  /** Loads the bench page with `query` in a new tab of the shared context and returns its timings. */
  run(query: Record<string, string | number>, timeoutMs: number): Promise<readonly Timing[]>
  close(): Promise<void>
}

function viteConfig(): InlineConfig {
  return {
    root: pageRoot,
    configFile: false,
    logLevel: 'warn',
    resolve: { conditions: ['@tidemark/source', ...defaultClientConditions], dedupe: ['yjs', 'lib0'] },
  }
}

/** Starts the server and the browser; one browser context, so every tab shares the origin's IndexedDB. */
export async function startWalBench(): Promise<WalBenchSession> {
  const outDir = join(tmpdir(), `tidemark-wal-bench-${process.pid}`)
  await build({ ...viteConfig(), mode: 'production', build: { outDir, emptyOutDir: true } })
  const server = await preview({ ...viteConfig(), build: { outDir }, preview: { host: '127.0.0.1', port: 0 } })
  const address = server.httpServer.address() as AddressInfo | null
  if (address === null) throw new Error('preview server has no address')
  const url = `http://127.0.0.1:${address.port}/`
  let browser: Browser | undefined
  let context: BrowserContext
  try {
    browser = await launchChromium()
    context = await browser.newContext()
  } catch (error) {
    await browser?.close()
    await server.close()
    throw error
  }
  const launched = browser
  return {
    browser: `Chromium ${launched.version()}`,
    async run(query, timeoutMs) {
      const page = await context.newPage()
      page.on('pageerror', (error) => console.error(`page error: ${error.message}`))
      try {
        const search = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))
        await page.goto(`${url}?${search}`, { waitUntil: 'load', timeout: 60_000 })
        await page.waitForFunction(() => window.__walBench !== undefined || window.__walBenchError !== undefined, null, {
          timeout: timeoutMs,
          polling: 250,
        })
        const outcome = await page.evaluate(() => ({ result: window.__walBench, error: window.__walBenchError }))
        if (outcome.error !== undefined) throw new Error(`page failed: ${outcome.error}`)
        return (outcome.result as PageOutcome).timings
      } finally {
        await page.close()
      }
    },
    async close() {
      await launched.close().catch((error: unknown) => console.error(error))
      await server.close().catch((error: unknown) => console.error(error))
    },
  }
}

/** Median of the named contender's times. */
export function medianMs(timings: readonly Timing[], name: string): number {
  const times = timings
    .filter((t) => t.name === name)
    .map((t) => t.ms)
    .sort((a, b) => a - b)
  if (times.length === 0) return Number.NaN
  const mid = times.length >> 1
  return times.length % 2 === 1 ? (times[mid] as number) : ((times[mid - 1] as number) + (times[mid] as number)) / 2
}

export function formatRate(events: number, ms: number): string {
  return `${Math.round((events / ms) * 1000).toLocaleString('en-US')} events/s`
}

/** The size of a WAL bench run: events, events per batch, timed rounds (each defaulted by the bench). */
export interface WalBenchOptions {
  readonly events?: number
  readonly batch?: number
  readonly rounds?: number
}

/**
 * Reads `--events=N --batch=N --rounds=N` from the command line; absent flags stay undefined.
 *
 * @example
 * if (isMain(import.meta.url)) runAppend(walBenchArgs(process.argv))
 */
export function walBenchArgs(argv: readonly string[]): WalBenchOptions {
  const options: { -readonly [K in keyof WalBenchOptions]: WalBenchOptions[K] } = {}
  for (const name of ['events', 'batch', 'rounds'] as const) {
    const found = argv.find((a) => a.startsWith(`--${name}=`))
    if (found !== undefined) options[name] = Number(found.slice(name.length + 3))
  }
  return options
}
