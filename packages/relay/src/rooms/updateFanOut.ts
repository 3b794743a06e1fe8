import { type Document, type Extension, type onLoadDocumentPayload, OutgoingMessage } from '@hocuspocus/server'
import type * as Y from 'yjs'
import { type CatchUpCounts, catchingUp, sendFromRedis } from '../gate/catchUp.ts'
import type { RelayLog } from '../relayLog.ts'

/** The name of the update listener every Hocuspocus 3.4 `Document` registers on itself. */
const HOCUSPOCUS_BROADCAST = 'bound handleUpdate'

/** The listeners of a `Y.Doc` (lib0's `ObservableV2`): event name → functions. */
interface DocObservers {
  readonly _observers: Map<string, Set<(...args: unknown[]) => void>>
}

/**
 * Sends each room update to the room's other connections only. Hocuspocus 3.4 sends every
 * update to every connection of its document, the one it came from included: a device would
 * download everything it uploads (and the relay write it), for nothing, since applying a doc's
 * own update changes nothing. This extension swaps that listener, when a room is created, for
 * one that runs the same hooks (`onChange`, the store, Redis) and skips the sender. An update
 * applied under `remoteOrigin` (what the other relays sent through Redis) is paced per
 * connection (`sendFromRedis`), and a connection waiting for its catch-up is sent none.
 *
 * @example
 * const hocuspocus = new Hocuspocus({ extensions: [new UpdateFanOut(log, redis?.remoteOrigin, metrics), persistence] })
 */
export class UpdateFanOut implements Extension {
  readonly extensionName = 'TidemarkUpdateFanOut'
  /** Before any extension loads the room, so that no update reaches a client the old way. */
  readonly priority = 5000
  readonly #log: RelayLog
  readonly #remoteOrigin: unknown
  readonly #counts: CatchUpCounts | undefined
  #warned = false

  /** `remoteOrigin`: the transaction origin of the updates other relays sent (none without Redis); `counts`: where catch-ups are counted. */
  constructor(log: RelayLog, remoteOrigin?: unknown, counts?: CatchUpCounts) {
    this.#log = log
    this.#remoteOrigin = remoteOrigin
    this.#counts = counts
  }

  async onLoadDocument({ document }: onLoadDocumentPayload): Promise<void> {
    if (!sendToOthers(document, this.#remoteOrigin, this.#counts) && !this.#warned) {
      // A Hocuspocus whose document broadcasts differently: keep its behaviour, and say so once.
      this.#warned = true
      this.#log('warn', 'Hocuspocus does not broadcast updates as 3.4 does: every update is sent back to its sender too')
    }
  }
}

/**
 * Replaces `document`'s broadcast of updates by one that skips the update's origin, and paces
 * those applied under `remoteOrigin` (when given); false (and nothing changed) when the document
 * has no Hocuspocus 3.4 broadcast listener.
 *
 * @example
 * sendToOthers(document) // true: an update from a connection is sent to the other connections
 */
export function sendToOthers(document: Document, remoteOrigin?: unknown, counts?: CatchUpCounts): boolean {
  const listeners = (document as unknown as DocObservers)._observers?.get('update')
  const broadcast = listeners === undefined ? undefined : [...listeners].find((listener) => listener.name === HOCUSPOCUS_BROADCAST)
  if (broadcast === undefined) return false
  document.off('update', broadcast)
  document.on('update', (update: Uint8Array, origin: unknown, _document: Y.Doc, transaction: Y.Transaction) => {
    // The same order as Hocuspocus: hooks first, then the connections.
    document.callbacks.onUpdate(document, origin as Parameters<Document['callbacks']['onUpdate']>[1], update)
    const remote = remoteOrigin !== undefined && origin === remoteOrigin
    let message: Uint8Array | undefined
    for (const connection of document.getConnections()) {
      // A connection catching up is sent this update in its catch-up.
      if (connection === origin || catchingUp(connection)) continue
      message ??= new OutgoingMessage(document.name).createSyncMessage().writeUpdate(update).toUint8Array()
      if (remote) sendFromRedis(connection, document, message, transaction.beforeState, counts)
      else connection.send(message)
    }
  })
  return true
}
