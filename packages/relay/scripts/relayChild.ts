/**
 * The `tidemark-relay` command as a child process, run from its sources (as `pnpm relay` does),
 * for the relay's tests, the browser tests and the relay benchmark: configured by environment
 * variables as an operator would, bound to 127.0.0.1, ready once it prints its ready line,
 * stopped by its PID.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const PACKAGE = fileURLToPath(new URL('..', import.meta.url))
const CLI = fileURLToPath(new URL('../src/cli.ts', import.meta.url))
/** Output kept per stream: the tail, enough for any failure message. */
const KEEP_CHARS = 200_000

/**
 * The command line that runs the relay from its sources.
 *
 * @example
 * spawn(RELAY_COMMAND[0], RELAY_COMMAND.slice(1), { env: relayChildEnv({ PORT: '0' }) })
 */
export const RELAY_COMMAND = [process.execPath, '--import', 'tsx', '--conditions=@tidemark/source', CLI] as const

/**
 * How a relay process ended.
 *
 * @example
 * const exit: RelayExit = { code: 0, signal: null }
 */
export interface RelayExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/**
 * A running relay process.
 *
 * @example
 * const relay: RelayChild = await spawnRelayChild({ env: { TIDEMARK_DATA_DIR: dir, TIDEMARK_AUTH_SECRET: secret } })
 * await relay.stop('SIGKILL')
 */
export interface RelayChild {
  /** `ws://127.0.0.1:<port>` */
  readonly url: string
  /** `http://127.0.0.1:<port>`: `/healthz`, `/metrics`, `/dev/token`. */
  readonly httpUrl: string
  readonly port: number
  readonly pid: number
  readonly exited: Promise<RelayExit>
  /** What it wrote to stdout so far (the tail). */
  stdout(): string
  /** What it wrote to stderr so far (the tail). */
  stderr(): string
  /** Sends `signal` (default SIGTERM: it stores every room, then exits 0) to its PID and waits for it to end. */
  stop(signal?: NodeJS.Signals): Promise<RelayExit>
}

/**
 * Options of `spawnRelayChild`.
 *
 * @example
 * const options: RelayChildOptions = { env: { PORT: '0', TIDEMARK_DATA_DIR: dir }, nodeFlags: ['--cpu-prof'], label: 'relay A' }
 */
export interface RelayChildOptions {
  /** Environment variables over the defaults (`HOST=127.0.0.1`, `PORT=0`, and PATH, HOME, TMPDIR, LANG from this process). */
  readonly env: Readonly<Record<string, string>>
  /** Flags for node before the command (e.g. `--cpu-prof`). */
  readonly nodeFlags?: readonly string[]
  /** How long it may take to print its ready line (default 60 s). */
  readonly timeoutMs?: number
  /** Names the relay in error messages (default `relay`). */
  readonly label?: string
}

const running = new Set<ChildProcess>()

/**
 * A relay child's environment: only what it needs, then `env`.
 *
 * @example
 * relayChildEnv({ TIDEMARK_DATA_DIR: dir }).HOST // '127.0.0.1'
 */
export function relayChildEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  const base: Record<string, string> = { HOST: '127.0.0.1', PORT: '0' }
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG']) {
    const value = process.env[name]
    if (value !== undefined) base[name] = value
  }
  return { ...base, ...env }
}

/**
 * Starts the relay command and waits for its ready line; a relay that exits first, or prints
 * nothing in time, is killed and the promise rejects with its stderr.
 *
 * @example
 * const relay = await spawnRelayChild({ env: { TIDEMARK_DATA_DIR: dir, TIDEMARK_AUTH_SECRET: secret, REDIS_URL: redis.url } })
 */
export async function spawnRelayChild(options: RelayChildOptions): Promise<RelayChild> {
  const { timeoutMs = 60_000, label = 'relay' } = options
  const [command, ...args] = RELAY_COMMAND
  const child = spawn(command, [...(options.nodeFlags ?? []), ...args], { cwd: PACKAGE, env: relayChildEnv(options.env), stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8')
  child.stderr?.setEncoding('utf8')
  child.stderr?.on('data', (chunk: string) => {
    stderr = `${stderr}${chunk}`.slice(-KEEP_CHARS)
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
      timer = setTimeout(() => reject(new Error(`${label}: no ready line after ${timeoutMs} ms; stderr:\n${stderr}`)), timeoutMs)
      child.stdout?.on('data', (chunk: string) => {
        stdout = `${stdout}${chunk}`.slice(-KEEP_CHARS)
        const match = /^tidemark-relay ready (\{.*\})$/m.exec(stdout)
        if (match?.[1] !== undefined) resolve((JSON.parse(match[1]) as { port: number }).port)
      })
      void exited.then(({ code, signal }) => reject(new Error(`${label} exited (${code ?? signal}) before it was ready; stderr:\n${stderr}`)))
    })
    const pid = child.pid as number
    return {
      url: `ws://127.0.0.1:${port}`,
      httpUrl: `http://127.0.0.1:${port}`,
      port,
      pid,
      exited,
      stdout: () => stdout,
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

/**
 * Kills (SIGKILL, by PID) every relay this process started that still runs, and waits for them
 * to end: a failed test or an interrupted run must not leave one behind.
 *
 * @example
 * afterAll(() => killRelayChildren())
 */
export async function killRelayChildren(): Promise<void> {
  const children = [...running]
  for (const child of children) if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL')
  await Promise.all(children.map((child) => (child.exitCode !== null || child.signalCode !== null ? undefined : new Promise((resolve) => child.once('exit', resolve)))))
}

/**
 * A relay's Prometheus metrics as `name{labels}` → value. A scrape left unanswered for
 * `timeoutMs` is tried again, `attempts` times in all, before this rejects.
 *
 * @example
 * (await readRelayMetrics(relay.httpUrl)).get('tidemark_relay_updates_in_total')
 */
export async function readRelayMetrics(httpUrl: string, options: { readonly timeoutMs?: number; readonly attempts?: number } = {}): Promise<Map<string, number>> {
  const { timeoutMs = 30_000, attempts = 1 } = options
  let text: string | undefined
  for (let attempt = 1; text === undefined; attempt++) {
    try {
      text = await (await fetch(`${httpUrl}/metrics`, { signal: AbortSignal.timeout(timeoutMs) })).text()
    } catch (error) {
      if (attempt >= attempts) throw new Error(`${httpUrl}/metrics: ${attempt} scrape(s) failed, the last: ${error instanceof Error ? (error.cause ?? error.message) : error}`, { cause: error })
    }
  }
  const values = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue
    const at = line.lastIndexOf(' ')
    values.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return values
}
