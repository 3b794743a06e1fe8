/**
 * Starts Debian's `redis-server` for the relay's tests and local scale-out experiments: bound to
 * 127.0.0.1 on its own port, in a temporary directory, nothing persisted; stopped by its PID.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A running redis-server. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string
  readonly port: number
  readonly pid: number
  /** SIGTERM to its PID; resolves once it exited and its directory is removed. */
  stop(): Promise<void>
}

/** A port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

/** Starts redis-server (on `port`, default a free one) and waits until it accepts connections. */
export async function startRedisServer(options: { readonly port?: number; readonly timeoutMs?: number } = {}): Promise<RedisServer> {
  const port = options.port ?? (await freePort())
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-redis-'))
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server did not start within ${options.timeoutMs ?? 15_000} ms:\n${output}`)), options.timeoutMs ?? 15_000)
      const onData = (chunk: Buffer): void => {
        output += chunk.toString()
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer)
          resolve()
        }
      }
      child.stdout?.on('data', onData)
      child.stderr?.on('data', onData)
      child.once('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer)
        reject(error.code === 'ENOENT' ? new Error("redis-server not found: install Debian's redis-server (apt-get install redis-server)") : error)
      })
      child.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`redis-server exited with ${code}:\n${output}`))
      })
    })
  } catch (error) {
    if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGKILL')
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  const pid = child.pid as number
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) process.kill(pid, 'SIGTERM')
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
