import { createEngine, type Engine } from '@tidemark/engine'
import { startSyncServer } from '@tidemark/sync-server'
import { bindDoc, connectWebsocket, type WebsocketConnection } from '@tidemark/yjs'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { FLEET_ROOM, fleetOptions } from './fleet.ts'

// #region node
/** An engine in Node (a gateway, a test) synced through the server; Node 20 has no global WebSocket. */
export function connectFromNode(url: string): { engine: Engine; connection: WebsocketConnection } {
  const engine = createEngine(fleetOptions)
  const doc = new Y.Doc()
  bindDoc(engine, doc)
  const connection = connectWebsocket(doc, {
    url,
    room: FLEET_ROOM,
    WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
    jitter: { baseMs: 500, capMs: 10_000 }, // the defaults, spelled out
  })
  return { engine, connection }
}
// #endregion node

// #region status
export function describeSync(engine: Engine): string {
  const { state, lastSync, pendingLocalUpdates, peers } = engine.syncStatus()
  if (state === 'offline') return `offline, ${pendingLocalUpdates} local updates waiting`
  if (state === 'connected') return `connected to ${peers} peers, last sync ${lastSync === null ? 'never' : new Date(lastSync).toISOString()}`
  return state // 'connecting', or 'local' with no provider attached
}
// #endregion status

// #region test-server
/** A test against a real server: bound to 127.0.0.1 on a free port, stopped by its own PID. */
export async function withSyncServer(run: (url: string) => Promise<void>): Promise<void> {
  const server = await startSyncServer() // spawns packages/sync-server/src/server.js with PORT=0
  try {
    await run(server.url) // ws://127.0.0.1:<port>
  } finally {
    await server.stop() // SIGTERM, SIGKILL after 5 s
  }
}
// #endregion test-server
