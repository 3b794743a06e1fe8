/**
 * Three Node engines through the real y-websocket server (packages/sync-server, started as a
 * child process on 127.0.0.1 and stopped by its PID): one goes offline, ingests, comes back;
 * all converge to what one engine that saw every event shows, and the catch-up carries only
 * what was missing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import {
  createEngine,
  type Engine,
  manual,
  session,
  type StreamEvent,
  type TidemarkEngine,
  tumbling,
} from '@tidemark/engine'
import { bindDoc, replicaArrayName } from '@tidemark/yjs'
import { connectWebsocket, type WebsocketConnection } from '@tidemark/yjs/websocket'
import { startSyncServer, type SyncServer } from '@tidemark/sync-server'
import { sameState, whenDocs, whenSynced } from './syncServerHarness.ts'

const T0 = 1_700_000_040_000
const WAIT = 10_000

let server: SyncServer

beforeAll(async () => {
  server = await startSyncServer()
}, 20_000)

afterAll(async () => {
  await server?.stop()
})

/** Counts bytes each client receives, to show that a reconnect does not resend history. */
function countingSocket(counter: { bytes: number }): typeof globalThis.WebSocket {
  class CountingSocket extends WebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols)
      this.on('message', (data: Buffer) => {
        counter.bytes += data.byteLength
      })
    }
  }
  return CountingSocket as unknown as typeof globalThis.WebSocket
}

interface Client {
  readonly engine: TidemarkEngine
  readonly doc: Y.Doc
  readonly connection: WebsocketConnection
  readonly received: { bytes: number }
}

const OPTIONS = { windows: [tumbling(60_000), session(30_000)], watermark: manual(), retention: Number.POSITIVE_INFINITY }

function client(id: string, room: string): Client {
  const doc = new Y.Doc()
  const engine = createEngine({ ...OPTIONS, replicaId: id }) as TidemarkEngine
  bindDoc(engine, doc)
  const received = { bytes: 0 }
  const connection = connectWebsocket(doc, {
    url: server.url,
    room,
    WebSocketPolyfill: countingSocket(received),
    jitter: { baseMs: 50, capMs: 400 },
  })
  return { engine, doc, connection, received }
}

function values(engine: Engine) {
  return engine
    .results()
    .map(({ window, key, start, end, count, sum, min, max }) => ({ window, key, start, end, count, sum, min, max }))
}

/** `count` readings of `source` from seq `from`, one per second of event time, over `keys` keys. */
function readings(source: string, from: number, count: number, keys: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = from + i
    return { id: `${source}-${seq}`, source, seq, ts: T0 + seq * 1_000, key: `zone-${seq % keys}`, value: (seq * 7) % 41 }
  })
}

describe('sync through the y-websocket server', () => {
  it('three engines converge after one of them ingests offline and reconnects', async () => {
    const room = `fleet-${server.pid}-${Date.now()}`
    const clients = ['a', 'b', 'c'].map((id) => client(id, room))
    const [a, b, c] = clients as [Client, Client, Client]
    const single = createEngine(OPTIONS)
    const ingest = (target: Client, events: StreamEvent[]): void => {
      target.engine.ingest(events)
      single.ingest(events)
    }
    try {
      await Promise.all(clients.map((x) => whenSynced(x.connection.provider, WAIT)))
      const docs = clients.map((x) => x.doc)
      // a: 300 live cells over two windows specs, rewritten batch after batch
      for (let batch = 0; batch < 20; batch++) ingest(a, readings('da', 1 + batch * 30, 30, 150))
      ingest(b, readings('db', 1, 40, 3))
      await whenDocs(docs, () => sameState(docs), WAIT, 'first convergence')
      expect(values(c.engine)).toEqual(values(single))

      c.connection.provider.disconnect()
      expect(c.engine.syncStatus().state).toBe('offline')
      for (let batch = 0; batch < 5; batch++) ingest(c, readings('dc', 1 + batch * 10, 10, 4))
      ingest(a, readings('da', 601, 1, 150))
      expect(c.engine.syncStatus().pendingLocalUpdates).toBe(5)
      const same = (x: Client, y: Client): boolean => JSON.stringify(values(x.engine)) === JSON.stringify(values(y.engine))
      await whenDocs([a.doc, b.doc], () => sameState([a.doc, b.doc]) && same(a, b), WAIT, 'b sees a while c is away')
      expect(same(a, c)).toBe(false)

      const before = c.received.bytes
      c.connection.provider.connect()
      await whenSynced(c.connection.provider, WAIT)
      await whenDocs(docs, () => sameState(docs) && same(a, c) && same(b, c), WAIT, 'convergence after reconnect')
      const catchUp = c.received.bytes - before

      const expected = values(single)
      for (const x of clients) expect(values(x.engine)).toEqual(expected)
      for (const id of ['a', 'b', 'c']) {
        const logs = docs.map((doc) => JSON.stringify(doc.getArray(replicaArrayName(id)).toJSON()))
        expect(new Set(logs).size).toBe(1)
      }
      expect(c.engine.syncStatus()).toMatchObject({ state: 'connected', pendingLocalUpdates: 0, peers: 2 })
      expect(c.engine.stats().docBytes).toBeGreaterThan(0)
      // c missed one batch of a: the catch-up (state vectors, the missing update, awareness)
      // is a small fraction of the document a full resend would carry
      expect(catchUp).toBeLessThan(Y.encodeStateAsUpdate(a.doc).byteLength / 10)
    } finally {
      for (const x of clients) x.connection.destroy()
    }
  }, 40_000)
})
