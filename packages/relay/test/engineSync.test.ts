/**
 * Engines through a real relay, with the `@tidemark/yjs` client: three devices (tumbling and
 * session windows) each write their own room, a dashboard follows the fleet's directory. The
 * dashboard shows what one engine that saw every event shows; a device that was offline sends
 * only what the relay misses; a relay restarted on its data directory takes every client back.
 */
import { afterAll, describe, expect, it, onTestFailed } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { createEngine, type Engine, manual, session, type StreamEvent, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { bindDoc, connectRelay, followRooms, type Relay as RelayClient, replicaArrayName, syncStatusTracker } from '@tidemark/yjs'
import type { Relay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { startTestRelay } from './support/testRelays.ts'
import { signToken } from './support/roomClients.ts'

const T0 = 1_700_000_040_000
const FLEET = 'fleet-e'
const OPTIONS = { windows: [tumbling(60_000), session(30_000)], watermark: manual(), retention: Number.POSITIVE_INFINITY }
/** Reconnects spread over at most 200 ms: the restart test waits for them in real time. */
const JITTER = { baseMs: 50, capMs: 200 }

const relays: Relay[] = []
const clients: RelayClient[] = []
/** What the clients could not use (there should be nothing). */
const errors: Error[] = []

afterAll(async () => {
  for (const client of clients) client.destroy()
  for (const relay of relays) await relay.close().catch(() => undefined)
  removeDataDirs()
})

const relayOn = (dataDir: string, port = 0): Promise<Relay> => startTestRelay(relays, { port, persistence: { writeWindowMs: 50 } }, dataDir)

/** Counts the bytes a client sends, to show that a reconnect sends only what the relay misses. */
function countingSocket(counter: { sent: number }): new (url: string) => WebSocket {
  return class CountingSocket extends WebSocket {
    override send(data: Uint8Array): void {
      counter.sent += data.byteLength
      super.send(data)
    }
  } as unknown as new (url: string) => WebSocket
}

interface Device {
  readonly id: string
  readonly engine: TidemarkEngine
  readonly doc: Y.Doc
  readonly client: RelayClient
  readonly counter: { sent: number }
}

/** A device: replica `id`, source `d<id>`, its own room, a device token for exactly that. */
function device(relay: Relay, id: string): Device {
  const engine = createEngine({ ...OPTIONS, replicaId: id }) as TidemarkEngine
  const doc = new Y.Doc()
  bindDoc(engine, doc)
  const counter = { sent: 0 }
  const room = `${FLEET}/${id}`
  const client = connectRelay({
    url: relay.url,
    token: () => signToken({ sub: id, role: 'device', rooms: [room], replicas: [id], sources: [`d${id}`] }),
    WebSocket: countingSocket(counter),
    jitter: JITTER,
    onError: (error) => errors.push(error),
  })
  clients.push(client)
  client.join(doc, room)
  return { id, engine, doc, client, counter }
}

function values(engine: Engine) {
  return engine.results().map(({ window, key, start, end, count, sum, min, max }) => ({ window, key, start, end, count, sum, min, max }))
}

const same = (a: Engine, b: Engine): boolean => JSON.stringify(values(a)) === JSON.stringify(values(b))

/** `count` readings of `source` from seq `from`, one per second of event time, over `keys` keys. */
function readings(source: string, from: number, count: number, keys: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = from + i
    return { id: `${source}-${seq}`, source, seq, ts: T0 + seq * 1_000, key: `zone-${seq % keys}`, value: (seq * 7) % 41 }
  })
}

/** What the test waits for now: reported if the test fails (its timeout, 90 s, bounds every wait). */
let waitingFor: string | null = null

/** Resolves once `check()` holds, re-checked on every change of `engines` (sync status included). */
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

const inSync = (engine: Engine): boolean => {
  const status = engine.syncStatus()
  return status.state === 'connected' && status.pendingLocalUpdates === 0
}

