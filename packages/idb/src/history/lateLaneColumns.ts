/**
 * The late lane's history records: per entry, Float64 ts, value, seq (NaN = absent); Uint32
 * id, source, key, window (0xFFFFFFFF = absent), reason (string indexes).
 */
import type { AnomalyReason, LateEvent } from '@tidemark/engine'
import { ABSENT, eventFloats, eventRefs, KNOWN_REASONS, readEvents } from '../wal/walColumns.ts'
import { StringTable } from '../wal/walStrings.ts'
import { HISTORY_MAGIC, type HistoryColumns, readColumns, writeColumns } from './historyColumns.ts'

/**
 * The codec of late-lane records.
 *
 * @example
 * const bytes = encodeHistoryRecord(LATE_LANE_COLUMNS, 120, engine.lateEvents())
 */
export const LATE_LANE_COLUMNS: HistoryColumns<LateEvent> = { magic: HISTORY_MAGIC, kind: 1, name: 'lateLane', first: 'first', encode: encodeLateEvents, decode: decodeLateEvents }

function encodeLateEvents(entries: readonly LateEvent[]): Uint8Array<ArrayBuffer> {
  const n = entries.length
  const events = entries.map((entry) => entry.event)
  const table = new StringTable()
  const refs = new Uint32Array(5 * n)
  eventRefs(events, refs, table)
  for (let i = 0; i < n; i++) {
    const { window, reason } = entries[i] as LateEvent
    refs[3 * n + i] = window === undefined ? ABSENT : table.intern(window)
    refs[4 * n + i] = table.intern(reason)
  }
  return writeColumns(3 * n, refs, table, (f64) => eventFloats(events, f64))
}

function decodeLateEvents(payload: Uint8Array, n: number): LateEvent[] | string {
  const columns = readColumns(payload, 3 * n, 5 * n)
  if (typeof columns === 'string') return columns
  const events = readEvents(columns, n)
  if (typeof events === 'string') return events
  const { u32, strings } = columns
  const entries = new Array<LateEvent>(n)
  for (let i = 0; i < n; i++) {
    const windowRef = u32[3 * n + i] as number
    const window = strings[windowRef]
    const reason = strings[u32[4 * n + i] as number]
    if (window === undefined && windowRef !== ABSENT) return `entry ${i} refers to a missing string`
    if (reason === undefined || !KNOWN_REASONS.has(reason)) return `entry ${i} names no known anomaly reason`
    const event = events[i] as LateEvent['event']
    entries[i] = window === undefined ? { event, reason: reason as AnomalyReason } : { event, window, reason: reason as AnomalyReason }
  }
  return entries
}
