#!/usr/bin/env node
/**
 * `pnpm start`: builds apps/demo, starts the Tidemark relay (packages/relay, from its sources)
 * on 127.0.0.1 on a free port, serves the built app on http://127.0.0.1:5173/ (vite preview,
 * strict port) and prints the URL. The app reads the relay's URL and its development-token URL
 * from /config.json, written into the build output before it is served. No network beyond
 * 127.0.0.1 is needed.
 *
 * The relay: embedded store (PGlite) in apps/demo/.tidemark-relay, kept across restarts, so the
 * rooms of a fleet are still there when the demo starts again (delete the directory to start
 * empty; the first start initializes it, which takes several seconds); development tokens on
 * (`TIDEMARK_DEV_TOKENS=1`, served on loopback only, readable by pages of loopback origins
 * through CORS); a new random `TIDEMARK_AUTH_SECRET` on every run, so tokens of an earlier run
 * are refused (the pages fetch a new one for every connection).
 *
 * Ctrl-C (SIGINT) or SIGTERM stops both children by PID (SIGTERM, then SIGKILL after a grace
 * period: 3 s for the page server, 15 s for the relay, which stores its rooms first), so nothing
 * is left running. The children stay in this script's process group (neither spawns processes of
 * its own): a supervisor that SIGKILLs the group (Playwright's webServer on abort) takes them
 * too, which a detached child would survive. If either child dies, the other is stopped and this
 * exits non-zero.
 *
 * Env: DEMO_PORT (default 5173) for the page server; DEMO_OUT_DIR (default dist; a relative
 * path is taken from apps/demo) for the build; DEMO_SKIP_BUILD=1 serves an existing build;
 * DEMO_RELAY_DIR (default .tidemark-relay; a relative path is taken from apps/demo) for the
 * relay's data directory, which one relay at a time may open.
 */
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const demoDir = `${root}apps/demo`
const viteBin = `${demoDir}/node_modules/vite/bin/vite.js`
const relayCli = `${root}packages/relay/src/cli.ts`
const host = '127.0.0.1'
const port = Number.parseInt(process.env.DEMO_PORT || '5173', 10)
const outDir = resolve(demoDir, process.env.DEMO_OUT_DIR || 'dist')
const relayDir = resolve(demoDir, process.env.DEMO_RELAY_DIR || '.tidemark-relay')
const READY_TIMEOUT_MS = 30_000
/** A new PGlite data directory takes several seconds to initialize, much longer on a busy machine. */
const RELAY_READY_TIMEOUT_MS = 180_000
const KILL_GRACE_MS = { relay: 15_000, preview: 3_000 }

/** @type {Map<string, import('node:child_process').ChildProcess>} */
const children = new Map()
let stopping = false

function log(line) {
  process.stdout.write(`[demo] ${line}\n`)
}

function install() {
  if (existsSync(viteBin) && existsSync(`${root}packages/relay/node_modules/@hocuspocus/server`) && existsSync(`${root}node_modules/tsx`)) return
  log('installing dependencies (pnpm install --offline)')
  const result = spawnSync('pnpm', ['install', '--frozen-lockfile', '--offline'], { cwd: root, stdio: 'inherit' })
  if (result.status !== 0) {
    log('offline install failed; retrying with the network')
    const online = spawnSync('pnpm', ['install', '--frozen-lockfile'], { cwd: root, stdio: 'inherit' })
    if (online.status !== 0) process.exit(online.status ?? 1)
  }
}

function build() {
  if (process.env.DEMO_SKIP_BUILD === '1' && existsSync(`${outDir}/index.html`)) return
  log('building apps/demo (vite build)')
  const result = spawnSync(process.execPath, [viteBin, 'build', '--logLevel', 'warn', '--outDir', outDir, '--emptyOutDir'], { cwd: demoDir, stdio: 'inherit' })
  if (result.status !== 0) process.exit(result.status ?? 1)
}

