import * as Y from 'yjs'
import { syncStatusTracker } from '../transport/syncStatusTracker.ts'

/**
 * Applies an update received from a peer without letting a hostile or truncated one throw
 * into the transport: a failure is reported to the doc's sync status tracker (which an
 * engine bound to the doc records as `invalid_remote_cell`) and `false` is returned.
 * Updates that decode are validated entry by entry by the binding.
 *
 * @example
 * socket.onmessage = (event) => applyPeerUpdate(doc, new Uint8Array(event.data), socket)
 */
export function applyPeerUpdate(doc: Y.Doc, update: Uint8Array, origin: unknown): boolean {
  try {
    Y.applyUpdate(doc, update, origin)
    return true
  } catch (error) {
    syncStatusTracker(doc).reportRejectedUpdate({ error, bytes: update.byteLength, origin })
    return false
  }
}
