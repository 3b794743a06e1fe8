/**
 * Binary records of the write-ahead log: one columnar record per batch, and the
 * checksum envelope around checkpoint bytes. Every number is little-endian.
 *
 * Log record (format version 1), n = events, s = distinct strings:
 *
 *   offset  bytes  field
 *   0       4      magic 0x4C574D54 (the bytes "TMWL")
 *   4       2      format version (1)
 *   6       2      flags (0, reserved)
 *   8       8      lsn, float64 holding a safe integer >= 1
 *   16      4      n
 *   20      4      s
 *   24      4      u8: bytes in the UTF-8 section
 *   28      4      u16: code units in the UTF-16 section
 *   32      4      payload CRC-32 over [40, end)
 *   36      4      header CRC-32 over [0, 36)
 *   40      8n     ts, Float64
 *   +8n     8n     value, Float64
 *   +16n    8n     seq, Float64; NaN = absent
 *   +24n    4n     id, Uint32 index into the string table
 *   +28n    4n     source, Uint32 index
 *   +32n    4n     key, Uint32 index; 0xFFFFFFFF = absent
 *   +36n    4s     string lengths in UTF-16 code units; bit 31 set = stored in the UTF-16 section
 *   ...     u8     UTF-8 of the other strings, concatenated in index order
 *   ...     2*u16  UTF-16 code units of flagged strings, in index order
 *
 * Strings with lone surrogates cannot round-trip through UTF-8, and ids must survive
 * recovery exactly (they are the dedup key), so those few go to the UTF-16 section.
 * The header has its own checksum so a damaged payload still tells which lsn and how
 * many events were lost. Float64 columns start at 8-byte offsets so decoding can view
 * them in place; the typed-array views assume a little-endian host (every current JS engine).
 *
 * Checkpoint envelope (format version 1):
 *
 *   0       4      magic 0x50434D54 (the bytes "TMCP")
 *   4       2      format version (1)
 *   6       2      flags (0, reserved)
 *   8       8      upToLsn, float64 holding a safe integer >= 0
 *   16      4      state byte length
 *   20      4      payload CRC-32 over [32, end)
 *   24      4      reserved (0)
 *   28      4      header CRC-32 over [0, 28)
 *   32      ...    state
 */

import type { StreamEvent } from '../event.ts'
import { crc32 } from './crc32.ts'
import type { Checkpoint } from './persistence.ts'

const WAL_MAGIC = 0x4c574d54
const CHECKPOINT_MAGIC = 0x50434d54
const FORMAT_VERSION = 1
const WAL_HEADER_BYTES = 40
const CHECKPOINT_HEADER_BYTES = 32
const ABSENT_KEY = 0xffffffff
const UTF16_FLAG = 0x80000000

const textEncoder = new TextEncoder()
// ignoreBOM keeps a leading U+FEFF of the first string; fatal turns bad bytes into a failure.
const textDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const littleEndianHost = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1

/** Why a record could not be decoded; `lsn` and `eventCount` are set when its header was intact. */
export interface WalDecodeFailure {
  readonly ok: false
  readonly reason: string
  readonly lsn?: number
  readonly eventCount?: number
}

export type WalDecodeResult =
  | { readonly ok: true; readonly lsn: number; readonly events: StreamEvent[] }
  | WalDecodeFailure

export type CheckpointDecodeResult =
  | { readonly ok: true; readonly checkpoint: Checkpoint }
  | { readonly ok: false; readonly reason: string; readonly upToLsn?: number }

type MutableEvent = { -readonly [K in keyof StreamEvent]: StreamEvent[K] }

/**
 * Encodes one batch as one log record (layout in the file header).
 * Allocates the record once; per event it only writes into typed arrays.
 *
 * @example
 * const record = encodeWalBatch(7, [{ id: 'd1-1', source: 'd1', seq: 1, ts: 1_700_000_000_000, value: 21.5 }])
 * decodeWalBatch(record) // { ok: true, lsn: 7, events: [...] }
 */
