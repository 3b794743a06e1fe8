/**
 * The Hocuspocus extension that decides who opens which room and which messages reach a room's
 * document: token and room checks in `onAuthenticate` (before any document exists), and every
 * message of an open connection in `beforeHandleMessage`, before Hocuspocus applies, stores or
 * forwards it.
 *
 * A connection whose token expires is closed, at its `exp` or at its first message after it,
 * with the reason `tidemark:token-expired`: not a refusal, so the client joins again with a
 * fresh token.
 *
 * A refused or held message is turned into a no-op for Hocuspocus by rewriting its type byte
 * (QueryAwareness, which Hocuspocus ignores for a client connection) rather than by throwing:
 * Hocuspocus logs every thrown error and would apply messages already in flight.
 */
import type { beforeHandleMessagePayload, Connection, connectedPayload, Document, Extension, onAuthenticatePayload, onDisconnectPayload } from '@hocuspocus/server'
import * as Y from 'yjs'
import { grantAdmits } from '../auth/accessGrant.ts'
import type { TokenVerifier } from '../auth/tokenVerifier.ts'
import { authorizeUpdate, type WriteGrant } from '../authorize/authorizeUpdate.ts'
import type { RelayMetrics } from '../metrics/relayMetrics.ts'
import { MESSAGE, type PartHeader, type RelayFrame, readAwareness, readFrame, SYNC_STEP } from '../protocol/relayFrame.ts'
import { OpenRefused, presenceDroppedPayload, Refusal, refusedPayload } from '../protocol/refusal.ts'
import { classifyRoom } from '../rooms/roomName.ts'
import type { RoomSizes } from '../rooms/roomSizes.ts'
import type { RelayLog } from '../relayLog.ts'
import type { RelayLimits } from '../relayOptions.ts'
import { joinAnswered } from './catchUp.ts'
import { ConnectionGate, type RelayContext } from './connectionGate.ts'
import { HeldUpdates } from './heldUpdates.ts'
import { acknowledge, applyAsHocuspocus } from './hocuspocusSteps.ts'
import { joinAnswerBytes } from './joinAnswer.ts'
import { AssemblingMessages, firstPartProblem, MessageParts } from './messageParts.ts'
import type { RoomAdmission } from './roomAdmission.ts'
import { MAX_ROOM_PRESENCES, RoomPresence } from './roomPresence.ts'
import type { TokenExpiry } from './tokenExpiry.ts'
import { UpdateBytes } from './updateBytes.ts'

/**
 * What the gate enforces: the relay's limits it reads (see `RelayLimits`), and two it derives.
 *
 * @example
 * const limits: AccessGateLimits = { ...DEFAULT_LIMITS, maxHeldBytes: 4 << 20, maxAssemblingBytes: 64 << 20 }
 */
export type AccessGateLimits = Pick<RelayLimits, 'updatesPerSecond' | 'updateBurst' | 'maxRoomBytes' | 'partStallMs' | 'updateBytesPerSecond'> & {
  /** Bytes of updates one connection may have held, waiting for what they depend on. */
  readonly maxHeldBytes: number
  /**
   * Bytes of messages received in parts and not whole yet, across connections. A part past it
   * lets go of messages stalled or overdue (`AssemblingMessages`; their connections refused as
   * `rate-limited`) if that makes room, or else is refused as `rate-limited` itself.
   */
  readonly maxAssemblingBytes: number
}

const NOTHING: WriteGrant = { replicas: new Set(), sources: new Set() }

/** A step 1 that goes through once its socket's queue has room for its answer, of at most `weigh()` bytes as the room stands. */
class PacedAnswer {
  constructor(readonly weigh: () => number) {}
}

/**
 * A message goes through, is dropped silently (held, or already refused), is refused, came after
 * the token expired, or is a step 1 whose answer waits for room.
 */
type Decision = 'pass' | 'drop' | 'expired' | Refusal | PacedAnswer

/** The reason a connection whose token expired is closed with. */
const TOKEN_EXPIRED_CLOSE = 'tidemark:token-expired'

