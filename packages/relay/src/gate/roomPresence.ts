/**
 * Whose presence (awareness state) each client id of a room is. A connection may change a
 * state only for a client id it holds: one whose Yjs writes in the room are its own replica's,
 * or, for an id that wrote nothing, one it set first (held until it closes). A state at a clock
 * the room already has changes nothing and passes: Hocuspocus providers send every presence
 * they receive back to the relay. Removing a presence is open to every connection: honest
 * clients remove peers whose presence timed out.
 */
import type { Document } from '@hocuspocus/server'
import { writerOfClient } from '../authorize/authorizeUpdate.ts'
import type { AwarenessEntry } from '../protocol/relayFrame.ts'
import type { ConnectionGate } from './connectionGate.ts'

/**
 * The holders of a relay's rooms' presence, by document and client id.
 *
 * @example
 * const presence = new RoomPresence()
 * presence.take(document, gate, entries) // null: taken; else the client id it may not set
 * presence.release(document, gate) // the connection closed
 */
export class RoomPresence {
  readonly #holders = new WeakMap<Document, Map<number, ConnectionGate>>()

  /**
   * Takes the client ids whose states `entries` change for `gate`, all or none: null when it may
   * change them all, else the first client id another connection or replica holds.
   */
  take(document: Document, gate: ConnectionGate, entries: readonly AwarenessEntry[]): number | null {
    let holders = this.#holders.get(document)
    const known = document.awareness.meta
    for (const { client, clock, present } of entries) {
      if (!present || clock <= (known.get(client)?.clock ?? -1)) continue
      const writer = writerOfClient(document, client)
      if (writer !== null) {
        if (!gate.grant.replicas.has(writer)) return client
        continue
      }
      const holder = holders?.get(client)
      if (holder !== undefined && holder !== gate && !holder.ended) return client
    }
    for (const { client, clock, present } of entries) {
      if (!present || clock <= (known.get(client)?.clock ?? -1)) continue
      if (holders === undefined) {
        holders = new Map()
        this.#holders.set(document, holders)
      }
      holders.set(client, gate)
      gate.presence.add(client)
    }
    return null
  }

  /** Lets go of what `gate` held in `document` (its connection closed). */
  release(document: Document, gate: ConnectionGate): void {
    const holders = this.#holders.get(document)
    if (holders !== undefined) for (const client of gate.presence) if (holders.get(client) === gate) holders.delete(client)
    gate.presence.clear()
  }
}
