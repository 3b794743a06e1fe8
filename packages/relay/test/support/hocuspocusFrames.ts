/**
 * Hocuspocus messages written by hand, as a raw socket sends them: the room's name, the message
 * type, then its body. Tests use them to send what no provider would.
 */
import * as encoding from 'lib0/encoding'

/** Message types of the Hocuspocus protocol that the tests send. */
const SYNC = 0
const AWARENESS = 1
const AUTH = 2

/** A message of `type` for `room`, its body written by `write` (none by default). */
export function messageFrame(room: string, type: number, write: (encoder: encoding.Encoder) => void = () => undefined): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarString(encoder, room)
  encoding.writeVarUint(encoder, type)
  write(encoder)
  return encoding.toUint8Array(encoder)
}

/** An Auth message carrying `token` (the first of a room, or a token refresh on an open one). */
export function authFrame(room: string, token: string): Uint8Array {
  return messageFrame(room, AUTH, (e) => {
    encoding.writeVarUint(e, 0)
    encoding.writeVarString(e, token)
  })
}

/** A sync message of `step` (0: step 1, a state vector; 1: step 2; 2: an update) carrying `payload`; `type` other than sync for hostile tests. */
export function syncFrame(room: string, step: number, payload: Uint8Array, type = SYNC): Uint8Array {
  return messageFrame(room, type, (e) => {
    encoding.writeVarUint(e, step)
    encoding.writeVarUint8Array(e, payload)
  })
}

/** A sync update message carrying the Yjs update `update`. */
export function updateFrame(room: string, update: Uint8Array): Uint8Array {
  return syncFrame(room, 2, update)
}

/** An awareness message carrying `payload`. */
export function awarenessFrame(room: string, payload: Uint8Array): Uint8Array {
  return messageFrame(room, AWARENESS, (e) => encoding.writeVarUint8Array(e, payload))
}

/** An awareness message for `room` with the given entries, each state as JSON text (`'null'`: removed). */
export function presenceText(room: string, entries: readonly (readonly [client: number, clock: number, json: string])[]): Uint8Array {
  const update = encoding.createEncoder()
  encoding.writeVarUint(update, entries.length)
  for (const [client, clock, json] of entries) {
    encoding.writeVarUint(update, client)
    encoding.writeVarUint(update, clock)
    encoding.writeVarString(update, json)
  }
  return awarenessFrame(room, encoding.toUint8Array(update))
}

/** The relay's Part message type (a Sync message over the size limit, in parts). */
export const PART = 100

/** Part `index` of `count` of a message of `total` bytes in `room`. */
export function partFrame(room: string, index: number, count: number, total: number, bytes: Uint8Array): Uint8Array {
  return messageFrame(room, PART, (e) => {
    encoding.writeVarUint(e, index)
    encoding.writeVarUint(e, count)
    encoding.writeVarUint(e, total)
    encoding.writeVarUint8Array(e, bytes)
  })
}

/** `message` cut into `count` parts of `room`. */
export function partsOf(room: string, message: Uint8Array, count: number): Uint8Array[] {
  const size = Math.ceil(message.byteLength / count)
  return Array.from({ length: count }, (_, i) => partFrame(room, i, count, message.byteLength, message.subarray(i * size, (i + 1) * size)))
}