export function encodeWalBatch(lsn: number, events: readonly StreamEvent[]): Uint8Array<ArrayBuffer> {
  if (!Number.isSafeInteger(lsn) || lsn < 1) throw new RangeError(`lsn must be a safe integer >= 1, got ${lsn}`)
  if (!littleEndianHost) throw new Error('the log codec needs a little-endian host')
  const n = events.length
  const table = new StringTable()
  const refs = new Uint32Array(3 * n)
  for (let i = 0; i < n; i++) {
    const event = events[i] as StreamEvent
    refs[i] = table.add(event.id)
    refs[n + i] = table.intern(event.source)
    refs[2 * n + i] = event.key === undefined ? ABSENT_KEY : table.intern(event.key)
  }
  const s = table.lengths.length
  const utf8At = WAL_HEADER_BYTES + 36 * n + 4 * s
  const utf16At = utf8At + table.utf8Bytes
  const buffer = new ArrayBuffer(utf16At + 2 * table.utf16Units)
  const bytes = new Uint8Array(buffer)
  const ts = new Float64Array(buffer, WAL_HEADER_BYTES, n)
  const value = new Float64Array(buffer, WAL_HEADER_BYTES + 8 * n, n)
  const seq = new Float64Array(buffer, WAL_HEADER_BYTES + 16 * n, n)
  for (let i = 0; i < n; i++) {
    const event = events[i] as StreamEvent
    ts[i] = event.ts
    value[i] = event.value
    seq[i] = event.seq ?? Number.NaN
  }
  new Uint32Array(buffer, WAL_HEADER_BYTES + 24 * n, 3 * n).set(refs)
  new Uint32Array(buffer, WAL_HEADER_BYTES + 36 * n, s).set(table.lengths)
  if (table.utf8Bytes > 0) {
    const { written } = textEncoder.encodeInto(table.wellFormed.join(''), bytes.subarray(utf8At, utf16At))
    if (written !== table.utf8Bytes) throw new Error(`UTF-8 length mismatch: wrote ${written} of ${table.utf8Bytes} bytes`)
  }
  let at = utf16At
  for (const text of table.illFormed) {
    for (let k = 0; k < text.length; k++) {
      const unit = text.charCodeAt(k)
      bytes[at++] = unit & 0xff
      bytes[at++] = unit >>> 8
    }
  }
  const view = new DataView(buffer)
  view.setUint32(0, WAL_MAGIC, true)
  view.setUint16(4, FORMAT_VERSION, true)
  view.setUint16(6, 0, true)
  view.setFloat64(8, lsn, true)
  view.setUint32(16, n, true)
  view.setUint32(20, s, true)
  view.setUint32(24, table.utf8Bytes, true)
  view.setUint32(28, table.utf16Units, true)
  view.setUint32(32, crc32(bytes, WAL_HEADER_BYTES), true)
  view.setUint32(36, crc32(bytes, 0, 36), true)
  return bytes
}

/**
 * Decodes a log record, verifying both checksums. Never throws: damaged or foreign
 * bytes give `{ ok: false, reason }`, with the lsn and event count when the header survived.
 *
 * @example
 * const result = decodeWalBatch(record)
 * if (!result.ok) console.warn(`lost ${result.eventCount ?? 'unknown'} events: ${result.reason}`)
 */