describe('engines through the relay', () => {
  it('converge on a dashboard, catch up after offline work with only what the relay misses, and come back after a relay restart', async () => {
    onTestFailed(() => {
      if (waitingFor !== null) console.error(`engineSync: still waiting for ${waitingFor}`)
    })
    const dataDir = freshDataDir()
    let relay = await relayOn(dataDir)
    const [a, b, c] = ['a', 'b', 'c'].map((id) => device(relay, id)) as [Device, Device, Device]
    // Every event; and every event but those c ingests while offline.
    const single = createEngine(OPTIONS)
    const online = createEngine(OPTIONS)
    const ingest = (target: Device, events: StreamEvent[], offline = false): void => {
      target.engine.ingest(events)
      single.ingest(events)
      if (!offline) online.ingest(events)
    }
    const dashboard = createEngine(OPTIONS) as TidemarkEngine
    const dashboardClient = connectRelay({ url: relay.url, token: () => signToken({ sub: 'ops', role: 'dashboard', rooms: [`${FLEET}/*`] }), WebSocket, jitter: JITTER })
    clients.push(dashboardClient)
    const follower = followRooms(dashboard, dashboardClient, { directory: `${FLEET}/_directory` })
    const devices = [a, b, c]
    const engines = [dashboard, ...devices.map((d) => d.engine)]

    // a: 300 live cells over two window specs, rewritten batch after batch; sessions of b close and merge.
    for (let batch = 0; batch < 20; batch++) ingest(a, readings('da', 1 + batch * 30, 30, 150))
    ingest(b, readings('db', 1, 40, 3))
    for (let batch = 0; batch < 20; batch++) ingest(c, readings('dc', 1 + batch * 30, 30, 150))
    await until(engines, 'the dashboard has every device', () => devices.every((d) => inSync(d.engine)) && follower.rooms().size === 3 && same(dashboard, single))
    expect(values(dashboard)).toEqual(values(single))
    expect(values(dashboard).some((r) => r.window === 'session:30000')).toBe(true)
    expect(dashboard.syncStatus()).toMatchObject({ state: 'connected', refusal: null })
    // Each device's room holds its own replica only: no device receives another's state.
    for (const d of devices) expect([...d.doc.share.keys()].filter((name) => name.startsWith('tidemark:replica:'))).toEqual([replicaArrayName(d.id)])

    // c goes offline and keeps working; a writes on meanwhile.
    c.client.disconnect()
    expect(c.engine.syncStatus().state).toBe('offline')
    for (let batch = 0; batch < 5; batch++) ingest(c, readings('dc', 601 + batch * 2, 2, 150), true)
    ingest(a, readings('da', 601, 1, 150))
    expect(c.engine.syncStatus().pendingLocalUpdates).toBe(5)
    await until(engines, "the dashboard has a's new batch, not what c did offline", () => inSync(a.engine) && same(dashboard, online))
    expect(same(dashboard, single)).toBe(false)

    const before = c.counter.sent
    c.client.connect()
    await until(engines, 'convergence after c reconnects', () => inSync(c.engine) && same(dashboard, single))
    const catchUp = c.counter.sent - before
    expect(values(dashboard)).toEqual(values(single))
    // c's reconnect carried its five offline batches, its token and a state vector, not its whole document again.
    console.log(`engines through the relay: c's catch-up sent ${catchUp} B; its document is ${Y.encodeStateAsUpdate(c.doc).byteLength} B`)
    expect(catchUp).toBeLessThan(Y.encodeStateAsUpdate(c.doc).byteLength / 10)
    expect(catchUp).toBeGreaterThan(0)

    // The relay restarts on its data directory and port while b writes: every client reconnects and the dashboard catches up.
    const port = relay.port
    await relay.close()
    await until(engines, 'every client sees the relay gone', () => [dashboard, ...devices.map((d) => d.engine)].every((e) => e.syncStatus().state !== 'connected'))
    ingest(b, readings('db', 41, 20, 3))
    relay = await relayOn(dataDir, port)
    await until(engines, 'convergence after the restart', () => devices.every((d) => inSync(d.engine)) && dashboard.syncStatus().state === 'connected' && same(dashboard, single))
    expect(values(dashboard)).toEqual(values(single))
    expect(syncStatusTracker(a.doc).status().refusal).toBeNull()
    expect(errors).toEqual([])
    follower.destroy()
  }, 90_000)
})
