/**
 * Records of the `lateLane` and `archive` stores: a list of entries (columnar, see
 * historyColumns.ts) in the checksummed envelope of recordEnvelope.ts, magic "TMCH", kind 1
 * (late lane, `first` = the number of the first entry) or 2 (archive, `first` = the record's
 * sequence number).
 *
 * The store key repeats `first` and the entry count (and, for the archive, the range of window
 * starts), so opening a database and rotating records needs keys only, never values.
 */

import { seal, unseal } from '../wal/recordEnvelope.ts'
import type { HistoryColumns } from './historyColumns.ts'

/** What `decodeHistoryRecord` found. */
export type HistoryDecodeResult<T> =
  | { readonly ok: true; readonly first: number; readonly entries: readonly T[] }
  | { readonly ok: false; readonly reason: string }

const littleEndianHost = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1

/**
 * Encodes `entries` as one record of the kind `columns` stores.
 *
 * @example
 * const bytes = encodeHistoryRecord(LATE_LANE_COLUMNS, 120, engine.lateEvents())
 * decodeHistoryRecord(LATE_LANE_COLUMNS, bytes) // { ok: true, first: 120, entries: [...] }
 */
export function encodeHistoryRecord<T>(columns: HistoryColumns<T>, first: number, entries: readonly T[]): Uint8Array<ArrayBuffer> {
  if (!littleEndianHost) throw new Error('the history record codec needs a little-endian host')
  return seal(columns, first, entries.length, columns.encode(entries))
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
  const read = unseal(columns, bytes)
  if (!read.ok) return { ok: false, reason: read.reason }
  if (!littleEndianHost) return { ok: false, reason: 'the history record codec needs a little-endian host' }
  const entries = columns.decode(read.payload, read.entries)
  if (typeof entries === 'string') return { ok: false, reason: entries }
  return { ok: true, first: read.first, entries }
}
