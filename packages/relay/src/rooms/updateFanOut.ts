import { type Document, type Extension, type onLoadDocumentPayload, OutgoingMessage } from '@hocuspocus/server'
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
 * one that runs the same hooks (`onChange`, the store, Redis) and skips the sender.
 *
 * @example
 * const hocuspocus = new Hocuspocus({ extensions: [new UpdateFanOut(log), persistence] })
 */
export class UpdateFanOut implements Extension {
  readonly extensionName = 'TidemarkUpdateFanOut'
  /** Before any extension loads the room, so that no update reaches a client the old way. */
  readonly priority = 5000
  readonly #log: RelayLog
  #warned = false

  constructor(log: RelayLog) {
    this.#log = log
  }

  async onLoadDocument({ document }: onLoadDocumentPayload): Promise<void> {
    if (!sendToOthers(document) && !this.#warned) {
      // A Hocuspocus whose document broadcasts differently: keep its behaviour, and say so once.
      this.#warned = true
      this.#log('warn', 'Hocuspocus does not broadcast updates as 3.4 does: every update is sent back to its sender too')
    }
  }
}

/**
 * Replaces `document`'s broadcast of updates by one that skips the update's origin; false
 * (and nothing changed) when the document has no Hocuspocus 3.4 broadcast listener.
 *
 * @example
 * sendToOthers(document) // true: an update from a connection is sent to the other connections
 */
export function sendToOthers(document: Document): boolean {
  const listeners = (document as unknown as DocObservers)._observers?.get('update')
  const broadcast = listeners === undefined ? undefined : [...listeners].find((listener) => listener.name === HOCUSPOCUS_BROADCAST)
  if (broadcast === undefined) return false
  document.off('update', broadcast)
  document.on('update', (update: Uint8Array, origin: unknown) => {
    // The same order as Hocuspocus: hooks first, then the connections.
    document.callbacks.onUpdate(document, origin as Parameters<Document['callbacks']['onUpdate']>[1], update)
    let message: Uint8Array | undefined
    for (const connection of document.getConnections()) {
      if (connection === origin) continue
      message ??= new OutgoingMessage(document.name).createSyncMessage().writeUpdate(update).toUint8Array()
      connection.send(message)
    }
  })
  return true
}
