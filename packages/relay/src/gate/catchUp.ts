/**
 * Catch-ups: what a room's other relays send through Redis reaches each connection of the room
 * paced, like the answer to a join (`SocketGuard.roomForAnswer`). A relay that loads a room the
 * others hold (its store lacks what they took) answers a join from what it has, and the others'
 * answer comes after, through Redis: the room's whole state, as one update. Sent to every
 * connection at once, a client joining many such rooms would have its socket's queue pass
 * `maxQueuedBytes` and be cut, though it reads.
 *
 * So an update from Redis is sent to a connection at once only while its socket's queue has
 * room for it as it has for an answer (`SocketGuard.hasRoomFor`): plain live updates go out at
 * once. Otherwise the connection falls behind: it is sent nothing more of its room until its
 * catch-up, everything the room took since the state before that update
 * (`Y.encodeStateAsUpdate` from that state vector, with the room's deletions), which waits in
 * the socket's queue of answers (a join answered meanwhile carries the room as it stood then,
 * so the catch-up starts over from there: `joinAnswered`). It is weighed there as a join's
 * answer is, measured from the room's structs to the byte without encoding it
 * (`answerUpdateBytes`, `syncMessageBytes`), once per change of the room, and encoded once,
 * when it is sent: a catch-up weighed again at every drain of a slow socket while the room
 * changes costs no encoding a look. A room the measure does not know (one holding pending
 * updates) has its catch-up encoded to be weighed, and the encoding held until it is sent or a
 * look finds the room changed. The client ends with every update, in one message, and nothing is held but
 * that state vector (and the message last sent, while other connections that share the catch-up
 * wait: let go at their next look once the room changed). The connections that fell behind on
 * the same update share one catch-up: it is measured once per change of the room for all of
 * them, and those sent it at one version of the room share one encoding; so do those whose joins
 * were answered at one version of the room (`joinAnswered`). A socket that does not
 * read is cut all the same: by what else is queued for it past `maxQueuedBytes`, or by its
 * missed pings.
 */
import { type Connection, type Document, OutgoingMessage } from '@hocuspocus/server'
import * as Y from 'yjs'
import type { RelayContext } from './connectionGate.ts'
import { docVersion } from './hocuspocusSteps.ts'
import { answerUpdateBytes, syncMessageBytes } from './joinAnswer.ts'

/**
 * A catch-up: the state the room was in before the update its connections were not sent, its
 * weight at the room's version `weighedAt`, and its message as encoded at `encodedAt`. Every
 * connection that fell behind on the same update shares it: a storm of a room's clients (each
 * socket's queue busy with its join's answer when the other relays' state comes) is weighed once
 * per change of the room, and the connections sent it at one version share one encoding, not one
 * each. It is let go once the last of them was sent it (or left).
 */
interface CatchUp {
  readonly from: Map<number, number>
  weight: number
  /** The room's version `weight` was measured at; -1 before the first weighing. */
  weighedAt: number
  /** Held from its encoding until a look finds the room moved on, or the last connection waiting was sent it. */
  message: Uint8Array | null
  encodedAt: number
  /** Connections waiting for it. */
  waiting: number
  /** The room's version when the connection's join was answered (which carried the room as it stood then): nothing to send while the room did not move since. */
  readonly answered?: number
  /** The room of a catch-up from a join's answer, which shares it with the joins answered at the same version (`answeredAt`). */
  readonly room?: Y.Doc
}

/** Where catch-ups are counted (the relay's metrics): how many were sent, and their bytes. */
export interface CatchUpCounts {
  catchUps: number
  catchUpBytes: number
}

/** Connections behind on their room: sent nothing of it until their catch-up. */
const behind = new WeakMap<Connection, CatchUp>()

/**
 * The catch-up of the connections that fell behind on one update, by the state before it
 * (`transaction.beforeState`: one object for every connection that update is sent to).
 */
const fromState = new WeakMap<Map<number, number>, CatchUp>()

/**
 * The catch-up of the connections whose join was answered while they waited for one, by room, at
 * the room's version of the latest answer (`joinAnswered`): a storm of joins answered as the room
 * stands shares it (one state vector held, one measure per change, one encoding per version sent
 * at), as the connections that fell behind on one update do. Let go with its last connection.
 */
const answeredAt = new WeakMap<Y.Doc, CatchUp>()

/**
 * True while `connection` waits for its catch-up: every update of its room reaches it in that.
 *
 * @example
 * if (!catchingUp(connection)) connection.send(message)
 */
export function catchingUp(connection: Connection): boolean {
  return behind.has(connection)
}

/**
 * Sends `connection` the update message `message` of `document`, which came from another relay
 * in a transaction that found the room at state `before` (`transaction.beforeState`): at once
 * when its socket's queue has room for it, otherwise in a catch-up, paced.
 *
 * @example
 * document.on('update', (update, origin, _doc, transaction) => sendFromRedis(connection, document, message, transaction.beforeState))
 */
