import type { WalOp } from '@tidemark/engine'
/**
 * Binary records of the write-ahead log: one columnar record per journal operation
 * (an ingest batch, a watermark advance, a tick, a merge of peers' state, a batch refused
 * whole, a source finished). Every number is little-endian.
 *
 * Log record, format version 1, n = events, c = cells, g = cell groups, k = clocks,
 * r = rejected-reason entries, s = distinct strings:
 *
 *   offset  bytes  field
 *   0       4      magic 0x4C574D54 (the bytes "TMWL")
 *   4       2      format version (1)
 *   6       2      flags: bits 0-2 op kind (0 ingest, 1 advance, 2 tick, 3 merge, 4 refuse,
 *                  5 finish); others 0
 *   8       8      lsn, float64 holding a safe integer >= 1
 *   16      8      time, float64: `now` (ingest, tick, merge, finish), `to` (advance), NaN (refuse)
 *   24      4      n
 *   28      4      c
 *   32      4      k
 *   36      4      r
 *   40      4      s
 *   44      4      u8: bytes in the UTF-8 section
 *   48      4      u16: code units in the UTF-16 section
 *   52      4      g
 *   56      4      payload CRC-32 over [64, end)
 *   60      4      header CRC-32 over [0, 60)
 *   64      ...    Float64 columns: ts, value, seq (NaN = absent) per event; start per group,
 *                  then each group's count, sum, min, max, maxTs and version columns (6 per
 *                  cell, copied whole, as the doc carries them); maxTs, prefix, prefixTs,
 *                  version per clock
 *   ...     ...    Uint32 columns: id, source, key (0xFFFFFFFF = absent) per event; window,
 *                  source and cell count per group, then key per cell; source, writer,
 *                  flags per clock (bit 0 provable, bit 1 finished); reason, count per
 *                  rejected entry; the source of a finish (string indexes except counts and
 *                  flags)
 *   ...     ...    string table (walStrings.ts): 4s lengths, then UTF-8, then UTF-16
 *   ...     ...    a merge whose groups carry aggregate states: their aggregate column, group
 *                  after group (`encodeAggregateColumn` of @tidemark/engine/adapter), to the end
 *
 * The header has its own checksum so a damaged payload still tells which lsn, which kind
 * of op and how many events were lost. Float64 columns come first, at 8-byte offsets, so
 * decoding views them in place; the typed-array views assume a little-endian host.
 */

import type { AnomalyReason, CellGroup, ClockEntry } from '@tidemark/engine'
import { cellCount, encodeAggregateColumn, GROUP_COLUMNS, readAggregateColumn } from '@tidemark/engine/adapter'
import { crc32 } from './crc32.ts'
import type { WalOpKind } from '../persistence/persistence.ts'
import { columnsLength, eventFloats, eventRefs, KNOWN_REASONS, layColumns, readClocks, readEvents, readGroups, readRejected, viewColumns } from './walColumns.ts'
import { StringTable } from './walStrings.ts'

const WAL_MAGIC = 0x4c574d54
const FORMAT_VERSION = 1
const HEADER_BYTES = 64
const KINDS: readonly WalOpKind[] = ['ingest', 'advance', 'tick', 'merge', 'refuse', 'finish']

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

/**
 * What `decodeWalRecord` found: the record's lsn and operation, or a `WalDecodeFailure`.
 *
 * @example
 * const decoded: WalDecodeResult = decodeWalRecord(bytes)
 * if (decoded.ok) engine.replay(decoded.op)
 */
export type WalDecodeResult = { readonly ok: true; readonly lsn: number; readonly op: WalOp } | WalDecodeFailure

interface Header {
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
  readonly g: number
}