/**
 * Authentication and per-message authorization, as a Hocuspocus extension.
 *
 * @example
 * const admission = new RoomAdmission({ maxRooms: 10_000, maxRoomsPerSubject: 2_500 }, idle)
 * const gate = new AccessGate({ verifier, metrics, limits, sizes, admission, log, now: Date.now, expiry: new TokenExpiry(Date.now, timers) })
 * new Hocuspocus({ extensions: [gate] })
 */
export class AccessGate implements Extension {
  readonly extensionName = 'TidemarkAccessGate'
  /** Before every other extension: nothing runs for a room or a message the gate refuses. */
  readonly priority = 10_000
  readonly #verifier: TokenVerifier
  readonly #metrics: RelayMetrics
  readonly #limits: AccessGateLimits
  readonly #sizes: RoomSizes
  readonly #admission: RoomAdmission
  readonly #log: RelayLog
  readonly #now: () => number
  readonly #expiry: TokenExpiry
  /** Who holds which client id's presence in each room (told to the other relays through `presence.share`). */
  readonly presence = new RoomPresence()
  readonly #held: HeldUpdates
  readonly #assembling: AssemblingMessages<ConnectionGate, Connection>
  readonly #updateBytes: UpdateBytes
  /** The same budget for presence, apart: a provider's echoes never cost its updates. */
  readonly #presenceBytes: UpdateBytes
  #closing = false

  constructor(deps: {
    readonly verifier: TokenVerifier
    readonly metrics: RelayMetrics
    readonly limits: AccessGateLimits
    readonly sizes: RoomSizes
    /** Which room connections may open (`maxRooms`, `maxRoomsPerSubject`); rooms in use are not idle. */
    readonly admission: RoomAdmission
    readonly log: RelayLog
    readonly now: () => number
    readonly expiry: TokenExpiry
  }) {
    this.#verifier = deps.verifier
    this.#metrics = deps.metrics
    this.#limits = deps.limits
    this.#assembling = new AssemblingMessages(deps.limits.partStallMs)
    this.#updateBytes = new UpdateBytes(deps.limits.updateBytesPerSecond, deps.limits.maxRoomBytes, deps.now)
    this.#presenceBytes = new UpdateBytes(deps.limits.updateBytesPerSecond, deps.limits.maxRoomBytes, deps.now)
    this.#sizes = deps.sizes
    this.#held = new HeldUpdates({ metrics: deps.metrics, sizes: deps.sizes, maxHeldBytes: deps.limits.maxHeldBytes })
    this.#admission = deps.admission
    this.#log = deps.log
    this.#now = deps.now
    this.#expiry = deps.expiry
  }

  /**
   * The relay is shutting down: from now on every message of every connection is dropped (not
   * applied, not acknowledged: its client sends it again to the next relay), and no room opens.
   * Set before the connections are closed, so a message already queued in Hocuspocus cannot be
   * applied after the shutdown's last write.
   */
  closing(): void {
    this.#closing = true
  }

  /** Updates currently held, across connections. */
  get heldUpdates(): number {
    return this.#held.count
  }

  /** Bytes of messages being received in parts, across connections. */
  get assemblingBytes(): number {
    return this.#assembling.bytes
  }

