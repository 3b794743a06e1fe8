import { webcrypto } from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type StreamEvent, tumbling } from '@tidemark/engine'
import { connectEngineWith } from '../src/page/connectEngine.ts'
import { World } from './hostHarness.ts'
import { sharedWorkerOf, workerOf } from './inProcessWorkers.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

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
