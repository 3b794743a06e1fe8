/**
 * Whose presence (awareness state) each client id of a room is. A connection may set a state only
 * for a client id it holds: one whose Yjs writes in the room are its own replica's, or, for an
 * id that wrote nothing and that no one shows presence for, one it set first (held until it
 * closes; at most `MAX_HELD` per connection). It may remove another's presence only one clock
 * past the room's, as honest clients do for a peer that timed out: a higher clock would pin the
 * id's clock where its owner cannot pass it. What would change nothing (an echo: Hocuspocus
 * providers send every presence they receive back) passes.
 */
import type { Document } from '@hocuspocus/server'
import { writerOfClient } from '../authorize/authorizeUpdate.ts'
import type { AwarenessEntry } from '../protocol/relayFrame.ts'
import type { ConnectionGate } from './connectionGate.ts'

/** Client ids one connection may hold (a client has one; a new Y.Doc on the same connection, one more). */
const MAX_HELD = 8

/**
 * The holders of a relay's rooms' presence, by document and client id.
 *
 * @example
 * const presence = new RoomPresence()
 * presence.take(document, gate, entries) // null: taken; else the client id it may not change
 * presence.release(document, gate) // the connection closed
 */
export class RoomPresence {
  readonly #holders = new WeakMap<Document, Map<number, ConnectionGate>>()

  /**
   * Takes the client ids whose presence `entries` set for `gate`, all or none: null when it may
   * apply them all, else the first client id whose presence it may not change.
   */
  take(document: Document, gate: ConnectionGate, entries: readonly AwarenessEntry[]): number | null {
    let holders = this.#holders.get(document)
    const { meta, states } = document.awareness
    const claims: number[] = []
    for (const { client, clock, present } of entries) {
      const current = meta.get(client)?.clock ?? 0
      // What y-protocols applies: a later clock, or a removal at the same clock of a shown presence.
      if (clock < current || (clock === current && (present || !states.has(client)))) continue
      const writer = writerOfClient(document, client)
      const holder = holders?.get(client)
      if (writer !== null ? gate.grant.replicas.has(writer) : holder === gate) continue
      if (!present) {
        if (states.has(client) && clock <= current + 1) continue
        return client
      }
      // Someone's: a replica's, a live connection's here, or (shown with no holder here) another relay's or the room's own.
      if (writer !== null || (holder !== undefined && !holder.ended) || states.has(client)) return client
      if (gate.presence.size + claims.length >= MAX_HELD) return client
      claims.push(client)
    }
    for (const client of claims) {
      if (holders === undefined) {
        holders = new Map()
        this.#holders.set(document, holders)
      }
      holders.set(client, gate)
      gate.presence.add(client)
    }
    return null
  }

  /**
   * True when `client`'s presence in `document` is held by a live connection of another writer
   * than `gate`'s: one whose token names none of `gate`'s replicas. A client that reconnected
   * before its old connection was noticed closed holds it through the old one, and is not another.
   */
  heldByAnother(document: Document, gate: ConnectionGate, client: number): boolean {
    const holder = this.#holders.get(document)?.get(client)
    if (holder === undefined || holder === gate || holder.ended) return false
    for (const replica of holder.grant.replicas) if (gate.grant.replicas.has(replica)) return false
    return true
  }

  /** Lets go of what `gate` held in `document` (its connection closed). */
  release(document: Document, gate: ConnectionGate): void {
    const holders = this.#holders.get(document)
    if (holders !== undefined) for (const client of gate.presence) if (holders.get(client) === gate) holders.delete(client)
    gate.presence.clear()
  }
}