  async onAuthenticate({ token, documentName, connectionConfig, context }: onAuthenticatePayload): Promise<RelayContext> {
    // Not counted as a refusal: nothing the client sent was wrong.
    if (this.#closing) throw new OpenRefused(new Refusal('shutdown', 'the relay is shutting down'))
    const room = classifyRoom(documentName)
    if (room.kind === 'invalid') throw this.#openRefused(new Refusal('bad-room', room.problem))
    const grant = await this.#verifier.verify(token)
    if (grant instanceof Refusal) throw this.#openRefused(grant)
    if (!grantAdmits(grant, documentName)) throw this.#openRefused(new Refusal('room-not-allowed', documentName))
    const socket = (context as RelayContext).socket
    const gate = new ConnectionGate(grant, room, documentName, { perSecond: this.#limits.updatesPerSecond, burst: this.#limits.updateBurst }, this.#now, () => socket?.bytesRead ?? 0)
    const refusal = await this.#admission.admit(grant.subject, documentName, gate)
    if (refusal !== null) throw this.#openRefused(refusal)
    socket?.authenticated()
    // Dashboards only read; a directory is written by the relay alone.
    connectionConfig.readOnly = grant.role === 'dashboard' || room.kind === 'directory'
    return { tidemark: { gate } }
  }

  async connected({ documentName, context, connection }: connectedPayload): Promise<void> {
    const relayContext = context as RelayContext
    relayContext.socket?.opened(documentName)
    this.#admission.opened(documentName)
    const gate = relayContext.tidemark?.gate
    if (gate === undefined || gate.ended) return
    this.#expiry.arm(gate, gate.grant.expiresAt, () => {
      try {
        this.#expire(gate, connection)
      } catch (error) {
        // Thrown out of a timer callback this would end the process.
        this.#log('error', `closing ${gate.roomName} at its token's expiry failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
      }
    })
  }

  async onDisconnect({ documentName, context, document }: onDisconnectPayload): Promise<void> {
    const relayContext = context as RelayContext
    relayContext.socket?.closed(documentName)
    const gate = relayContext.tidemark?.gate
    if (gate === undefined) return
    this.#admission.closed(gate)
    // Ended, so that its messages still waiting for their turn are dropped: what they took (parts,
    // held updates, presence) no one would let go.
    this.#end(gate)
    this.presence.release(document, gate)
  }

  async beforeHandleMessage({ connection, document, update: data }: beforeHandleMessagePayload): Promise<void> {
    const gate = (connection.context as RelayContext).tidemark?.gate
    if (gate === undefined) return
    const end = await gate.turn()
    const frame = readFrame(data)
    try {
      let decision = this.#dropsAll(gate) ? 'drop' : this.#decide(gate, connection, document, frame)
      if (decision instanceof PacedAnswer) decision = await this.#roomForAnswer(gate, connection, document, decision.weigh)
      if (decision instanceof Refusal) this.#refuse(gate, connection, data, frame, decision)
      else if (decision === 'drop') this.#neutralize(data, frame)
      else if (decision === 'expired') {
        this.#neutralize(data, frame)
        this.#expire(gate, connection)
      }
    } catch (error) {
      // A bug here must not let an unchecked message through.
      this.#log('error', `checking a message of ${gate.roomName} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
      this.#refuse(gate, connection, data, frame, new Refusal('malformed-message', 'the relay could not check it'))
    } finally {
      // Hocuspocus applies the message in the microtasks after this hook resolves.
      setImmediate(() => {
        try {
          const refusal = this.#closing ? null : this.#held.release(gate, connection, document, this.#presentElsewhere(document, gate))
          if (refusal !== null) this.#refuse(gate, connection, null, null, refusal)
        } catch (error) {
          // Thrown out of a timer callback this would end the process.
          this.#log('error', `applying held updates of ${gate.roomName} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
          this.#refuse(gate, connection, null, null, new Refusal('malformed-update', 'a held update could not be applied'))
        } finally {
          end()
        }
      })
    }
  }

  /**
   * A step 1 is answered with what the client lacks of the room, its whole state at a first join:
   * the answer, of at most `weigh()` bytes, waits until its socket's queue has room for it
   * (`SocketGuard.roomForAnswer`), so that joins read in one burst do not queue every room at
   * once. Weighed as the room stands each time it is weighed against the queue, the last time
   * just before it is sent: what the room took while it waited is in it too (a client that held
   * the room lacks that now), so a catch-up the connection waits for need not send that again
   * (`joinAnswered`). Dropped if the connection ended meanwhile.
   */
  async #roomForAnswer(gate: ConnectionGate, connection: Connection, document: Document, weigh: () => number): Promise<Decision> {
    await (connection.context as RelayContext).socket?.roomForAnswer(weigh)
    if (this.#dropsAll(gate)) return 'drop'
    joinAnswered(connection, document)
    return 'pass'
  }

  /**
   * Whether a message of `gate`'s is dropped unread: the relay is shutting down, or its
   * connection ended (closed, refused, expired), counted in
   * `tidemark_relay_closed_connection_messages_dropped_total`.
   */
  #dropsAll(gate: ConnectionGate): boolean {
    if (this.#closing) return true
    if (!gate.ended) return false
    this.#metrics.closedConnectionMessagesDropped++
    return true
  }

  #openRefused(refusal: Refusal): OpenRefused {
    this.#metrics.refused(refusal.kind)
    this.#log('info', `room not opened: ${refusal.text}`)
    return new OpenRefused(refusal)
  }

