import { BroadcastChannelProvider } from '@tidemark/yjs'
import { connectWebsocket, type WebsocketConnection } from '@tidemark/yjs/websocket'
import type * as Y from 'yjs'
import { deviceChannelName, deviceRoomName, type FleetWiring } from './fleetWiring.ts'

/** The websocket side of a document's links, as the device table shows it. */
export type ServerLink = 'connected' | 'connecting' | 'off' | 'none'

/**
 * A document's links to its device's peers: the device's tab channel (BroadcastChannel,
 * no server) and, when the fleet has a sync server, the device's room on it. Both report
 * into the document's sync status tracker, so the bound engine's `syncStatus()` follows them.
 *
 * Offline means both providers disconnected: nothing leaves or arrives, and the engine
 * keeps working. Back online, each provider starts with the sync protocol's state-vector
 * exchange, so each side sends only what the other misses.
 *
 * @example
 * const links = new DocLinks(doc, wiring, 'w2000-l10000', 'd01')
 * links.setOnline(false) // both providers disconnect
 * links.server()         // 'off'
 */
export class DocLinks {
  readonly #doc: Y.Doc
  readonly #wiring: FleetWiring
  readonly #room: string | null
  readonly #tabs: BroadcastChannelProvider
  /** Made on the first time online: connectWebsocket connects at once, and an offline start must not. */
  #server: WebsocketConnection | null = null
  #online: boolean

  constructor(doc: Y.Doc, wiring: FleetWiring, epoch: string, device: string, online = true) {
    this.#doc = doc
    this.#wiring = wiring
    this.#room = wiring.server === null ? null : deviceRoomName(wiring, wiring.server, epoch, device)
    this.#online = online
    this.#tabs = new BroadcastChannelProvider(doc, deviceChannelName(wiring, epoch, device), {
      connect: online,
      ...(wiring.openChannel === undefined ? {} : { channel: wiring.openChannel }),
    })
    if (online) this.#connectServer()
  }

  get online(): boolean {
    return this.#online
  }

  /** Connects or disconnects both providers. */
  setOnline(online: boolean): void {
    if (online === this.#online) return
    this.#online = online
    if (online) {
      this.#tabs.connect()
      if (this.#server === null) this.#connectServer()
      else this.#server.provider.connect()
    } else {
      this.#tabs.disconnect()
      this.#server?.provider.disconnect()
    }
  }

  server(): ServerLink {
    const provider = this.#server?.provider
    if (provider === undefined) return 'none'
    if (provider.wsconnected) return 'connected'
    return provider.shouldConnect ? 'connecting' : 'off'
  }

  #connectServer(): void {
    const server = this.#wiring.server
    if (server === null || this.#room === null) return
    const polyfill = this.#wiring.WebSocketPolyfill
    this.#server = connectWebsocket(this.#doc, {
      url: server.url,
      room: this.#room,
      // Retries after a failure are spread, so a fleet does not hit a restarted server in lockstep.
      jitter: { baseMs: 300, capMs: 5_000 },
      ...(polyfill === undefined ? {} : { WebSocketPolyfill: polyfill }),
    })
  }

  /** Closes both providers (a crash, or the end of the epoch). */
  destroy(): void {
    this.#tabs.destroy()
    this.#server?.destroy()
  }
}
