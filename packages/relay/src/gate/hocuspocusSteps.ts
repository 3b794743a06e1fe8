/**
 * Hocuspocus' own steps, taken by the gate for messages Hocuspocus was not handed (an update held
 * until what it depends on came, a whole put together from parts), and the count of a
 * document's transactions by which the gate knows whether anything changed since it last looked.
 */
import { type Connection, type Document, OutgoingMessage } from '@hocuspocus/server'
import * as Y from 'yjs'

const docVersions = new WeakMap<Y.Doc, { n: number }>()

/**
 * A count of `document`'s transactions (from the first call on): held updates are looked at
 * again only after it moved.
 *
 * @example
 * const before = docVersion(document)
 * Y.applyUpdate(document, update)
 * docVersion(document) > before // true
 */
export function docVersion(document: Y.Doc): number {
  let version = docVersions.get(document)
  if (version === undefined) {
    const counter = { n: 0 }
    version = counter
    docVersions.set(document, counter)
    document.on('afterTransaction', () => {
      counter.n++
    })
  }
  return version.n
}

/**
 * What Hocuspocus does with a client's step 2 or update it was not handed (held, or sent in
 * parts): applies it, then acknowledges it.
 *
 * @example
 * applyAsHocuspocus(connection, document, held.payload)
 */
export function applyAsHocuspocus(connection: Connection, document: Document, update: Uint8Array): void {
  Y.applyUpdate(document, update, connection)
  acknowledge(connection, document, true)
}

/**
 * Hocuspocus' SyncStatus: tells the client whether its step 2 or update was applied.
 *
 * @example
 * acknowledge(connection, document, false) // a reader's step 2 that brought something new
 */
export function acknowledge(connection: Connection, document: Document, applied: boolean): void {
  connection.send(new OutgoingMessage(document.name).writeSyncStatus(applied).toUint8Array())
}
