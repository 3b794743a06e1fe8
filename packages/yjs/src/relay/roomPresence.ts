/**
 * A relay room's presence, for a doc joined with an awareness: its local changes go to the relay
 * while the room talks to it, the relay's are applied, and the peers seen through the room are
 * forgotten when its connection ends (their states apply again when they come back). No message
 * goes over the room's limit: the relay would close the whole socket for it.
 */
import * as encoding from 'lib0/encoding'
import { type Awareness, applyAwarenessUpdate, encodeAwarenessUpdate, removeAwarenessStates } from 'y-protocols/awareness'
import { announcePresence, awarenessEntries, awarenessUpdate, forgetAbsentPeers } from '../transport/presence.ts'
import { MESSAGE_AWARENESS, relayMessage } from './relayProtocol.ts'
import type { RoomLink } from './roomLink.ts'
import type { PacedTurn, RoomPace } from './roomPace.ts'

/** No states: every client of an update encoded with it is removed at its clock. */
const WITHDRAWN: Map<number, Record<string, unknown>> = new Map()

/** Entries the relay takes in one awareness message (it refuses more). */
const MAX_ENTRIES = 1024

/**
 * One room's side of an awareness. `link` gives the room's limit and reports what it works around
 * (`onError`); `pace` is the room's, which its updates draw from too; `send` puts a message on the
 * room's connection; `live` says whether the room talks to the relay now.
 *
 * @example
 * const presence = new RoomPresence(awareness, 'fleet-a/d01', link, pace, (message) => room.send(message), () => room.syncing)
 * presence.apply(update) // a presence update from the relay
 */
export class RoomPresence {
  readonly #awareness: Awareness
  readonly #room: string
  readonly #link: RoomLink
  readonly #send: (message: Uint8Array<ArrayBuffer>) => unknown
  readonly #live: () => boolean
  /** Clients whose presence alone is over the limit, reported once until it fits again (the awareness renews a state every 15 s). */
  readonly #over = new Set<number>()
  /** The relay shows this client's own state: it was sent on the current connection, and not withdrawn since. */
  #shown = false
  /** The clock this client's own state was last withdrawn at (-1: never). */
  #withdrawnAt = -1
  /** A presence the relay dropped at its room's cap was reported on the current connection. */
  #droppedReported = false
  /**
   * Clients whose presence changed since the last message: sent together once the task is over,
   * at the room's pace (the relay counts every presence message against the room's rate).
   */
  readonly #changed = new Set<number>()
  readonly #pace: RoomPace

