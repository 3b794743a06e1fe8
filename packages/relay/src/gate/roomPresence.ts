/**
 * Whose presence (awareness state) each client id of a room is. A connection may set a state only
 * for a client id it holds: one whose Yjs writes in the room are its own replica's, or, for an
 * id that wrote nothing and that no one shows presence for, one it set first (held until it
 * closes; at most `MAX_HELD` per connection). It may remove another's presence only one clock
 * past the room's, as honest clients do for a peer that timed out: a higher clock would pin the
 * id's clock where its owner cannot pass it. What would change nothing (an echo: Hocuspocus
 * providers send every presence they receive back) passes.
 *
 * With several relays, each tells the others which writer holds which client id here
 * (`PresenceShare`, through Redis), ahead of the presence itself: a relay then knows the writer
 * behind a presence shown through another relay, refuses another writer's first write under it,
 * and lets the same writer take it over when it moves here.
 */
import type { Document } from '@hocuspocus/server'
import { writerOfClient } from '../authorize/authorizeUpdate.ts'
import type { AwarenessEntry } from '../protocol/relayFrame.ts'
import type { ConnectionGate } from './connectionGate.ts'

/** Client ids one connection may hold (a client has one; a new Y.Doc on the same connection, one more). */
const MAX_HELD = 8

/** Holders on other relays remembered per room; past it, those whose presence is no longer shown are forgotten first, then those of the writer holding the most (`evictFor`). */
const MAX_REMOTE = 4096

/** Client ids one writer may be remembered holding through other relays, per room: one writer cannot crowd out the others. */
const MAX_REMOTE_PER_WRITER = 64

/**
 * Presences a room may show (here and through other relays) before a new one is dropped: a
 * provider that joins sends every presence it received back, in one update, which the relay
 * refuses past 1,024 (`readAwareness`).
 */
export const MAX_ROOM_PRESENCES = 512

/**
 * A presence message the relay does not take: the first client id whose presence it may not
 * change, and whether that is only because the room already shows `MAX_ROOM_PRESENCES` (the
 * sender is told), rather than because the id is someone else's.
 *
 * @example
 * const dropped: DroppedPresence = { client: 42, roomFull: true }
 */
export interface DroppedPresence {
  readonly client: number
  readonly roomFull: boolean
}

/**
 * Tells the other relays which writer holds which client ids' presence in a room here, and when
 * it lets them go (its connection closed).
 *
 * @example
 * const share: PresenceShare = { held: (room, clients, replicas) => publish(...), released: (room, clients) => publish(...) }
 */
export interface PresenceShare {
  held(room: string, clients: readonly number[], replicas: readonly string[]): void
  released(room: string, clients: readonly number[]): void
}

/** A presence held through another relay: by whom (its replicas, and their names joined: the writer), and which relay said so. */
interface RemoteHolder {
  readonly relay: string
  readonly replicas: ReadonlySet<string>
  readonly writer: string
}

/**
 * Makes room in a full record of `document`'s holders on other relays for one more id of a writer
 * holding `held` there: forgets an id of the writer holding the most (one no longer shown first,
 * else its oldest), when that is more than this writer would hold; else the oldest id no longer
 * shown (a relay that died says nothing) of a writer holding no fewer than this one would. So
 * writers that fill the record together push out only each other, never one holding fewer (a
 * device holds one or two), even one whose presence they removed.
 */
function evictFor(remote: Map<number, RemoteHolder>, document: Document, held: number): boolean {
  const counts = new Map<string, number>()
  let most = ''
  let mostHeld = 0
  for (const { writer } of remote.values()) {
    const n = (counts.get(writer) ?? 0) + 1
    counts.set(writer, n)
    if (n > mostHeld) {
      most = writer
      mostHeld = n
    }
  }
  const shown = document.awareness.states
  let victim: number | undefined
  for (const [client, other] of remote) {
    if (mostHeld > held + 1 ? other.writer !== most : shown.has(client) || (counts.get(other.writer) as number) <= held) continue
    victim ??= client
    if (!shown.has(client)) {
      victim = client
      break
    }
  }
  if (victim === undefined) return false
  remote.delete(victim)
  return true
}

function shareReplica(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  for (const replica of a) if (b.has(replica)) return true
  return false
}

/**
 * The holders of a relay's rooms' presence, by document and client id.
 *
 * @example
 * const presence = new RoomPresence()
 * presence.take(document, gate, entries) // null: taken; else the client id it may not change, and why
 * presence.release(document, gate) // the connection closed
 */
export class RoomPresence {
  readonly #holders = new WeakMap<Document, Map<number, ConnectionGate>>()
  readonly #remote = new WeakMap<Document, Map<number, RemoteHolder>>()
  /** Where this relay tells the others what its connections hold; null with one relay. */
  share: PresenceShare | null = null

