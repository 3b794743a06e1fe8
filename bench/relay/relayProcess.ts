/**
 * A relay of the benchmark: the `tidemark-relay` command run from its sources
 * (`node --import tsx --conditions=@tidemark/source packages/relay/src/cli.ts`), configured by
 * environment variables as an operator would, bound to 127.0.0.1, stopped by its PID.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const RELAY_PACKAGE = fileURLToPath(new URL('../../packages/relay/', import.meta.url))
const RELAY_CLI = fileURLToPath(new URL('../../packages/relay/src/cli.ts', import.meta.url))

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
 * const relay: RelayProcess = await spawnRelay('A', { PORT: '0', TIDEMARK_AUTH_SECRET: secret })
 * await relay.stop()
 */
export interface RelayProcess {
  readonly name: string
  readonly url: string
  readonly httpUrl: string
  readonly port: number
  readonly pid: number
  readonly exited: Promise<RelayExit>
  /** Lines the relay wrote to stderr (warnings and errors: it logs at `warn`). */
  stderrLines(): readonly string[]
  /** Sends `signal` (default SIGTERM) to its PID and waits until it exited. */
  stop(signal?: NodeJS.Signals): Promise<RelayExit>
}

const running = new Set<ChildProcess>()

/** Kills (SIGKILL, by PID) every relay still running: an interrupted run must not leave one behind. */
export function killRelays(): void {
  for (const child of running) if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL')
}

/**
 * Starts the relay command with `env` (plus HOST=127.0.0.1 and PATH/HOME) and waits for its
 * ready line; `nodeFlags` go to node (e.g. `--cpu-prof`).
 *
 * @example
 * const a = await spawnRelay('A', { PORT: '0', TIDEMARK_DATA_DIR: dir, TIDEMARK_AUTH_SECRET: secret, REDIS_URL: redis.url })
 */
export async function spawnRelay(name: string, env: Record<string, string>, nodeFlags: readonly string[] = [], timeoutMs = 120_000): Promise<RelayProcess> {
  const base: Record<string, string> = { HOST: '127.0.0.1' }
  for (const variable of ['PATH', 'HOME', 'TMPDIR', 'LANG']) {
    const value = process.env[variable]
    if (value !== undefined) base[variable] = value
  }
  const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', '--conditions=@tidemark/source', RELAY_CLI], {
    cwd: RELAY_PACKAGE,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.add(child)
  const lines: string[] = []
  let partial = ''
  child.stderr?.setEncoding('utf8')
  child.stderr?.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n')
    partial = parts.pop() ?? ''
    for (const line of parts) if (lines.length < 10_000) lines.push(line)
  })
  const exited = new Promise<RelayExit>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child)
      resolve({ code, signal })
    }),
  )
  let stdout = ''
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    const ready = await new Promise<{ port: number }>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`relay ${name}: no ready line after ${timeoutMs} ms; stderr:\n${lines.join('\n')}`)), timeoutMs)
      child.stdout?.setEncoding('utf8')
      child.stdout?.on('data', (chunk: string) => {
        stdout += chunk
        const match = /^tidemark-relay ready (\{.*\})$/m.exec(stdout)
        if (match?.[1] !== undefined) resolve(JSON.parse(match[1]) as { port: number })
      })
      exited.then(({ code, signal }) => reject(new Error(`relay ${name} exited (${code ?? signal}) before it was ready; stderr:\n${lines.join('\n')}${partial}`)))
    })
    const pid = child.pid as number
    return {
      name,
      url: `ws://127.0.0.1:${ready.port}`,
      httpUrl: `http://127.0.0.1:${ready.port}`,
      port: ready.port,
      pid,
      exited,
      stderrLines: () => lines,
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
 * The relay's Prometheus metrics as `name{labels}` → value. A relay busy enough to leave a
 * scrape unanswered for 30 s is asked twice more before this rejects.
 *
 * @example
 * (await relayMetrics(relay.httpUrl)).get('tidemark_relay_updates_in_total')
 */
export async function relayMetrics(httpUrl: string): Promise<Map<string, number>> {
  let text: string | undefined
  for (let attempt = 1; text === undefined; attempt++) {
    try {
      text = await (await fetch(`${httpUrl}/metrics`, { signal: AbortSignal.timeout(30_000) })).text()
    } catch (error) {
      if (attempt >= 3) throw new Error(`${httpUrl}/metrics: ${attempt} scrapes failed, the last: ${error instanceof Error ? (error.cause ?? error.message) : error}`, { cause: error })
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
