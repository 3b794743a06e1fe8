/**
 * One document on a relay socket: authenticate, sync, send local updates, count what the relay
 * has acknowledged, follow refusals and server-side closes (relayProtocol.ts has the messages).
 *
 * Order on a fresh socket: Auth(token) → Authenticated(scope) → our step 1 → the relay's step 1,
 * answered with our step 2 (what it misses), after which local updates are sent as they are made
 * → the relay's step 2: in sync. Each step 2 or update we send is acknowledged by a SyncStatus;
 * the local transactions it carried stop being pending then. Nothing is sent before the relay
 * authenticated the room, so a refused token leaves nothing queued on the server.
 */
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import type { Awareness } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { applyPeerUpdate } from '../binding/applyPeerUpdate.ts'
import { syncStatusTracker, type TrackedConnection } from '../transport/syncStatusTracker.ts'
import {
  AUTH_AUTHENTICATED,
  AUTH_PERMISSION_DENIED,
  AUTH_TOKEN,
  MESSAGE_AUTH,
  MESSAGE_AWARENESS,
  MESSAGE_CLOSE,
  MESSAGE_STATELESS,
  MESSAGE_SYNC,
  MESSAGE_SYNC_REPLY,
  MESSAGE_SYNC_STATUS,
  messageParts,
  readString,
  relayMessage,
  SCOPE_READ_ONLY,
  SYNC_STEP_1,
  SYNC_STEP_2,
  SYNC_UPDATE,
  syncMessage,
  writeString,
} from './relayProtocol.ts'
import { RATE_LIMITED, refusedDocs, TOKEN_EXPIRED, temporaryDenial } from './roomRefusals.ts'
import type { RoomLink } from './roomLink.ts'
import { RoomPace } from './roomPace.ts'
import { AUTHENTICATING, DELAYED, DESTROYED, IDLE, opening, REFUSED, SYNCED, SYNCING } from './roomPhase.ts'
import { RoomPresence } from './roomPresence.ts'
import { UpdateOutbox } from './updateOutbox.ts'

/** One joined room: its phase on the current socket, its pending updates, its refusal. */
export class RelayRoom {
  readonly name: string
  readonly doc: Y.Doc
  readonly #link: RoomLink
  /** The room's side of the awareness it was joined with. */
  readonly #presence: RoomPresence | undefined
  readonly #connection: TrackedConnection
  #phase = IDLE
  #refusal: string | null = null
  /** The relay granted a read-only connection: it applies no update, so none is offered. */
  #readOnlyScope = false
  /** Our step 2 went out on this connection: from now on local updates are sent as they are made. */
  #answered = false
  /** The relay's step 1 (its state vector), kept until its step 2 is applied here, then answered. */
  #relayState: Uint8Array | null = null
  /** Local transactions no message has carried yet. */
  #unsent: number
  /** Per message sent and not yet acknowledged, the local transactions it carries. */
  #inFlight: number[] = []
  /** The pace its updates and presence draw from, and its updates made since the connection was answered, sent merged at it. */
  readonly #pace: RoomPace
  readonly #outbox: UpdateOutbox
  /** The largest message sent on the current socket: the one a relay closing the socket for a message over its limit could not read. */
  largestSent = 0
  #attempt = 0
  #timer: unknown = null
  /** The server has (or is about to have) a connection for this room on the current socket. */
  #serverOpen = false