  /**
   * Takes the client ids whose presence `entries` set for `gate`, all or none: null when it may
   * apply them all, else the first client id whose presence it may not change, and whether only
   * the room's cap on presences stopped it.
   */
  take(document: Document, gate: ConnectionGate, entries: readonly AwarenessEntry[]): DroppedPresence | null {
    let holders = this.#holders.get(document)
    const { meta, states } = document.awareness
    const claims: number[] = []
    // Presences this message adds to those the room shows, whoever's ids they are: a writer's
    // own ids count too (one client may write under any number of them).
    let added = 0
    for (const { client, clock, present } of entries) {
      const current = meta.get(client)?.clock ?? 0
      // What y-protocols applies: a later clock, or a removal at the same clock of a shown presence.
      if (clock < current || (clock === current && (present || !states.has(client)))) continue
      if (present && !states.has(client) && states.size + added++ >= MAX_ROOM_PRESENCES) return { client, roomFull: true }
      const writer = writerOfClient(document, client)
      const holder = holders?.get(client)
      if (writer !== null ? gate.grant.replicas.has(writer) : holder === gate) continue
      // Held through another relay: by another writer, or by this connection's own, which moved here.
      const remote = writer === null && holder === undefined ? this.#remoteHolder(document, client, gate) : null
      if (!present) {
        if (states.has(client) && clock <= current + 1) continue
        return { client, roomFull: false }
      }
      // Someone's: a replica's, a live connection's here, another writer's through another relay
      // (shown or not: removing it does not make it anyone's), or shown with no holder known.
      if (writer !== null || (holder !== undefined && !holder.ended) || remote === true || (states.has(client) && remote !== false)) return { client, roomFull: false }
      if (gate.presence.size + claims.length >= MAX_HELD) return { client, roomFull: false }
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
    if (claims.length > 0) this.share?.held(document.name, claims, [...gate.grant.replicas])
    return null
  }

  /**
   * True when `client`'s presence in `document` is held by a live connection of another writer
   * than `gate`'s: one whose token names none of `gate`'s replicas. A client that reconnected
   * before its old connection was noticed closed holds it through the old one, and is not another.
   */
  heldByAnother(document: Document, gate: ConnectionGate, client: number): boolean {
    const holder = this.#holders.get(document)?.get(client)
    if (holder === undefined || holder.ended) return this.#remoteHolder(document, client, gate) === true
    if (holder === gate) return false
    return !shareReplica(holder.grant.replicas, gate.grant.replicas)
  }

  /**
   * Whether `client`'s presence in `document` is held through another relay by another writer
   * than `gate`'s (true), by the same one (false), or by none known (null). Held until that relay
   * says its connection let it go, whether or not the presence is still shown: a removal (which
   * any connection may send for a peer) does not make the id anyone's.
   */
  #remoteHolder(document: Document, client: number, gate: ConnectionGate): boolean | null {
    const remote = this.#remote.get(document)?.get(client)
    if (remote === undefined) return null
    return !shareReplica(remote.replicas, gate.grant.replicas)
  }

  /** Lets go of what `gate` held in `document` (its connection closed). */
  release(document: Document, gate: ConnectionGate): void {
    const holders = this.#holders.get(document)
    const released: number[] = []
    if (holders !== undefined) {
      for (const client of gate.presence) {
        if (holders.get(client) !== gate) continue
        holders.delete(client)
        released.push(client)
      }
    }
    gate.presence.clear()
    if (released.length > 0) this.share?.released(document.name, released)
  }

  /** Another relay says a writer (its `replicas`) holds the presence of `clients` in `document` there. */
  heldRemotely(document: Document, relay: string, clients: readonly number[], replicas: readonly string[]): void {
    let remote = this.#remote.get(document)
    if (remote === undefined) {
      remote = new Map()
      this.#remote.set(document, remote)
    }
    const writer = [...replicas].sort().join('\n')
    let held = 0
    for (const other of remote.values()) if (other.writer === writer) held++
    const holder: RemoteHolder = { relay, replicas: new Set(replicas), writer }
    for (const client of clients) {
      const known = remote.get(client)
      if (known?.writer === writer) remote.set(client, holder)
      else if (known === undefined && held < MAX_REMOTE_PER_WRITER && (remote.size < MAX_REMOTE || evictFor(remote, document, held))) {
        remote.set(client, holder)
        held++
      }
    }
  }

  /** Another relay says its connection let `clients` go in `document`. */
  releasedRemotely(document: Document, relay: string, clients: readonly number[]): void {
    const remote = this.#remote.get(document)
    if (remote !== undefined) for (const client of clients) if (remote.get(client)?.relay === relay) remote.delete(client)
  }

  /**
   * What other relays hold in `document` as far as this one knows, by relay and writer: passed on
   * when a relay that just loaded the room asks, ahead of this relay's presence answer, which
   * shows their presence too (the holder's own answer travels on another connection).
   */
  heldElsewhere(document: Document): { readonly relay: string; readonly clients: number[]; readonly replicas: string[] }[] {
    const byHolder = new Map<RemoteHolder, number[]>()
    for (const [client, holder] of this.#remote.get(document) ?? []) {
      const clients = byHolder.get(holder)
      if (clients === undefined) byHolder.set(holder, [client])
      else clients.push(client)
    }
    return [...byHolder].map(([holder, clients]) => ({ relay: holder.relay, clients, replicas: [...holder.replicas] }))
  }

  /** What this relay's connections hold in `document`, by writer: what the other relays are told when they ask. */
  heldHere(document: Document): { readonly clients: number[]; readonly replicas: string[] }[] {
    const byGate = new Map<ConnectionGate, number[]>()
    for (const [client, gate] of this.#holders.get(document) ?? []) {
      if (gate.ended) continue
      const clients = byGate.get(gate)
      if (clients === undefined) byGate.set(gate, [client])
      else clients.push(client)
    }
    return [...byGate].map(([gate, clients]) => ({ clients, replicas: [...gate.grant.replicas] }))
  }
}
