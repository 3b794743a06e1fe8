/**
 * What the tests of the join answer's weight (`joinAnswer.ts`) measure it against: the bytes
 * Hocuspocus sends, and the reads of a room's structs a measure makes; the large room the tests
 * of its cost weigh, and the writers of a room's settings.
 */
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'

/** The bytes Hocuspocus sends a client of `held` (encoded) in `room` for its step 1: a step 2, then its own step 1. */
export function answerBytes(document: Y.Doc, held: Uint8Array, room: string): number {
  const message = (step: number, payload: Uint8Array): number => {
    const encoder = encoding.createEncoder()
    encoding.writeVarString(encoder, room)
    encoding.writeVarUint(encoder, 0)
    encoding.writeVarUint(encoder, step)
    encoding.writeVarUint8Array(encoder, payload)
    return encoding.length(encoder)
  }
  return message(1, Y.encodeStateAsUpdate(document, held)) + message(0, Y.encodeStateVector(document))
}

/**
 * Counts every read by index of `client`'s structs in `document`, from now on: the document's list
 * of them is swapped for a Proxy that counts into `reads` (which a test may set back to 0).
 */
export function countStructReads(document: Y.Doc, client: number): { reads: number; readonly structs: readonly (Y.Item | Y.GC)[] } {
  const structs = document.store.clients.get(client) as (Y.Item | Y.GC)[]
  const counter = { reads: 0, structs }
  document.store.clients.set(
    client,
    new Proxy(structs, {
      get(target, property, receiver) {
        if (typeof property === 'string' && /^\d+$/.test(property)) counter.reads++
        return Reflect.get(target, property, receiver)
      },
    }),
  )
  return counter
}

/**
 * A room of 100,000 structs written by one device (client 11): each setting's first entry is a
 * struct of its own. The device's doc stays, to write more.
 */
export function settingsRoom(): { device: Y.Doc; settings: Y.Map<number>; document: Y.Doc } {
  const device = new Y.Doc()
  device.clientID = 11
  const settings = device.getMap<number>('settings')
  device.transact(() => {
    for (let i = 0; i < 100_000; i++) settings.set(`k${i}`, i)
  })
  const document = new Y.Doc()
  Y.applyUpdate(document, Y.encodeStateAsUpdate(device))
  return { device, settings, document }
}

/**
 * Writers of `room`'s settings, one doc per Yjs client id: `write(client, change)` brings the
 * writer up to the room, applies `change` to its settings map and sends the room what it lacks.
 */
export function settingsWriters(room: Y.Doc): (client: number, change: (settings: Y.Map<unknown>) => void) => void {
  const writers = new Map<number, Y.Doc>()
  return (client, change) => {
    let doc = writers.get(client)
    if (doc === undefined) {
      doc = new Y.Doc({ gc: room.gc })
      doc.clientID = client
      writers.set(client, doc)
    }
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(room, Y.encodeStateVector(doc)))
    change(doc.getMap('settings'))
    Y.applyUpdate(room, Y.encodeStateAsUpdate(doc, Y.encodeStateVector(room)))
  }
}
