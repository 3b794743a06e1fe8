import type { SyncStatus } from '@tidemark/engine'
import { BroadcastChannelProvider, connectRelay, type Relay, syncStatusTracker } from '@tidemark/yjs'
import type * as Y from 'yjs'
import { deviceSourceGrant } from './deviceSource.ts'
import { deviceToken } from './devTokens.ts'
import { deviceChannelName, deviceRoomName, type FleetWiring, type LinkTransports } from './fleetWiring.ts'
import { type ReconnectClock, relayJitter } from './relayReconnect.ts'

/** A device document's room on the relay, as the device table shows it (its sync status). */
export interface RelayLink {
  readonly state: SyncStatus['state']
  /** Why the relay refused this document (`tidemark:…`), or null. */
  readonly refusal: string | null
}

/** Who a device is, to the relay: its room, its replica (whose log it writes) and its sources (its id, and its later sources: `deviceSourceGrant`). */
export interface DeviceIdentity {
  readonly epoch: string
  readonly device: string
  readonly replica: string
}

/**
 * A device document's link to the dashboards: its own room on the relay, with a device token
 * for exactly that room, its replica and its sources (the device id, and the later sources of a
 * device that left the fleet and runs again: `nextDeviceSource`); or, when the fleet has no
 * relay, its own tab channel (BroadcastChannel, no server). Never both: a room on the relay must
 * hold this device's replica alone, and a tab channel would bring in whatever its other members
 * hold. Either reports into the document's sync status tracker, so the bound engine's
 * `syncStatus()` follows it.
 *
 * Offline means the link is disconnected: nothing leaves or arrives, and the engine keeps
 * working. Back online, the link starts with the sync protocol's state-vector exchange, so each
 * side sends only what the other misses.
 *
 * @example
 * const links = new DocLinks(doc, wiring, {}, { epoch: 'w2000-l10000-a1', device: 'd01', replica: engine.replica.replicaId }, { now: Date.now, timers: { setTimeout, clearTimeout }, random: Math.random })
 * links.setOnline(false) // the relay socket closes (or the tab channel disconnects)
 * links.relayLink()      // { state: 'offline', refusal: null }
 */
export class DocLinks {
  readonly #doc: Y.Doc
  readonly #wiring: FleetWiring
  readonly #transports: LinkTransports
  readonly #identity: DeviceIdentity
  readonly #clock: ReconnectClock
  readonly #tabs: BroadcastChannelProvider | null
  /** Made on the first time online: connectRelay connects at once, and an offline start must not. */
  #relay: Relay | null = null
  #online: boolean
  #relayError: string | null = null

  constructor(doc: Y.Doc, wiring: FleetWiring, transports: LinkTransports, identity: DeviceIdentity, clock: ReconnectClock, online = true) {
    this.#doc = doc
    this.#clock = clock
    this.#wiring = wiring
    this.#transports = transports
    this.#identity = identity
    this.#online = online
    this.#tabs =
      wiring.relay !== null
        ? null
        : new BroadcastChannelProvider(doc, deviceChannelName(wiring, identity.epoch, identity.device), {
            connect: online,
            ...(transports.openChannel === undefined ? {} : { channel: transports.openChannel }),
          })
    if (online) this.#connectRelay()
  }

  get online(): boolean {
    return this.#online
  }

  /** Connects or disconnects the link. */
  setOnline(online: boolean): void {
    if (online === this.#online) return
    this.#online = online
    if (online) {
      this.#tabs?.connect()
      if (this.#relay === null) this.#connectRelay()
      else this.#relay.connect()
    } else {
      this.#tabs?.disconnect()
      this.#relay?.disconnect()
    }
  }

  /** The document's relay room: its sync status and the relay's refusal; null when the fleet has no relay. */
  relayLink(): RelayLink | null {
    if (this.#wiring.relay === null) return null
    if (this.#relay === null) return { state: 'offline', refusal: null }
    const { state, refusal } = syncStatusTracker(this.#doc).status()
    // A failure of the relay client (a token that could not be fetched) lasts until the room is in sync again.
    if (state === 'connected') this.#relayError = null
    return { state, refusal }
  }

  /** The last thing the relay client could not use (a token it could not fetch, an undecodable message) since the room was last in sync. */
  relayError(): string | null {
    return this.#relayError
  }

  #connectRelay(): void {
    const relay = this.#wiring.relay
    if (relay === null) return
    const { epoch, device, replica } = this.#identity
    const room = deviceRoomName(this.#wiring, epoch, device)
    const WebSocket = this.#transports.WebSocket
    this.#relay = connectRelay({
      url: relay.url,
      token: deviceToken(relay, room, replica, deviceSourceGrant(device)),
      // Retries after a failure are spread, so a fleet does not hit a restarted relay in lockstep.
      jitter: relayJitter(this.#clock),
      ...(WebSocket === undefined ? {} : { WebSocket }),
      onError: (error) => {
        this.#relayError = `relay: ${error.message}`
      },
    })
    this.#relay.join(this.#doc, room)
  }

  /** Closes the link (a crash, or the end of the epoch). */
  destroy(): void {
    this.#tabs?.destroy()
    this.#relay?.destroy()
  }
}
