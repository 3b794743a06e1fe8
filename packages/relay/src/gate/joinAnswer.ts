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
 *   meanwhile (at most `DIRECT_READS` a writer); one lacking more of a writer (a first join, or
 *   one stating a clock near the start) is measured from the writer's running totals in a binary
 *   search, however many look and whatever clock each states. The totals are read whole once, as
 *   Hocuspocus reads the room to encode it, then kept: a change to the writer reads its structs
 *   again from the first it could have altered (its new structs for an append, the entries it
 *   overwrote or deleted and those after them for a deletion);
 * - the delete set (`writeDeleteSet`, V1: varuints), walked over every struct without touching
 *   their content, once, then kept the same way: a storm of joins walks a room once, whatever
 *   their number, and a device's readings and overwrites are walked as they come.
 * What is kept, and how a change marks it stale from what Yjs records of the structs it changed,
 * is in `keptMeasures.ts`.
 * The framing is counted exactly too, so the weight is the answer's size to the byte (for a
 * client lacking nothing, the document's state vector is counted at the length of the client's).
 * A document holding pending updates, or a struct of a kind Yjs 13.6 does not write, is not
 * measured (null): the caller weighs the answer at the room's size.
 *
 * A catch-up (`catchUp.ts`: what the other relays sent a room, paced like an answer) is weighed
 * with the same measure, its update from the state before what it carries (`answerUpdateBytes`)
 * framed as one sync message (`syncMessageBytes`), and encoded only when it is sent.
 *
 * The weight must not be smaller than the answer: the guard admits an answer on its weight, and
 * an answer larger than it could take the socket's queue past `maxQueuedBytes`.
 */
import type * as Y from 'yjs'
import { deletedRangeBytes, writerRunningBytes } from './keptMeasures.ts'
import { clientStructsBytes, varUintBytes } from './structBytes.ts'

/**
 * The most structs of a writer a client's lack is measured from by reading them at each look:
 * past it, from the writer's running totals (read once, then again from what each change altered).
 */
const DIRECT_READS = 128

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
  return syncMessageBytes(room, update.bytes) + syncMessageBytes(room, stateVector)
}

/**
 * Bytes of a Hocuspocus sync message of `room` carrying a `payload` of that many bytes (a step 1,
 * a step 2 or an update): the room's name, the type (Sync, 0) and the step (a varuint each, one
 * byte), then the payload after its length.
 *
 * @example
 * const update = answerUpdateBytes(document, from)
 * if (update !== null) syncMessageBytes(document.name, update) // new OutgoingMessage(document.name).createSyncMessage().writeUpdate(…).toUint8Array().byteLength
 */
export function syncMessageBytes(room: string, payload: number): number {
  const name = Buffer.byteLength(room)
  return varUintBytes(name) + name + 2 + varUintBytes(payload) + payload
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
    const bytes = lackedBytes(document, client, clientStructs, from)
    if (bytes === null) return null
    writers++
    structs += bytes
  }
  // The clients' count (a varuint), their structs, then the delete set.
  return { bytes: varUintBytes(writers) + structs + deleteSetBytes(document), writers }
}

/**
 * Bytes of `client`'s structs in `document` from `from` on (`clientStructsBytes`): read directly
 * when they are at most `DIRECT_READS` structs, otherwise from the writer's running totals (read
 * once, then again from what each change altered), a first join's in no read at all.
 */
function lackedBytes(document: Y.Doc, client: number, structs: readonly (Y.Item | Y.GC)[], from: number): number | null {
  const fewLacked = (): boolean => structs.length <= DIRECT_READS || from >= (structs[structs.length - DIRECT_READS] as Y.Item | Y.GC).id.clock
  if (from > 0 && fewLacked()) return clientStructsBytes(structs, client, from)
  const totals = writerRunningBytes(document, client, structs)
  if (totals === null) return null
  // The count of structs, the client and the first clock (0), then every struct whole.
  if (from === 0) return varUintBytes(structs.length) + varUintBytes(client) + 1 + (totals[structs.length] as number)
  return clientStructsBytes(structs, client, from, totals)
}

/** Bytes of `document`'s delete set (`writeDeleteSet` of the set Yjs builds from its structs): each writer's structs walked once, then again as far as a change made them stale. */
function deleteSetBytes(document: Y.Doc): number {
  let deleted = 0
  let ranges = 0
  for (const [client, structs] of document.store.clients) {
    const clientRanges = deletedRangeBytes(document, client, structs)
    if (clientRanges.count === 0) continue
    deleted++
    ranges += varUintBytes(client) + varUintBytes(clientRanges.count) + clientRanges.bytes
  }
  return varUintBytes(deleted) + ranges
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
