/**
 * The command of a Node-only package, run as a user gets it: its tarball installed with pnpm into
 * an empty project outside the workspace (the sibling @tidemark tarballs through overrides, the
 * rest from the registry, which the shared store serves offline), then its `node_modules/.bin`
 * command started with the package's smoke environment (nodePackages.ts), its ready line read,
 * its probe path fetched, and the process stopped with SIGTERM by its PID.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BinSmoke } from './nodePackages.ts'
import type { Tarball } from './packTarballs.ts'
import { runOrFail } from './runProcess.ts'

/** What one smoke run saw. */
export interface BinSmokeResult {
  readonly name: string
  readonly bin: string
  readonly installMs: number
  /** From the spawn to the ready line. */
  readonly readyMs: number
  readonly port: number
  /** The probe's HTTP status and body. */
  readonly probe: { readonly status: number; readonly body: string }
  readonly exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null }
  /** Whatever does not match the package's smoke expectations; empty when it passed. */
  readonly problems: readonly string[]
}

const READY_TIMEOUT_MS = 180_000
const STOP_TIMEOUT_MS = 30_000

/** The environment without what `pnpm run` set for the workspace, so the project's pnpm is on its own. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) && !(/^PNPM_/.test(key) && key !== 'PNPM_HOME')))
}

/**
 * Installs `tarball` into a new project in `workDir` and runs its command `smoke.bin`.
 *
 * @example
 * const result = await smokeBin(relayTarball, allTarballs, NODE_PACKAGES['@tidemark/relay'], '/tmp/w')
 * if (result.problems.length > 0) console.log(result.problems.join('\n'))
 */
export async function smokeBin(tarball: Tarball, tarballs: readonly Tarball[], smoke: BinSmoke, workDir: string): Promise<BinSmokeResult> {
  const name = tarball.pkg.name
  const project = join(workDir, `bin-${name.replace('@', '').replace('/', '-')}`)
  mkdirSync(project, { recursive: true })
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'tidemark-bin-smoke', private: true, type: 'module', dependencies: { [name]: `file:${tarball.file}` } }, null, 2)}\n`)
  // pnpm reads overrides from pnpm-workspace.yaml: the package's @tidemark dependencies resolve to their tarballs.
  writeFileSync(join(project, 'pnpm-workspace.yaml'), `overrides:\n${tarballs.map((t) => `  '${t.pkg.name}': 'file:${t.file}'`).join('\n')}\n`)
  const installStarted = performance.now()
  await runOrFail('pnpm', ['install', '--prefer-offline', '--no-frozen-lockfile', '--reporter=append-only'], { cwd: project, env: cleanEnv() })
  const installMs = performance.now() - installStarted

  const env: Record<string, string> = {}
  for (const variable of ['PATH', 'HOME', 'TMPDIR', 'LANG']) {
    const value = process.env[variable]
    if (value !== undefined) env[variable] = value
  }
  Object.assign(env, smoke.env(project))
  const started = performance.now()
  const child = spawn(join(project, 'node_modules', '.bin', smoke.bin), [], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  const kill = (): void => {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL')
  }
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${smoke.bin}: no ready line within ${READY_TIMEOUT_MS / 1000} s; stderr:\n${stderr}`)), READY_TIMEOUT_MS)
      const check = (): void => {
        const match = smoke.ready.exec(stdout)
        if (match?.[1] === undefined) return
        clearTimeout(timer)
        const parsed = JSON.parse(match[1]) as { port?: unknown }
        if (typeof parsed.port === 'number') resolve(parsed.port)
        else reject(new Error(`${smoke.bin}: its ready line names no port: ${match[0]}`))
      }
      child.stdout.on('data', check)
      void exited.then(({ code, signal }) => {
        clearTimeout(timer)
        reject(new Error(`${smoke.bin} exited (${signal ?? code}) before it was ready; stderr:\n${stderr}`))
      })
    })
    const readyMs = performance.now() - started
    const response = await fetch(`http://127.0.0.1:${port}${smoke.probe}`)
    const probe = { status: response.status, body: (await response.text()).trim() }
    if (child.pid !== undefined) process.kill(child.pid, 'SIGTERM')
    const stopTimer = setTimeout(kill, STOP_TIMEOUT_MS)
    const exit = await exited
    clearTimeout(stopTimer)
    const problems: string[] = []
    if (probe.status !== 200) problems.push(`GET ${smoke.probe} answered ${probe.status}: ${probe.body}`)
    if (exit.code !== smoke.exitOnSigterm) problems.push(`on SIGTERM it exited with ${exit.signal ?? exit.code}, not ${smoke.exitOnSigterm}; stderr:\n${stderr}`)
    return { name, bin: smoke.bin, installMs, readyMs, port, probe, exit, problems }
  } catch (error) {
    kill()
    await exited
    throw error
  }
}
