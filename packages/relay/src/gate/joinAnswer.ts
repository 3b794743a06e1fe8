/**
 * What the relay's answer to a join (a client's sync step 1) weighs, for the socket guard's pacing
 * (`SocketGuard.roomForAnswer`). Hocuspocus answers a step 1 with two messages: a step 2, the
 * update `Y.encodeStateAsUpdate(document, held)`, and its own step 1, the document's state vector.
 *
 * The step 2 is what the client lacks: the structs of every client whose clock in the document is
 * past the client's, from the client's clock on, then the document's whole delete set (Yjs 13.6,
 * `writeStateAsUpdate`), then what the document holds pending, if anything. Both parts are
 * measured from the document's structs without encoding them, to the byte:
 * - the structs a client lacks (`structBytes.ts`, which states the byte layout it follows): the
 *   first found by a binary search on the client's clock, then only those from it on are read,
 *   so the cost follows what the client lacks, not the room's size. A client back after a blip
 *   while devices wrote costs a look at each writer's clock and a read of the few structs written
 *   meanwhile; a first join reads the whole room, as Hocuspocus does to encode it, once per
 *   change of the document (`docVersion`): each writer's whole structs are measured once for
 *   every first join, however many look;
 * - the delete set (`writeDeleteSet`, V1: varuints), walked over every struct without touching
 *   their content, once per change of the document (`docVersion`): a storm of joins walks a room
 *   once, whatever their number.
 * The framing is counted exactly too, so the weight is the answer's size to the byte (for a
 * client lacking nothing, the document's state vector is counted at the length of the client's).
 * A document holding pending updates, or a struct of a kind Yjs 13.6 does not write, is not
 * measured (null): the caller weighs the answer at the room's size.
 *
 * The weight must not be smaller than the answer: the guard admits an answer on its weight, and
 * an answer larger than it could take the socket's queue past `maxQueuedBytes`.
 */
import type * as Y from 'yjs'
import { docVersion } from './hocuspocusSteps.ts'
import { clientStructsBytes, varUintBytes } from './structBytes.ts'

/**
 * Each document's delete set bytes, as the document stood at its `docVersion`: step 1s (a rejoin
 * storm, or a client sending them over and over) walk a room's structs once per change of the
 * room, not once per message.
 */
const deleteSets = new WeakMap<Y.Doc, { readonly version: number; readonly bytes: number }>()

/**
 * Each document's writers' whole structs in bytes (what a first join lacks of each), as the
 * document stood at its `docVersion`: a storm of first joins, each weighed again at every look of
 * its socket's guard, reads a room's structs once per change of the room. Null for a writer
 * holding a struct of a kind this does not know.
 */
const wholeWriters = new WeakMap<Y.Doc, { readonly version: number; readonly bytes: Map<number, number | null> }>()

/** The bytes of an update to a client, and the number of clients whose structs it carries. */
interface UpdateMeasure {
  readonly bytes: number
  readonly writers: number
}

/**
 * Bytes the answer to a step 1 stating `held` (its decoded state vector, `stateVectorBytes`
 * long) takes at most, both messages framed: what the client lacks of `document`, then the
 * document's delete set and state vector. Exact for a client lacking anything; for one lacking
 * nothing, the document's state vector is counted at the length of the client's. Null when the
 * document holds pending updates (the answer would carry them too) or a struct of a kind this
 * does not know.
 *
 * @example
 * const held = Y.decodeStateVector(payload)
 * await socket.roomForAnswer(() => joinAnswerBytes(document, room, held, payload.byteLength) ?? sizes.get(room))
 */
export function joinAnswerBytes(document: Y.Doc, room: string, held: ReadonlyMap<number, number>, stateVectorBytes: number): number | null {
  const update = measureUpdate(document, held)
  if (update === null) return null
  // A client lacking nothing holds every client the document's state vector names, at no smaller
  // a clock: the document's is no longer than the client's. Otherwise it is measured.
  const stateVector = update.writers === 0 ? stateVectorBytes : documentStateVectorBytes(document)
  const roomName = Buffer.byteLength(room) + varUintBytes(Buffer.byteLength(room))
  return messageBytes(roomName, update.bytes) + messageBytes(roomName, stateVector)
}

