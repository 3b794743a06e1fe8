/**
 * Tidemark relays for the browser tests: each a child process running the relay command from
 * its sources (as `pnpm relay` does) on 127.0.0.1, with development tokens, on a data directory
 * of its own (a copy of the run's initialized PGlite directory, made by globalSetup.ts), stopped
 * by its PID. Redis for the scale-out test comes from the relay package's own starter.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { cpSync, mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const REPO = fileURLToPath(new URL('../..', import.meta.url))
const CLI = fileURLToPath(new URL('../../packages/relay/src/cli.ts', import.meta.url))

/** The HS256 secret every test relay verifies with; tests sign their own tokens with it too. */
export const RELAY_SECRET = 'tidemark e2e relays: an HS256 secret of 32+ bytes'

/** How a relay process ended. */
export interface RelayExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/** A running relay process. */
export interface RelayProcess {
  /** `ws://127.0.0.1:<port>` */
  readonly url: string
  /** `http://127.0.0.1:<port>`: `/healthz`, `/metrics`, `/dev/token`. */
  readonly httpUrl: string
  readonly port: number
  readonly pid: number
  readonly dataDir: string
  /** Sends `signal` (default SIGTERM: it stores every room, then exits 0) to its PID and waits for it to end. */
  stop(signal?: NodeJS.Signals): Promise<RelayExit>
  /** What it wrote to stderr so far. */
  stderr(): string
}

/** What the relay processes of the whole run write into (globalSetup.ts sets them). */
function runDirs(): { readonly template: string; readonly tmp: string } {
  const template = process.env.TIDEMARK_E2E_RELAY_TEMPLATE
  const tmp = process.env.TIDEMARK_E2E_TMP
  if (template === undefined || tmp === undefined) throw new Error('e2e: no relay template: run the suite through e2e/playwright.config.ts (its globalSetup makes one)')
  return { template, tmp }
}

/**
 * A new relay data directory: a copy of the run's initialized PGlite directory (initializing
 * one takes seconds; copying it, a fraction of one). globalSetup's teardown removes it.
 */
export function relayDataDir(): string {
  const { template, tmp } = runDirs()
  const dir = mkdtempSync(join(tmp, 'relay-'))
  cpSync(template, dir, { recursive: true })
  return dir
}

const running = new Set<ChildProcess>()

/**
 * Starts a relay on `dataDir` (on `port`, default a free one) and waits for its ready line.
 * `redisUrl` joins it to a scale-out group; `env` sets other variables (limits, `TIDEMARK_LOG`).
 *
 * @example
 * const relay = await startRelayProcess({ dataDir: relayDataDir() })
 * await relay.stop('SIGKILL')
 * const again = await startRelayProcess({ dataDir: relay.dataDir, port: relay.port })
 */
export async function startRelayProcess(options: {
  readonly dataDir: string
  readonly port?: number
  readonly redisUrl?: string
  readonly env?: Readonly<Record<string, string>>
}): Promise<RelayProcess> {
  const env: Record<string, string> = { HOST: '127.0.0.1', PORT: String(options.port ?? 0), TIDEMARK_DATA_DIR: options.dataDir }
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG']) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  Object.assign(env, { TIDEMARK_AUTH_SECRET: RELAY_SECRET, TIDEMARK_DEV_TOKENS: '1' }, options.redisUrl === undefined ? {} : { REDIS_URL: options.redisUrl }, options.env)
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=@tidemark/source', CLI], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(child)
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = `${stderr}${chunk.toString()}`.slice(-100_000)
  })
  const exited = new Promise<RelayExit>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child)
      resolve({ code, signal })
    }),
  )
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let stdout = ''
      timer = setTimeout(() => reject(new Error(`relay: no ready line within 60 s; stderr:\n${stderr}`)), 60_000)
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString()
        const match = /^tidemark-relay ready (\{.*\})$/m.exec(stdout)
        if (match?.[1] !== undefined) resolve((JSON.parse(match[1]) as { port: number }).port)
      })
      void exited.then(({ code, signal }) => reject(new Error(`relay exited (${code ?? signal}) before it was ready; stderr:\n${stderr}`)))
    })
    const pid = child.pid as number
    return {
      url: `ws://127.0.0.1:${port}`,
      httpUrl: `http://127.0.0.1:${port}`,
      port,
      pid,
      dataDir: options.dataDir,
      stderr: () => stderr,
      async stop(signal = 'SIGTERM') {
        if (child.exitCode === null && child.signalCode === null) process.kill(pid, signal)
        return exited
      },
    }
  } catch (error) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL')
    throw error
  } finally {
    clearTimeout(timer)
  }
}

/** Kills (SIGKILL, by PID) every relay of this worker still running: a failed test must not leave one behind. */
export async function killRelays(): Promise<void> {
  const children = [...running]
  for (const child of children) if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL')
  await Promise.all(children.map((child) => (child.exitCode !== null || child.signalCode !== null ? undefined : new Promise((resolve) => child.once('exit', resolve)))))
}

/** One metric of a relay (`GET /metrics`), 0 when it is absent. */
export async function relayMetric(relay: Pick<RelayProcess, 'httpUrl'>, name: string): Promise<number> {
  const text = await (await fetch(`${relay.httpUrl}/metrics`)).text()
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `)) return Number(line.slice(name.length + 1))
  }
  return 0
}
