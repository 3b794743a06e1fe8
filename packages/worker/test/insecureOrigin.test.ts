import { webcrypto } from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type StreamEvent, tumbling } from '@tidemark/engine'
import type { ClientLink } from '../src/host/hostClient.ts'
import { connectEngineWith } from '../src/page/connectEngine.ts'
import { type TestHost, World } from './hostHarness.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** The page's end of a link to the host: what the host sends it reaches `listeners` as a structured clone, a macrotask later. */
function pageEnd(): { readonly own: ClientLink; readonly listeners: ((event: { readonly data: unknown }) => void)[] } {
  const listeners: ((event: { readonly data: unknown }) => void)[] = []
  const own: ClientLink = {
    send: (message, transfer) => {
      const copy = structuredClone(message, { transfer })
      setImmediate(() => {
        for (const listener of listeners) listener({ data: copy })
      })
    },
  }
  return { own, listeners }
}

/** The host's dedicated worker, in this process: messages cross as a structured clone, a macrotask later. */
function workerOf(host: TestHost): Worker {
  const { own, listeners } = pageEnd()
  const worker = {
    postMessage(message: unknown) {
      const copy = structuredClone(message)
      // The worker file's `hostEngine` takes the start message; the test's host is already made.
      setImmediate(() => {
        if ((copy as { t?: string }).t !== 'start') host.host.receive(own, copy)
      })
    },
    addEventListener(type: string, listener: (event: { readonly data: unknown }) => void) {
      if (type === 'message') listeners.push(listener)
    },
    terminate() {},
  }
  return worker as unknown as Worker
}

/** The host's SharedWorker, in this process: its port carries messages as `workerOf` does. */
function sharedWorkerOf(host: TestHost): SharedWorker {
  const { own, listeners } = pageEnd()
  const port = {
    postMessage(message: unknown) {
      const copy = structuredClone(message)
      setImmediate(() => host.host.receive(own, copy))
    },
    addEventListener(type: string, listener: (event: { readonly data: unknown }) => void) {
      if (type === 'message') listeners.push(listener)
    },
    start() {},
    close() {},
  }
  return { port, addEventListener() {} } as unknown as SharedWorker
}

function readings(source: string, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${source}#${i + 1}`, source, seq: i + 1, ts: (i + 1) * 10, key: 'temp', value: i }))
}

describe('a page on plain http from a LAN address (no crypto.randomUUID, no Web Locks)', () => {
  afterEach(() => {
    vi.unstubAllGlobals()
  })

  it('connects in single mode, and its batches reach the log', async () => {
    // Not a secure context: crypto has getRandomValues but no randomUUID.
    vi.stubGlobal('crypto', { getRandomValues: <T extends ArrayBufferView | null>(array: T): T => webcrypto.getRandomValues(array as Uint8Array) as unknown as T })
    expect(globalThis.crypto.randomUUID).toBeUndefined()
    const world = new World()
    const host = world.host({ name: 'fleet', engine: { windows: tumbling(1_000) } }, { mode: 'single', steal: false }, true)
    const connecting = connectEngineWith(
      { name: 'fleet', dedicated: () => workerOf(host) },
      { locks: null, sharedWorkers: false, clock: world.time.clock('tab'), lifecycle: null },
    )
    await world.run()
    const engine = await connecting
    expect(engine.connection()).toMatchObject({ mode: 'single', state: 'connected', leader: true })
    expect(engine.connection().instance).toMatch(UUID)
    const receipt = engine.ingest(readings('d1', 3))
    await world.run()
    const { accepted, durable } = await receipt
    await world.run()
    await durable
    expect([accepted, engine.stats().applied, engine.results().map((r) => r.count)]).toEqual([3, 3, [3]])
  })

  it('shared mode: a tab that goes away (pagehide) tells its host, which no Web Lock tells', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: { windows: tumbling(1_000) }, log: false }, { mode: 'shared', steal: false }, true)
    const hides: (() => void)[] = []
    const connect = () =>
      connectEngineWith(
        { name: 'fleet', shared: () => sharedWorkerOf(host), dedicated: () => workerOf(host) },
        { locks: null, sharedWorkers: true, clock: world.time.clock('tab'), lifecycle: null, unload: (listener) => hides.push(listener) },
      )
    const connecting = [connect(), connect()]
    await world.run()
    const [a, b] = await Promise.all(connecting)
    expect([a?.connection().mode, b?.connection().mode, host.host.clients, hides.length]).toEqual(['shared', 'shared', 2, 2])
    // Tab A closes: its page never calls close(), and no lock of its tab is released for the host to see.
    hides[0]?.()
    await world.run()
    expect(host.host.clients).toBe(1)
    const receipt = b?.ingest(readings('d1', 2))
    await world.run()
    expect((await receipt)?.accepted).toBe(2)
  })
})
