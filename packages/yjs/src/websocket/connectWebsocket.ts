/**
 * A doc over y-websocket, kept only while the demo, the end-to-end tests and the storm pages
 * still run against the y-websocket sync server; `connectRelay` replaces it. To be removed,
 * with the `@tidemark/yjs/websocket` entry and the y-websocket dependency.
 */
import { assertKnownOptions } from '@tidemark/engine/adapter'
import { WebsocketProvider } from 'y-websocket'
import type * as Y from 'yjs'
import { announcePresence, forgetAbsentPeers } from '../transport/presence.ts'
import { checkJitterOptions, type ReconnectJitterOptions } from '../transport/reconnectJitter.ts'
import { syncStatusTracker } from '../transport/syncStatusTracker.ts'
import { jitterReconnects } from './jitterReconnects.ts'

/**
 * Options of `connectWebsocket`: `url` and `room` are required.
 *
 * @example
 * connectWebsocket(doc, { url: 'ws://127.0.0.1:1234', room: 'fleet', jitter: { baseMs: 300, capMs: 5_000 } })
 */
export interface ConnectWebsocketOptions {
  /** Server URL, e.g. `ws://127.0.0.1:1234`. */
  readonly url: string
  /** Room (document name) on the server. */
  readonly room: string
  /** A WebSocket implementation where there is no global one (Node 20: the `ws` package). */
  readonly WebSocketPolyfill?: typeof WebSocket
  /** Reconnect jitter (see `jitterReconnects`); `initialMs` spreads the first connect. */
  readonly jitter?: ReconnectJitterOptions
  /** Re-send sync step 1 every this many ms while connected (y-websocket `resyncInterval`; default off). */
  readonly resyncInterval?: number
  /**
   * Keep y-websocket's own cross-tab BroadcastChannel (default false: use
   * `BroadcastChannelProvider` for tabs, which exchanges state vectors instead of full state).
   */
  readonly crossTab?: boolean
}

/** A websocket connection of one doc; `destroy` closes it and stops its jitter and status tracking. */
export interface WebsocketConnection {
  /** y-websocket's provider: `disconnect()`, `connect()`, its events. */
  readonly provider: WebsocketProvider
  /** Closes the connection and stops its jitter and status tracking. */
  destroy(): void
}

/**
 * Connects a doc to a y-websocket server with jittered (re)connects, reporting into the
 * doc's sync status (and so into the bound engine's `syncStatus()`).
 *
 * @deprecated For the y-websocket sync server only, and removed with it: use `connectRelay`.
 *
 * @example
 * const doc = new Y.Doc()
 * const engine = createEngine({ windows: tumbling(60_000) })
 * bindDoc(engine, doc)
 * const connection = connectWebsocket(doc, { url: 'ws://127.0.0.1:1234', room: 'fleet', jitter: { initialMs: 2_000 } })
 */
export function connectWebsocket(doc: Y.Doc, options: ConnectWebsocketOptions): WebsocketConnection {
  checkOptions(options)
  const provider = new WebsocketProvider(options.url, options.room, doc, {
    connect: false,
    disableBc: options.crossTab !== true,
    ...(options.WebSocketPolyfill === undefined ? {} : { WebSocketPolyfill: options.WebSocketPolyfill }),
    ...(options.resyncInterval === undefined ? {} : { resyncInterval: options.resyncInterval }),
  })
  const detachStatus = syncStatusTracker(doc).attach(provider)
  const onStatus = (event: { status: string }): void => {
    if (event.status === 'connected') announcePresence(provider.awareness)
    else if (event.status === 'disconnected') forgetAbsentPeers(provider.awareness)
  }
  provider.on('status', onStatus)
  const stopJitter = jitterReconnects(provider, options.jitter)
  return {
    provider,
    destroy() {
      stopJitter()
      provider.off('status', onStatus)
      detachStatus()
      provider.destroy()
    },
  }
}

const OPTION_KEYS: readonly (keyof ConnectWebsocketOptions)[] = ['url', 'room', 'WebSocketPolyfill', 'jitter', 'resyncInterval', 'crossTab']
const SOCKET_PROTOCOLS = ['ws:', 'wss:', 'http:', 'https:']

/** Throws a TypeError or RangeError naming the first bad option. */
function checkOptions(options: ConnectWebsocketOptions): void {
  if (typeof options !== 'object' || options === null) throw new TypeError('connectWebsocket needs an options object { url, room }')
  assertKnownOptions('connectWebsocket', options, OPTION_KEYS)
  const { url, room, WebSocketPolyfill, jitter, resyncInterval, crossTab } = options
  let protocol: string | null = null
  try {
    protocol = typeof url === 'string' ? new URL(url).protocol : null
  } catch {
    protocol = null
  }
  if (protocol === null || !SOCKET_PROTOCOLS.includes(protocol)) {
    throw new TypeError(`connectWebsocket: url must be a ws:// or wss:// URL of the sync server, got ${String(url)}`)
  }
  if (typeof room !== 'string' || room.length === 0) throw new TypeError(`connectWebsocket: room must be a non-empty string, got ${String(room)}`)
  if (WebSocketPolyfill !== undefined && typeof WebSocketPolyfill !== 'function') {
    throw new TypeError('connectWebsocket: WebSocketPolyfill must be a WebSocket class (the ws package in Node)')
  }
  if (jitter !== undefined) checkJitterOptions(jitter, 'connectWebsocket: jitter')
  if (resyncInterval !== undefined && (typeof resyncInterval !== 'number' || !Number.isFinite(resyncInterval) || resyncInterval <= 0)) {
    throw new RangeError(`connectWebsocket: resyncInterval must be a finite number of ms > 0 (omit it to turn it off), got ${String(resyncInterval)}`)
  }
  if (crossTab !== undefined && typeof crossTab !== 'boolean') throw new TypeError(`connectWebsocket: crossTab must be true or false, got ${String(crossTab)}`)
}
