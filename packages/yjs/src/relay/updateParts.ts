/**
 * A Yjs update too large for one relay message, cut into updates that each fit. The relay closes
 * the whole socket on a message over its limit, so a document whose sync (or whose one
 * transaction) outgrew it could otherwise never reach the relay: a device back after hours
 * offline is the usual case.
 *
 * The parts carry the update's structs in an order the relay can apply one by one: a struct goes
 * only after what it was inserted next to or under (its origins and its parent) when those are in
 * the update too, so no part waits for a later one. The delete set goes last, after every struct
 * it may name. Applied in order, the parts make the same document as the update.
 */
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'

/** Bytes an update's framing takes besides its structs, counted generously: the client count and an empty delete set. */
const UPDATE_FRAME = 12
/** Bytes a client's run of structs takes besides the structs: their count, the client id and the first clock (three varuints). */
const RUN_FRAME = 24

/** One client's structs in the update, in clock order, with the cursor of what the parts took. */
interface ClientRun {
  readonly client: number
  readonly structs: readonly (Y.Item | Y.GC | Y.Skip)[]
  /** Each struct encoded alone (the V1 encoding keeps no state between structs). */
  readonly encoded: readonly Uint8Array[]
  /** The next struct the parts take. */
  next: number
  /** Clocks below this are in the parts already, or were never in the update (the receiver has them). */
  known: number
}

/** One client's structs in the part being made: a run of consecutive clocks (taken in order, a client's structs never leave a gap in it). */
interface PartRun {
  readonly clock: number
  readonly encoded: Uint8Array[]
}

/**
 * Cuts `update` (V1, as the relay protocol carries it) into updates of at most `maxBytes` each,
 * to be applied in order. Returns `[update]` when it fits, and null when it cannot be cut small
 * enough: one entry alone (an array entry, a map entry's value) is larger than `maxBytes`.
 *
 * @example
 * const parts = splitUpdate(Y.encodeStateAsUpdate(doc, relayStateVector), 1 << 20)
 * if (parts === null) refuse('too-large')
 * else for (const part of parts) send(part)
 */
export function splitUpdate(update: Uint8Array, maxBytes: number): Uint8Array[] | null {
  if (update.byteLength <= maxBytes) return [update]
  const { structs, ds } = Y.decodeUpdate(update)
  const runs = clientRuns(structs as (Y.Item | Y.GC | Y.Skip)[], maxBytes - UPDATE_FRAME - RUN_FRAME)
  if (runs === null) return null
  const parts: Uint8Array[] = []
  let part = new Map<number, PartRun>()
  let bytes = UPDATE_FRAME
  const flush = (): void => {
    if (part.size === 0) return
    parts.push(encodePart(part))
    part = new Map()
    bytes = UPDATE_FRAME
  }
  /** Puts the next struct of `run` in the part, or in the next one when this one is full (each fits in an empty part). */
  const take = (run: ClientRun): void => {
    const struct = run.structs[run.next] as Y.Item | Y.GC | Y.Skip
    const encoded = run.encoded[run.next] as Uint8Array
    run.next++
    run.known = struct.id.clock + struct.length
    let current = part.get(run.client)
    // A gap in what the update carries opens no run: the part's run for the client starts after it.
    if (struct instanceof Y.Skip && current === undefined) return
    if (bytes + encoded.byteLength + (current === undefined ? RUN_FRAME : 0) > maxBytes) {
      flush()
      current = undefined
    }
    if (current === undefined) {
      current = { clock: struct.id.clock, encoded: [] }
      part.set(run.client, current)
      bytes += RUN_FRAME
    }
    current.encoded.push(encoded)
    bytes += encoded.byteLength
  }
  let left = 0
  for (const run of runs.values()) left += run.structs.length
  while (left > 0) {
    let took = false
    for (const run of runs.values()) {
      while (run.next < run.structs.length && ready(run.structs[run.next] as Y.Item | Y.GC | Y.Skip, runs)) {
        take(run)
        left--
        took = true
      }
    }
    if (!took) {
      // Structs that wait on each other cannot come from a causal history; taken in update order, the receiver sorts them out.
      const run = [...runs.values()].find((r) => r.next < r.structs.length) as ClientRun
      take(run)
      left--
    }
  }
  const deletes = encodeDeletes(ds, maxBytes)
  if (deletes.length === 0) {
    flush()
    return parts
  }
  const whole = deletes.reduce((sum, entry) => sum + entry.bytes.byteLength, 0)
  if (bytes + whole <= maxBytes) {
    parts.push(encodePart(part, deletes))
    return parts
  }
  flush()
  // The delete set on its own, cut between clients and between ranges.
  let batch: DeleteEntry[] = []
  let batchBytes = UPDATE_FRAME
  for (const entry of deletes) {
    if (UPDATE_FRAME + entry.bytes.byteLength > maxBytes) return null
    if (batchBytes + entry.bytes.byteLength > maxBytes) {
      parts.push(encodePart(new Map(), batch))
      batch = []
      batchBytes = UPDATE_FRAME
    }
    batch.push(entry)
    batchBytes += entry.bytes.byteLength
  }
  if (batch.length > 0) parts.push(encodePart(new Map(), batch))
  return parts
}

/**
 * The update's structs by client, in the order the update lists them, each encoded alone. An
 * array insert too large for a part on its own (one `push` of many entries) is cut into
 * consecutive inserts of its entries, each placed after the one before, as Yjs writes an item
 * from an offset: they make the same array.
 */
