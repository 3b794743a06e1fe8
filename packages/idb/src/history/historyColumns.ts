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
 *   12      4      layout: 0, or 1 for archive payloads with pane columns
 *   16      ...    Float64 columns, then Uint32 columns, then s string lengths, UTF-8, UTF-16
 *
 * Late lane, per entry: Float64 ts, value, seq (NaN = absent); Uint32 id, source, key,
 * window (0xFFFFFFFF = absent), reason (string indexes).
 * Archive, per change: Float64 start, end, count, sum, min, max, mean, revision, then (layout
 * 1) pane index and pane onTimeIndex; Uint32 window, key (string indexes) and flags: bit 0 type
 * (0 final, 1 retract), bits 1-2 status, bits 3-4 basis, bit 5 final, bits 6-7 pane timing
 * (layout 1). A layout-0 change has no pane columns: it reads as a window without early panes
 * (pane index and onTimeIndex both its revision).
 */

import {
  ANOMALY_REASONS,
  type AnomalyReason,
  type Basis,
  type LateEvent,
  type PaneTiming,
  type ResultStatus,
  type StreamEvent,
  type WindowResult,
} from '@tidemark/engine'
import type { ArchivedChange } from '../store/persistence.ts'
import { decodeStrings, StringTable } from '../wal/walStrings.ts'

const HEADER_BYTES = 16
const ABSENT = 0xffffffff
const STATUSES: readonly ResultStatus[] = ['provisional', 'on_time', 'corrected']
const TIMINGS: readonly PaneTiming[] = ['early', 'on_time', 'late']
/** Payload layout with pane columns. */
const WITH_PANES = 1
const BASES: readonly Basis[] = ['proven', 'derived', 'fallback', 'unknown']
const KNOWN_REASONS: ReadonlySet<string> = new Set(ANOMALY_REASONS)

type MutableEvent = { -readonly [K in keyof StreamEvent]: StreamEvent[K] }

interface Columns {
  readonly f64: Float64Array
  readonly u32: Uint32Array
  readonly strings: readonly string[]
}

/**
 * Late events as columns (layout in the file header).
 *
 * @example
 * const bytes = encodeLateEvents(engine.lateEvents())
 * decodeLateEvents(bytes, engine.lateEvents().length) // the same entries
 */
export function encodeLateEvents(entries: readonly LateEvent[]): Uint8Array<ArrayBuffer> {
  const n = entries.length
  const table = new StringTable()
  const refs = new Uint32Array(5 * n)
  for (let i = 0; i < n; i++) {
    const { event, window, reason } = entries[i] as LateEvent
    refs[i] = table.add(event.id)
    refs[n + i] = table.intern(event.source)
    refs[2 * n + i] = event.key === undefined ? ABSENT : table.intern(event.key)
    refs[3 * n + i] = window === undefined ? ABSENT : table.intern(window)
    refs[4 * n + i] = table.intern(reason)
  }
  return write(3 * n, refs, table, 0, (f64) => {
    for (let i = 0; i < n; i++) {
      const { event } = entries[i] as LateEvent
      f64[i] = event.ts
      f64[n + i] = event.value
      f64[2 * n + i] = event.seq ?? Number.NaN
    }
  })
}

/**
 * Reads `n` late events; never throws: inconsistent bytes give the reason as a string.
 *
 * @example
 * const entries = decodeLateEvents(payload, count)
 * if (typeof entries === 'string') console.warn(entries)
 */
export function decodeLateEvents(payload: Uint8Array, n: number): LateEvent[] | string {
  const columns = read(payload, 3 * n, 5 * n)
  if (typeof columns === 'string') return columns
  const { f64, u32, strings } = columns
  const entries = new Array<LateEvent>(n)
  for (let i = 0; i < n; i++) {
    const id = strings[u32[i] as number]
    const source = strings[u32[n + i] as number]
    const key = optional(strings, u32[2 * n + i] as number)
    const window = optional(strings, u32[3 * n + i] as number)
    const reason = strings[u32[4 * n + i] as number]
    if (id === undefined || source === undefined || key === null || window === null) return `entry ${i} refers to a missing string`
    if (reason === undefined || !KNOWN_REASONS.has(reason)) return `entry ${i} names no known anomaly reason`
    const event: MutableEvent = { id, source, ts: f64[i] as number, value: f64[n + i] as number }
    const seq = f64[2 * n + i] as number
    if (!Number.isNaN(seq)) event.seq = seq
    if (key !== undefined) event.key = key
    entries[i] =
      window === undefined ? { event, reason: reason as AnomalyReason } : { event, window, reason: reason as AnomalyReason }
  }
  return entries
}