  /** What to do with a message: let it through, drop it silently, or refuse it. */
  #decide(gate: ConnectionGate, connection: Connection, document: Document, frame: RelayFrame): Decision {
    // The socket guard let only readable frames through; this is the last line.
    if (!frame.ok) return new Refusal('malformed-message', frame.problem)
    if (frame.type === MESSAGE.close) return 'pass'
    // Before the deadline's timer, if it is late: nothing is taken on an expired token.
    if (this.#now() >= gate.grant.expiresAt) return 'expired'
    switch (frame.type) {
      case MESSAGE.auth:
        // A token refresh on an open connection: the relay checks tokens when a room opens.
        return 'drop'
      case MESSAGE.broadcastStateless:
        return new Refusal('malformed-message', 'clients may not broadcast')
      case MESSAGE.queryAwareness:
      case MESSAGE.stateless:
        return gate.bucket.take() ? 'pass' : new Refusal('rate-limited')
      case MESSAGE.awareness: {
        if (!gate.bucket.take()) return new Refusal('rate-limited')
        // Past the budget, dropped unread, not refused: Hocuspocus providers send every presence back
        // (echoes of a room's large states too), and an echo dropped loses nothing.
        if (!this.#presenceBytes.take(gate.grant.subject, gate.roomName, frame.payload.byteLength)) return this.#dropPresence(gate, 'past its bytes per second')
        const entries = readAwareness(frame.payload)
        if (typeof entries === 'string') return new Refusal('malformed-message', entries)
        const dropped = this.presence.take(document, gate, entries)
        if (dropped === null) return 'pass'
        if (dropped.roomFull) {
          // Nothing the client did wrong, and nothing else would tell it why it is not shown.
          connection.sendStateless(presenceDroppedPayload(gate.roomName, MAX_ROOM_PRESENCES))
          return this.#dropPresence(gate, `the room shows ${MAX_ROOM_PRESENCES} presences`)
        }
        // Not refused: a client back before the relay saw its old connection close sets its own id.
        return this.#dropPresence(gate, `client ${dropped.client} is another connection's or replica's`)
      }
      case MESSAGE.sync:
      case MESSAGE.syncReply:
        if (!gate.bucket.take()) return new Refusal('rate-limited')
        return this.#decideSync(gate, connection, document, frame)
      case MESSAGE.part:
        if (!gate.bucket.take()) return new Refusal('rate-limited')
        return this.#decidePart(gate, connection, document, frame.part as PartHeader, frame.payload)
      default:
        return new Refusal('malformed-message', `unknown message type ${frame.type}`)
    }
  }

  /** A presence message of `gate`'s left out, counted and logged; its connection goes on. */
  #dropPresence(gate: ConnectionGate, why: string): 'drop' {
    this.#metrics.presenceDropped++
    this.#log('info', `dropped presence from ${gate.grant.subject} in ${gate.roomName}: ${why}`)
    return 'drop'
  }

