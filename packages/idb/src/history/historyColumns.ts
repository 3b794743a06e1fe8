/**
 * Payloads of late-lane and archive records (historyRecord.ts holds the envelope), columnar
 * like log records: n entries as Float64 and Uint32 columns plus a string table
 * (walStrings.ts), so that encoding and decoding cost a few typed-array writes per entry.
 * Every number is little-endian; s = distinct strings.
 *
 *   offset  bytes  field
 *   0       4      s
 *   4       4      u8: bytes in the UTF-8 section
 *   8       4      u16: code units in the UTF-16 section
 *   12      4      reserved (0)
 *   16      ...    Float64 columns, then Uint32 columns, then s string lengths, UTF-8, UTF-16
 *
 * What the columns are is each kind's own (lateLaneColumns.ts, archiveColumns.ts).
 */

import { decodeStrings, type StringTable } from '../wal/walStrings.ts'

const HEADER_BYTES = 16
/** The string reference that means "absent". */
export const ABSENT = 0xffffffff

/** A payload's columns, viewed in place, and its strings. */
export interface Columns {
  readonly f64: Float64Array
  readonly u32: Uint32Array
  readonly strings: readonly string[]
}

/** How one kind of history record stores its entries: its kind number in the record header, and its payload codec. */
export interface HistoryColumns<T> {
  /** In the record header: 1 late lane, 2 archive. */
  readonly kind: number
  /** The store the records live in, for messages. */
  readonly name: string
  encode(entries: readonly T[]): Uint8Array<ArrayBuffer>
  /** Reads `n` entries; never throws: inconsistent bytes give the reason as a string. */
  decode(payload: Uint8Array, n: number): T[] | string
}

/** A payload of `floats` Float64 values (`fill` writes them), the Uint32 `refs` and the string table. */
export function writeColumns(floats: number, refs: Uint32Array, table: StringTable, fill: (f64: Float64Array) => void): Uint8Array<ArrayBuffer> {
  const s = table.lengths.length
  const u32At = HEADER_BYTES + 8 * floats
  const utf8At = u32At + 4 * (refs.length + s)
  const buffer = new ArrayBuffer(utf8At + table.utf8Bytes + 2 * table.utf16Units)
  const bytes = new Uint8Array(buffer)
  fill(new Float64Array(buffer, HEADER_BYTES, floats))
  const u32 = new Uint32Array(buffer, u32At, refs.length + s)
  u32.set(refs)
  u32.set(table.lengths, refs.length)
  table.writeText(bytes, utf8At)
  const view = new DataView(buffer)
  view.setUint32(0, s, true)
  view.setUint32(4, table.utf8Bytes, true)
  view.setUint32(8, table.utf16Units, true)
  view.setUint32(12, 0, true)
  return bytes
}

/** The columns of a payload of `floats` Float64 values and `refs` Uint32 references, or why they do not fit. */
export function readColumns(bytes: Uint8Array, floats: number, refs: number): Columns | string {
  if (bytes.length < HEADER_BYTES) return `payload of ${bytes.length} bytes is shorter than its header`
  // Typed-array views need aligned offsets; a payload sliced out of a larger buffer may not be.
  const payload = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice()
  const view = new DataView(payload.buffer, payload.byteOffset, payload.length)
  const s = view.getUint32(0, true)
  const utf8Bytes = view.getUint32(4, true)
  const utf16Units = view.getUint32(8, true)
  const utf8At = HEADER_BYTES + 8 * floats + 4 * (refs + s)
  const expected = utf8At + utf8Bytes + 2 * utf16Units
  if (payload.length !== expected) return `payload of ${payload.length} bytes, its header describes ${expected}`
  const base = payload.byteOffset
  const f64 = new Float64Array(payload.buffer, base + HEADER_BYTES, floats)
  const u32 = new Uint32Array(payload.buffer, base + HEADER_BYTES + 8 * floats, refs + s)
  const strings = decodeStrings(payload, u32.subarray(refs), utf8At, utf8Bytes, utf16Units)
  if (typeof strings === 'string') return strings
  return { f64, u32, strings }
}

export /** The string at `ref`, undefined when absent, null when the index is out of range. */
function optional(strings: readonly string[], ref: number): string | undefined | null {
  if (ref === ABSENT) return undefined
  return strings[ref] ?? null
}
