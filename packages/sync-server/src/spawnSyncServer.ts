/**
 * Starts the Tidemark sync server (packages/sync-server/src/server.js, y-websocket) on
 * 127.0.0.1 and stops it by its own PID. `port: 0` picks a free port; pass the old port to
 * restart a server in place.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const SERVER = fileURLToPath(new URL('./server.js', import.meta.url))

export interface SyncServer {
  readonly url: string
  readonly port: number
  readonly pid: number
  /** SIGTERM, then SIGKILL after 5 s; resolves once the process exited. */
  stop(): Promise<void>
}

export async function startSyncServer(options: { port?: number; timeoutMs?: number } = {}): Promise<SyncServer> {
  const child = spawn(process.execPath, [SERVER], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(options.port ?? 0) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let timer: ReturnType<typeof setTimeout> | undefined
  const port = await new Promise<number>((resolve, reject) => {
    let stdout = ''
    timer = setTimeout(() => reject(new Error(`sync server: no ready line after ${options.timeoutMs ?? 15_000} ms`)), options.timeoutMs ?? 15_000)
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const match = /tidemark-sync-server ready (\{.*\})/.exec(stdout)
      if (match?.[1] !== undefined) resolve((JSON.parse(match[1]) as { port: number }).port)
    })
    child.once('exit', (code) => reject(new Error(`sync server exited with ${code}: ${stderr}`)))
    child.once('error', reject)
  })
    .catch((error: unknown) => {
      if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGKILL')
      throw error
    })
    .finally(() => clearTimeout(timer))
  const pid = child.pid as number
  return {
    url: `ws://127.0.0.1:${port}`,
    port,
    pid,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      process.kill(pid, 'SIGTERM')
      let kill: ReturnType<typeof setTimeout> | undefined
      const late = new Promise<void>((resolve) => {
        kill = setTimeout(() => {
          if (child.exitCode === null && child.signalCode === null) process.kill(pid, 'SIGKILL')
          resolve()
        }, 5_000)
      })
      await Promise.race([exited, late])
      clearTimeout(kill)
      await exited
    },
  }
}