  constructor(doc: Y.Doc, name: string, link: RoomLink, awareness: Awareness | undefined) {
    this.doc = doc
    this.name = name
    this.#link = link
    const live = (): boolean => this.#phase === SYNCING || this.#phase === SYNCED
    this.#pace = new RoomPace(link)
    this.#presence = awareness === undefined ? undefined : new RoomPresence(awareness, name, link, this.#pace, (message) => this.#send(message), live)
    // What this client wrote before joining has not reached the relay as far as anyone knows: one pending update until the first acknowledgement.
    this.#unsent = Y.getState(doc.store, doc.clientID) > 0 ? 1 : 0
    this.#outbox = new UpdateOutbox(this.#pace, link.maxMessageBytes, this.#sendUpdate)
    this.#connection = syncStatusTracker(doc).open(awareness)
    doc.on('update', this.#onUpdate)
    this.report()
  }

  /** Waiting for the socket (or for its rejoin delay) and free to authenticate once it is open. */
  get idle(): boolean {
    return this.#phase === IDLE
  }

  /** Refused (or left): this room never needs the socket again. */
  get ended(): boolean {
    return this.#phase >= REFUSED
  }

  /** Denied for a temporary reason on the current socket: authenticates again on the next one. */
  get waitingForSocket(): boolean {
    return this.#phase === DELAYED && this.#timer === null
  }

  /** Opening: its Auth or its step 1 went out on this socket, and the relay owes it an answer. */
  get asking(): boolean {
    return opening(this.#phase)
  }

  /** In sync: sends a step 1, which the relay answers at once (its step 1 and step 2), to learn that the socket still carries anything. */
  probe(): boolean {
    if (this.#phase !== SYNCED) return false
    this.#link.send(syncMessage(this.name, SYNC_STEP_1, Y.encodeStateVector(this.doc)))
    return true
  }

  /** Sends the token: the first message of this room on the current socket. */
  authenticate(token: string): void {
    if (this.#phase !== IDLE) return
    this.#enter(AUTHENTICATING)
    this.#serverOpen = true
    this.#link.send(relayMessage(this.name, MESSAGE_AUTH, (encoder) => {
      encoding.writeVarUint(encoder, AUTH_TOKEN)
      writeString(encoder, token)
    }))
    this.report()
  }

  /** The socket dropped: everything sent and not acknowledged goes again with the next sync. */
  socketClosed(): void {
    this.#serverOpen = false
    this.largestSent = 0
    if (this.#phase < REFUSED) {
      this.#cancelTimer()
      this.#enter(IDLE)
    }
    this.#disconnected()
  }

  /** Handles one message of this room (its room and type already read); throws on a malformed one. */
  receive(type: number, decoder: decoding.Decoder): void {
    if (this.#phase === DESTROYED) return
    switch (type) {
      case MESSAGE_CLOSE:
        this.#closed(readString(decoder))
        return
      case MESSAGE_AUTH:
        this.#auth(decoder)
        return
      case MESSAGE_STATELESS:
        this.#stateless(readString(decoder))
        return
    }
    if (this.#phase !== SYNCING && this.#phase !== SYNCED) return
    switch (type) {
      case MESSAGE_SYNC:
      case MESSAGE_SYNC_REPLY:
        this.#sync(decoder)
        return
      case MESSAGE_SYNC_STATUS:
        this.#acknowledged(decoding.readVarUint(decoder) === 1)
        return
      case MESSAGE_AWARENESS:
        this.#presence?.apply(decoding.readVarUint8Array(decoder))
        return
      default:
        throw new Error('unknown type')
    }
  }

  /**
   * Leaves the room. True while the server still holds a connection for it on this socket: its
   * Close (an answer to ours, or the one that follows a refusal) frees the name for a new join.
   */
  destroy(): boolean {
    if (this.#phase === DESTROYED) return false
    const closing = this.#serverOpen && this.#link.socketState() === 'open'
    // A refused room's connection is closed by the relay itself; a Close of ours arriving after it would be held for the next join.
    if (closing && this.#phase !== REFUSED) this.#link.send(relayMessage(this.name, MESSAGE_CLOSE))
    this.#enter(DESTROYED)
    this.#cancelTimer()
    this.#outbox.drop()
    this.doc.off('update', this.#onUpdate)
    this.#presence?.destroy()
    this.#connection.detach()
    return closing
  }

  /**
   * Moves to `phase`. A room is opening from its Auth until the relay's step 2 shows its
   * connection established (Hocuspocus answers Auth before it has loaded the room, and the relay
   * counts the room as not open until then); leaving that span frees a place among the rooms the
   * relay client lets open at once.
   */
  #enter(phase: number): void {
    const was = this.#phase
    this.#phase = phase
    if (opening(was) && !opening(phase)) this.#link.settled()
  }

  /** Republishes this room's facts into the doc's sync status. */
  report(): void {
    const phase = this.#phase
    if (phase === DESTROYED) return
    this.#connection.update({
      connected: phase >= AUTHENTICATING && phase <= SYNCED,
      connecting: phase <= DELAYED && this.#link.socketState() !== 'closed',
      synced: phase === SYNCED,
      unacknowledged: this.#unsent + this.#inFlight.reduce((sum, n) => sum + n, 0),
      refusal: this.#refusal,
    })
  }

  #auth(decoder: decoding.Decoder): void {
    const kind = decoding.readVarUint(decoder)
    if (kind === AUTH_PERMISSION_DENIED) {
      this.#serverOpen = false
      const reason = readString(decoder)
      if (reason === TOKEN_EXPIRED && this.#link.renewable()) {
        // The token function gave a token already past its exp (a cache on a clock behind the
        // relay's): not the room's fault. Joined again later, on a new socket, with a new read.
        this.#link.fail(`${this.name}: token expired, joining again`)
        this.#waitForSocket()
        return
      }
      if (temporaryDenial(reason)) {
        // The relay's store or Redis failed, or it is full (a restart, a blip): joined again later, on a new socket.
        this.#link.fail(`${this.name}: not opened (${reason}), joining again`)
        this.#waitForSocket()
        return
      }
      this.#link.denied(this.name)
      this.#refuse(reason, false)
    } else if (kind === AUTH_AUTHENTICATED && this.#phase === AUTHENTICATING) {
      this.#readOnlyScope = readString(decoder) === SCOPE_READ_ONLY
      this.#enter(SYNCING)
      this.#answered = false
      this.#relayState = null
      this.#link.send(syncMessage(this.name, SYNC_STEP_1, Y.encodeStateVector(this.doc)))
      this.#presence?.announce()
      this.report()
    } else if (kind === AUTH_TOKEN) {
      // Hocuspocus' request for a fresh token on a live connection (onTokenSync): the relay does not ask.
      throw new Error('token requests are not supported')
    }
  }

  #sync(decoder: decoding.Decoder): void {
    const step = decoding.readVarUint(decoder)
    const bytes = decoding.readVarUint8Array(decoder)
    if (step === SYNC_STEP_1) {
      // Answered once the relay's step 2 is applied here (the relay sends its step 1 first): what
      // the doc does with the room's state (a reconfigured replica deleting its earlier session's
      // log) then goes in the same step 2 as what it holds, so no peer sees one without the other.
      Y.decodeStateVector(bytes)
      this.#relayState = bytes
      if (this.#phase === SYNCED) this.#answer()
    } else if (step === SYNC_STEP_2 || step === SYNC_UPDATE) {
      applyPeerUpdate(this.doc, bytes, this)
      if (step === SYNC_STEP_2 && this.#phase === SYNCING) {
        this.#enter(SYNCED)
        this.#attempt = 0
        this.#link.synced()
        if (this.#relayState !== null) this.#answer()
        this.report()
      }
    } else {
      throw new Error(`unknown sync step ${step}`)
    }
  }

  /** Answers the relay's step 1: sends what it misses, and from now on every update. */
  #answer(): void {
    const update = Y.encodeStateAsUpdate(this.doc, this.#relayState as Uint8Array)
    this.#relayState = null
    // A read-only connection applies nothing: a step 2 is offered only for local changes (which the relay will refuse, visibly).
    if (!this.#readOnlyScope || this.#unsent > 0) {
      if (!this.#send(syncMessage(this.name, SYNC_STEP_2, update), true)) return
      // Answered already (this step 1 answers a silence probe): the step 2 carries what waits for
      // the pace too, and counts it; sent again, it would be counted off twice.
      if (this.#answered) this.#outbox.drop()
      this.#inFlight.push(this.#unsent)
      this.#unsent = 0
    }
    this.#answered = true
    this.report()
  }

  /**
   * Sends a message of this room, once `take` (a paced turn's) allowed the messages it goes as. A
   * step 2 or update over `maxMessageBytes` goes in parts the relay puts together again (a
   * message over its limit would close the whole socket); any other message over it refuses the room.
   */
  #send(message: Uint8Array<ArrayBuffer>, inParts = false, take: (messages: number) => boolean = () => true): boolean {
    const limit = this.#link.maxMessageBytes
    const parts = message.byteLength <= limit ? [message] : inParts ? messageParts(this.name, message, limit) : null
    if (parts === null) {
      this.tooLarge(message.byteLength, `over maxMessageBytes (${limit})`)
      return false
    }
    if (!take(parts.length)) return false
    for (const part of parts) {
      this.largestSent = Math.max(this.largestSent, part.byteLength)
      this.#link.send(part)
    }
    return true
  }

  /**
   * A message of this room is larger than the relay takes (`why`): the room is refused with
   * `tidemark:too-large`, as the relay cannot refuse it itself (it closes the whole socket). The
   * doc may join again (a relay with a larger limit takes it).
   */
  tooLarge(bytes: number, why: string): void {
    if (this.#phase >= REFUSED) return
    this.#link.fail(`${this.name}: a message of ${bytes} bytes is ${why}: refused (tidemark:too-large)`)
    if (this.#serverOpen && this.#link.socketState() === 'open') this.#link.send(relayMessage(this.name, MESSAGE_CLOSE))
    this.#serverOpen = false
    this.#refuse(`tidemark:too-large ${bytes} bytes`, false)
  }

  /** Sends merged updates (the outbox's turn), unless the room was refused for their size or the pace holds them. */
  readonly #sendUpdate = (update: Uint8Array, local: number, take: (messages: number) => boolean): void => {
    if (!this.#send(syncMessage(this.name, SYNC_UPDATE, update), true, take)) return
    this.#unsent -= local
    this.#inFlight.push(local)
    this.report()
  }

  #acknowledged(applied: boolean): void {
    if (!applied) {
      // Hocuspocus' answer on a read-only connection: the update was not applied, and never will
      // be. The connection stays open on its side, so this room closes it.
      this.#link.send(relayMessage(this.name, MESSAGE_CLOSE))
      this.#refuse('tidemark:refused read-only', true)
      return
    }
    this.#inFlight.shift()
    this.#connection.exchanged()
    this.report()
  }

  #stateless(payload: string): void {
    let message: { tidemark?: unknown; reason?: unknown } | null
    try {
      message = JSON.parse(payload)
    } catch {
      return // not the relay's: applications may send their own stateless messages
    }
    if (typeof message !== 'object' || message === null) return
    const { tidemark, reason } = message
    // Not a refusal: the room stays open, and only a presence it sent is not shown.
    if (tidemark === 'presence-dropped') this.#presence?.dropped(String(reason))
    // Past the relay's rate the room is closed next, and joins again: nothing to refuse.
    else if (tidemark === 'refused' && reason !== RATE_LIMITED) this.#refuse(`tidemark:refused ${String(reason)}`, true)
  }

  /** The server closed this room's connection (the socket stays open). */
  #closed(reason: string): void {
    this.#serverOpen = false
    if (this.#phase === REFUSED) return
    if (reason === `tidemark:refused ${RATE_LIMITED}`) {
      // The relay took the updates before the one past its rate; the next sync carries the rest,
      // and this room's pace starts from an empty bucket.
      this.#link.fail(`${this.name}: the relay refused a message past its rate (rate-limited), joining again`)
      this.#pace.slowDown()
      this.#rejoinLater()
      return
    }
    if (reason.startsWith('tidemark:refused')) {
      this.#refuse(reason, true)
      return
    }
    // Not a refusal (the relay unloaded the room, a token reached its exp): join again after a jittered delay.
    this.#rejoinLater()
  }

  /** Waits a jittered delay (longer after each attempt), then joins again. */
  #rejoinLater(): void {
    this.#enter(DELAYED)
    this.#cancelTimer()
    this.#timer = this.#link.schedule(() => {
      this.#timer = null
      if (this.#phase !== DELAYED) return
      this.#enter(IDLE)
      this.report()
      this.#link.ready()
    }, this.#link.delay(this.#attempt++))
    this.#disconnected()
  }

  /**
   * Denied for a temporary reason: Hocuspocus keeps the name denied on this socket, so the room
   * waits for the next one, which the relay client opens after a jittered delay (longer after
   * each attempt of this room, back to the shortest once it is in sync).
   */
  #waitForSocket(): void {
    this.#enter(DELAYED)
    this.#cancelTimer()
    this.#link.denied(this.name, this.#attempt++)
    this.#disconnected()
  }

  #refuse(reason: string, tainted: boolean): void {
    if (this.#phase === DESTROYED) return
    if (tainted) refusedDocs.set(this.doc, reason)
    this.#enter(REFUSED)
    this.#refusal = reason
    this.#cancelTimer()
    this.#disconnected()
  }

  /** This connection ended: unacknowledged updates wait for the next sync, peers are gone. */
  #disconnected(): void {
    this.#answered = false
    this.#outbox.drop()
    for (const n of this.#inFlight.splice(0)) this.#unsent += n
    this.#presence?.forgetPeers()
    this.report()
  }

  readonly #onUpdate = (update: Uint8Array, origin: unknown, _doc: Y.Doc, transaction: Y.Transaction): void => {
    if (origin === this) return
    const local = transaction.local
    // Answered: syncing or in sync on this connection.
    if (this.#answered) {
      // A read-only connection gets this client's own changes only (refused, visibly), never a peer tab's.
      if (this.#readOnlyScope && !local) return
      if (local) this.#unsent++
      this.#outbox.push(update, local)
    } else if (local) {
      this.#unsent++
    } else {
      return
    }
    this.report()
  }

  #cancelTimer(): void {
    if (this.#timer === null) return
    this.#link.cancel(this.#timer)
    this.#timer = null
  }
}
