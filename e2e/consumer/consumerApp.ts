/**
 * Makes the consumer app: a fresh Vite + React + TypeScript project in a temporary folder
 * outside the workspace, with the packed tarballs installed through pnpm overrides (so the
 * tarballs' dependencies on each other resolve to the tarballs too), typechecked with
 * skipLibCheck off, built with Vite and served on 127.0.0.1. Every step is timed.
 */
import { spawn } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildPackages } from '../../scripts/packaging/buildPackages.ts'
import { isNodePackage } from '../../scripts/packaging/nodePackages.ts'
import { packTarballs } from '../../scripts/packaging/packTarballs.ts'
import { publicPackages, repoRoot } from '../../scripts/packaging/publicPackages.ts'
import { runOrFail } from '../../scripts/packaging/runProcess.ts'
import { toolBin } from '../../scripts/packaging/toolBin.ts'

const TEMPLATE = fileURLToPath(new URL('./app', import.meta.url))
/** Installed from the registry (the shared store serves them offline), at the versions the workspace uses. */
const APP_DEPENDENCIES = ['react', 'react-dom', 'yjs', 'y-protocols']
const APP_DEV_DEPENDENCIES = ['vite', '@vitejs/plugin-react', 'typescript', '@types/react', '@types/react-dom', '@types/node']
const READY_TIMEOUT_MS = 30_000
const KILL_GRACE_MS = 3_000

/** One timed step of making the app. */
export interface ConsumerTiming {
  readonly step: string
  readonly seconds: number
}

/** A built, served consumer app; `stop()` ends the server by pid and removes the folder. */
export interface ConsumerApp {
  readonly dir: string
  readonly url: string
  readonly timings: readonly ConsumerTiming[]
  stop(): Promise<void>
}

/**
 * Builds and serves the consumer app. Uses the tarballs in `tarballDir` when given (the
 * packages check packed them a moment ago), else builds and packs the public packages itself.
 *
 * @example
 * const app = await prepareConsumerApp(process.env.TIDEMARK_TARBALLS)
 * try { await fetch(app.url) } finally { await app.stop() }
 */
