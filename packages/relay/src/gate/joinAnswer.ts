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
 *   Hocuspocus reads the room to encode it, then kept: a change appending to the writer reads its
 *   new structs, one deleting or splitting some of its structs reads it whole again;
 * - the delete set (`writeDeleteSet`, V1: varuints), walked over every struct without touching
 *   their content, once, then kept the same way: a storm of joins walks a room once, whatever
 *   their number, and a device's readings are walked as they are appended.
 * What is kept is marked stale by each transaction's cleanup from what Yjs records of the structs
 * it changed (`markStale`).
 * The framing is counted exactly too, so the weight is the answer's size to the byte (for a
 * client lacking nothing, the document's state vector is counted at the length of the client's).
 * A document holding pending updates, or a struct of a kind Yjs 13.6 does not write, is not
 * measured (null): the caller weighs the answer at the room's size.
 *
 * The weight must not be smaller than the answer: the guard admits an answer on its weight, and
 * an answer larger than it could take the socket's queue past `maxQueuedBytes`.
 */
import * as Y from 'yjs'
import { clientStructsBytes, runningBytes, varUintBytes } from './structBytes.ts'

/**
 * A writer's structs as running totals of their bytes (`runningBytes`), and the clock from which
 * a change of the document since made them stale (Infinity while they hold).
 */
interface WriterTotals {
  totals: Float64Array | null
  /** Structs the totals count, from the first. */
  counted: number
  staleFrom: number
}

/**
 * A walk over a writer's structs for the delete set's ranges (runs of deleted structs, as Yjs
 * merges them), up to `walked`: the ranges closed before it, and the run of deleted structs it
 * ends in (`runLength` 0 when none), not counted yet. Kept up to the writer's last struct, which
 * an append may change; walked again from there, or from the first after a deletion.
 */
interface DeletionWalk {
  ranges: number
  bytes: number
  runClock: number
  runLength: number
  walked: number
  staleFrom: number
  /** The ranges of all the structs, while the walk is not stale. */
  whole: { readonly count: number; readonly bytes: number } | null
}

/**
 * What is kept of each document's writers, marked stale by each change (`markStale`): their
 * running totals (a storm of joins lacking much of a writer, each weighed again at every look of
 * its socket's guard, reads the writer's structs once, whatever clock each join states), and the
 * walk for their delete set ranges. A change that only appends to a writer (a device writing
 * readings) has only its new structs read; one that deletes or splits some of its structs, the
 * writer whole.
 */
const keptMeasures = new WeakMap<Y.Doc, { readonly writers: Map<number, WriterTotals>; readonly deletions: Map<number, DeletionWalk> }>()

/**
 * The most structs of a writer a client's lack is measured from by reading them at each look:
 * past it, from the writer's running totals (read whole once per change of the room).
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
 * once per change of the document), a first join's in no read at all.
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

/** `client`'s structs' running totals (`runningBytes`) in `document`: each struct read once, then again only once a change made it stale. */
function writerRunningBytes(document: Y.Doc, client: number, structs: readonly (Y.Item | Y.GC)[]): Float64Array | null {
  const { writers } = kept(document)
  let known = writers.get(client)
  // A count of structs other than the totals' own is a change `markStale` did not see: read again.
  if (known === undefined || (known.staleFrom === Infinity && known.counted !== structs.length)) {
    known = { totals: new Float64Array(0), counted: 0, staleFrom: 0 }
    writers.set(client, known)
  }
  if (known.totals === null || known.staleFrom === Infinity) return known.totals
  // The structs before the one holding the stale clock are as they were counted.
  const from = known.staleFrom === 0 || known.counted === 0 ? 0 : Math.min(Y.findIndexSS(structs as (Y.Item | Y.GC)[], known.staleFrom), known.counted)
  known.totals = runningBytes(structs, known.totals, from)
  known.counted = structs.length
  known.staleFrom = Infinity
  return known.totals
}