export function sendFromRedis(connection: Connection, document: Document, message: Uint8Array, before: Map<number, number>, counts?: CatchUpCounts): void {
  const socket = (connection.context as RelayContext | undefined)?.socket
  if (socket === undefined || socket.hasRoomFor(message.byteLength)) {
    connection.send(message)
    return
  }
  const catchUp = catchUpFrom(before)
  catchUp.waiting++
  behind.set(connection, catchUp)
  void socket
    .roomForAnswer(() => weight(connection, document))
    .then(() => {
      const next = catchUpMessage(connection, document)
      letGo(connection)
      if (next === null) return
      connection.send(next)
      if (counts !== undefined) {
        counts.catchUps++
        counts.catchUpBytes += next.byteLength
      }
    })
}

/**
 * `connection`'s join is answered now (Hocuspocus sends the answer in the microtasks after): the
 * answer carries everything of the room the client lacks, so the catch-up the connection waits
 * for, if any, carries only what the room takes from now on, not what the answer sends again.
 * The connections whose joins are answered at one version of the room share that catch-up.
 *
 * @example
 * await socket.roomForAnswer(weigh)
 * joinAnswered(connection, document) // Hocuspocus answers the step 1 now
 */
export function joinAnswered(connection: Connection, document: Document): void {
  if (!behind.has(connection)) return
  letGo(connection)
  const version = docVersion(document)
  let catchUp = answeredAt.get(document)
  if (catchUp === undefined || catchUp.answered !== version) {
    catchUp = { from: Y.decodeStateVector(Y.encodeStateVector(document)), weight: 0, weighedAt: -1, message: null, encodedAt: -1, waiting: 0, answered: version, room: document }
    answeredAt.set(document, catchUp)
  }
  catchUp.waiting++
  behind.set(connection, catchUp)
}

/** `connection` waits for its catch-up no more: the last connection of a catch-up lets its encoding go (and its room, the catch-up). */
function letGo(connection: Connection): void {
  const catchUp = behind.get(connection)
  behind.delete(connection)
  if (catchUp === undefined || --catchUp.waiting > 0) return
  catchUp.message = null
  if (catchUp.room !== undefined && answeredAt.get(catchUp.room) === catchUp) answeredAt.delete(catchUp.room)
}

/** The catch-up from the room's state `before` an update, shared by the connections that fell behind on it. */
function catchUpFrom(before: Map<number, number>): CatchUp {
  let catchUp = fromState.get(before)
  if (catchUp === undefined) {
    catchUp = { from: new Map(before), weight: 0, weighedAt: -1, message: null, encodedAt: -1, waiting: 0 }
    fromState.set(before, catchUp)
  }
  return catchUp
}

/**
 * The catch-up `connection` waits for, with the room's version now; null once the connection left
 * the room or its socket closed, or when the room took nothing since the connection's join was
 * answered.
 */
function waitedFor(connection: Connection, document: Document): { catchUp: CatchUp; version: number } | null {
  const catchUp = behind.get(connection)
  if (catchUp === undefined || document.isDestroyed || document.connections.get(connection.webSocket)?.connection !== connection || connection.webSocket.readyState !== connection.webSocket.OPEN) {
    return null
  }
  const version = docVersion(document)
  return version === catchUp.answered ? null : { catchUp, version }
}

/**
 * Bytes of `connection`'s catch-up message as the room stands now (0 when there is none to send),
 * measured without encoding it: its update's bytes (`answerUpdateBytes`, what a join stating the
 * catch-up's state would be sent) framed as one sync message. Measured once per change of the
 * room, for all the connections that share the catch-up. A room the measure does not know (it
 * holds pending updates, or a struct of a kind Yjs 13.6 does not write) has the message encoded,
 * and weighed at its length.
 */
function weight(connection: Connection, document: Document): number {
  const waited = waitedFor(connection, document)
  if (waited === null) return 0
  const { catchUp, version } = waited
  if (catchUp.weighedAt === version) return catchUp.weight
  // The encoding of a version the room moved past would not be sent: let it go.
  if (catchUp.encodedAt !== version) catchUp.message = null
  const update = answerUpdateBytes(document, catchUp.from)
  catchUp.weight = update === null ? encoded(catchUp, document, version).byteLength : syncMessageBytes(document.name, update)
  catchUp.weighedAt = version
  return catchUp.weight
}

/** `connection`'s catch-up message as the room stands now, to send; null when there is none to send. */
function catchUpMessage(connection: Connection, document: Document): Uint8Array | null {
  const waited = waitedFor(connection, document)
  return waited === null ? null : encoded(waited.catchUp, document, waited.version)
}

/** The catch-up's message at the room's `version`: encoded once a version, whatever number of its connections are sent it then. */
function encoded(catchUp: CatchUp, document: Document, version: number): Uint8Array {
  if (catchUp.message === null || catchUp.encodedAt !== version) {
    const update = Y.encodeStateAsUpdate(document, Y.encodeStateVector(catchUp.from))
    catchUp.message = new OutgoingMessage(document.name).createSyncMessage().writeUpdate(update).toUint8Array()
    catchUp.encodedAt = version
  }
  return catchUp.message
}
