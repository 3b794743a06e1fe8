/**
 * Binary records of the write-ahead log: one columnar record per journal operation
 * (an ingest batch, a watermark advance, a tick, a merge of peers' state, a batch refused
 * whole). Every number is little-endian.
 *
 * Log record, format version 2 (written), n = events, c = cells, k = clocks,
 * r = rejected-reason entries, s = distinct strings:
 *
 *   offset  bytes  field
 *   0       4      magic 0x4C574D54 (the bytes "TMWL")
 *   4       2      format version (2)
 *   6       2      flags: bits 0-2 op kind (0 ingest, 1 advance, 2 tick, 3 merge, 4 refuse);
 *                  others 0
 *   8       8      lsn, float64 holding a safe integer >= 1
 *   16      8      time, float64: `now` (ingest, tick, merge), `to` (advance), NaN (refuse)
 *   24      4      n
 *   28      4      c
 *   32      4      k
 *   36      4      r
 *   40      4      s
 *   44      4      u8: bytes in the UTF-8 section
 *   48      4      u16: code units in the UTF-16 section
 *   52      4      reserved (0)
 *   56      4      payload CRC-32 over [64, end)
 *   60      4      header CRC-32 over [0, 60)
 *   64      ...    Float64 columns: ts, value, seq (NaN = absent) per event; start, count,
 *                  sum, min, max, maxTs, version per cell; maxTs, prefix, prefixTs,
 *                  version per clock
 *   ...     ...    Uint32 columns: id, source, key (0xFFFFFFFF = absent) per event; window,
 *                  key, source per cell; source, writer, provable (0 or 1) per clock;
 *                  reason, count per rejected entry (string indexes except counts)
 *   ...     ...    string table (walStrings.ts): 4s lengths, then UTF-8, then UTF-16
 *
 * Format version 1 (read only) held ingest batches without processing time: a 40-byte
 * header (magic, version, flags, lsn, n, s, u8, u16, payload CRC, header CRC over [0, 36))
 * and the event columns. It decodes as an ingest op with `now: NaN`.
 *
 * The header has its own checksum so a damaged payload still tells which lsn, which kind
 * of op and how many events were lost. Float64 columns come first, at 8-byte offsets, so
 * decoding views them in place; the typed-array views assume a little-endian host.
 */

import { ANOMALY_REASONS, type AnomalyReason } from '../anomaly.ts'
import type { Cell } from '../cell.ts'
import type { StreamEvent } from '../event.ts'
import type { CellEntry, ClockEntry } from '../replicaPort.ts'
import { crc32 } from './crc32.ts'
import type { WalOp, WalOpKind } from './persistence.ts'
import { decodeStrings, StringTable } from './walStrings.ts'

const WAL_MAGIC = 0x4c574d54
const FORMAT_VERSION = 2
const HEADER_BYTES = 64
const V1_HEADER_BYTES = 40
const ABSENT_KEY = 0xffffffff
const KINDS: readonly WalOpKind[] = ['ingest', 'advance', 'tick', 'merge', 'refuse']
const KNOWN_REASONS: ReadonlySet<string> = new Set(ANOMALY_REASONS)

const littleEndianHost = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1

/** Why a record could not be decoded; the rest is set when its header was intact. */
export interface WalDecodeFailure {
  readonly ok: false
  readonly reason: string
  readonly lsn?: number
  readonly kind?: WalOpKind
  /** Events of an ingest record. */
  readonly eventCount?: number
}

export type WalDecodeResult = { readonly ok: true; readonly lsn: number; readonly op: WalOp } | WalDecodeFailure

type MutableEvent = { -readonly [K in keyof StreamEvent]: StreamEvent[K] }

interface Header {
  readonly version: number
  readonly kind: WalOpKind
  readonly lsn: number
  readonly time: number
  readonly n: number
  readonly c: number
  readonly k: number
  readonly r: number
  readonly s: number
  readonly utf8Bytes: number
  readonly utf16Units: number
  readonly headerBytes: number
}

/**
 * Encodes one journal operation as one log record (layout in the file header).
 * Allocates the record once; per event it only writes into typed arrays. Copies
 * everything it needs, so the caller may reuse `op` as soon as this returns.
 *
 * @example
 * const record = encodeWalRecord(7, { kind: 'ingest', now: Date.now(), events: batch, rejected: {} })
 * decodeWalRecord(record) // { ok: true, lsn: 7, op: { kind: 'ingest', ... } }
 */
