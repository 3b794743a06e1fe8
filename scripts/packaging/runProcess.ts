/**
 * Runs one command to its end and collects what it printed, for the packaging steps that
 * report a tool's output only when the tool fails.
 */
import { spawn } from 'node:child_process'

/** How a command ended and what it printed. */
export interface ProcessResult {
  readonly command: string
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
  readonly ms: number
}

/** Options of `runProcess`. */
export interface RunProcessOptions {
  readonly cwd: string
  readonly env?: NodeJS.ProcessEnv
  /** Print the child's output as it comes instead of only collecting it. */
  readonly echo?: boolean
  /** Called with the child's pid once it started, so a caller can stop it on Ctrl-C. */
  readonly onStart?: (pid: number) => void
}

/**
 * Runs `command args...` (no shell) and resolves when it exits, with its output; never rejects
 * for a non-zero exit (the caller decides), only when the command cannot start.
 *
 * @example
 * const result = await runProcess('pnpm', ['run', 'build'], { cwd: 'packages/engine' })
 * if (result.code !== 0) throw new Error(`${result.command} failed:\n${result.stderr}`)
 */
export function runProcess(command: string, args: readonly string[], options: RunProcessOptions): Promise<ProcessResult> {
  const started = performance.now()
  const line = [command, ...args].join(' ')
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    if (child.pid !== undefined) options.onStart?.(child.pid)
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      if (options.echo === true) process.stdout.write(chunk)
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
      if (options.echo === true) process.stderr.write(chunk)
    })
    child.on('error', (error) => reject(new Error(`${line}: could not start (${error.message})`, { cause: error })))
    child.on('close', (code, signal) => resolve({ command: line, code, signal, stdout, stderr, ms: performance.now() - started }))
  })
}

/**
 * Like `runProcess`, but rejects with the command's output when it does not exit with 0.
 *
 * @example
 * const { stdout } = await runOrFail('pnpm', ['--version'], { cwd: process.cwd() })
 */
export async function runOrFail(command: string, args: readonly string[], options: RunProcessOptions): Promise<ProcessResult> {
  const result = await runProcess(command, args, options)
  if (result.code === 0) return result
  const output = `${result.stdout}${result.stderr}`.trim()
  throw new Error(`${result.command} (in ${options.cwd}) exited with ${result.signal ?? result.code}${output === '' ? '' : `:\n${output}`}`)
}