/** Bytes of a Hocuspocus sync message of `payload` bytes: the room's name, the type (Sync, 0) and the step (a varuint each, one byte), then the payload after its length. */
function messageBytes(roomName: number, payload: number): number {
  return roomName + 2 + varUintBytes(payload) + payload
}

/**
 * Bytes of `Y.encodeStateAsUpdate(document, held)`, exactly; null when the document holds pending
 * updates or a struct of a kind this does not know. Reads the structs `held` lacks and the
 * document's delete set (measured once per change of the document).
 *
 * @example
 * answerUpdateBytes(document, Y.decodeStateVector(sv)) // Y.encodeStateAsUpdate(document, sv).byteLength
 */
export function answerUpdateBytes(document: Y.Doc, held: ReadonlyMap<number, number>): number | null {
  return measureUpdate(document, held)?.bytes ?? null
}

/** The update `held` is sent (`writeStateAsUpdate`): the clients it lacks structs of, each one's from its clock on, then the delete set. */
function measureUpdate(document: Y.Doc, held: ReadonlyMap<number, number>): UpdateMeasure | null {
  const store = document.store
  if (store.pendingStructs !== null || store.pendingDs !== null) return null
  let writers = 0
  let structs = 0
  for (const [client, clientStructs] of store.clients) {
    const last = clientStructs[clientStructs.length - 1]
    const from = held.get(client) ?? 0
    if (last === undefined || from >= last.id.clock + last.length) continue
    const bytes = from === 0 ? wholeWriterBytes(document, client, clientStructs) : clientStructsBytes(clientStructs, client, from)
    if (bytes === null) return null
    writers++
    structs += bytes
  }
  // The clients' count (a varuint), their structs, then the delete set.
  return { bytes: varUintBytes(writers) + structs + deleteSetBytes(document), writers }
}

/** Bytes of all of `client`'s structs in `document` (`clientStructsBytes` from clock 0), read once per change of the document. */
function wholeWriterBytes(document: Y.Doc, client: number, structs: readonly (Y.Item | Y.GC)[]): number | null {
  const version = docVersion(document)
  let known = wholeWriters.get(document)
  if (known?.version !== version) {
    known = { version, bytes: new Map() }
    wholeWriters.set(document, known)
  }
  let bytes = known.bytes.get(client)
  if (bytes === undefined) {
    bytes = clientStructsBytes(structs, client, 0)
    known.bytes.set(client, bytes)
  }
  return bytes
}

/** Bytes of `document`'s delete set (`writeDeleteSet` of the set Yjs builds from its structs), walked once per change of the document. */
function deleteSetBytes(document: Y.Doc): number {
  const version = docVersion(document)
  const known = deleteSets.get(document)
  if (known?.version === version) return known.bytes
  let deleted = 0
  let ranges = 0
  for (const [client, structs] of document.store.clients) {
    const clientRanges = deletedRangeBytes(structs)
    if (clientRanges.count === 0) continue
    deleted++
    ranges += varUintBytes(client) + varUintBytes(clientRanges.count) + clientRanges.bytes
  }
  const bytes = varUintBytes(deleted) + ranges
  deleteSets.set(document, { version, bytes })
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

/** Bytes of `document`'s state vector (`encodeStateVector`): its clients' count, then each client and its clock. */
function documentStateVectorBytes(document: Y.Doc): number {
  let bytes = varUintBytes(document.store.clients.size)
  for (const [client, structs] of document.store.clients) {
    const last = structs[structs.length - 1]
    bytes += varUintBytes(client) + varUintBytes(last === undefined ? 0 : last.id.clock + last.length)
  }
  return bytes
}