export function encodeWalRecord(lsn: number, op: WalOp): Uint8Array<ArrayBuffer> {
  if (!Number.isSafeInteger(lsn) || lsn < 1) throw new RangeError(`lsn must be a safe integer >= 1, got ${lsn}`)
  if (!littleEndianHost) throw new Error('the log codec needs a little-endian host')
  const events = op.kind === 'ingest' ? op.events : []
  const cells = op.kind === 'merge' ? op.cells : []
  const clocks = op.kind === 'merge' ? op.clocks : []
  const rejected = op.kind === 'ingest' || op.kind === 'refuse' ? rejectedEntries(op.rejected) : []
  const n = events.length
  const c = cells.length
  const k = clocks.length
  const r = rejected.length
  const table = new StringTable()
  // Uint32 columns in layout order; string lengths follow once the table is complete.
  const refs = new Uint32Array(3 * n + 3 * c + 3 * k + 2 * r)
  for (let i = 0; i < n; i++) {
    const event = events[i] as StreamEvent
    refs[i] = table.add(event.id)
    refs[n + i] = table.intern(event.source)
    refs[2 * n + i] = event.key === undefined ? ABSENT_KEY : table.intern(event.key)
  }
  let at = 3 * n
  for (let i = 0; i < c; i++) {
    const { address } = cells[i] as CellEntry
    refs[at + i] = table.intern(address.window)
    refs[at + c + i] = table.intern(address.key)
    refs[at + 2 * c + i] = table.intern(address.source)
  }
  at += 3 * c
  for (let i = 0; i < k; i++) {
    const clock = clocks[i] as ClockEntry
    refs[at + i] = table.intern(clock.source)
    refs[at + k + i] = table.intern(clock.writer)
    refs[at + 2 * k + i] = clock.provable ? 1 : 0
  }
  at += 3 * k
  for (let i = 0; i < r; i++) {
    const [reason, count] = rejected[i] as [string, number]
    refs[at + i] = table.intern(reason)
    refs[at + r + i] = count
  }
  const s = table.lengths.length
  const floats = 3 * n + 7 * c + 4 * k
  const u32At = HEADER_BYTES + 8 * floats
  const utf8At = u32At + 4 * (refs.length + s)
  const buffer = new ArrayBuffer(utf8At + table.utf8Bytes + 2 * table.utf16Units)
  const bytes = new Uint8Array(buffer)
  const f64 = new Float64Array(buffer, HEADER_BYTES, floats)
  for (let i = 0; i < n; i++) {
    const event = events[i] as StreamEvent
    f64[i] = event.ts
    f64[n + i] = event.value
    f64[2 * n + i] = event.seq ?? Number.NaN
  }
  at = 3 * n
  for (let i = 0; i < c; i++) {
    const { address, cell } = cells[i] as CellEntry
    f64[at + i] = address.start
    f64[at + c + i] = cell.count
    f64[at + 2 * c + i] = cell.sum
    f64[at + 3 * c + i] = cell.min
    f64[at + 4 * c + i] = cell.max
    f64[at + 5 * c + i] = cell.maxTs
    f64[at + 6 * c + i] = cell.version
  }
  at += 7 * c
  for (let i = 0; i < k; i++) {
    const clock = clocks[i] as ClockEntry
    f64[at + i] = clock.maxTs
    f64[at + k + i] = clock.prefix
    f64[at + 2 * k + i] = clock.prefixTs
    f64[at + 3 * k + i] = clock.version
  }
  const u32 = new Uint32Array(buffer, u32At, refs.length + s)
  u32.set(refs)
  u32.set(table.lengths, refs.length)
  table.writeText(bytes, utf8At)
  const view = new DataView(buffer)
  view.setUint32(0, WAL_MAGIC, true)
  view.setUint16(4, FORMAT_VERSION, true)
  view.setUint16(6, KINDS.indexOf(op.kind), true)
  view.setFloat64(8, lsn, true)
  view.setFloat64(16, op.kind === 'advance' ? op.to : op.kind === 'refuse' ? Number.NaN : op.now, true)
  view.setUint32(24, n, true)
  view.setUint32(28, c, true)
  view.setUint32(32, k, true)
  view.setUint32(36, r, true)
  view.setUint32(40, s, true)
  view.setUint32(44, table.utf8Bytes, true)
  view.setUint32(48, table.utf16Units, true)
  view.setUint32(52, 0, true)
  view.setUint32(56, crc32(bytes, HEADER_BYTES), true)
  view.setUint32(60, crc32(bytes, 0, 60), true)
  return bytes
}

/**
 * Decodes a log record of either format version, verifying both checksums. Never
 * throws: damaged or foreign bytes give `{ ok: false, reason }`, with the lsn, op kind
 * and event count when the header survived.
 *
 * @example
 * const result = decodeWalRecord(record)
 * if (!result.ok) console.warn(`lost ${result.eventCount ?? 'unknown'} events: ${result.reason}`)
 */
