/**
 * Which loaded rooms are shared with the other relays: a room is shared once its Redis channel
 * is subscribed. A room loaded while Redis is away (not connected, or not answering) is served by
 * this relay alone, unshared, and shared when Redis is back; an unloaded room's subscription that
 * could not be ended is stale, and ended when Redis is back.
 */
import type { Document } from '@hocuspocus/server'
import type { RedisWire } from './redisWire.ts'

/** Of the Hocuspocus instance, the rooms it holds. */
export interface LoadedRooms {
  readonly documents: ReadonlyMap<string, Document>
  readonly loadingDocuments: ReadonlyMap<string, unknown>
}

/** What the channels ask of the rest of the scale-out. */
export interface RoomChannelsLinks {
  /** The instance's rooms (undefined before it is configured). */
  rooms(): LoadedRooms | undefined
  /** True while Redis does not answer: commands are not sent. */
  cutOff(): boolean
  /** A room just shared: the state-vector exchange that catches it up. */
  shared(room: string, document: Document): void
  /** A Redis command failed: counted and logged. */
  trouble(error: unknown): void
}

/**
 * The subscriptions of the rooms' channels.
 *
 * @example
 * const channels = new RoomChannels(wire, { rooms: () => instance, cutOff: () => false, shared: exchange, trouble })
 * channels.loaded('fleet')            // unshared until its channel is subscribed
 * await channels.share('fleet', doc)  // subscribed, then `shared('fleet', doc)`
 */
export class RoomChannels {
  readonly #wire: Pick<RedisWire, 'sub' | 'subKey'>
  readonly #links: RoomChannelsLinks
  /** Loaded rooms whose channel is not subscribed (loaded while Redis was away): served here alone. */
  readonly #unshared = new Set<string>()
  /** Unloaded rooms whose channel could not be unsubscribed (Redis was away). */
  readonly #stale = new Set<string>()

  constructor(wire: Pick<RedisWire, 'sub' | 'subKey'>, links: RoomChannelsLinks) {
    this.#wire = wire
    this.#links = links
  }

  /** Loaded rooms served by this relay alone, until Redis is back. */
  get unshared(): number {
    return this.#unshared.size
  }

  /** Unloaded rooms whose channel could not be unsubscribed: their subscriptions end when Redis is back. */
  get stale(): number {
    return this.#stale.size
  }

  /** True when the room is loaded and not shared yet. */
  isUnshared(room: string): boolean {
    return this.#unshared.has(room)
  }

  /** A room was loaded: unshared until `share` subscribes its channel. */
  loaded(room: string): void {
    this.#unshared.add(room)
  }

  /** Shares a loaded room through Redis: it stays unshared when its channel cannot be subscribed. */
  async share(room: string, document: Document): Promise<void> {
    const wire = this.#wire
    try {
      await wire.sub.subscribe(wire.subKey(room))
    } catch (error) {
      this.#links.trouble(error)
      return
    }
    if (!this.#unshared.delete(room)) {
      // Shared by another call, or unloaded meanwhile: then its unload came before this
      // subscription, which ends here unless the room is loaded again.
      const rooms = this.#links.rooms()
      if (rooms !== undefined && !rooms.documents.has(room) && !rooms.loadingDocuments.has(room)) {
        wire.sub.unsubscribe(wire.subKey(room)).catch((error: unknown) => this.#links.trouble(error))
      }
      return
    }
    this.#links.shared(room, document)
  }

  /**
   * A room was unloaded: unless it is loaded again (a quick reconnection), ends its subscription,
   * also one that seems never made (a subscription made after a failed attempt, or renewed by the
   * client, would otherwise outlive it; an unneeded unsubscribe is harmless). False when the room
   * is loaded again.
   */
  unloaded(room: string): boolean {
    this.#unshared.delete(room)
    const rooms = this.#links.rooms()
    if (rooms !== undefined && (rooms.documents.has(room) || rooms.loadingDocuments.has(room))) return false
    this.#unsubscribe(room)
    return true
  }

  /** Ends the subscriptions the subscriber renewed on reconnecting for rooms unloaded while Redis was away. */
  endStale(): void {
    const rooms = this.#links.rooms()
    for (const room of this.#stale) {
      if (this.#unshared.has(room) || rooms?.documents.has(room) === true) this.#stale.delete(room)
      else this.#unsubscribe(room)
    }
  }

  /**
   * Ends the subscription of an unloaded room, without waiting: a command to an unreachable Redis
   * fails only after the client's retries. When it fails, the client subscribes the channel again
   * when it reconnects, so it is ended then.
   */
  #unsubscribe(room: string): void {
    // Redis does not answer: ended once it does.
    if (this.#links.cutOff()) {
      this.#stale.add(room)
      return
    }
    const wire = this.#wire
    wire.sub.unsubscribe(wire.subKey(room)).then(
      () => this.#stale.delete(room),
      (error: unknown) => {
        this.#stale.add(room)
        this.#links.trouble(error)
      },
    )
  }
}
