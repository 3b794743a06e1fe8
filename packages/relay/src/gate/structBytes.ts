/**
 * The bytes Yjs 13.6's V1 update encoder (`UpdateEncoderV1`, lib0's `encoding`) writes for a
 * document's structs, measured from the structs without encoding them: `joinAnswer.ts` weighs a
 * join's answer with them. Each measure follows the encoder's byte layout, read from Yjs 13.6.33
 * and lib0 0.2.120:
 *
 * - one client's structs (`writeStructs`): a varuint count of structs, the client, the first
 *   clock, then each struct, the first from the clock on (an offset into it when the clock falls
 *   inside it);
 * - a GC or a Skip: an info byte, then its length past the offset (a varuint);
 * - an Item (`Item.write`): an info byte; its origin (client and clock, varuints), for a struct
 *   written from an offset the ID just before the offset; its right origin; when it has neither,
 *   its parent (a varuint flag, then the root type's key as a string or the parent item's ID) and
 *   its key in a map, if any; then its content;
 * - content: `ContentAny` a varuint count then each value past the offset as lib0's `writeAny`
 *   writes it (a type byte; an integer of at most 31 bits as a varint, a float32 in 4 bytes, other
 *   numbers in 8, a bigint in 8; a string, a Uint8Array, an array or an object with its length,
 *   then its bytes or entries); `ContentString` the string from the offset; `ContentJSON` a count
 *   then each value's JSON as a string; `ContentBinary` the bytes; `ContentDeleted` the length
 *   past the offset; `ContentEmbed` the embed's JSON; `ContentFormat` the key then the value's
 *   JSON; `ContentType` the type's ref, then an XML element's node name or a hook's name;
 *   `ContentDoc` the subdocument's guid then its options as `writeAny` writes them.
 *
 * A string is its UTF-8 bytes after a varuint of their number; a lone surrogate is written as
 * U+FFFD (3 bytes), which `Buffer.byteLength` counts alike. Every measure is exact. A struct or
 * content of a kind not listed (none in Yjs 13.6) measures null: the caller must then weigh it
 * some other way. Reading JSON content costs a `JSON.stringify` of it, as writing it does.
 */
import * as Y from 'yjs'

/**
 * Bytes `writeStructs` writes for `structs` (one client's, `client`, in clock order) from `clock`
 * on, the first struct from its offset when `clock` falls inside it; null for a struct or content
 * of an unknown kind. `clock` must be below the client's state (`Y.getState`), as Yjs writes
 * none of a client's structs otherwise. Finds the first struct by a binary search, then reads
 * only the structs from it on; given `totals` (the structs' `runningBytes`), only the first of
 * them: the others' bytes are the difference of two totals.
 *
 * @example
 * const structs = doc.store.clients.get(client) ?? []
 * clientStructsBytes(structs, client, 0) // the client's part of Y.encodeStateAsUpdate(doc)
 */
export function clientStructsBytes(structs: readonly (Y.Item | Y.GC)[], client: number, clock: number, totals?: Float64Array): number | null {
  const head = structs[0]
  if (head === undefined) return 0
  const from = Math.max(clock, head.id.clock)
  const first = Y.findIndexSS(structs as (Y.Item | Y.GC)[], from)
  const struct = structs[first] as Y.Item | Y.GC
  const firstBytes = structBytes(struct, from - struct.id.clock)
  if (firstBytes === null) return null
  let bytes = varUintBytes(structs.length - first) + varUintBytes(client) + varUintBytes(from) + firstBytes
  if (totals !== undefined) return bytes + (totals[structs.length] as number) - (totals[first + 1] as number)
  for (let i = first + 1; i < structs.length; i++) {
    const written = structBytes(structs[i] as Y.Item | Y.GC, 0)
    if (written === null) return null
    bytes += written
  }
  return bytes
}

/**
 * The running totals of `structs`' bytes, each written whole: entry `i` holds the bytes of the
 * structs before index `i` (entry 0 is 0, the last the bytes of them all); null for a struct or
 * content of an unknown kind. Read once, they measure what a client lacks from any clock in a
 * binary search and a read of one struct (`clientStructsBytes`). Given `counted`, totals whose
 * entries up to `from` still hold, only the structs from `from` on are read (into `counted` when
 * it has room).
 *
 * @example
 * const totals = runningBytes(structs)
 * clientStructsBytes(structs, client, 1, totals ?? undefined) // reads one struct past the search
 */
export function runningBytes(structs: readonly (Y.Item | Y.GC)[], counted?: Float64Array, from = 0): Float64Array | null {
  let totals = counted ?? new Float64Array(structs.length + 1)
  if (totals.length < structs.length + 1) {
    // Room for the writer to grow by half before the totals are copied again.
    const grown = new Float64Array(Math.ceil((structs.length + 1) * 1.5))
    grown.set(totals.subarray(0, from + 1))
    totals = grown
  }
  for (let i = from; i < structs.length; i++) {
    const written = structBytes(structs[i] as Y.Item | Y.GC, 0)
    if (written === null) return null
    totals[i + 1] = (totals[i] as number) + written
  }
  return totals
}

