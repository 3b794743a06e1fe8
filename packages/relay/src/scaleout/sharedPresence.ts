/**
 * Who holds which client id's presence, shared between the relays of a group through Redis.
 *
 * A relay refuses another writer's first write under a client id whose presence a connection
 * holds (`RoomPresence`, `client-id-squatting`): a device that learned a peer's new client id
 * from its presence must not claim it first. A presence shown through another relay names no
 * writer, so each relay tells the others which writer (its token's replicas) holds which client
 * ids of a room, and when it lets them go. Ahead of the presence itself: the message goes out on
 * the connection that publishes the presence, before it, and arrives on the connection that
 * receives it, before it, so no client learns an id through a relay before that relay knows
 * whose it is. A relay that shares a room (when it loads it, or when Redis is back) tells the
 * others what it holds there and asks what they hold, again ahead of the presence they answer.
 *
 * Messages travel on one channel for every room, framed as the extension frames its own (its
 * relay's identifier first), followed by an empty room name, which the extension's own handler
 * reads and ignores, then JSON.
 */
import type { Document } from '@hocuspocus/server'
import type { PresenceShare, RoomPresence } from '../gate/roomPresence.ts'

/** The channel of presence holders, for every room. */
export const PRESENCE_CHANNEL = 'tidemark-presence'

/** Of the extension's Redis clients and framing, what presence sharing uses. */
export interface PresenceWire {
  readonly pub: { publish(channel: string, message: Buffer): Promise<number> }
  readonly sub: {
    subscribe(channel: string): Promise<unknown>
    on(event: 'messageBuffer', listener: (channel: Buffer, message: Buffer) => void): unknown
  }
  /** Prefixes this relay's identifier. */
  encodeMessage(message: Uint8Array): Buffer
}

type PresenceMessage =
  /** `relay`: the relay holding them, when another passes on what it knows (else the sender). */
  | { readonly t: 'held'; readonly room: string; readonly clients: readonly number[]; readonly replicas: readonly string[]; readonly relay?: string }
  | { readonly t: 'released'; readonly room: string; readonly clients: readonly number[] }
  | { readonly t: 'query'; readonly room: string }

/** The empty room name (a varint 0) the extension's handler reads before it ignores the message. */
const NO_ROOM = 0

const isClientList = (value: unknown): value is number[] => Array.isArray(value) && value.every((client) => Number.isSafeInteger(client) && client >= 0)

/** A message of another relay, or null when it is not one this relay sends. */
function presenceMessage(value: unknown): PresenceMessage | null {
  if (typeof value !== 'object' || value === null) return null
  const m = value as Record<string, unknown>
  if (typeof m.room !== 'string') return null
  if (m.t === 'query') return { t: 'query', room: m.room }
  if (!isClientList(m.clients)) return null
  if (m.t === 'released') return { t: 'released', room: m.room, clients: m.clients }
  if (m.t === 'held' && Array.isArray(m.replicas) && m.replicas.every((replica) => typeof replica === 'string')) {
    const replicas = m.replicas as string[]
    if (m.relay === undefined) return { t: 'held', room: m.room, clients: m.clients, replicas }
    return typeof m.relay === 'string' ? { t: 'held', room: m.room, clients: m.clients, replicas, relay: m.relay } : null
  }
  return null
}

/**
 * This relay's side of the shared presence holders: tells the others what its connections
 * hold, and keeps what they hold in `presence`.
 *
 * @example
 * const shared = new SharedPresence(wire, identifier, gate.presence, (work) => void guard(work))
 * shared.subscribe()
 */
export class SharedPresence implements PresenceShare {
  readonly #wire: PresenceWire
  readonly #identifier: string
  readonly #presence: RoomPresence
  readonly #guard: (work: () => Promise<unknown>) => void
  /** Rooms loaded here (from the start of their load), whose holders the other relays' messages reach. */
  readonly #documents = new Map<string, Document>()

  /** `guard` runs a Redis command, counting and logging its failure. */
  constructor(wire: PresenceWire, identifier: string, presence: RoomPresence, guard: (work: () => Promise<unknown>) => void) {
    this.#wire = wire
    this.#identifier = identifier
    this.#presence = presence
    this.#guard = guard
    presence.share = this
    wire.sub.on('messageBuffer', (channel, message) => {
      if (channel.toString() === PRESENCE_CHANNEL) this.#receive(message)
    })
  }

  /** Subscribes the channel (again: a subscription that failed is not renewed by the client). */
  subscribe(): void {
    this.#guard(() => this.#wire.sub.subscribe(PRESENCE_CHANNEL))
  }

  /** A room starts loading here: the other relays' holders in it are kept from now on. */
  loaded(document: Document): void {
    this.#documents.set(document.name, document)
  }

  unloaded(room: string): void {
    this.#documents.delete(room)
  }

  /**
   * The room is shared (loaded, or Redis is back): tells the others what this relay holds in it
   * and, with `ask`, asks what they hold. Answering another's question (`ask` false), it also
   * passes on what it knows other relays hold: its presence answer shows their presence too, and
   * their own answers travel on other connections, which may arrive later.
   */
  announce(document: Document, ask: boolean): void {
    for (const { clients, replicas } of this.#presence.heldHere(document)) this.held(document.name, clients, replicas)
    if (ask) this.#send({ t: 'query', room: document.name })
    else for (const { relay, clients, replicas } of this.#presence.heldElsewhere(document)) this.#send({ t: 'held', room: document.name, clients, replicas, relay })
  }

  held(room: string, clients: readonly number[], replicas: readonly string[]): void {
    this.#send({ t: 'held', room, clients, replicas })
  }

  released(room: string, clients: readonly number[]): void {
    this.#send({ t: 'released', room, clients })
  }

  /** Published at once, not with the turn's changes: it must go out before the presence it is about. */
  #send(message: PresenceMessage): void {
    const json = Buffer.from(JSON.stringify(message))
    const framed = this.#wire.encodeMessage(Buffer.concat([Buffer.of(NO_ROOM), json]))
    this.#guard(() => this.#wire.pub.publish(PRESENCE_CHANNEL, framed))
  }

  #receive(data: Buffer): void {
    const length = data[0] ?? 0
    const sender = data.toString('utf8', 1, 1 + length)
    // Redis sends a relay its own messages too.
    if (sender === this.#identifier || data[1 + length] !== NO_ROOM) return
    let message: PresenceMessage | null
    try {
      message = presenceMessage(JSON.parse(data.toString('utf8', 2 + length)))
    } catch {
      message = null
    }
    if (message === null) return
    const document = this.#documents.get(message.room)
    if (document === undefined) return
    if (message.t === 'held') {
      // What this relay holds itself it knows better than anyone passing it on.
      const relay = message.relay ?? sender
      if (relay !== this.#identifier) this.#presence.heldRemotely(document, relay, message.clients, message.replicas)
    }
    else if (message.t === 'released') this.#presence.releasedRemotely(document, sender, message.clients)
    else this.announce(document, false)
  }
}