export function decodeWalBatch(bytes: Uint8Array): WalDecodeResult {
  if (bytes.length < WAL_HEADER_BYTES) return walFailure(`${bytes.length} bytes is shorter than the record header`)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length)
  if (view.getUint32(0, true) !== WAL_MAGIC) return walFailure('not a log record (bad magic)')
  if (crc32(bytes, 0, 36) !== view.getUint32(36, true)) return walFailure('header checksum mismatch')
  const version = view.getUint16(4, true)
  if (version !== FORMAT_VERSION) return walFailure(`unsupported log format version ${version}`)
  const lsn = view.getFloat64(8, true)
  if (!Number.isSafeInteger(lsn) || lsn < 1) return walFailure(`invalid lsn ${lsn}`)
  const n = view.getUint32(16, true)
  const s = view.getUint32(20, true)
  const utf8Bytes = view.getUint32(24, true)
  const utf16Units = view.getUint32(28, true)
  const known = { lsn, eventCount: n }
  const expected = WAL_HEADER_BYTES + 36 * n + 4 * s + utf8Bytes + 2 * utf16Units
  if (bytes.length !== expected) return walFailure(`${bytes.length} bytes, header describes ${expected}`, known)
  if (crc32(bytes, WAL_HEADER_BYTES) !== view.getUint32(32, true)) return walFailure('payload checksum mismatch', known)
  if (!littleEndianHost) return walFailure('the log codec needs a little-endian host', known)

  // Typed-array views need aligned offsets; a record sliced out of a larger buffer may not be.
  const record = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice()
  const base = record.byteOffset
  const utf8At = WAL_HEADER_BYTES + 36 * n + 4 * s
  const strings = decodeStrings(record, new Uint32Array(record.buffer, base + utf8At - 4 * s, s), utf8At, utf8Bytes, utf16Units)
  if (typeof strings === 'string') return walFailure(strings, known)
  const ts = new Float64Array(record.buffer, base + WAL_HEADER_BYTES, n)
  const value = new Float64Array(record.buffer, base + WAL_HEADER_BYTES + 8 * n, n)
  const seq = new Float64Array(record.buffer, base + WAL_HEADER_BYTES + 16 * n, n)
  const refs = new Uint32Array(record.buffer, base + WAL_HEADER_BYTES + 24 * n, 3 * n)
  const events = new Array<StreamEvent>(n)
  for (let i = 0; i < n; i++) {
    const id = strings[refs[i] as number]
    const source = strings[refs[n + i] as number]
    const keyRef = refs[2 * n + i] as number
    const key = keyRef === ABSENT_KEY ? undefined : strings[keyRef]
    if (id === undefined || source === undefined || (key === undefined && keyRef !== ABSENT_KEY)) {
      return walFailure(`event ${i} refers to a missing string`, known)
    }
    const event: MutableEvent = { id, source, ts: ts[i] as number, value: value[i] as number }
    const eventSeq = seq[i] as number
    if (!Number.isNaN(eventSeq)) event.seq = eventSeq
    if (key !== undefined) event.key = key
    events[i] = event
  }
  return { ok: true, lsn, events }
}

/**
 * Wraps checkpoint state in a checksummed envelope (layout in the file header).
 *
 * @example
 * const bytes = encodeCheckpoint({ upToLsn: 42, state: engineState })
 * decodeCheckpoint(bytes) // { ok: true, checkpoint: { upToLsn: 42, state } }
 */
export function encodeCheckpoint(checkpoint: Checkpoint): Uint8Array<ArrayBuffer> {
  const { upToLsn, state } = checkpoint
  if (!Number.isSafeInteger(upToLsn) || upToLsn < 0) throw new RangeError(`upToLsn must be a safe integer >= 0, got ${upToLsn}`)
  const bytes = new Uint8Array(CHECKPOINT_HEADER_BYTES + state.length)
  bytes.set(state, CHECKPOINT_HEADER_BYTES)
  const view = new DataView(bytes.buffer)
  view.setUint32(0, CHECKPOINT_MAGIC, true)
  view.setUint16(4, FORMAT_VERSION, true)
  view.setUint16(6, 0, true)
  view.setFloat64(8, upToLsn, true)
  view.setUint32(16, state.length, true)
  view.setUint32(20, crc32(bytes, CHECKPOINT_HEADER_BYTES), true)
  view.setUint32(24, 0, true)
  view.setUint32(28, crc32(bytes, 0, 28), true)
  return bytes
}

/**
 * Opens a checkpoint envelope, verifying both checksums. Never throws. The returned
 * `state` is a view into `bytes`, not a copy.
 *
 * @example
 * const result = decodeCheckpoint(bytes)
 * if (result.ok) restore(result.checkpoint.state)
 */