export function decodeWalRecord(bytes: Uint8Array): WalDecodeResult {
  const header = readHeader(bytes)
  if (typeof header === 'string') return { ok: false, reason: header }
  const known = header.kind === 'ingest' ? { lsn: header.lsn, kind: header.kind, eventCount: header.n } : { lsn: header.lsn, kind: header.kind }
  const fail = (reason: string): WalDecodeFailure => ({ ok: false, reason, ...known })
  const { n, c, k, r, s, utf8Bytes, utf16Units, headerBytes } = header
  const floats = 3 * n + 7 * c + 4 * k
  const u32Count = 3 * n + 3 * c + 3 * k + 2 * r + s
  const utf8At = headerBytes + 8 * floats + 4 * u32Count
  const expected = utf8At + utf8Bytes + 2 * utf16Units
  if (bytes.length !== expected) return fail(`${bytes.length} bytes, header describes ${expected}`)
  if (crc32(bytes, headerBytes) !== new DataView(bytes.buffer, bytes.byteOffset, bytes.length).getUint32(headerBytes - 8, true)) {
    return fail('payload checksum mismatch')
  }
  if (!littleEndianHost) return fail('the log codec needs a little-endian host')

  // Typed-array views need aligned offsets; a record sliced out of a larger buffer may not be.
  const record = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice()
  const base = record.byteOffset
  const f64 = new Float64Array(record.buffer, base + headerBytes, floats)
  const u32 = new Uint32Array(record.buffer, base + headerBytes + 8 * floats, u32Count)
  const strings = decodeStrings(record, u32.subarray(u32Count - s), utf8At, utf8Bytes, utf16Units)
  if (typeof strings === 'string') return fail(strings)
  const columns = { f64, u32, strings }
  switch (header.kind) {
    case 'ingest': {
      const events = readEvents(columns, n)
      if (typeof events === 'string') return fail(events)
      const rejected = readRejected(columns, 3 * n, r)
      if (typeof rejected === 'string') return fail(rejected)
      return { ok: true, lsn: header.lsn, op: { kind: 'ingest', now: header.time, events, rejected } }
    }
    case 'advance':
      return { ok: true, lsn: header.lsn, op: { kind: 'advance', to: header.time } }
    case 'tick':
      return { ok: true, lsn: header.lsn, op: { kind: 'tick', now: header.time } }
    case 'refuse': {
      const rejected = readRejected(columns, 0, r)
      if (typeof rejected === 'string') return fail(rejected)
      return { ok: true, lsn: header.lsn, op: { kind: 'refuse', rejected } }
    }
    case 'merge': {
      const merged = readMerge(columns, c, k)
      if (typeof merged === 'string') return fail(merged)
      return { ok: true, lsn: header.lsn, op: { kind: 'merge', now: header.time, ...merged } }
    }
  }
}

/** The header fields, or why the header cannot be trusted. */
function readHeader(bytes: Uint8Array): Header | string {
  if (bytes.length < V1_HEADER_BYTES) return `${bytes.length} bytes is shorter than the record header`
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length)
  if (view.getUint32(0, true) !== WAL_MAGIC) return 'not a log record (bad magic)'
  const version = view.getUint16(4, true)
  if (version === 1) {
    if (crc32(bytes, 0, 36) !== view.getUint32(36, true)) return 'header checksum mismatch'
    const lsn = view.getFloat64(8, true)
    if (!Number.isSafeInteger(lsn) || lsn < 1) return `invalid lsn ${lsn}`
    return {
      version,
      kind: 'ingest',
      lsn,
      time: Number.NaN,
      n: view.getUint32(16, true),
      c: 0,
      k: 0,
      r: 0,
      s: view.getUint32(20, true),
      utf8Bytes: view.getUint32(24, true),
      utf16Units: view.getUint32(28, true),
      headerBytes: V1_HEADER_BYTES,
    }
  }
  if (bytes.length < HEADER_BYTES) return `${bytes.length} bytes is shorter than the record header`
  if (crc32(bytes, 0, 60) !== view.getUint32(60, true)) return 'header checksum mismatch'
  if (version !== FORMAT_VERSION) return `unsupported log format version ${version}`
  const lsn = view.getFloat64(8, true)
  if (!Number.isSafeInteger(lsn) || lsn < 1) return `invalid lsn ${lsn}`
  const flags = view.getUint16(6, true)
  const kind = KINDS[flags & 7]
  if (kind === undefined || flags >>> 3 !== 0) return `unknown flags 0x${flags.toString(16)}`
  const header: Header = {
    version,
    kind,
    lsn,
    time: view.getFloat64(16, true),
    n: view.getUint32(24, true),
    c: view.getUint32(28, true),
    k: view.getUint32(32, true),
    r: view.getUint32(36, true),
    s: view.getUint32(40, true),
    utf8Bytes: view.getUint32(44, true),
    utf16Units: view.getUint32(48, true),
    headerBytes: HEADER_BYTES,
  }
  const { n, c, k, r } = header
  const shapeFits =
    kind === 'ingest'
      ? c === 0 && k === 0
      : kind === 'merge'
        ? n === 0 && r === 0
        : kind === 'refuse'
          ? n + c + k === 0
          : n + c + k + r === 0
  if (!shapeFits) return `a ${kind} record with ${n} events, ${c} cells, ${k} clocks and ${r} rejected entries`
  return header
}