export async function prepareConsumerApp(tarballDir: string | undefined): Promise<ConsumerApp> {
  const timings: ConsumerTiming[] = []
  const timed = async <T>(step: string, body: () => Promise<T> | T): Promise<T> => {
    const started = performance.now()
    const result = await body()
    const seconds = (performance.now() - started) / 1000
    timings.push({ step, seconds })
    console.log(`[consumer] ${step}: ${seconds.toFixed(1)} s`)
    return result
  }
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'tidemark-consumer-')))
  if (!relative(repoRoot, dir).startsWith('..')) throw new Error(`consumer app ${dir} must be outside the workspace ${repoRoot}`)
  let server: ReturnType<typeof spawn> | undefined
  // If the runner exits without its teardown (a second Ctrl-C), still leave nothing behind.
  const onExit = (): void => {
    if (server?.pid !== undefined && server.exitCode === null && server.signalCode === null) process.kill(server.pid, 'SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  process.on('exit', onExit)
  const stop = async (): Promise<void> => {
    process.off('exit', onExit)
    if (server !== undefined) await stopProcess(server)
    rmSync(dir, { recursive: true, force: true })
    console.log(`[consumer] removed ${dir}`)
  }
  try {
    const tarballs = await timed(tarballDir === undefined ? 'build and pack the packages' : 'tarballs from the packages check', async () => {
      if (tarballDir !== undefined) return tarballFiles(tarballDir)
      const packages = browserPackages()
      await buildPackages(packages)
      return (await packTarballs(packages, join(dir, '.tarballs'))).map((t) => ({ name: t.pkg.name, file: t.file }))
    })
    await timed('write the app', () => writeApp(join(dir, 'app'), tarballs))
    const app = join(dir, 'app')
    await timed('pnpm install (tarballs + registry, --prefer-offline)', () =>
      runOrFail('pnpm', ['install', '--prefer-offline', '--no-frozen-lockfile', '--reporter=append-only'], { cwd: app, env: cleanEnv() }),
    )
    await timed('typecheck (tsc, strict, skipLibCheck false; the app, and node-check.mjs under NodeNext without DOM)', async () => {
      for (const config of ['tsconfig.json', 'tsconfig.node.json']) {
        await runOrFail(process.execPath, [toolBin('typescript', 'tsc', app), '-p', config], { cwd: app, env: cleanEnv() })
      }
    })
    await timed('vite build', () =>
      runOrFail(process.execPath, [toolBin('vite', 'vite', app), 'build', '--logLevel', 'warn'], { cwd: app, env: cleanEnv() }),
    )
    const url = await timed('vite preview (127.0.0.1)', async () => {
      const port = await freePort()
      server = spawn(process.execPath, [toolBin('vite', 'vite', app), 'preview', '--host', '127.0.0.1', '--port', String(port), '--strictPort'], {
        cwd: app,
        env: cleanEnv(),
        stdio: ['ignore', 'ignore', 'inherit'],
      })
      const served = `http://127.0.0.1:${port}/`
      await waitForHttp(served, server)
      console.log(`[consumer] serving ${app}/dist at ${served} (pid ${server.pid})`)
      return served
    })
    return { dir: app, url, timings, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

interface TarballFile {
  readonly name: string
  readonly file: string
}

/** The public packages a browser app installs: the Node-only ones (a server) are checked on their own (scripts/packaging/binSmoke.ts). */
function browserPackages(): ReturnType<typeof publicPackages> {
  return publicPackages().filter((pkg) => !isNodePackage(pkg))
}

/** The browser packages' tarballs in a folder, named by the package.json inside each. */
function tarballFiles(dir: string): TarballFile[] {
  const packages = browserPackages()
  const files = readdirSync(dir).filter((file) => file.endsWith('.tgz'))
  return packages.map((pkg) => {
    const prefix = `${pkg.name.replace('@', '').replace('/', '-')}-${pkg.version}.tgz`
    const file = files.find((candidate) => candidate === prefix)
    if (file === undefined) throw new Error(`no tarball ${prefix} of ${pkg.name} in ${dir} (found ${files.join(', ') || 'none'})`)
    return { name: pkg.name, file: join(dir, file) }
  })
}

function writeApp(app: string, tarballs: readonly TarballFile[]): void {
  cpSync(TEMPLATE, app, { recursive: true })
  const tarballSpecs = Object.fromEntries(tarballs.map((t) => [t.name, `file:${t.file}`]))
  const manifest = {
    name: 'tidemark-consumer',
    private: true,
    type: 'module',
    dependencies: { ...tarballSpecs, ...versions(APP_DEPENDENCIES) },
    devDependencies: versions(APP_DEV_DEPENDENCIES),
  }
  writeFileSync(join(app, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  // pnpm reads overrides from pnpm-workspace.yaml (not package.json): they make every
  // @tidemark dependency of a tarball resolve to its tarball instead of the registry.
  const overrides = tarballs.map((t) => `  '${t.name}': 'file:${t.file}'`).join('\n')
  writeFileSync(join(app, 'pnpm-workspace.yaml'), `overrides:\n${overrides}\n`)
}

/** Exact versions of `names` as the workspace has them installed, so the store already holds them. */
function versions(names: readonly string[]): Record<string, string> {
  const roots = [repoRoot, ...['packages', 'apps'].flatMap((folder) => readdirSync(join(repoRoot, folder)).map((d) => join(repoRoot, folder, d)))]
  return Object.fromEntries(
    names.map((name) => {
      const root = roots.find((candidate) => existsSync(join(candidate, 'node_modules', name, 'package.json')))
      if (root === undefined) throw new Error(`${name} is not installed anywhere in the workspace; run pnpm install`)
      const { version } = JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }
      return [name, version]
    }),
  )
}

/** The environment without what `pnpm run` set for the workspace, so the app's pnpm is on its own. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) && !(/^PNPM_/.test(key) && key !== 'PNPM_HOME')))
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

async function waitForHttp(url: string, child: ReturnType<typeof spawn>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`vite preview exited (${child.signalCode ?? child.exitCode}) before serving ${url}`)
    const status = await new Promise<number>((resolve) => {
      const req = request(url, { timeout: 1_000 }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on('error', () => resolve(0))
      req.on('timeout', () => {
        req.destroy()
        resolve(0)
      })
      req.end()
    })
    if (status === 200) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`${url} did not answer within ${READY_TIMEOUT_MS} ms`)
}

/** SIGTERM by pid, SIGKILL after a grace period. */
async function stopProcess(child: ReturnType<typeof spawn>): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  process.kill(child.pid, 'SIGTERM')
  const timer = setTimeout(() => {
    if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGKILL')
  }, KILL_GRACE_MS)
  await exited
  clearTimeout(timer)
  console.log(`[consumer] stopped vite preview (pid ${child.pid})`)
}
