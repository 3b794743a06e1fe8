/**
 * Catch-ups: what a room's other relays send through Redis reaches each connection of the room
 * paced, like the answer to a join (`SocketGuard.roomForAnswer`). A relay that loads a room the
 * others hold (its store lacks what they took) answers a join from what it has, and the others'
 * answer comes after, through Redis: the room's whole state, as one update. Sent to every
 * connection at once, a client joining many such rooms would have its socket's queue pass
 * `maxQueuedBytes` and be cut, though it reads.
 *
 * So an update from Redis is sent to a connection at once only while its socket's queue has room
 * for it as it has for an answer (`SocketGuard.hasRoomFor`): plain live updates go out at once.
 * Otherwise the connection falls behind: it is sent nothing more of its room until its catch-up,
 * everything the room took since the state before that update (`Y.encodeStateAsUpdate` from that
 * state vector, with the room's deletions), which waits in the socket's queue of answers and is
 * encoded when weighed there (a join answered meanwhile carries the room as it stood then, so the
 * catch-up starts over from there: `joinAnswered`). The client ends with every update, in one
 * message, and nothing is held but that state vector (the catch-up weighed last, waiting at the
 * head of the queue, holds its encoding until it is sent; the connections that fell behind on the
 * same update share both: a room's many clients encode it once). A socket that does not read is
 * cut all the same: by what else is queued for it past `maxQueuedBytes`, or by its missed pings.
 */
import { type Connection, type Document, OutgoingMessage } from '@hocuspocus/server'
import * as Y from 'yjs'
import type { RelayContext } from './connectionGate.ts'
import { docVersion } from './hocuspocusSteps.ts'

/**
 * A catch-up: the state the room was in before the update its connections were not sent, and the
 * message last weighed (with the room's version then). Every connection that fell behind on the
 * same update shares it: a storm of a room's clients (each socket's queue busy with its join's
 * answer when the other relays' state comes) encodes the room, and holds the encoding, once, not
 * once per client. It is let go once the last of them was sent it (or left).
 */
interface CatchUp {
  readonly from: Uint8Array
  message: Uint8Array | null
  version: number
  /** Connections waiting for it. */
  waiting: number
  /** The room's version when the connection's join was answered (which carried the room as it stood then): nothing to send while the room did not move since. */
  readonly answered?: number
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
    .roomForAnswer(() => current(connection, document)?.byteLength ?? 0)
    .then(() => {
      const next = current(connection, document)
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
 *
 * @example
 * await socket.roomForAnswer(weigh)
 * joinAnswered(connection, document) // Hocuspocus answers the step 1 now
 */
export function joinAnswered(connection: Connection, document: Document): void {
  if (!behind.has(connection)) return
  letGo(connection)
  behind.set(connection, { from: Y.encodeStateVector(document), message: null, version: -1, waiting: 1, answered: docVersion(document) })
}

/** `connection` waits for its catch-up no more: the last connection of a catch-up lets its encoding go. */
function letGo(connection: Connection): void {
  const catchUp = behind.get(connection)
  behind.delete(connection)
  if (catchUp !== undefined && --catchUp.waiting === 0) catchUp.message = null
}

/** The catch-up from the room's state `before` an update, shared by the connections that fell behind on it. */
function catchUpFrom(before: Map<number, number>): CatchUp {
  let catchUp = fromState.get(before)
  if (catchUp === undefined) {
    catchUp = { from: Y.encodeStateVector(before), message: null, version: -1, waiting: 0 }
    fromState.set(before, catchUp)
  }
  return catchUp
}

/**
 * `connection`'s catch-up message as the room stands now; null once the connection left the room
 * or its socket closed, or when the room took nothing since the connection's join was answered.
 */
function current(connection: Connection, document: Document): Uint8Array | null {
  const catchUp = behind.get(connection)
  if (catchUp === undefined || document.isDestroyed || document.connections.get(connection.webSocket)?.connection !== connection || connection.webSocket.readyState !== connection.webSocket.OPEN) {
    return null
  }
  const version = docVersion(document)
  if (version === catchUp.answered) return null
  if (catchUp.message === null || catchUp.version !== version) {
    const update = Y.encodeStateAsUpdate(document, catchUp.from)
    catchUp.message = new OutgoingMessage(document.name).createSyncMessage().writeUpdate(update).toUint8Array()
    catchUp.version = version
  }
  return catchUp.message
}
