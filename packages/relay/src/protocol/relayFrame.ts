/**
 * The Hocuspocus wire format, as far as the relay reads it before Hocuspocus does:
 *
 *   varString documentName, varUint type, then per type:
 *     Sync (0) / SyncReply (4): varUint step (0 step 1, 1 step 2, 2 update), varUint8Array payload
 *     Awareness (1): varUint8Array awareness update
 *     Auth (2), QueryAwareness (3), Stateless (5), BroadcastStateless (6), CLOSE (7)
 *     Part (100, Tidemark's own): varUint index, varUint count, varUint total, varUint8Array bytes
 *
 * A Part carries one piece of a Sync message (step 2 or update) larger than the relay takes in
 * one WebSocket message (`maxMessageBytes`): `count` parts, numbered from 0, whose bytes in order
 * are the whole message (its room name included), `total` bytes long. `connectRelay` sends one
 * instead of a message over the limit; the relay applies the whole once its last part came.
 */
import * as decoding from 'lib0/decoding'

/**
 * Hocuspocus message types (the relay's subset of its MessageType).
 *
 * @example
 * MESSAGE.sync // 0
 */
export const MESSAGE = {
  sync: 0,
  awareness: 1,
  auth: 2,
  queryAwareness: 3,
  syncReply: 4,
  stateless: 5,
  broadcastStateless: 6,
  close: 7,
  part: 100,
} as const

/**
 * Sync steps inside a Sync or SyncReply message (y-protocols).
 *
 * @example
 * SYNC_STEP.update // 2
 */
export const SYNC_STEP = { step1: 0, step2: 1, update: 2 } as const

/**
 * One decoded frame header. `typeAt` is the offset of the type byte, so the relay can turn a
 * message it refuses or holds into a no-op for Hocuspocus.
 *
 * @example
 * const frame = readFrame(bytes)
 * if (frame.ok && frame.type === MESSAGE.sync) console.log(frame.room, frame.step)
 */
export type RelayFrame =
  | {
      readonly ok: true
      readonly room: string
      readonly type: number
      readonly typeAt: number
      /** Sync step for Sync / SyncReply, else -1. */
      readonly step: number
      /** The sync or awareness payload, or a part's bytes; empty for other types. */
      readonly payload: Uint8Array
      /** A Part's place in its message; undefined for other types. */
      readonly part?: PartHeader
    }
  | { readonly ok: false; readonly problem: string }

/**
 * Where a Part's bytes go: the `index`th of `count` parts of a message of `total` bytes.
 *
 * @example
 * const header: PartHeader = { index: 0, count: 3, total: 2_500_000 }
 */
export interface PartHeader {
  readonly index: number
  readonly count: number
  readonly total: number
}

const EMPTY = new Uint8Array(0)

/**
 * Reads a frame's header and payload. Never throws: malformed bytes give `ok: false`.
 *
 * @example
 * readFrame(new Uint8Array([0xff])) // { ok: false, problem: 'truncated frame' }
 */
export function readFrame(bytes: Uint8Array): RelayFrame {
  try {
    const decoder = decoding.createDecoder(bytes)
    const room = decoding.readVarString(decoder)
    const typeAt = decoder.pos
    const type = decoding.readVarUint(decoder)
    if (decoder.pos !== typeAt + 1) return { ok: false, problem: `message type ${type} out of range` }
    if (type === MESSAGE.sync || type === MESSAGE.syncReply) {
      const step = decoding.readVarUint(decoder)
      const payload = decoding.readVarUint8Array(decoder)
      return { ok: true, room, type, typeAt, step, payload }
    }
    if (type === MESSAGE.part) {
      const part = { index: decoding.readVarUint(decoder), count: decoding.readVarUint(decoder), total: decoding.readVarUint(decoder) }
      return { ok: true, room, type, typeAt, step: -1, payload: decoding.readVarUint8Array(decoder), part }
    }
    if (type === MESSAGE.awareness) return { ok: true, room, type, typeAt, step: -1, payload: decoding.readVarUint8Array(decoder) }
    if (type === MESSAGE.auth) {
      // Hocuspocus reads the sub-type and the token without a guard of its own.
      decoding.readVarUint(decoder)
      decoding.readVarString(decoder)
    }
    if (type === MESSAGE.stateless || type === MESSAGE.broadcastStateless) decoding.readVarString(decoder)
    return { ok: true, room, type, typeAt, step: -1, payload: EMPTY }
  } catch {
    return { ok: false, problem: 'truncated frame' }
  }
}

/**
 * The room a frame is for, or undefined when the frame does not even start with one.
 *
 * @example
 * frameRoom(bytes) // 'fleet-a/d07'
 */
export function frameRoom(bytes: Uint8Array): string | undefined {
  try {
    return decoding.readVarString(decoding.createDecoder(bytes))
  } catch {
    return undefined
  }
}

/**
 * One client's presence in an awareness update: whose, its clock, and whether it sets a state
 * (false: it removes the client's presence).
 *
 * @example
 * const entry: AwarenessEntry = { client: 5, clock: 1, present: false }
 */
export interface AwarenessEntry {
  readonly client: number
  readonly clock: number
  readonly present: boolean
}

/**
 * The entries of an awareness update, or why it is malformed. y-protocols applies it unchecked:
 * it is read here first (clients, clocks, JSON states) so a bad one is refused rather than
 * thrown inside Hocuspocus, and so the relay can tell whose presence it sets.
 *
 * @example
 * readAwareness(new Uint8Array([1, 5, 1, 4, 110, 117, 108, 108])) // [{ client: 5, clock: 1, present: false }]
 */
export function readAwareness(update: Uint8Array): AwarenessEntry[] | string {
  try {
    const decoder = decoding.createDecoder(update)
    const count = decoding.readVarUint(decoder)
    if (count > 1024) return `${count} awareness states in one update`
    const entries: AwarenessEntry[] = []
    for (let i = 0; i < count; i++) {
      const client = decoding.readVarUint(decoder)
      const clock = decoding.readVarUint(decoder)
      const state = decoding.readVarString(decoder)
      const present = JSON.parse(state) !== null
      // Hocuspocus encodes every state again to relay it, recursively: one nested deep enough
      // parses here and overflows the stack there, which resets the connection with the state
      // kept, and every later join of the room fails until it times out.
      if (present && nestingOf(state) > MAX_PRESENCE_NESTING) return `a presence state nested deeper than ${MAX_PRESENCE_NESTING} levels`
      entries.push({ client, clock, present })
    }
    return entries
  } catch (error) {
    return `malformed awareness update: ${error instanceof Error ? error.message : String(error)}`
  }
}

/** How deep a presence state may nest its arrays and objects: far above any presence's, far below what encoding it again overflows. */
export const MAX_PRESENCE_NESTING = 64

/** How deep the arrays and objects of the JSON text `json` nest (brackets inside strings do not count). */
function nestingOf(json: string): number {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // a backslash: the next character is escaped
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) deepest = Math.max(deepest, ++depth)
    else if (c === 0x5d || c === 0x7d) depth--
  }
  return deepest
}
