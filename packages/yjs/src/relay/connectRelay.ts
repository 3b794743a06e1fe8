import { checkConnectRelayOptions, type ConnectRelayOptions } from './connectRelayOptions.ts'
import type { Relay } from './relayApi.ts'
import { RelayConnection } from './relayConnection.ts'

/**
 * Connects to a Tidemark relay (a Hocuspocus 3.4 server): one socket, any number of rooms,
 * jittered reconnects.
 *
 * @example
 * const relay = connectRelay({ url: 'ws://127.0.0.1:8787', token: () => fetchToken(), WebSocket }) // WebSocket from 'ws' in Node 20
 * const doc = new Y.Doc()
 * bindDoc(engine, doc)
 * const room = relay.join(doc, 'fleet-a/d07')
 * engine.syncStatus() // { state: 'connected', pendingLocalUpdates: 0, refusal: null, ... } once the relay answered
 */
export function connectRelay(options: ConnectRelayOptions): Relay {
  checkConnectRelayOptions(options)
  return new RelayConnection(options)
}