  #decideSync(gate: ConnectionGate, connection: Connection, document: Document, frame: RelayFrame & { ok: true }): Decision {
    if (frame.step === SYNC_STEP.step1) {
      let held: Map<number, number>
      try {
        held = Y.decodeStateVector(frame.payload)
      } catch {
        return new Refusal('malformed-message', 'undecodable state vector')
      }
      // Weighed at what the client lacks, measured from the room's structs; at the room's whole
      // size when the room holds pending updates (the answer carries them too).
      return new PacedAnswer(() => joinAnswerBytes(document, gate.roomName, held, frame.payload.byteLength) ?? this.#sizes.get(gate.roomName))
    }
    if (frame.step !== SYNC_STEP.step2 && frame.step !== SYNC_STEP.update) return new Refusal('malformed-message', `unknown sync step ${frame.step}`)
    // Charged before it is decoded: decoding is the cost (a reader's step 2 is decoded too). No
    // detail in the refusal: clients take `rate-limited` alone as temporary.
    if (!this.#updateBytes.take(gate.grant.subject, gate.roomName, frame.payload.byteLength)) {
      this.#log('info', `${gate.grant.subject} in ${gate.roomName}: ${frame.payload.byteLength} bytes of updates past ${this.#limits.updateBytesPerSecond} per second`)
      return new Refusal('rate-limited')
    }
    if (connection.readOnly) {
      const verdict = authorizeUpdate(document, frame.payload, NOTHING)
      if (!verdict.ok && !verdict.missing && verdict.refusal.kind === 'malformed-update') return verdict.refusal
      // A reader's step 2 answers the relay's step 1 with whatever its document holds (a
      // dashboard may hold what a restarted relay lost): Hocuspocus does not apply it.
      if (frame.step === SYNC_STEP.step2) return 'pass'
      return verdict.ok && verdict.inserts + verdict.deletes + verdict.collected === 0 ? 'pass' : new Refusal('read-only')
    }
    const verdict = authorizeUpdate(document, frame.payload, gate.grant, this.#presentElsewhere(document, gate))
    if (verdict.ok) {
      // Garbage-collected structs insert nothing but move the document's state on: a room's bytes count them.
      if (verdict.inserts + verdict.deletes + verdict.collected === 0) return 'pass'
      if (!this.#sizes.admits(gate.roomName, document, frame.payload.byteLength)) return new Refusal('room-too-large')
      this.#metrics.updatesIn++
      return 'pass'
    }
    if (!verdict.missing) return verdict.refusal
    // It depends on updates not here yet: held, checked again after a message once the document has what it waits for.
    return this.#held.hold(gate, frame.payload, frame.step, verdict.needs, verdict.detail) ?? 'drop'
  }

  /**
   * One part of a message sent in parts: kept until the last, then the whole is decided as a
   * Sync message that came whole, and applied here (the part itself is dropped, as Hocuspocus
   * cannot be handed another message).
   */
  #decidePart(gate: ConnectionGate, connection: Connection, document: Document, header: PartHeader, bytes: Uint8Array): Decision {
    if (header.index === 0) {
      if (gate.parts !== null) return new Refusal('malformed-message', "a message's first part came before the last part of the message before it")
      const problem = firstPartProblem(header)
      if (problem !== null) return new Refusal('malformed-message', problem)
      // A reader's whole is never applied: bound by what a room may hold, not by what this one has left.
      if (connection.readOnly ? header.total > this.#limits.maxRoomBytes : !this.#sizes.admits(gate.roomName, document, header.total)) return new Refusal('room-too-large')
      gate.parts = new MessageParts(header)
    }
    const parts = gate.parts
    if (parts === null) return new Refusal('malformed-message', `part ${header.index} of a message whose first part did not come`)
    const problem = parts.problem(header, bytes)
    if (problem !== null) return new Refusal('malformed-message', problem)
    const now = this.#now()
    if (!this.#roomForPart(gate, bytes.byteLength, now)) return new Refusal('rate-limited')
    parts.add(bytes)
    this.#assembling.added(gate, connection, gate.grant.subject, header.total, bytes.byteLength, now, gate.received())
    if (!parts.complete) return 'drop'
    this.#dropParts(gate)
    this.#metrics.messagesInParts++
    const frame = readFrame(parts.whole())
    if (!frame.ok || frame.room !== gate.roomName || (frame.type !== MESSAGE.sync && frame.type !== MESSAGE.syncReply) || (frame.step !== SYNC_STEP.step2 && frame.step !== SYNC_STEP.update)) {
      return new Refusal('malformed-message', `its parts do not make a step 2 or update of ${gate.roomName}`)
    }
    const decision = this.#decideSync(gate, connection, document, frame)
    if (decision !== 'pass') return decision
    // A reader's step 2 is not applied; Hocuspocus acknowledges it when it brings nothing new.
    if (connection.readOnly) acknowledge(connection, document, frame.step === SYNC_STEP.step2 && Y.snapshotContainsUpdate(Y.snapshot(document), frame.payload))
    else applyAsHocuspocus(connection, document, frame.payload)
    return 'drop'
  }

  /**
   * Whether `bytes` more of `gate`'s message fit: within its sender's share (one room's worth),
   * and under the cap on bytes in parts once other connections' messages that stalled or are
   * overdue, if letting them go makes room, are let go.
   */
  #roomForPart(gate: ConnectionGate, bytes: number, now: number): boolean {
    if (this.#assembling.bytesOf(gate.grant.subject) + bytes > this.#limits.maxRoomBytes) return false
    const stalled = this.#assembling.stalled(bytes, this.#limits.maxAssemblingBytes, now, gate, (owner) => owner.received())
    if (stalled === null) return false
    for (const [connection, owner] of stalled) {
      this.#metrics.messagesInPartsStalled++
      this.#log('info', `let go of ${owner.grant.subject}'s message in parts in ${owner.roomName}: stalled or overdue while others' parts needed the room`)
      this.#refuse(owner, connection, null, null, new Refusal('rate-limited'))
    }
    return true
  }

  /** Lets go of the message `gate` was receiving in parts (whole, or never to be). */
  #dropParts(gate: ConnectionGate): void {
    gate.parts = null
    this.#assembling.release(gate)
  }

  /** Whether a client id is another live connection's presence in `document` (what `authorizeUpdate` refuses to let `gate` write under first). */
  #presentElsewhere(document: Document, gate: ConnectionGate): (client: number) => boolean {
    return (client) => this.presence.heldByAnother(document, gate, client)
  }

  #neutralize(data: Uint8Array, frame: RelayFrame): void {
    if (frame.ok) data[frame.typeAt] = MESSAGE.queryAwareness
  }