/** How many Float64 values and Uint32 references (before the string lengths) a record's columns hold. */
function columnSizes({ kind, n, c, k, r, g }: Pick<Header, 'kind' | 'n' | 'c' | 'k' | 'r' | 'g'>): { floats: number; refs: number } {
  return { floats: 3 * n + g + GROUP_COLUMNS * c + 4 * k, refs: 3 * n + 3 * g + c + 3 * k + 2 * r + (kind === 'finish' ? 1 : 0) }
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
  const groups = op.kind === 'merge' ? op.groups : []
  const clocks = op.kind === 'merge' ? op.clocks : []
  const rejected = op.kind === 'ingest' || op.kind === 'refuse' ? rejectedEntries(op.rejected) : []
  const n = events.length
  const g = groups.length
  const c = cellCount(groups)
  const k = clocks.length
  const r = rejected.length
  const sizes = columnSizes({ kind: op.kind, n, c, k, r, g })
  const table = new StringTable()
  // Uint32 columns in layout order; string lengths follow once the table is complete.
  const refs = new Uint32Array(sizes.refs)
  eventRefs(events, refs, table)
  let at = 3 * n
  for (let j = 0; j < g; j++) {
    const group = groups[j] as CellGroup
    if (group.columns.length !== GROUP_COLUMNS * group.keys.length) {
      throw new RangeError(`a cell group needs ${GROUP_COLUMNS} values per key, got ${group.columns.length} for ${group.keys.length} keys`)
    }
    refs[at + j] = table.intern(group.window)
    refs[at + g + j] = table.intern(group.source)
    refs[at + 2 * g + j] = group.keys.length
  }
  at += 3 * g
  for (const group of groups) for (const key of group.keys) refs[at++] = table.intern(key)
  for (let i = 0; i < k; i++) {
    const clock = clocks[i] as ClockEntry
    refs[at + i] = table.intern(clock.source)
    refs[at + k + i] = table.intern(clock.writer)
    refs[at + 2 * k + i] = (clock.provable ? 1 : 0) | (clock.finished === true ? 2 : 0)
  }
  at += 3 * k
  for (let i = 0; i < r; i++) {
    const [reason, count] = rejected[i] as [string, number]
    refs[at + i] = table.intern(reason)
    refs[at + r + i] = count
  }
  if (op.kind === 'finish') refs[at + 2 * r] = table.intern(op.source)
  // An engine's groups carry states for every cell (it has aggregates) or for none.
  const column = encodeAggregateColumn(groups.flatMap((group) => group.aggregates ?? []))
  const bytes = layColumns(HEADER_BYTES, sizes.floats, refs, table, column.length, (f64) => {
    eventFloats(events, f64)
    let value = 3 * n
    for (let j = 0; j < g; j++) f64[value + j] = (groups[j] as CellGroup).start
    value += g
    for (const group of groups) {
      f64.set(group.columns, value)
      value += group.columns.length
    }
    for (let i = 0; i < k; i++) {
      const clock = clocks[i] as ClockEntry
      f64[value + i] = clock.maxTs
      f64[value + k + i] = clock.prefix
      f64[value + 2 * k + i] = clock.prefixTs
      f64[value + 3 * k + i] = clock.version
    }
  })
  const view = new DataView(bytes.buffer)
  bytes.set(column, bytes.length - column.length)
  view.setUint32(0, WAL_MAGIC, true)
  view.setUint16(4, FORMAT_VERSION, true)
  view.setUint16(6, KINDS.indexOf(op.kind), true)
  view.setFloat64(8, lsn, true)
  view.setFloat64(16, op.kind === 'advance' ? op.to : op.kind === 'refuse' ? Number.NaN : op.now, true)
  view.setUint32(24, n, true)
  view.setUint32(28, c, true)
  view.setUint32(32, k, true)
  view.setUint32(36, r, true)
  view.setUint32(40, table.lengths.length, true)
  view.setUint32(44, table.utf8Bytes, true)
  view.setUint32(48, table.utf16Units, true)
  view.setUint32(52, g, true)
  view.setUint32(56, crc32(bytes, HEADER_BYTES), true)
  view.setUint32(60, crc32(bytes, 0, 60), true)
  return bytes
}

/**
 * Decodes a log record, verifying both checksums. Never
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
  const { n, c, k, r, s, utf8Bytes, utf16Units } = header
  const { floats, refs } = columnSizes(header)
  const expected = columnsLength(HEADER_BYTES, floats, refs, s, utf8Bytes, utf16Units)
  // Only a merge's aggregate column follows what the header describes.
  if (header.kind === 'merge' ? bytes.length < expected : bytes.length !== expected) return fail(`${bytes.length} bytes, header describes ${expected}`)
  if (crc32(bytes, HEADER_BYTES) !== new DataView(bytes.buffer, bytes.byteOffset, bytes.length).getUint32(56, true)) {
    return fail('payload checksum mismatch')
  }
  if (!littleEndianHost) return fail('the log codec needs a little-endian host')
  const columns = viewColumns(bytes, HEADER_BYTES, floats, refs, s, utf8Bytes, utf16Units)
  if (typeof columns === 'string') return fail(columns)
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
    case 'finish': {
      const source = columns.strings[columns.u32[0] as number]
      if (source === undefined || source === '') return fail('a finish record names no source')
      return { ok: true, lsn: header.lsn, op: { kind: 'finish', source, now: header.time } }
    }
    case 'merge': {
      let groups = readGroups(columns, header.g, c)
      if (typeof groups === 'string') return fail(groups)
      if (bytes.length > expected) {
        // Copied: the record's buffer is not kept alive by the groups.
        const states = readAggregateColumn(bytes.slice(expected), c)
        if (typeof states === 'string') return fail(states)
        let at = 0
        groups = groups.map((group) => {
          const from = at
          at += group.keys.length
          return from === at ? group : { ...group, aggregates: (states as Uint8Array[][]).slice(from, at) }
        })
      }
      // A merge's clocks are its last columns.
      const clocks = readClocks(columns, floats - 4 * k, refs - 3 * k, k)
      if (typeof clocks === 'string') return fail(clocks)
      return { ok: true, lsn: header.lsn, op: { kind: 'merge', now: header.time, groups, clocks } }
    }
  }
}

/** The header fields, or why the header cannot be trusted. */
function readHeader(bytes: Uint8Array): Header | string {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length)
  // Foreign bytes are named as such even when they are short.
  if (bytes.length >= 4 && view.getUint32(0, true) !== WAL_MAGIC) return 'not a log record (bad magic)'
  if (bytes.length < HEADER_BYTES) return `${bytes.length} bytes is shorter than the record header`
  if (crc32(bytes, 0, 60) !== view.getUint32(60, true)) return 'header checksum mismatch'
  const version = view.getUint16(4, true)
  if (version !== FORMAT_VERSION) return `unsupported log format version ${version}`
  const lsn = view.getFloat64(8, true)
  if (!Number.isSafeInteger(lsn) || lsn < 1) return `invalid lsn ${lsn}`
  const flags = view.getUint16(6, true)
  const kind = KINDS[flags]
  if (kind === undefined) return `unknown flags 0x${flags.toString(16)}`
  const header: Header = {
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
    g: view.getUint32(52, true),
  }
  const { n, c, g, k, r } = header
  const shapeFits =
    kind === 'ingest'
      ? c + g + k === 0
      : kind === 'merge'
        ? n + r === 0
        : kind === 'refuse'
          ? n + c + g + k === 0
          : n + c + g + k + r === 0
  if (!shapeFits) return `a ${kind} record with ${n} events, ${c} cells in ${g} groups, ${k} clocks and ${r} rejected entries`
  return header
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