/** What is kept of `document`'s writers, marked stale by every transaction's cleanup from the first call on. */
function kept(document: Y.Doc): { readonly writers: Map<number, WriterTotals>; readonly deletions: Map<number, DeletionWalk> } {
  let measures = keptMeasures.get(document)
  if (measures === undefined) {
    const created = { writers: new Map<number, WriterTotals>(), deletions: new Map<number, DeletionWalk>() }
    measures = created
    keptMeasures.set(document, created)
    // After the cleanup: the transaction's structs are garbage collected and merged by then.
    document.on('afterTransactionCleanup', (transaction: Y.Transaction) => {
      markStale(created.writers, transaction)
      markStale(created.deletions, transaction)
    })
  }
  return measures
}

/**
 * Marks what `transaction` changed of each writer's structs. Yjs records every change of a
 * struct it made: structs appended (past the writer's clock before), structs split (its
 * `_mergeStructs`) and deleted, then garbage collected and merged (its delete set). An append
 * changes the structs from the last before it on (the first new one may be merged into it); a
 * split or a deletion may merge structs leftwards past it, so the writer is read whole again.
 */
function markStale(writers: Map<number, { staleFrom: number }>, transaction: Y.Transaction): void {
  for (const client of transaction.deleteSet.clients.keys()) writers.delete(client)
  for (const struct of transaction._mergeStructs) writers.delete(struct.id.client)
  for (const [client, after] of transaction.afterState) {
    const before = transaction.beforeState.get(client) ?? 0
    const known = writers.get(client)
    if (known !== undefined && after !== before) known.staleFrom = Math.min(known.staleFrom, Math.max(0, before - 1))
  }
}

/** Bytes of `document`'s delete set (`writeDeleteSet` of the set Yjs builds from its structs): each writer's structs walked once, then again as far as a change made them stale. */
function deleteSetBytes(document: Y.Doc): number {
  const { deletions } = kept(document)
  let deleted = 0
  let ranges = 0
  for (const [client, structs] of document.store.clients) {
    const clientRanges = deletedRangeBytes(deletions, client, structs)
    if (clientRanges.count === 0) continue
    deleted++
    ranges += varUintBytes(client) + varUintBytes(clientRanges.count) + clientRanges.bytes
  }
  return varUintBytes(deleted) + ranges
}

/** The delete set's ranges of one client's structs and the bytes of their clocks and lengths, walked on from where `deletions` kept the walk. */
function deletedRangeBytes(deletions: Map<number, DeletionWalk>, client: number, structs: readonly Y.AbstractStruct[]): { count: number; bytes: number } {
  const beforeLast = Math.max(0, structs.length - 1)
  let walk = deletions.get(client)
  // A count of structs other than the walk's own is a change `markStale` did not see: walk again.
  if (walk === undefined || (walk.staleFrom === Infinity && walk.walked !== beforeLast)) {
    walk = { ranges: 0, bytes: 0, runClock: 0, runLength: 0, walked: 0, staleFrom: 0, whole: null }
    deletions.set(client, walk)
  }
  if (walk.staleFrom === Infinity && walk.whole !== null) return walk.whole
  // Stale by an append: the structs before the last one walked are as they were.
  walkDeletions(structs, walk, beforeLast)
  walk.staleFrom = Infinity
  const last = { ...walk }
  walkDeletions(structs, last, structs.length)
  walk.whole = last.runLength === 0 ? { count: last.ranges, bytes: last.bytes } : { count: last.ranges + 1, bytes: last.bytes + varUintBytes(last.runClock) + varUintBytes(last.runLength) }
  return walk.whole
}

/** Walks `walk` on over `structs` up to `end`: a run of deleted structs ends at the first one not deleted. */
function walkDeletions(structs: readonly Y.AbstractStruct[], walk: DeletionWalk, end: number): void {
  for (let i = walk.walked; i < end; i++) {
    const struct = structs[i] as Y.AbstractStruct
    if (struct.deleted) {
      if (walk.runLength === 0) walk.runClock = struct.id.clock
      walk.runLength += struct.length
    } else if (walk.runLength > 0) {
      walk.ranges++
      walk.bytes += varUintBytes(walk.runClock) + varUintBytes(walk.runLength)
      walk.runLength = 0
    }
  }
  walk.walked = Math.max(walk.walked, end)
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