interface Columns {
  readonly f64: Float64Array
  readonly u32: Uint32Array
  readonly strings: readonly string[]
}

function readEvents({ f64, u32, strings }: Columns, n: number): StreamEvent[] | string {
  const events = new Array<StreamEvent>(n)
  for (let i = 0; i < n; i++) {
    const id = strings[u32[i] as number]
    const source = strings[u32[n + i] as number]
    const keyRef = u32[2 * n + i] as number
    const key = keyRef === ABSENT_KEY ? undefined : strings[keyRef]
    if (id === undefined || source === undefined || (key === undefined && keyRef !== ABSENT_KEY)) {
      return `event ${i} refers to a missing string`
    }
    const event: MutableEvent = { id, source, ts: f64[i] as number, value: f64[n + i] as number }
    const seq = f64[2 * n + i] as number
    if (!Number.isNaN(seq)) event.seq = seq
    if (key !== undefined) event.key = key
    events[i] = event
  }
  return events
}

function readRejected({ u32, strings }: Columns, at: number, r: number): Partial<Record<AnomalyReason, number>> | string {
  const rejected: Partial<Record<AnomalyReason, number>> = {}
  for (let i = 0; i < r; i++) {
    const reason = strings[u32[at + i] as number]
    if (reason === undefined || !KNOWN_REASONS.has(reason)) return `rejected entry ${i} names no known anomaly reason`
    rejected[reason as AnomalyReason] = u32[at + r + i] as number
  }
  return rejected
}

function readMerge({ f64, u32, strings }: Columns, c: number, k: number): { cells: CellEntry[]; clocks: ClockEntry[] } | string {
  const cells = new Array<CellEntry>(c)
  for (let i = 0; i < c; i++) {
    const window = strings[u32[i] as number]
    const key = strings[u32[c + i] as number]
    const source = strings[u32[2 * c + i] as number]
    if (window === undefined || key === undefined || source === undefined) return `cell ${i} refers to a missing string`
    const cell: Cell = {
      count: f64[c + i] as number,
      sum: f64[2 * c + i] as number,
      min: f64[3 * c + i] as number,
      max: f64[4 * c + i] as number,
      maxTs: f64[5 * c + i] as number,
      version: f64[6 * c + i] as number,
    }
    cells[i] = { address: { window, key, start: f64[i] as number, source }, cell }
  }
  const clocks = new Array<ClockEntry>(k)
  const fAt = 7 * c
  const uAt = 3 * c
  for (let i = 0; i < k; i++) {
    const source = strings[u32[uAt + i] as number]
    const writer = strings[u32[uAt + k + i] as number]
    const provable = u32[uAt + 2 * k + i] as number
    if (source === undefined || writer === undefined) return `clock ${i} refers to a missing string`
    if (provable > 1) return `clock ${i} has provable flag ${provable}`
    clocks[i] = {
      source,
      writer,
      maxTs: f64[fAt + i] as number,
      prefix: f64[fAt + k + i] as number,
      prefixTs: f64[fAt + 2 * k + i] as number,
      provable: provable === 1,
      version: f64[fAt + 3 * k + i] as number,
    }
  }
  return { cells, clocks }
}

function rejectedEntries(rejected: Readonly<Partial<Record<AnomalyReason, number>>>): [string, number][] {
  const entries: [string, number][] = []
  for (const reason of Object.keys(rejected)) {
    const count = rejected[reason as AnomalyReason]
    if (count === undefined || count === 0) continue
    if (!KNOWN_REASONS.has(reason) || !Number.isInteger(count) || count < 0 || count > 0xffffffff) {
      throw new RangeError(`rejected counts need known reasons and 32-bit counts, got ${reason}: ${count}`)
    }
    entries.push([reason, count])
  }
  return entries
}