  constructor(awareness: Awareness, room: string, link: RoomLink, pace: RoomPace, send: (message: Uint8Array<ArrayBuffer>) => unknown, live: () => boolean) {
    this.#awareness = awareness
    this.#room = room
    this.#link = link
    this.#pace = pace
    this.#send = send
    this.#live = live
    awareness.on('update', this.#onUpdate)
  }

  /**
   * Applies a presence update the relay sent (not sent back to it). The relay sends a withdrawal
   * of this client's own state back (and observers echo it): y-protocols would take it for a peer
   * removing a live client and raise the local clock, which every other room of the awareness
   * sends on as a change, withdrawn there and echoed back in turn. So it is left out.
   */
  apply(update: Uint8Array): void {
    const own = this.#awareness.clientID
    if (this.#withdrawnAt >= 0) {
      const entries = awarenessEntries(update)
      const kept = entries.filter((e) => e.client !== own || e.state !== 'null' || e.clock > this.#withdrawnAt)
      if (kept.length < entries.length) update = awarenessUpdate(kept)
    }
    applyAwarenessUpdate(this.#awareness, update, this)
  }

  /** The room was authenticated: the local state goes to the relay as if it had just changed. */
  announce(): void {
    this.#shown = false
    this.#droppedReported = false
    announcePresence(this.#awareness)
  }

  /**
   * The relay did not show a presence message of this room: the room shows as many presences as
   * the relay allows (`reason`, `room-presence-limit <cap>`). The app is told (`onError`) once
   * per connection of the room (the relay tells each presence message it drops, and the awareness
   * renews its state every 15 s). The room itself stays: its doc syncs on, and the presence goes
   * again at its next change or renewal, shown once others left.
   */
  dropped(reason: string): void {
    if (this.#droppedReported) return
    this.#droppedReported = true
    this.#link.fail(`${this.#room}: the relay did not show this client's presence (${reason}): the room shows as many presences as it allows; the room syncs on, and the presence goes again at its next change`)
  }

  /** Peers seen through this room are gone; their states apply again when they come back. */
  forgetPeers(): void {
    const awareness = this.#awareness
    const others = [...awareness.getStates().keys()].filter((client) => client !== awareness.clientID)
    if (others.length > 0) removeAwarenessStates(awareness, others, this)
    forgetAbsentPeers(awareness)
  }

  /** The room left: nothing more is sent, and its peers are forgotten. */
  destroy(): void {
    this.#pace.withdraw(this.#turn)
    this.#awareness.off('update', this.#onUpdate)
    this.forgetPeers()
  }

  readonly #onUpdate = (change: { added: number[]; updated: number[]; removed: number[] }, origin: unknown): void => {
    if (origin === this || !this.#live()) return
    for (const client of [...change.added, ...change.updated, ...change.removed]) this.#changed.add(client)
    this.#pace.request(this.#turn)
  }

  /**
   * Sends the presences changed since the last message, as they are now, once the pace has tokens
   * for the messages that takes (kept until then). Presences over the limit together go in groups
   * within it. One client's presence over it on its own is not sent: this client's own is
   * withdrawn (removed at its clock, so the room does not keep showing the one before), a peer's
   * relayed from elsewhere is left out, and the app is told. The room itself stays: its doc syncs
   * on, and a smaller presence later goes as usual.
   */
  readonly #turn: PacedTurn = (take) => {
    // A peer forgotten meanwhile (its state and clock gone) has nothing left to send.
    const clients = [...this.#changed].filter((client) => this.#awareness.meta.has(client))
    if (clients.length > 0 && this.#live()) {
      const whole = this.#message(clients)
      const { messages, over } = whole.byteLength > this.#link.maxMessageBytes || clients.length > MAX_ENTRIES ? this.#within(clients) : { messages: [whole], over: new Map<number, number>() }
      if (!take(messages.length)) return
      for (const message of messages) this.#send(message)
      for (const client of clients) if (!over.has(client)) this.#sent(client)
      for (const [client, bytes] of over) this.#overLimit(client, bytes)
    }
    this.#changed.clear()
  }

  /** `client`'s state went to the relay. */
  #sent(client: number): void {
    this.#over.delete(client)
    if (client !== this.#awareness.clientID) return
    this.#shown = this.#awareness.getLocalState() !== null
    // At a later clock than the withdrawal: y-protocols ignores its echoes from now on.
    this.#withdrawnAt = -1
  }

  /** `client`'s state alone is `bytes`, over the limit: reported once until it fits again, and withdrawn if it is this client's own (`#within` sent the withdrawal). */
  #overLimit(client: number, bytes: number): void {
    const own = client === this.#awareness.clientID
    if (!this.#over.has(client)) {
      this.#over.add(client)
      this.#link.fail(`${this.#room}: the presence of client ${client} is ${bytes} bytes, over maxMessageBytes (${this.#link.maxMessageBytes}): not sent${own ? ', withdrawn from the room until it is smaller' : ''}`)
    }
    if (own && this.#shown) {
      this.#shown = false
      this.#withdrawnAt = this.#awareness.meta.get(client)?.clock ?? 0
    }
  }

  /** The messages that carry `clients`' presences within the limit, and the clients over it on their own (with their size). */
  #within(clients: readonly number[]): { messages: Uint8Array<ArrayBuffer>[]; over: Map<number, number> } {
    const limit = this.#link.maxMessageBytes
    const messages: Uint8Array<ArrayBuffer>[] = []
    const over = new Map<number, number>()
    let group: number[] = []
    // Each client's message alone counts the room's header once more than the group's: their sum bounds the group's size.
    let bytes = 0
    const flush = (): void => {
      if (group.length > 0) messages.push(this.#message(group))
      group = []
      bytes = 0
    }
    for (const client of clients) {
      const alone = this.#message([client]).byteLength
      if (alone > limit) {
        over.set(client, alone)
        // Withdrawn where the relay shows it: a removal of a state it never showed would be dropped as another's.
        if (client === this.#awareness.clientID && this.#shown) messages.push(this.#message([client], WITHDRAWN))
        continue
      }
      if (bytes + alone > limit || group.length === MAX_ENTRIES) flush()
      group.push(client)
      bytes += alone
    }
    flush()
    return { messages, over }
  }

  /** An awareness message of `clients`, each with its state in `states` (none: removed). */
  #message(clients: readonly number[], states: Map<number, Record<string, unknown>> = this.#awareness.getStates()): Uint8Array<ArrayBuffer> {
    return relayMessage(this.#room, MESSAGE_AWARENESS, (encoder) => encoding.writeVarUint8Array(encoder, encodeAwarenessUpdate(this.#awareness, [...clients], states)))
  }
}
