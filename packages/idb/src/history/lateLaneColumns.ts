/**
 * The late lane's history records: per entry, Float64 ts, value, seq (NaN = absent); Uint32
 * id, source, key, window (0xFFFFFFFF = absent), reason (string indexes).
 */
import type { AnomalyReason, LateEvent, StreamEvent } from '@tidemark/engine'
import { KNOWN_REASONS } from '../wal/walColumns.ts'
import { StringTable } from '../wal/walStrings.ts'
import { ABSENT, type HistoryColumns, optional, readColumns, writeColumns } from './historyColumns.ts'

type MutableEvent = { -readonly [K in keyof StreamEvent]: StreamEvent[K] }

/**
 * The codec of late-lane records.
 *
 * @example
 * const bytes = encodeHistoryRecord(LATE_LANE_COLUMNS, 120, engine.lateEvents())
 */
export const LATE_LANE_COLUMNS: HistoryColumns<LateEvent> = { kind: 1, name: 'lateLane', encode: encodeLateEvents, decode: decodeLateEvents }

/**
 * Late events as columns (layout in the file header).
 *
 * @example
 * const bytes = encodeLateEvents(engine.lateEvents())
 * decodeLateEvents(bytes, engine.lateEvents().length) // the same entries
 */
function encodeLateEvents(entries: readonly LateEvent[]): Uint8Array<ArrayBuffer> {
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
  return writeColumns(3 * n, refs, table, (f64) => {
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
function decodeLateEvents(payload: Uint8Array, n: number): LateEvent[] | string {
  const columns = readColumns(payload, 3 * n, 5 * n)
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

