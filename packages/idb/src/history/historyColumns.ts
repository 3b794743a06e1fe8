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

import { type Columns, columnsLength, layColumns, viewColumns } from '../wal/walColumns.ts'
import type { EnvelopeKind } from '../wal/recordEnvelope.ts'
import type { StringTable } from '../wal/walStrings.ts'

const HEADER_BYTES = 16

/** The magic of history records (the bytes "TMCH"). */
export const HISTORY_MAGIC = 0x48434d54

/** How one kind of history record stores its entries: its envelope kind (1 late lane, 2 archive, named after its store), and its payload codec. */
export interface HistoryColumns<T> extends EnvelopeKind {
  encode(entries: readonly T[]): Uint8Array<ArrayBuffer>
  /** Reads `n` entries; never throws: inconsistent bytes give the reason as a string. */
  decode(payload: Uint8Array, n: number): T[] | string
}

/** A payload of `floats` Float64 values (`fill` writes them), the Uint32 `refs` and the string table. */
export function writeColumns(floats: number, refs: Uint32Array, table: StringTable, fill: (f64: Float64Array) => void): Uint8Array<ArrayBuffer> {
  const bytes = layColumns(HEADER_BYTES, floats, refs, table, 0, fill)
  const view = new DataView(bytes.buffer)
  view.setUint32(0, table.lengths.length, true)
  view.setUint32(4, table.utf8Bytes, true)
  view.setUint32(8, table.utf16Units, true)
  return bytes
}

/** The columns of a payload of `floats` Float64 values and `refs` Uint32 references, or why they do not fit. */
export function readColumns(payload: Uint8Array, floats: number, refs: number): Columns | string {
  if (payload.length < HEADER_BYTES) return `payload of ${payload.length} bytes is shorter than its header`
  const view = new DataView(payload.buffer, payload.byteOffset, payload.length)
  const s = view.getUint32(0, true)
  const utf8Bytes = view.getUint32(4, true)
  const utf16Units = view.getUint32(8, true)
  const expected = columnsLength(HEADER_BYTES, floats, refs, s, utf8Bytes, utf16Units)
  if (payload.length !== expected) return `payload of ${payload.length} bytes, its header describes ${expected}`
  return viewColumns(payload, HEADER_BYTES, floats, refs, s, utf8Bytes, utf16Units)
}