  /**
   * Ends a connection's gate (refused, expired or closed): its later messages are dropped, its
   * held updates and parts let go, its deadline disarmed. False when it had ended already.
   */
  #end(gate: ConnectionGate): boolean {
    if (gate.ended) return false
    gate.ended = true
    this.#expiry.disarm(gate)
    this.#held.drop(gate)
    this.#dropParts(gate)
    return true
  }

  /**
   * Closes a connection whose token expired (its held updates are dropped: the client sends
   * them again after joining with a fresh token). Not a refusal: nothing it sent was wrong.
   */
  #expire(gate: ConnectionGate, connection: Connection): void {
    if (!this.#end(gate)) return
    this.#metrics.tokensExpired++
    this.#log('info', `closed ${gate.grant.subject} in ${gate.roomName}: its token expired`)
    connection.close({ code: 1000, reason: TOKEN_EXPIRED_CLOSE })
  }

  /** Tells the client why, closes this room's connection, and keeps the message from Hocuspocus. */
  #refuse(gate: ConnectionGate, connection: Connection, data: Uint8Array | null, frame: RelayFrame | null, refusal: Refusal): void {
    if (data !== null && frame !== null) this.#neutralize(data, frame)
    if (!this.#end(gate)) return
    this.#metrics.refused(refusal.kind)
    this.#log('info', `refused ${gate.grant.subject} in ${gate.roomName}: ${refusal.text}`)
    connection.sendStateless(refusedPayload(gate.roomName, refusal))
    connection.close({ code: 1000, reason: `tidemark:refused ${refusal.text}` })
  }
}