/** Spawns a child (in this process group, see above); a child that exits while we are not stopping stops everything. */
function start(name, args, options) {
  const child = spawn(process.execPath, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
  children.set(name, child)
  child.stderr.on('data', (chunk) => process.stderr.write(`[${name}] ${chunk}`))
  child.on('exit', (code, signal) => {
    children.delete(name)
    if (stopping) return
    log(`${name} exited (${signal ?? code}); stopping`)
    void stop(1)
  })
  return child
}

/** Resolves with the first stdout line matching `pattern` (its match), rejects on timeout or exit. */
function waitForLine(name, child, pattern, timeoutMs) {
  return new Promise((resolve, reject) => {
    let buffered = ''
    const timer = setTimeout(() => reject(new Error(`${name}: no ready line within ${timeoutMs} ms`)), timeoutMs)
    const onData = (chunk) => {
      buffered += chunk
      const lines = buffered.split('\n')
      buffered = lines.pop() ?? ''
      for (const line of lines) {
        const match = pattern.exec(line)
        if (match === null) continue
        clearTimeout(timer)
        child.stdout.off('data', onData)
        child.stdout.resume()
        resolve(match)
        return
      }
    }
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', onData)
    child.once('exit', () => {
      clearTimeout(timer)
      reject(new Error(`${name} exited before it was ready`))
    })
  })
}

/** Polls `url` until it answers 200. */
async function waitForHttp(url) {
  const deadline = Date.now() + READY_TIMEOUT_MS
  while (Date.now() < deadline) {
    const ok = await new Promise((resolve) => {
      const req = request(url, { method: 'GET', timeout: 1_000 }, (res) => {
        res.resume()
        resolve(res.statusCode === 200)
      })
      req.on('error', () => resolve(false))
      req.on('timeout', () => {
        req.destroy()
        resolve(false)
      })
      req.end()
    })
    if (ok) return
    if (stopping) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`${url} did not answer within ${READY_TIMEOUT_MS} ms`)
}

function signalChild(child, signal) {
  if (child.pid === undefined) return
  try {
    process.kill(child.pid, signal)
  } catch {
    // The group is already gone.
  }
}

async function stop(code) {
  if (stopping) return
  stopping = true
  const running = [...children.entries()]
  for (const [, child] of running) signalChild(child, 'SIGTERM')
  await Promise.all(
    running.map(
      ([name, child]) =>
        new Promise((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve(undefined)
          const timer = setTimeout(() => {
            signalChild(child, 'SIGKILL')
            resolve(undefined)
          }, KILL_GRACE_MS[name] ?? 3_000)
          child.once('exit', () => {
            clearTimeout(timer)
            resolve(undefined)
          })
        }),
    ),
  )
  process.exit(code)
}

process.on('SIGINT', () => void stop(0))
process.on('SIGTERM', () => void stop(0))
process.on('SIGHUP', () => void stop(0))
// Last resort (an uncaught error): never leave the children behind.
process.on('exit', () => {
  for (const child of children.values()) signalChild(child, 'SIGKILL')
})

try {
  install()
  build()
  if (!existsSync(relayDir)) log(`relay: initializing its store in ${relayDir} (several seconds, once)`)
  const relay = start('relay', ['--import', 'tsx', '--conditions=@tidemark/source', relayCli], {
    cwd: root,
    env: {
      ...process.env,
      HOST: host,
      PORT: '0',
      TIDEMARK_DATA_DIR: relayDir,
      TIDEMARK_DEV_TOKENS: '1',
      TIDEMARK_AUTH_SECRET: randomBytes(32).toString('base64url'),
      DATABASE_URL: '',
      REDIS_URL: '',
      TIDEMARK_AUTH_PUBLIC_KEY: '',
    },
  })
  const ready = await waitForLine('relay', relay, /^tidemark-relay ready (\{.*\})$/, RELAY_READY_TIMEOUT_MS)
  const { port: relayPort } = JSON.parse(ready[1] ?? '{}')
  const relayUrl = `ws://${host}:${relayPort}`
  const tokenUrl = `http://${host}:${relayPort}/dev/token`
  writeFileSync(`${outDir}/config.json`, `${JSON.stringify({ relayUrl, tokenUrl })}\n`)
  log(`relay ${relayUrl} (pid ${relay.pid}, rooms in ${relayDir})`)

  const preview = start('preview', [viteBin, 'preview', '--host', host, '--port', String(port), '--strictPort', '--outDir', outDir], {
    cwd: demoDir,
  })
  preview.stdout.resume()
  const url = `http://${host}:${port}/`
  await waitForHttp(`${url}config.json`)
  if (!stopping) {
    log(`page server pid ${preview.pid}`)
    process.stdout.write(`\n  Tidemark fleet demo: ${url}\n\n  Ctrl-C stops the page server and the relay.\n\n`)
  }
} catch (error) {
  process.stderr.write(`[demo] ${error instanceof Error ? error.message : String(error)}\n`)
  await stop(1)
}
