/**
 * A relay as a child process (`src/cli.ts` through tsx), on 127.0.0.1, stopped by its PID.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const PACKAGE = fileURLToPath(new URL('../..', import.meta.url))
const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url))

/** The command line that runs the relay from its sources. */
export const RELAY_COMMAND = [process.execPath, '--import', 'tsx', '--conditions=@tidemark/source', CLI] as const

/** How a process ended. */
export interface Exit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

/** A running relay process. */
export interface RelayProcess {
  readonly url: string
  readonly httpUrl: string
  readonly port: number
  readonly pid: number
  readonly exited: Promise<Exit>
  /** What it wrote to stderr so far. */
  stderr(): string
  /** What it wrote to stdout so far. */
  stdout(): string
  /** Sends `signal` (default SIGTERM) to its PID and waits for it to end. */
  stop(signal?: NodeJS.Signals): Promise<Exit>
}

const running = new Set<ChildProcess>()

/** The environment of a relay child: only what it needs, plus `env`. */
export function relayEnv(env: Record<string, string>): Record<string, string> {
  const base: Record<string, string> = { HOST: '127.0.0.1', PORT: '0' }
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG']) {
    const value = process.env[name]
    if (value !== undefined) base[name] = value
  }
  return { ...base, ...env }
}

/** Runs the relay CLI with `env` and waits for its ready line. */
export async function spawnRelay(env: Record<string, string>, timeoutMs = 60_000): Promise<RelayProcess> {
  const [command, ...args] = RELAY_COMMAND
  const child = spawn(command, args, { cwd: PACKAGE, env: relayEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(child)
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
    if (stderr.length > 200_000) stderr = stderr.slice(-100_000)
  })
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child)
      resolve({ code, signal })
    }),
  )
  let timer: ReturnType<typeof setTimeout> | undefined
  let stdout = ''
  try {
    const ready = await new Promise<{ port: number; pid: number }>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no ready line after ${timeoutMs} ms; stderr:\n${stderr}`)), timeoutMs)
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString()
        const match = /^tidemark-relay ready (\{.*\})$/m.exec(stdout)
        if (match?.[1] !== undefined) resolve(JSON.parse(match[1]) as { port: number; pid: number })
      })
      exited.then(({ code, signal }) => reject(new Error(`relay exited (${code ?? signal}) before it was ready; stderr:\n${stderr}`)))
    })
    const pid = child.pid as number
    return {
      url: `ws://127.0.0.1:${ready.port}`,
      httpUrl: `http://127.0.0.1:${ready.port}`,
      port: ready.port,
      pid,
      exited,
      stderr: () => stderr,
      stdout: () => stdout,
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

/** Runs the CLI to its end (for configuration errors): exit code and stderr. */
export async function runRelayToExit(env: Record<string, string>): Promise<Exit & { readonly stderr: string; readonly stdout: string }> {
  const [command, ...args] = RELAY_COMMAND
  const child = spawn(command, args, { cwd: PACKAGE, env: relayEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  let stdout = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
  })
  const exit = await new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  return { ...exit, stderr, stdout }
}

/** Kills (SIGKILL, by PID) every relay still running: a failed test must not leave one behind. */
export async function killRelays(): Promise<void> {
  const children = [...running]
  for (const child of children) if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGKILL')
  await Promise.all(children.map((child) => (child.exitCode !== null || child.signalCode !== null ? undefined : new Promise((resolve) => child.once('exit', resolve)))))
}
