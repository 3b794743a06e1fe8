import type { Engine, TickTimers } from '@tidemark/engine'
import { BroadcastChannelProvider, bindDoc, connectRelay, type DocBinding, followRooms, type Relay, type RefillReport, type RoomFollower, syncStatusTracker } from '@tidemark/yjs'
import * as Y from 'yjs'
import { dashboardToken } from './devTokens.ts'
import { deviceChannelName, deviceOfRoom, deviceRoomName, directoryRoomName, type FleetWiring, type LinkTransports, relayFleetName } from './fleetWiring.ts'
import { RelayHearing } from './relayHearing.ts'
import { relayJitter } from './relayReconnect.ts'

/** What the dashboard follows on the relay: rooms, those the relay refused (room and reason), where its engine's refill stands, and the devices it awaits after its link came back. */
export interface FollowedRooms {
  readonly rooms: number
  readonly refused: readonly { readonly room: string; readonly refusal: string }[]
  readonly refill: RefillReport
  /** The devices not heard again since the dashboard's link came back, within their reconnect bound (`RelayHearing.awaiting`), by id. */
  readonly awaiting: readonly string[]
}

export interface DashboardLinksOptions {
  readonly wiring: FleetWiring
  readonly transports: LinkTransports
  readonly epoch: string
  /** The devices of the fleet (without a relay, one tab channel is followed per device). */
  readonly devices: readonly string[]
  /** The host's clock: the followed documents' sync status, and the refill's bound. */
  readonly now: () => number
  /** Timers on `now`, for the refill's bound and the relay client's reconnects. */
  readonly timers: TickTimers
  /** Uniform random numbers in [0, 1): the relay client's reconnect jitter. */
  readonly random: () => number
  /** The dashboard engine's idle timeout: a device heard from within it before the link went down is awaited after it came back (`RelayHearing`). */
  readonly idleTimeoutMs: number
  /** What a followed document's binding or the relay client could not use. */
  readonly onError: (error: Error) => void
}

/** One device followed over its tab channel (no relay). */
interface TabFollower {
  readonly doc: Y.Doc
  readonly binding: DocBinding
  readonly provider: BroadcastChannelProvider
}

/**
 * How the dashboard engine reads the fleet. With a relay: one socket with a read-only dashboard
 * token, `followRooms` on the epoch's directory (`<fleet>/_directory`), which the relay keeps:
 * every device room listed there, now or later, gets a document bound read-only to the engine,
 * which refills in one merge: nothing until every room listed synced once, then all of them
 * together (at most `REFILL_BOUND_MS` after the listing, or after the first room synced if none
 * had by then). Without one: a read-only
 * document per device on that device's tab channel. Either way the dashboard writes nothing
 * and a device never receives another device's state, so the traffic grows with the fleet, not
 * with its square.
 *
 * @example
 * const links = new DashboardLinks(dashboard, { wiring, transports: {}, epoch: 'w2000-l10000-a1', devices: ['d01', 'd02'], now: Date.now, timers: { setTimeout, clearTimeout }, random: Math.random, idleTimeoutMs: 3_000, onError: console.warn })
 * links.lastHeard().get('d01') // when d01's state last arrived
 */
export class DashboardLinks {
  readonly #options: DashboardLinksOptions
  readonly #relay: Relay | null = null
  readonly #follower: RoomFollower | null = null
  readonly #hearing: RelayHearing | null = null
  readonly #tabs = new Map<string, TabFollower>()

  constructor(engine: Engine, options: DashboardLinksOptions) {
    this.#options = options
    const { wiring, transports, epoch, now, onError } = options
    const relay = wiring.relay
    if (relay !== null) {
      const WebSocket = transports.WebSocket
      this.#relay = connectRelay({
        url: relay.url,
        token: dashboardToken(relay, relayFleetName(wiring, epoch)),
        jitter: relayJitter(options),
        ...(WebSocket === undefined ? {} : { WebSocket }),
        onError,
      })
      this.#follower = followRooms(engine, this.#relay, {
        directory: directoryRoomName(wiring, epoch),
        bind: { onError, now },
        refill: { now, timers: options.timers },
      })
      const follower = this.#follower
      this.#hearing = new RelayHearing(() => follower.rooms(), now, { liveMs: options.idleTimeoutMs })
      return
    }
    for (const device of options.devices) {
      const doc = new Y.Doc()
      syncStatusTracker(doc, { now })
      const binding = bindDoc(engine, doc, { readOnly: true, onError, now })
      const provider = new BroadcastChannelProvider(doc, deviceChannelName(wiring, epoch, device), {
        ...(transports.openChannel === undefined ? {} : { channel: transports.openChannel }),
      })
      this.#tabs.set(device, { doc, binding, provider })
    }
  }

  /** When each device's state last arrived (its followed document's last sync), by device id. */
  lastHeard(): ReadonlyMap<string, number | null> {
    const heard = new Map<string, number | null>()
    if (this.#follower !== null) {
      const rooms = this.#follower.rooms()
      for (const device of this.#options.devices) heard.set(device, rooms.get(deviceRoomName(this.#options.wiring, this.#options.epoch, device))?.lastSync ?? null)
      return heard
    }
    for (const [device, follower] of this.#tabs) heard.set(device, syncStatusTracker(follower.doc).status().lastSync)
    return heard
  }

  /**
   * Whether the dashboard hears every device now (`RelayHearing`): on the relay, every followed
   * room it was not refused is in sync (none while its link is down, nor until each room synced
   * again after), and after its link came back each device live before was heard again or the
   * devices' reconnect bound (7 s) passed; over tab channels, always.
   */
  hearsAll(): boolean {
    return this.#hearing?.hears() ?? true
  }

  /** The rooms followed on the relay, the refused ones and the refill; null without a relay. */
  followed(): FollowedRooms | null {
    const refill = this.#follower?.refill() ?? null
    if (this.#follower === null || refill === null) return null
    const refused: { room: string; refusal: string }[] = []
    const rooms = this.#follower.rooms()
    for (const [room, status] of rooms) if (status.refusal !== null) refused.push({ room, refusal: status.refusal })
    const awaiting = (this.#hearing?.awaiting()?.rooms ?? []).map(deviceOfRoom)
    return { rooms: rooms.size, refused, refill, awaiting }
  }

  /** Leaves every room (or channel) and unbinds the documents; the engine keeps what it merged. */
  destroy(): void {
    this.#follower?.destroy()
    this.#relay?.destroy()
    for (const { doc, binding, provider } of this.#tabs.values()) {
      provider.destroy()
      binding.destroy()
      syncStatusTracker(doc).destroy()
      doc.destroy()
    }
    this.#tabs.clear()
  }
}
