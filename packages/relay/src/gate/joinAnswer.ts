/**
 * What the relay's answer to a join (a client's sync step 1) weighs, for the socket guard's pacing
 * (`SocketGuard.roomForAnswer`). Hocuspocus answers a step 1 with two messages: a step 2, the
 * update `Y.encodeStateAsUpdate(document, held)`, and its own step 1, the document's state vector.
 *
 * The step 2 is what the client lacks: the structs of every client whose clock in the document is
 * past the client's, then the document's whole delete set (Yjs 13.6, `writeStateAsUpdate`), then
 * what the document holds pending, if anything. A client that holds every clock the document
 * holds (a rejoin after a blip) is sent no struct: the update is one byte for "no client", then
 * the delete set, whose encoding (`writeDeleteSet`, V1: varuints) is measured here from the
 * document's structs without building it, and without touching their content. Otherwise the
 * structs' content would have to be encoded to know its size, as Hocuspocus encodes it to send
 * it: the answer is weighed at the room's size instead.
 *
 * The weight must not be smaller than the answer: the guard admits an answer on its weight, and
 * an answer larger than it could take the socket's queue past `maxQueuedBytes`.
 */
import type * as Y from 'yjs'
import { docVersion } from './hocuspocusSteps.ts'

/**
 * What each document's update to a client holding all of it weighs, as the document stood at its
 * `docVersion`: step 1s of holders (a rejoin storm, or a client sending them over and over) walk a
 * room's structs once per change of the room, not once per message.
 */
const holderUpdates = new WeakMap<Y.Doc, { readonly version: number; readonly bytes: number }>()

/** Bytes of a Hocuspocus message besides its payload and its room name: the type, the step, and the payload's length (a varuint, at most 8 bytes below 2^53). */
const MESSAGE_OVERHEAD = 10

/**
 * Bytes the answer to a step 1 stating `held` (its decoded state vector, `stateVectorBytes`
 * long) takes at most, both messages framed, when the client holds every clock of `document`'s;
 * null when it lacks some (or the document holds pending updates, which the answer would carry
 * too).
 *
 * @example
 * const held = Y.decodeStateVector(payload)
 * await socket.roomForAnswer(() => joinAnswerBytes(document, room, held, payload.byteLength) ?? sizes.get(room))
 */
export function joinAnswerBytes(document: Y.Doc, room: string, held: ReadonlyMap<number, number>, stateVectorBytes: number): number | null {
  const update = holderUpdateBytes(document, held)
  if (update === null) return null
  // The document's state vector names no client the client's does not, at no larger a clock.
  const roomName = Buffer.byteLength(room) + varUintBytes(Buffer.byteLength(room))
  return 2 * (roomName + MESSAGE_OVERHEAD) + update + stateVectorBytes
}

/**
 * Bytes of `Y.encodeStateAsUpdate(document, held)`, exactly, when `held` holds every clock of
 * `document`'s (the update is then its delete set alone); null otherwise, or when the document
 * holds pending updates. Walks the document's structs once per change of the document (the
 * measure is kept until the next): no content read, nothing allocated per struct.
 *
 * @example
 * holderUpdateBytes(document, Y.decodeStateVector(Y.encodeStateVector(document))) // Y.encodeStateAsUpdate(document, Y.encodeStateVector(document)).byteLength
 */
export function holderUpdateBytes(document: Y.Doc, held: ReadonlyMap<number, number>): number | null {
  const store = document.store
  if (store.pendingStructs !== null || store.pendingDs !== null) return null
  // Before the walk: a client joining for the first time costs a look at each client's clock.
  for (const [client, structs] of store.clients) {
    const last = structs[structs.length - 1]
    if (last !== undefined && (held.get(client) ?? 0) < last.id.clock + last.length) return null
  }
  const version = docVersion(document)
  const known = holderUpdates.get(document)
  if (known?.version === version) return known.bytes
  let deleted = 0
  let deleteSet = 0
  for (const [client, structs] of store.clients) {
    const ranges = deletedRangeBytes(structs)
    if (ranges.count === 0) continue
    deleted++
    deleteSet += varUintBytes(client) + varUintBytes(ranges.count) + ranges.bytes
  }
  // No client's structs (a varuint 0), then the delete set.
  const bytes = 1 + varUintBytes(deleted) + deleteSet
  holderUpdates.set(document, { version, bytes })
  return bytes
}

/** The delete set's ranges of one client's structs (runs of deleted structs, as Yjs merges them) and the bytes of their clocks and lengths. */
function deletedRangeBytes(structs: readonly Y.AbstractStruct[]): { count: number; bytes: number } {
  let count = 0
  let bytes = 0
  for (let i = 0; i < structs.length; i++) {
    const first = structs[i] as Y.AbstractStruct
    if (!first.deleted) continue
    let length = first.length
    for (let next = structs[i + 1]; next?.deleted === true; next = structs[++i + 1]) length += next.length
    count++
    bytes += varUintBytes(first.id.clock) + varUintBytes(length)
  }
  return { count, bytes }
}

/** Bytes of `n` written as a lib0 varuint (7 bits a byte). */
function varUintBytes(n: number): number {
  let bytes = 1
  for (let rest = n; rest >= 0x80; rest = Math.floor(rest / 0x80)) bytes++
  return bytes
}
