/**
 * A relay room's presence, for a doc joined with an awareness: its local changes go to the relay
 * while the room talks to it, the relay's are applied, and the peers seen through the room are
 * forgotten when its connection ends (their states apply again when they come back).
 */
import * as encoding from 'lib0/encoding'
import { type Awareness, applyAwarenessUpdate, encodeAwarenessUpdate, removeAwarenessStates } from 'y-protocols/awareness'
import { announcePresence, forgetAbsentPeers } from '../transport/presence.ts'
import { MESSAGE_AWARENESS, relayMessage } from './relayProtocol.ts'

/**
 * One room's side of an awareness. `send` puts a message on the room's connection (through its
 * size check: a presence over the limit would close the whole socket); `live` says whether the
 * room talks to the relay now.
 *
 * @example
 * const presence = new RoomPresence(awareness, 'fleet-a/d01', (message) => room.send(message), () => room.syncing)
 * presence.apply(update) // a presence update from the relay
 */
export class RoomPresence {
  readonly #awareness: Awareness
  readonly #room: string
  readonly #send: (message: Uint8Array<ArrayBuffer>) => unknown
  readonly #live: () => boolean

  constructor(awareness: Awareness, room: string, send: (message: Uint8Array<ArrayBuffer>) => unknown, live: () => boolean) {
    this.#awareness = awareness
    this.#room = room
    this.#send = send
    this.#live = live
    awareness.on('update', this.#onUpdate)
  }

  /** Applies a presence update the relay sent (not sent back to it). */
  apply(update: Uint8Array): void {
    applyAwarenessUpdate(this.#awareness, update, this)
  }

  /** The room was authenticated: the local state goes to the relay as if it had just changed. */
  announce(): void {
    announcePresence(this.#awareness)
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
    this.#awareness.off('update', this.#onUpdate)
    this.forgetPeers()
  }

  readonly #onUpdate = (change: { added: number[]; updated: number[]; removed: number[] }, origin: unknown): void => {
    if (origin === this || !this.#live()) return
    const clients = [...change.added, ...change.updated, ...change.removed]
    if (clients.length === 0) return
    this.#send(relayMessage(this.#room, MESSAGE_AWARENESS, (encoder) => encoding.writeVarUint8Array(encoder, encodeAwarenessUpdate(this.#awareness, clients))))
  }
}