export function decodeCheckpoint(bytes: Uint8Array): CheckpointDecodeResult {
  if (bytes.length < CHECKPOINT_HEADER_BYTES) return { ok: false, reason: `${bytes.length} bytes is shorter than the checkpoint header` }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length)
  if (view.getUint32(0, true) !== CHECKPOINT_MAGIC) return { ok: false, reason: 'not a checkpoint (bad magic)' }
  if (crc32(bytes, 0, 28) !== view.getUint32(28, true)) return { ok: false, reason: 'header checksum mismatch' }
  const version = view.getUint16(4, true)
  if (version !== FORMAT_VERSION) return { ok: false, reason: `unsupported checkpoint format version ${version}` }
  const upToLsn = view.getFloat64(8, true)
  if (!Number.isSafeInteger(upToLsn) || upToLsn < 0) return { ok: false, reason: `invalid upToLsn ${upToLsn}` }
  const expected = CHECKPOINT_HEADER_BYTES + view.getUint32(16, true)
  if (bytes.length !== expected) return { ok: false, reason: `${bytes.length} bytes, header describes ${expected}`, upToLsn }
  if (crc32(bytes, CHECKPOINT_HEADER_BYTES) !== view.getUint32(20, true)) {
    return { ok: false, reason: 'payload checksum mismatch', upToLsn }
  }
  return { ok: true, checkpoint: { upToLsn, state: bytes.subarray(CHECKPOINT_HEADER_BYTES) } }
}

function walFailure(reason: string, known?: { lsn: number; eventCount: number }): WalDecodeFailure {
  return known === undefined ? { ok: false, reason } : { ok: false, reason, ...known }
}

/** The batch's distinct strings in first-use order, with the section sizes they need. */
class StringTable {
  readonly lengths: number[] = []
  readonly wellFormed: string[] = []
  readonly illFormed: string[] = []
  utf8Bytes = 0
  utf16Units = 0
  readonly #index = new Map<string, number>()

  /** Index of `text`, stored once however often the batch repeats it (sources, keys). */
  intern(text: string): number {
    const known = this.#index.get(text)
    if (known !== undefined) return known
    const index = this.add(text)
    this.#index.set(text, index)
    return index
  }

  /** Stores `text` without looking for an earlier copy: ids are unique, so hashing them buys nothing. */
  add(text: string): number {
    const index = this.lengths.length
    const utf8 = utf8Length(text)
    if (utf8 < 0) {
      this.lengths.push((text.length | UTF16_FLAG) >>> 0)
      this.illFormed.push(text)
      this.utf16Units += text.length
    } else {
      this.lengths.push(text.length)
      this.wellFormed.push(text)
      this.utf8Bytes += utf8
    }
    return index
  }
}

/** Bytes TextEncoder will produce for `text`, or -1 when it holds a lone surrogate. */
function utf8Length(text: string): number {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x80) bytes += 1
    else if (unit < 0x800) bytes += 2
    else if (unit < 0xd800 || unit > 0xdfff) bytes += 3
    else {
      const next = text.charCodeAt(i + 1)
      if (unit > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return -1
      bytes += 4
      i++
    }
  }
  return bytes
}

/** The string table, or the reason it is inconsistent. */
function decodeStrings(
  record: Uint8Array,
  lengths: Uint32Array,
  utf8At: number,
  utf8Bytes: number,
  utf16Units: number,
): string[] | string {
  let text: string
  try {
    text = textDecoder.decode(record.subarray(utf8At, utf8At + utf8Bytes))
  } catch {
    return 'string section is not valid UTF-8'
  }
  const strings = new Array<string>(lengths.length)
  let textAt = 0
  let unitAt = 0
  const utf16At = utf8At + utf8Bytes
  for (let k = 0; k < lengths.length; k++) {
    const length = lengths[k] as number
    if (length & UTF16_FLAG) {
      const units = length & ~UTF16_FLAG
      if (unitAt + units > utf16Units) return 'string table overruns the UTF-16 section'
      strings[k] = readUtf16(record, utf16At + 2 * unitAt, units)
      unitAt += units
    } else {
      if (textAt + length > text.length) return 'string table overruns the UTF-8 section'
      strings[k] = text.slice(textAt, textAt + length)
      textAt += length
    }
  }
  if (textAt !== text.length || unitAt !== utf16Units) return 'string table does not cover its sections'
  return strings
}

function readUtf16(bytes: Uint8Array, at: number, units: number): string {
  let text = ''
  const chunk: number[] = []
  for (let k = 0; k < units; k++) {
    chunk.push((bytes[at + 2 * k] as number) | ((bytes[at + 2 * k + 1] as number) << 8))
    if (chunk.length === 4096 || k === units - 1) {
      text += String.fromCharCode(...chunk)
      chunk.length = 0
    }
  }
  return text
}
