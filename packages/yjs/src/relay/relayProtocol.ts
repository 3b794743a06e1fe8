/**
 * The wire format of a Tidemark relay: the Hocuspocus 3.4 protocol, as `@hocuspocus/provider`
 * and `@hocuspocus/server` speak it. Every message, both ways, is
 *
 *   varString  documentName   the room
 *   varUint    type           below
 *   payload                   by type
 *
 * - Sync 0 (and SyncReply 4 from a server answering a direct connection): varUint step, then
 *   varUint8Array: step 1 (a state vector), step 2 (an update: what the receiver misses),
 *   update 2 (a live update). The server answers a client's step 1 with its own step 1, then
 *   its step 2.
 * - Awareness 1: varUint8Array, a y-protocols awareness update.
 * - Auth 2: varUint subtype, then Token 0 + varString token (client to server; from the server,
 *   Token 0 alone asks for a fresh token), PermissionDenied 1 + varString reason, Authenticated 2
 *   + varString scope (`read-write` or `readonly`).
 * - QueryAwareness 3: no payload (client to server only). Stateless 5 / BroadcastStateless 6:
 *   varString payload.
 * - Close 7: from the client, no payload (close this room); from the server, varString reason
 *   (the server closed this room's connection; the socket stays open for the others).
 * - SyncStatus 8: varUint 1 when the client's step 2 or update was applied, 0 when it was not
 *   (a read-only connection).
 * - Part 100 (a Tidemark relay's own, client to relay): varUint index, varUint count, varUint
 *   total, varUint8Array bytes. A Sync message over the relay's `maxMessageBytes` goes as
 *   `count` parts (index from 0, back to back), whose bytes in order are the whole message (its
 *   room included, `total` bytes); the relay applies the whole once the last part came, and
 *   acknowledges it once, as a message that came whole.
 */
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'

export const MESSAGE_SYNC = 0
export const MESSAGE_AWARENESS = 1
export const MESSAGE_AUTH = 2
export const MESSAGE_SYNC_REPLY = 4
export const MESSAGE_STATELESS = 5
export const MESSAGE_CLOSE = 7
export const MESSAGE_SYNC_STATUS = 8
export const MESSAGE_PART = 100

export const SYNC_STEP_1 = 0
export const SYNC_STEP_2 = 1
export const SYNC_UPDATE = 2

export const AUTH_TOKEN = 0
export const AUTH_PERMISSION_DENIED = 1
export const AUTH_AUTHENTICATED = 2

/** The scope a server grants with `Authenticated`: a read-only connection applies no update. */
export const SCOPE_READ_ONLY = 'readonly'

const utf8Encoder = new TextEncoder()
const utf8Decoder = new TextDecoder()

/** Writes a varString (lib0's layout: varUint byte length, UTF-8 bytes) without lib0's string fallbacks for engines that lack TextEncoder. */
export function writeString(encoder: encoding.Encoder, text: string): void {
  encoding.writeVarUint8Array(encoder, utf8Encoder.encode(text))
}

/** Reads a varString. */
export function readString(decoder: decoding.Decoder): string {
  return utf8Decoder.decode(decoding.readVarUint8Array(decoder))
}

/** An incoming message: its room and type read, the payload left in `decoder`. */
export interface RelayMessage {
  readonly room: string
  readonly type: number
  readonly decoder: decoding.Decoder
}

/** Reads a message's room and type; throws (lib0's errors) on bytes too short to hold them. */
export function readRelayMessage(bytes: Uint8Array): RelayMessage {
  const decoder = decoding.createDecoder(bytes)
  const room = readString(decoder)
  const type = decoding.readVarUint(decoder)
  return { room, type, decoder }
}

/** A message for `room` of `type`, its payload written by `write`. */
export function relayMessage(room: string, type: number, write?: (encoder: encoding.Encoder) => void): Uint8Array<ArrayBuffer> {
  const encoder = encoding.createEncoder()
  writeString(encoder, room)
  encoding.writeVarUint(encoder, type)
  write?.(encoder)
  return encoding.toUint8Array(encoder)
}

/** A Sync message: `step` and its bytes (a state vector or an update). */
export function syncMessage(room: string, step: number, bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return relayMessage(room, MESSAGE_SYNC, (encoder) => {
    encoding.writeVarUint(encoder, step)
    encoding.writeVarUint8Array(encoder, bytes)
  })
}

/** Bytes a Part's index, count, total and its bytes' length take at most: 5 each (varUints below 2^35). */
const PART_FIELDS_BYTES = 20

/**
 * `message` (of `room`) as Part messages of at most `limit` bytes each, or null when `limit`
 * leaves a part no room for 64 bytes of it (a room name near the limit).
 *
 * @example
 * messageParts('fleet-a/d07', syncMessage('fleet-a/d07', SYNC_STEP_2, update), 1 << 20) // 3 parts for a 2.5 MB update
 */
export function messageParts(room: string, message: Uint8Array, limit: number): Uint8Array<ArrayBuffer>[] | null {
  const size = limit - relayMessage(room, MESSAGE_PART).byteLength - PART_FIELDS_BYTES
  if (size < 64) return null
  const count = Math.ceil(message.byteLength / size)
  const parts: Uint8Array<ArrayBuffer>[] = []
  for (let index = 0; index < count; index++) {
    parts.push(
      relayMessage(room, MESSAGE_PART, (encoder) => {
        encoding.writeVarUint(encoder, index)
        encoding.writeVarUint(encoder, count)
        encoding.writeVarUint(encoder, message.byteLength)
        encoding.writeVarUint8Array(encoder, message.subarray(index * size, (index + 1) * size))
      }),
    )
  }
  return parts
}
