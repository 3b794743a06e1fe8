/**
 * Starts packages/sync-server/src/server.js on 127.0.0.1 with a free port, and stops it by
 * its own PID. Awaits real events only, each bounded by a timeout.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import * as Y from 'yjs'

const SERVER = fileURLToPath(new URL('../../../sync-server/src/server.js', import.meta.url))

export interface RunningServer {
  readonly url: string
  readonly pid: number
  stop(): Promise<void>
}

export async function startSyncServer(timeoutMs = 15_000): Promise<RunningServer> {
  const child = spawn(process.execPath, [SERVER], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const port = await withTimeout(
    new Promise<number>((resolve, reject) => {
      let stdout = ''
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString()
        const match = /tidemark-sync-server ready (\{.*\})/.exec(stdout)
        if (match?.[1] !== undefined) resolve((JSON.parse(match[1]) as { port: number }).port)
      })
      child.once('exit', (code) => reject(new Error(`sync server exited with ${code}: ${stderr}`)))
      child.once('error', reject)
    }),
    timeoutMs,
    'sync server ready line',
  ).catch((error: unknown) => {
    stopChild(child)
    throw error
  })
  const pid = child.pid as number
  return {
    url: `ws://127.0.0.1:${port}`,
    pid,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      process.kill(pid, 'SIGTERM')
      await withTimeout(exited, 5_000, 'sync server exit').catch(() => {
        if (child.exitCode === null) process.kill(pid, 'SIGKILL')
      })
    },
  }
}

function stopChild(child: ChildProcess): void {
  if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGKILL')
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** Resolves once `condition()` holds, re-checking after every update of any of `docs`. */
export function whenDocs(docs: readonly Y.Doc[], condition: () => boolean, ms: number, what: string): Promise<void> {
  const cleanups: (() => void)[] = []
  const done = new Promise<void>((resolve) => {
    const check = (): void => {
      if (condition()) resolve()
    }
    for (const doc of docs) {
      doc.on('update', check)
      cleanups.push(() => doc.off('update', check))
    }
    check()
  })
  return withTimeout(done, ms, what).finally(() => {
    for (const cleanup of cleanups) cleanup()
  })
}

/** Resolves when the provider reports `synced`. */
export function whenSynced(provider: { synced: boolean; once(name: 'sync', f: (s: boolean) => void): void }, ms: number): Promise<void> {
  if (provider.synced) return Promise.resolve()
  return withTimeout(
    new Promise<void>((resolve) => {
      const wait = (synced: boolean): void => {
        if (synced) resolve()
        else provider.once('sync', wait)
      }
      provider.once('sync', wait)
    }),
    ms,
    'provider sync',
  )
}

export function sameState(docs: readonly Y.Doc[]): boolean {
  const first = docs[0]
  if (first === undefined) return true
  const vector = Y.encodeStateVector(first)
  return docs.every((doc) => equalBytes(Y.encodeStateVector(doc), vector))
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((x, i) => x === b[i])
}
