import { createEngine, type Engine } from '@tidemark/engine'
import { bindDoc, connectRelay, type Relay, type RelayToken } from '@tidemark/yjs'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { FLEET, fleetOptions } from './fleet.ts'

// #region token
/**
 * A device's token from a relay that hands out development tokens (loopback only). In
 * production the application's login issues it. The client calls this again on every
 * connection, so a token that expired is replaced by a fresh one at the next reconnect.
 */
export function devDeviceToken(relayUrl: string, device: string, replica: string): RelayToken {
  return devToken(relayUrl, { role: 'device', room: `${FLEET}/${device}`, replica, source: device })
}

/** A dashboard's token: every room of the fleet, read-only. */
export function devDashboardToken(relayUrl: string): RelayToken {
  return devToken(relayUrl, { role: 'dashboard', rooms: `${FLEET}/*` })
}

function devToken(relayUrl: string, query: Record<string, string>): RelayToken {
  const url = new URL(`/dev/token?${new URLSearchParams(query)}`, relayUrl.replace(/^ws/, 'http'))
  return async () => ((await (await fetch(url)).json()) as { token: string }).token
}
// #endregion token

// #region node
/** A device in Node (a gateway, a test); Node 20 has no global WebSocket, so `ws` provides it. */
export function connectFromNode(relayUrl: string, device: string): { engine: Engine; relay: Relay } {
  const engine = createEngine({ ...fleetOptions, replicaId: device })
  const doc = new Y.Doc()
  bindDoc(engine, doc)
  const relay = connectRelay({
    url: relayUrl,
    token: devDeviceToken(relayUrl, device, device), // its replica id is the device name here
    WebSocket,
    jitter: { baseMs: 500, capMs: 10_000 }, // the defaults, spelled out
  })
  relay.join(doc, `${FLEET}/${device}`)
  return { engine, relay }
}
// #endregion node

// #region status
export function describeSync(engine: Engine): string {
  const { state, lastSync, pendingLocalUpdates, peers, refusal } = engine.syncStatus()
  if (refusal !== null) return `refused by the relay: ${refusal}` // not retried until you join again
  if (state === 'offline') return `offline, ${pendingLocalUpdates} local updates waiting`
  if (state === 'connected') {
    const since = lastSync === null ? 'never' : new Date(lastSync).toISOString()
    return `in sync, ${pendingLocalUpdates} updates not yet acknowledged, ${peers} peers, last sync ${since}`
  }
  return state // 'connecting', or 'local' with no provider attached
}
// #endregion status