/**
 * Archived changes as columns (layout in the file header).
 *
 * @example
 * const bytes = encodeArchivedChanges([{ type: 'final', result }])
 * decodeArchivedChanges(bytes, 1) // [{ type: 'final', result }]
 */
export function encodeArchivedChanges(changes: readonly ArchivedChange[]): Uint8Array<ArrayBuffer> {
  const n = changes.length
  const table = new StringTable()
  const refs = new Uint32Array(3 * n)
  for (let i = 0; i < n; i++) {
    const { type, result } = changes[i] as ArchivedChange
    refs[i] = table.intern(result.window)
    refs[n + i] = table.intern(result.key)
    refs[2 * n + i] =
      (type === 'retract' ? 1 : 0) |
      (STATUSES.indexOf(result.status) << 1) |
      (BASES.indexOf(result.basis) << 3) |
      (result.final ? 32 : 0) |
      (TIMINGS.indexOf(result.pane.timing) << 6)
  }
  return write(10 * n, refs, table, WITH_PANES, (f64) => {
    for (let i = 0; i < n; i++) {
      const { result } = changes[i] as ArchivedChange
      f64[i] = result.start
      f64[n + i] = result.end
      f64[2 * n + i] = result.count
      f64[3 * n + i] = result.sum
      f64[4 * n + i] = result.min
      f64[5 * n + i] = result.max
      f64[6 * n + i] = result.mean
      f64[7 * n + i] = result.revision
      f64[8 * n + i] = result.pane.index
      f64[9 * n + i] = result.pane.onTimeIndex
    }
  })
}

/**
 * Reads `n` archived changes; never throws: inconsistent bytes give the reason as a string.
 *
 * @example
 * const changes = decodeArchivedChanges(payload, count)
 */
export function decodeArchivedChanges(payload: Uint8Array, n: number): ArchivedChange[] | string {
  const panes = payload.length >= HEADER_BYTES && new DataView(payload.buffer, payload.byteOffset, HEADER_BYTES).getUint32(12, true) === WITH_PANES
  const columns = read(payload, (panes ? 10 : 8) * n, 3 * n)
  if (typeof columns === 'string') return columns
  const { f64, u32, strings } = columns
  const changes = new Array<ArchivedChange>(n)
  for (let i = 0; i < n; i++) {
    const window = strings[u32[i] as number]
    const key = strings[u32[n + i] as number]
    const flags = u32[2 * n + i] as number
    const status = STATUSES[(flags >>> 1) & 3]
    const basis = BASES[(flags >>> 3) & 3]
    if (window === undefined || key === undefined) return `change ${i} refers to a missing string`
    const timing = panes ? TIMINGS[(flags >>> 6) & 3] : status === 'provisional' ? 'early' : status === 'on_time' ? 'on_time' : 'late'
    if (status === undefined || basis === undefined || timing === undefined || flags >>> (panes ? 8 : 6) !== 0) return `change ${i} has flags 0x${flags.toString(16)}`
    const revision = f64[7 * n + i] as number
    const result: WindowResult = {
      window,
      key,
      start: f64[i] as number,
      end: f64[n + i] as number,
      count: f64[2 * n + i] as number,
      sum: f64[3 * n + i] as number,
      min: f64[4 * n + i] as number,
      max: f64[5 * n + i] as number,
      mean: f64[6 * n + i] as number,
      status,
      revision,
      final: (flags & 32) !== 0,
      basis,
      pane: panes ? { timing, index: f64[8 * n + i] as number, onTimeIndex: f64[9 * n + i] as number } : { timing, index: revision, onTimeIndex: timing === 'early' ? -1 : revision },
    }
    changes[i] = { type: flags & 1 ? 'retract' : 'final', result }
  }
  return changes
}

function write(floats: number, refs: Uint32Array, table: StringTable, layout: number, fill: (f64: Float64Array) => void): Uint8Array<ArrayBuffer> {
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
  view.setUint32(12, layout, true)
  return bytes
}

function read(bytes: Uint8Array, floats: number, refs: number): Columns | string {
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

/** The string at `ref`, undefined when absent, null when the index is out of range. */
function optional(strings: readonly string[], ref: number): string | undefined | null {
  if (ref === ABSENT) return undefined
  return strings[ref] ?? null
}
