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
 * encoded when weighed there. The client ends with every update, in one message, and nothing is
 * held but that state vector (the catch-up weighed last, waiting at the head of the queue, holds
 * its encoding until it is sent). A socket that does not read is cut all the same: by what
 * else is queued for it past `maxQueuedBytes`, or by its missed pings.
 */
import { type Connection, type Document, OutgoingMessage } from '@hocuspocus/server'
import * as Y from 'yjs'
import type { RelayContext } from './connectionGate.ts'
import { docVersion } from './hocuspocusSteps.ts'

/**
 * One connection's catch-up: the state its room was in before the update it was not sent, and
 * the message last weighed (with the room's version then).
 */
interface CatchUp {
  readonly from: Uint8Array
  message: Uint8Array | null
  version: number
}

/** Connections behind on their room: sent nothing of it until their catch-up. */
const behind = new WeakMap<Connection, CatchUp>()

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
export function sendFromRedis(connection: Connection, document: Document, message: Uint8Array, before: Map<number, number>): void {
  const socket = (connection.context as RelayContext | undefined)?.socket
  if (socket === undefined || socket.hasRoomFor(message.byteLength)) {
    connection.send(message)
    return
  }
  const catchUp: CatchUp = { from: Y.encodeStateVector(before), message: null, version: -1 }
  behind.set(connection, catchUp)
  void socket
    .roomForAnswer(() => {
      const next = current(connection, document, catchUp)
      return next === null ? 0 : next.byteLength
    })
    .then(() => {
      const next = current(connection, document, catchUp)
      behind.delete(connection)
      if (next !== null) connection.send(next)
    })
}

/** The catch-up's message as the room stands now; null once the connection left the room or its socket closed. */
function current(connection: Connection, document: Document, catchUp: CatchUp): Uint8Array | null {
  if (document.isDestroyed || document.connections.get(connection.webSocket)?.connection !== connection || connection.webSocket.readyState !== connection.webSocket.OPEN) {
    catchUp.message = null
    return null
  }
  const version = docVersion(document)
  if (catchUp.message === null || catchUp.version !== version) {
    const update = Y.encodeStateAsUpdate(document, catchUp.from)
    catchUp.message = new OutgoingMessage(document.name).createSyncMessage().writeUpdate(update).toUint8Array()
    catchUp.version = version
  }
  return catchUp.message
}