/** Bytes of `struct` written from `offset` (`Item.write`, `GC.write`, `Skip.write`); null for an unknown kind. */
function structBytes(struct: Y.AbstractStruct, offset: number): number | null {
  if (struct instanceof Y.GC || struct instanceof Y.Skip) return 1 + varUintBytes(struct.length - offset)
  if (!(struct instanceof Y.Item)) return null
  // The info byte; a struct written from an offset has the ID before the offset for its origin.
  let bytes = 1
  if (offset > 0) bytes += varUintBytes(struct.id.client) + varUintBytes(struct.id.clock + offset - 1)
  else if (struct.origin !== null) bytes += idBytes(struct.origin)
  if (struct.rightOrigin !== null) bytes += idBytes(struct.rightOrigin)
  if (offset === 0 && struct.origin === null && struct.rightOrigin === null) {
    const parent = parentBytes(struct.parent)
    if (parent === null) return null
    bytes += parent
    if (struct.parentSub !== null) bytes += stringBytes(struct.parentSub)
  }
  const content = contentBytes(struct.content, offset)
  return content === null ? null : bytes + content
}

/** Bytes of an item's parent, written when it has no origin on either side: a root type's key, or the parent item's ID. */
function parentBytes(parent: Y.AbstractType<unknown> | Y.ID | null): number | null {
  if (parent instanceof Y.ID) return 1 + idBytes(parent)
  if (!(parent instanceof Y.AbstractType)) return null
  return 1 + (parent._item === null ? stringBytes(Y.findRootTypeKey(parent)) : idBytes(parent._item.id))
}

/** Bytes of an item's content written from `offset` (each `Content*.write`); null for an unknown kind. */
function contentBytes(content: Y.Item['content'], offset: number): number | null {
  if (content instanceof Y.ContentAny) {
    let bytes = varUintBytes(content.arr.length - offset)
    for (let i = offset; i < content.arr.length; i++) bytes += anyBytes(content.arr[i])
    return bytes
  }
  if (content instanceof Y.ContentString) return stringBytes(offset === 0 ? content.str : content.str.slice(offset))
  if (content instanceof Y.ContentDeleted) return varUintBytes(content.len - offset)
  if (content instanceof Y.ContentBinary) return varUintBytes(content.content.byteLength) + content.content.byteLength
  if (content instanceof Y.ContentJSON) {
    let bytes = varUintBytes(content.arr.length - offset)
    for (let i = offset; i < content.arr.length; i++) {
      const value: unknown = content.arr[i]
      bytes += stringBytes(value === undefined ? 'undefined' : jsonOf(value))
    }
    return bytes
  }
  if (content instanceof Y.ContentEmbed) return stringBytes(jsonOf(content.embed))
  if (content instanceof Y.ContentFormat) return stringBytes(content.key) + stringBytes(jsonOf(content.value))
  if (content instanceof Y.ContentType) return typeBytes(content.type)
  if (content instanceof Y.ContentDoc) return stringBytes(content.doc.guid) + anyBytes(content.opts)
  return null
}

/** Bytes of a type's `_write`: its ref (a varuint under 128), then an XML element's node name or a hook's name. */
function typeBytes(type: Y.AbstractType<unknown>): number {
  if (type instanceof Y.XmlElement) return 1 + stringBytes(type.nodeName)
  if (type instanceof Y.XmlHook) return 1 + stringBytes(type.hookName)
  return 1
}

/** JSON as `writeJSON` writes it: a value JSON has no text for writes as `undefined` (lib0's string encoder reads it so). */
function jsonOf(value: unknown): string {
  return JSON.stringify(value) ?? 'undefined'
}

/** Bytes of `value` as lib0's `writeAny` writes it. */
function anyBytes(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return 1 + stringBytes(value)
    case 'number':
      if (Number.isInteger(value) && Math.abs(value) <= 0x7fff_ffff) return 1 + varIntBytes(value)
      // lib0 writes a number as a float32 when one holds it exactly.
      return Math.fround(value) === value ? 5 : 9
    case 'bigint':
      return 9
    case 'object': {
      if (value === null) return 1
      if (Array.isArray(value)) {
        let bytes = 1 + varUintBytes(value.length)
        for (const item of value as unknown[]) bytes += anyBytes(item)
        return bytes
      }
      if (value instanceof Uint8Array) return 1 + varUintBytes(value.byteLength) + value.byteLength
      const entries = value as Record<string, unknown>
      const keys = Object.keys(entries)
      let bytes = 1 + varUintBytes(keys.length)
      for (const key of keys) bytes += stringBytes(key) + anyBytes(entries[key])
      return bytes
    }
    default:
      // true, false, undefined, and what lib0 writes as undefined (functions, symbols): the type byte alone.
      return 1
  }
}

/** Bytes of a client and clock, each a varuint. */
function idBytes(id: Y.ID): number {
  return varUintBytes(id.client) + varUintBytes(id.clock)
}

/** Bytes of `text` as lib0's `writeVarString` writes it: the UTF-8 bytes' count (a varuint), then the bytes. */
function stringBytes(text: string): number {
  const bytes = Buffer.byteLength(text, 'utf8')
  return varUintBytes(bytes) + bytes
}

/** Bytes of an integer as lib0's `writeVarInt` writes it: the sign and 6 bits in the first byte, then 7 bits a byte. */
function varIntBytes(n: number): number {
  const magnitude = Math.abs(n)
  return magnitude <= 0x3f ? 1 : 1 + varUintBytes(Math.floor(magnitude / 0x40))
}

/**
 * Bytes of `n` written as a lib0 varuint (7 bits a byte).
 *
 * @example
 * varUintBytes(127) // 1
 * varUintBytes(128) // 2
 */
export function varUintBytes(n: number): number {
  let bytes = 1
  for (let rest = n; rest >= 0x80; rest = Math.floor(rest / 0x80)) bytes++
  return bytes
}
