/**
 * Records of the `lateLane` and `archive` stores: a list of entries (columnar, see
 * historyColumns.ts) in a checksummed envelope. Every number is little-endian.
 *
 *   offset  bytes  field
 *   0       4      magic 0x48434D54 (the bytes "TMCH")
 *   4       2      format version (1)
 *   6       2      kind: 1 late lane, 2 archive
 *   8       8      first, float64 safe integer: index of the first late-lane entry, or the
 *                  archive record's sequence number
 *   16      4      entries
 *   20      4      payload byte length
 *   24      4      payload CRC-32 over [32, end)
 *   28      4      header CRC-32 over [0, 28)
 *   32      ...    payload: the entries' columns
 *
 * The store key repeats `first` and `entries` (and, for the archive, the range of window
 * starts), so opening a database and rotating records needs keys only, never values.
 */

import { crc32 } from '../wal/crc32.ts'
import type { HistoryColumns } from './historyColumns.ts'

const HISTORY_MAGIC = 0x48434d54
const FORMAT_VERSION = 1
const HEADER_BYTES = 32

/** What `decodeHistoryRecord` found. */
export type HistoryDecodeResult<T> =
  | { readonly ok: true; readonly first: number; readonly entries: readonly T[] }
  | { readonly ok: false; readonly reason: string }

const littleEndianHost = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1

/**
 * Encodes `entries` as one record of the kind `columns` stores (layout in the file header).
 *
 * @example
 * const bytes = encodeHistoryRecord(LATE_LANE_COLUMNS, 120, engine.lateEvents())
 * decodeHistoryRecord(LATE_LANE_COLUMNS, bytes) // { ok: true, first: 120, entries: [...] }
 */
export function encodeHistoryRecord<T>(columns: HistoryColumns<T>, first: number, entries: readonly T[]): Uint8Array<ArrayBuffer> {
  if (!Number.isSafeInteger(first) || first < 0) throw new RangeError(`first must be a safe integer >= 0, got ${first}`)
  if (!littleEndianHost) throw new Error('the history record codec needs a little-endian host')
  const payload = columns.encode(entries)
  const bytes = new Uint8Array(HEADER_BYTES + payload.length)
  bytes.set(payload, HEADER_BYTES)
  const view = new DataView(bytes.buffer)
  view.setUint32(0, HISTORY_MAGIC, true)
  view.setUint16(4, FORMAT_VERSION, true)
  view.setUint16(6, columns.kind, true)
  view.setFloat64(8, first, true)
  view.setUint32(16, entries.length, true)
  view.setUint32(20, payload.length, true)
  view.setUint32(24, crc32(bytes, HEADER_BYTES), true)
  view.setUint32(28, crc32(bytes, 0, 28), true)
  return bytes
}

/**
 * Opens a record of the kind `columns` stores, verifying both checksums. Never throws:
 * damaged or foreign bytes give `{ ok: false, reason }`.
 *
 * @example
 * const read = decodeHistoryRecord(ARCHIVE_COLUMNS, bytes)
 * if (read.ok) for (const change of read.entries) show(change.result)
 */
export function decodeHistoryRecord<T>(columns: HistoryColumns<T>, bytes: Uint8Array): HistoryDecodeResult<T> {
  if (bytes.length < HEADER_BYTES) return { ok: false, reason: `${bytes.length} bytes is shorter than the record header` }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length)
  if (view.getUint32(0, true) !== HISTORY_MAGIC) return { ok: false, reason: 'not a history record (bad magic)' }
  if (crc32(bytes, 0, 28) !== view.getUint32(28, true)) return { ok: false, reason: 'header checksum mismatch' }
  const version = view.getUint16(4, true)
  if (version !== FORMAT_VERSION) return { ok: false, reason: `unsupported history record format version ${version}` }
  const kind = view.getUint16(6, true)
  if (kind !== columns.kind) return { ok: false, reason: `record kind ${kind} is not ${columns.name}` }
  const first = view.getFloat64(8, true)
  if (!Number.isSafeInteger(first) || first < 0) return { ok: false, reason: `invalid first ${first}` }
  const expected = HEADER_BYTES + view.getUint32(20, true)
  if (bytes.length !== expected) return { ok: false, reason: `${bytes.length} bytes, header describes ${expected}` }
  if (crc32(bytes, HEADER_BYTES) !== view.getUint32(24, true)) return { ok: false, reason: 'payload checksum mismatch' }
  if (!littleEndianHost) return { ok: false, reason: 'the history record codec needs a little-endian host' }
  const entries = columns.decode(bytes.subarray(HEADER_BYTES), view.getUint32(16, true))
  if (typeof entries === 'string') return { ok: false, reason: entries }
  return { ok: true, first, entries }
}
