/**
 * The columns of log records (layout in walCodec.ts) and of history records (historyColumns.ts):
 * after the record's header, Float64 columns (at an 8-byte offset, so decoding views them in
 * place), Uint32 columns, then the string table (walStrings.ts). The readers turn a record's
 * columns back into events, rejected counts, cell groups or clocks; they never throw: a
 * reference to a missing string or an impossible count gives the reason as a string.
 */
import { ANOMALY_REASONS, type AnomalyReason, type CellGroup, type ClockEntry, type StreamEvent } from '@tidemark/engine'
import { GROUP_COLUMNS } from '@tidemark/engine/adapter'
import { decodeStrings, type StringTable } from './walStrings.ts'

/** The string reference that means "absent" (an event's key, a late entry's window). */
export const ABSENT = 0xffffffff
export const KNOWN_REASONS: ReadonlySet<string> = new Set(ANOMALY_REASONS)

type MutableEvent = { -readonly [K in keyof StreamEvent]: StreamEvent[K] }

/** A record's columns, viewed in place, and its strings. */
export interface Columns {
  readonly f64: Float64Array
  readonly u32: Uint32Array
  readonly strings: readonly string[]
}

/** Bytes of a record: `headerBytes`, `floats` Float64 values, `refs` Uint32 values, `s` string lengths, then the text sections. */
export function columnsLength(headerBytes: number, floats: number, refs: number, s: number, utf8Bytes: number, utf16Units: number): number {
  return headerBytes + 8 * floats + 4 * (refs + s) + utf8Bytes + 2 * utf16Units
}

/**
 * A record with room for its header, the `floats` Float64 values `fill` writes, the Uint32
 * `refs`, the string table and `extra` bytes after it (left zero, for the caller).
 */
export function layColumns(headerBytes: number, floats: number, refs: Uint32Array, table: StringTable, extra: number, fill: (f64: Float64Array) => void): Uint8Array<ArrayBuffer> {
  const s = table.lengths.length
  const bytes = new Uint8Array(columnsLength(headerBytes, floats, refs.length, s, table.utf8Bytes, table.utf16Units) + extra)
  fill(new Float64Array(bytes.buffer, headerBytes, floats))
  const u32 = new Uint32Array(bytes.buffer, headerBytes + 8 * floats, refs.length + s)
  u32.set(refs)
  u32.set(table.lengths, refs.length)
  table.writeText(bytes, headerBytes + 8 * floats + 4 * (refs.length + s))
  return bytes
}

/** The columns of a record whose length matches its header's sizes, or why its strings do not fit. */
export function viewColumns(bytes: Uint8Array, headerBytes: number, floats: number, refs: number, s: number, utf8Bytes: number, utf16Units: number): Columns | string {
  // Typed-array views need aligned offsets; a record sliced out of a larger buffer may not be.
  const record = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice()
  const base = record.byteOffset + headerBytes
  const f64 = new Float64Array(record.buffer, base, floats)
  const u32 = new Uint32Array(record.buffer, base + 8 * floats, refs + s)
  const strings = decodeStrings(record, u32.subarray(refs), headerBytes + 8 * floats + 4 * (refs + s), utf8Bytes, utf16Units)
  return typeof strings === 'string' ? strings : { f64, u32, strings }
}

/** Writes the events' id, source and key references (string indexes) into `refs` [0, 3n). */
export function eventRefs(events: readonly StreamEvent[], refs: Uint32Array, table: StringTable): void {
  const n = events.length
  for (let i = 0; i < n; i++) {
    const event = events[i] as StreamEvent
    refs[i] = table.add(event.id)
    refs[n + i] = table.intern(event.source)
    refs[2 * n + i] = event.key === undefined ? ABSENT : table.intern(event.key)
  }
}

/** Writes the events' ts, value and seq (NaN = absent) into `f64` [0, 3n). */
export function eventFloats(events: readonly StreamEvent[], f64: Float64Array): void {
  const n = events.length
  for (let i = 0; i < n; i++) {
    const event = events[i] as StreamEvent
    f64[i] = event.ts
    f64[n + i] = event.value
    f64[2 * n + i] = event.seq ?? Number.NaN
  }
}

/** The `n` events of [0, 3n) in both column kinds (as `eventRefs` and `eventFloats` wrote them). */
export function readEvents({ f64, u32, strings }: Columns, n: number): StreamEvent[] | string {
  const events = new Array<StreamEvent>(n)
  for (let i = 0; i < n; i++) {
    const id = strings[u32[i] as number]
    const source = strings[u32[n + i] as number]
    const keyRef = u32[2 * n + i] as number
    const key = keyRef === ABSENT ? undefined : strings[keyRef]
    if (id === undefined || source === undefined || (key === undefined && keyRef !== ABSENT)) {
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

export function readRejected({ u32, strings }: Columns, at: number, r: number): Partial<Record<AnomalyReason, number>> | string {
  const rejected: Partial<Record<AnomalyReason, number>> = {}
  for (let i = 0; i < r; i++) {
    const reason = strings[u32[at + i] as number]
    if (reason === undefined || !KNOWN_REASONS.has(reason)) return `rejected entry ${i} names no known anomaly reason`
    rejected[reason as AnomalyReason] = u32[at + r + i] as number
  }
  return rejected
}

/** A grouped merge's cells: `g` groups holding `c` cells. */
export function readGroups({ f64, u32, strings }: Columns, g: number, c: number): CellGroup[] | string {
  const groups = new Array<CellGroup>(g)
  let key = 3 * g
  let column = g
  for (let j = 0; j < g; j++) {
    const window = strings[u32[j] as number]
    const source = strings[u32[g + j] as number]
    const size = u32[2 * g + j] as number
    if (window === undefined || source === undefined) return `cell group ${j} refers to a missing string`
    if (key + size > 3 * g + c) return `cell group ${j} holds more cells than the record`
    const keys = new Array<string>(size)
    for (let i = 0; i < size; i++) {
      const text = strings[u32[key + i] as number]
      if (text === undefined) return `cell group ${j} refers to a missing string`
      keys[i] = text
    }
    key += size
    // A copy: the record's buffer is not kept alive by the state built from it.
    const columns = f64.slice(column, column + GROUP_COLUMNS * size)
    column += GROUP_COLUMNS * size
    groups[j] = { window, start: f64[j] as number, source, keys, columns }
  }
  if (key !== 3 * g + c) return `cell groups hold ${key - 3 * g} cells, the header says ${c}`
  return groups
}

/** A merge's `k` clocks, from Float64 value `fAt` and Uint32 reference `uAt`. */
export function readClocks({ f64, u32, strings }: Columns, fAt: number, uAt: number, k: number): ClockEntry[] | string {
  const clocks = new Array<ClockEntry>(k)
  for (let i = 0; i < k; i++) {
    const source = strings[u32[uAt + i] as number]
    const writer = strings[u32[uAt + k + i] as number]
    const flags = u32[uAt + 2 * k + i] as number
    if (source === undefined || writer === undefined) return `clock ${i} refers to a missing string`
    if (flags > 3) return `clock ${i} has flags ${flags}`
    const clock: ClockEntry = {
      source,
      writer,
      maxTs: f64[fAt + i] as number,
      prefix: f64[fAt + k + i] as number,
      prefixTs: f64[fAt + 2 * k + i] as number,
      provable: (flags & 1) === 1,
      version: f64[fAt + 3 * k + i] as number,
    }
    // As the engine writes clock entries: `finished` only when it is.
    clocks[i] = (flags & 2) === 2 ? { ...clock, finished: true } : clock
  }
  return clocks
}