function clientRuns(structs: readonly (Y.Item | Y.GC | Y.Skip)[], room: number): Map<number, ClientRun> | null {
  const byClient = new Map<number, { structs: (Y.Item | Y.GC | Y.Skip)[]; encoded: Uint8Array[] }>()
  for (const struct of structs) {
    const client = struct.id.client
    let entry = byClient.get(client)
    if (entry === undefined) {
      entry = { structs: [], encoded: [] }
      byClient.set(client, entry)
    }
    const encoded = encodeStruct(struct)
    if (encoded.byteLength <= room) {
      entry.structs.push(struct)
      entry.encoded.push(encoded)
      continue
    }
    const pieces = struct instanceof Y.Item ? cutInsert(struct, encoded, room) : null
    if (pieces === null) return null
    for (const piece of pieces) {
      entry.structs.push(piece.item)
      entry.encoded.push(piece.encoded)
    }
  }
  const runs = new Map<number, ClientRun>()
  for (const [client, entry] of byClient) {
    runs.set(client, { client, structs: entry.structs, encoded: entry.encoded, next: 0, known: (entry.structs[0] as Y.Item | Y.GC | Y.Skip).id.clock })
  }
  return runs
}

function encodeStruct(struct: Y.Item | Y.GC | Y.Skip): Uint8Array {
  const encoder = new Y.UpdateEncoderV1()
  struct.write(encoder, 0)
  return encoder.toUint8Array()
}

/**
 * An insert of several array entries (`ContentAny`) cut into pieces of at most `room` bytes
 * each; null when it holds one entry alone larger than that, or is not an array insert.
 */
function cutInsert(item: Y.Item, encoded: Uint8Array, room: number): { item: Y.Item; encoded: Uint8Array }[] | null {
  const content = item.content
  if (!(content instanceof Y.ContentAny) || content.arr.length < 2) return null
  const sizes = content.arr.map((value) => {
    const encoder = encoding.createEncoder()
    encoding.writeAny(encoder, value)
    return encoding.length(encoder)
  })
  // The item's bytes besides its entries, and what a piece's origin adds to them (an id: two varuints).
  const frame = encoded.byteLength - sizes.reduce((sum, size) => sum + size, 0) + 16
  const pieces: { item: Y.Item; encoded: Uint8Array }[] = []
  const { client, clock } = item.id
  let from = 0
  while (from < sizes.length) {
    let to = from
    let bytes = frame
    while (to < sizes.length && bytes + (sizes[to] as number) <= room) bytes += sizes[to++] as number
    if (to === from) return null
    const origin = from === 0 ? item.origin : Y.createID(client, clock + from - 1)
    // Placed after the piece before it: its parent comes from there (only the first names it).
    const parent = from === 0 ? item.parent : null
    const piece = new Y.Item(Y.createID(client, clock + from), null, origin, null, item.rightOrigin, parent, from === 0 ? item.parentSub : null, new Y.ContentAny(content.arr.slice(from, to)))
    const pieceBytes = encodeStruct(piece)
    if (pieceBytes.byteLength > room) return null
    pieces.push({ item: piece, encoded: pieceBytes })
    from = to
  }
  return pieces
}

/** A struct whose origins and parent, where the update carries them, are in the parts already. */
function ready(struct: Y.Item | Y.GC | Y.Skip, runs: ReadonlyMap<number, ClientRun>): boolean {
  if (!(struct instanceof Y.Item)) return true
  const parent = struct.parent
  return known(struct.origin, runs) && known(struct.rightOrigin, runs) && (!(parent instanceof Y.ID) || known(parent, runs))
}

function known(id: Y.ID | null, runs: ReadonlyMap<number, ClientRun>): boolean {
  if (id === null) return true
  const run = runs.get(id.client)
  return run === undefined || id.clock < run.known
}

/** One client's deleted ranges, encoded as a delete set names them (client, range count, then clock and length per range). */
interface DeleteEntry {
  readonly bytes: Uint8Array
}

/**
 * The delete set's entries: per client, its ranges, cut into several entries (a delete set may
 * name a client more than once) so that each fits in a part of `maxBytes` on its own.
 */
function encodeDeletes(ds: ReturnType<typeof Y.decodeUpdate>['ds'], maxBytes: number): DeleteEntry[] {
  const entries: DeleteEntry[] = []
  // An entry's client and range count: two varuints.
  const room = maxBytes - UPDATE_FRAME - 10
  for (const [client, ranges] of ds.clients) {
    let ranged = encoding.createEncoder()
    let count = 0
    const close = (): void => {
      const encoder = encoding.createEncoder()
      encoding.writeVarUint(encoder, client)
      encoding.writeVarUint(encoder, count)
      encoding.writeUint8Array(encoder, encoding.toUint8Array(ranged))
      entries.push({ bytes: encoding.toUint8Array(encoder) })
      ranged = encoding.createEncoder()
      count = 0
    }
    for (const range of ranges) {
      // A range is two varuints of at most 8 bytes each (clocks stay below 2^53).
      if (count > 0 && encoding.length(ranged) + 16 > room) close()
      encoding.writeVarUint(ranged, range.clock)
      encoding.writeVarUint(ranged, range.len)
      count++
    }
    if (count > 0) close()
  }
  return entries
}

/** A V1 update of the part's runs and these delete entries. */
function encodePart(part: ReadonlyMap<number, PartRun>, deletes: readonly DeleteEntry[] = []): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, part.size)
  for (const [client, run] of part) {
    encoding.writeVarUint(encoder, run.encoded.length)
    encoding.writeVarUint(encoder, client)
    encoding.writeVarUint(encoder, run.clock)
    for (const bytes of run.encoded) encoding.writeUint8Array(encoder, bytes)
  }
  encoding.writeVarUint(encoder, deletes.length)
  for (const entry of deletes) encoding.writeUint8Array(encoder, entry.bytes)
  return encoding.toUint8Array(encoder)
}
