/**
 * The archive's history records: per change, Float64 start, end, count, sum, min, max, mean,
 * revision, pane index, pane onTimeIndex; Uint32 window, key (string indexes) and flags: bit 0
 * type (0 final, 1 retract), bits 1-2 status, bits 3-4 basis, bit 5 final, bits 6-7 pane timing.
 */
import type { Basis, PaneTiming, ResultStatus, WindowResult } from '@tidemark/engine'
import type { ArchivedChange } from '../persistence/persistence.ts'
import { StringTable } from '../wal/walStrings.ts'
import { HISTORY_MAGIC, type HistoryColumns, readColumns, writeColumns } from './historyColumns.ts'

const STATUSES: readonly ResultStatus[] = ['provisional', 'on_time', 'corrected']
const BASES: readonly Basis[] = ['proven', 'derived', 'fallback', 'unknown']
const TIMINGS: readonly PaneTiming[] = ['early', 'on_time', 'late']
/** Float64 columns per change. */
const FLOATS = 10

/**
 * The codec of archive records.
 *
 * @example
 * const bytes = encodeHistoryRecord(ARCHIVE_COLUMNS, seq, changes)
 */
export const ARCHIVE_COLUMNS: HistoryColumns<ArchivedChange> = { magic: HISTORY_MAGIC, kind: 2, name: 'archive', first: 'first', encode: encodeArchivedChanges, decode: decodeArchivedChanges }

/**
 * Archived changes as columns (layout in the file header).
 *
 * @example
 * const bytes = encodeArchivedChanges([{ type: 'final', result }])
 * decodeArchivedChanges(bytes, 1) // [{ type: 'final', result }]
 */
function encodeArchivedChanges(changes: readonly ArchivedChange[]): Uint8Array<ArrayBuffer> {
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
  return writeColumns(FLOATS * n, refs, table, (f64) => {
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
function decodeArchivedChanges(payload: Uint8Array, n: number): ArchivedChange[] | string {
  const columns = readColumns(payload, FLOATS * n, 3 * n)
  if (typeof columns === 'string') return columns
  const { f64, u32, strings } = columns
  const changes = new Array<ArchivedChange>(n)
  for (let i = 0; i < n; i++) {
    const window = strings[u32[i] as number]
    const key = strings[u32[n + i] as number]
    const flags = u32[2 * n + i] as number
    const status = STATUSES[(flags >>> 1) & 3]
    const basis = BASES[(flags >>> 3) & 3]
    const timing = TIMINGS[(flags >>> 6) & 3]
    if (window === undefined || key === undefined) return `change ${i} refers to a missing string`
    if (status === undefined || basis === undefined || timing === undefined || flags >>> 8 !== 0) return `change ${i} has flags 0x${flags.toString(16)}`
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
      revision: f64[7 * n + i] as number,
      final: (flags & 32) !== 0,
      basis,
      pane: { timing, index: f64[8 * n + i] as number, onTimeIndex: f64[9 * n + i] as number },
    }
    changes[i] = { type: flags & 1 ? 'retract' : 'final', result }
  }
  return changes
}

