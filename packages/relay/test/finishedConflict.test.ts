/**
 * Two writers of one source (two tabs of one device given one source) both finish it, through a
 * real relay that then restarts on its data directory: both writers, and a dashboard that
 * follows the fleet afterwards, hold one clock (the keeper's, with the loser's maxTs) and P.
 */
import { afterAll, describe, expect, it, onTestFailed } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { createEngine, type Engine, manual, type StreamEvent, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { bindDoc, connectRelay, followRooms, type Relay as RelayClient } from '@tidemark/yjs'
import type { Relay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { startTestRelay } from './support/testRelays.ts'
import { signToken } from './support/roomClients.ts'

const FLEET = 'fleet-x'
const ROOM = `${FLEET}/dev`
const OPTIONS = { windows: tumbling(10_000), watermark: manual() }
const JITTER = { baseMs: 50, capMs: 200 }
const relays: Relay[] = []
const clients: RelayClient[] = []
const errors: Error[] = []

afterAll(async () => {
  for (const client of clients) client.destroy()
  for (const relay of relays) await relay.close().catch(() => undefined)
  removeDataDirs()
})

const relayOn = (dataDir: string, port = 0): Promise<Relay> => startTestRelay(relays, { port, persistence: { writeWindowMs: 50 } }, dataDir)

function tab(relay: Relay, replicaId: string): TidemarkEngine {
  const engine = createEngine({ ...OPTIONS, replicaId }) as TidemarkEngine
  const doc = new Y.Doc()
  bindDoc(engine, doc)
  const client = connectRelay({
    url: relay.url,
    token: () => signToken({ sub: 'dev', role: 'device', rooms: [ROOM], replicas: ['a', 'b'], sources: ['s'] }),
    WebSocket,
    jitter: JITTER,
    onError: (error) => errors.push(error),
  })
  clients.push(client)
  client.join(doc, ROOM)
  return engine
}

const readings = (count: number): StreamEvent[] => Array.from({ length: count }, (_, i) => ({ id: `s-${i + 1}`, source: 's', seq: i + 1, ts: i * 1_000, value: 1 }))
const clockOf = (engine: Engine) => JSON.stringify(engine.replica.exportState().clocks)
let waitingFor: string | null = null

function until(engines: readonly Engine[], what: string, check: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const stops: (() => void)[] = []
    const finish = (): void => {
      for (const stop of stops) stop()
      waitingFor = null
      resolve()
    }
    waitingFor = what
    for (const engine of engines) stops.push(engine.subscribe(() => check() && finish()))
    if (check()) finish()
  })
}

const inSync = (engine: Engine): boolean => engine.syncStatus().state === 'connected' && engine.syncStatus().pendingLocalUpdates === 0

describe('two writers of one source that both finished it, across a relay restart', () => {
  it('a dashboard that follows the fleet after the restart holds the clock both writers hold', async () => {
    onTestFailed(() => {
      if (waitingFor !== null) console.error(`finishedConflict: still waiting for ${waitingFor}`)
    })
    const dataDir = freshDataDir()
    let relay = await relayOn(dataDir)
    const a = tab(relay, 'a')
    const b = tab(relay, 'b')
    // Both write and finish the source before either hears the other (the loser, b, went further).
    b.ingest(readings(20))
    a.ingest(readings(3).map((e) => ({ ...e, id: `a-${e.seq}` })))
    void a.finishSource('s')
    void b.finishSource('s')
    // The keeper (a) raised its clock to the loser's version and published it; the loser took it.
    const settled = (e: Engine) => e.replica.exportState().clocks.some((c) => c.writer === 'a' && c.version === 21)
    await until([a, b], 'both writers hold the keeper’s raised clock', () => inSync(a) && inSync(b) && settled(a) && settled(b))
    expect(clockOf(a)).toBe(clockOf(b))
    const port = relay.port
    await relay.close()
    relay = await relayOn(dataDir, port)
    const dashboard = createEngine(OPTIONS) as TidemarkEngine
    const client = connectRelay({ url: relay.url, token: () => signToken({ sub: 'ops', role: 'dashboard', rooms: [`${FLEET}/*`] }), WebSocket, jitter: JITTER })
    clients.push(client)
    followRooms(dashboard, client, { directory: `${FLEET}/_directory` })
    await until([dashboard, a, b], 'the dashboard in sync', () => dashboard.syncStatus().state === 'connected' && dashboard.stats().sources === 1 && inSync(a) && inSync(b))
    expect(clockOf(dashboard)).toBe(clockOf(a))
    expect([a, b, dashboard].map((e) => e.stats().proofFrontier)).toEqual([Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY])
    expect(errors).toEqual([])
  }, 60_000)
})
