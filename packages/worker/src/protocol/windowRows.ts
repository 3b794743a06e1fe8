import type { Basis, PaneInfo, PaneTiming, ResultStatus, WindowChangeType, WindowResult } from '@tidemark/engine'
import { type AggregateValues, AggregateValuesWriter, aggregateValuesProblem, aggregateValuesReader, uncloneableResult } from './aggregateValues.ts'
import { paneInfo } from '@tidemark/engine/adapter'

/**
 * What one row of a frame says about one window. A change row (`provisional` … `retract`)
 * carries one change of the window; `history-reset` starts a watched window's history afresh,
 * and the `history` rows after it are all of it, oldest first (results the window fired,
 * possibly under another start: a session whose start moved keeps what it fired before).
 */
export type RowKind = WindowChangeType | 'history' | 'history-reset'

const KINDS: readonly RowKind[] = ['provisional', 'on_time', 'correction', 'final', 'retract', 'history', 'history-reset']
const STATUSES: readonly ResultStatus[] = ['provisional', 'on_time', 'corrected']
const BASES: readonly Basis[] = ['proven', 'derived', 'fallback', 'unknown']
const TIMINGS: readonly PaneTiming[] = ['early', 'on_time', 'late']

/**
 * Numbers per row in `nums`: start, end, count, sum, min, max, mean, and the pane's index and
 * onTimeIndex (-1 for an early pane: a float column keeps it, and any index, exactly).
 */
const NUMS = 9
/** Numbers per row in `ints`: window id, key (indexes into `strings`), flags, revision. */
const INTS = 4

/**
 * Flag bits: kind (3), status (2), final (1), basis (2), pane timing (2), whether the change
 * carried `previous` (1), and whether the result has `aggregates` (1; they are in the rows' `aggregates` column).
 */
const STATUS_SHIFT = 3
const FINAL_SHIFT = 5
const BASIS_SHIFT = 6
const TIMING_SHIFT = 8
const PREVIOUS_SHIFT = 10
const AGGREGATES_SHIFT = 11
const FLAG_BITS = 12

/**
 * Window rows as columns: two typed arrays the host transfers (no copy) and one string table
 * of the window ids and keys they name. 10,000 windows cross in well under a millisecond this
 * way, where as objects the structured clone takes tens of milliseconds.
 */
export interface WindowRows {
  readonly strings: readonly string[]
  readonly ints: Uint32Array<ArrayBuffer>
  readonly nums: Float64Array<ArrayBuffer>
  /** The `aggregates` of the rows whose results have them (an engine with the `aggregates` option), in row order. */
  readonly aggregates?: AggregateValues
}

/** One decoded row. */
export interface WindowRow {
  readonly kind: RowKind
  readonly result: WindowResult
  /**
   * The engine's change carried `previous` (an accumulating correction; a discarding pane that
   * carries the whole window again): the page gives its change the result it held before.
   */
  readonly previous?: boolean
}

/** Builds the columns of one frame, row by row. */
export class WindowRowWriter {
  #strings: string[] = []
  #index = new Map<string, number>()
  #ints: number[] = []
  #nums: number[] = []
  #aggregates = new AggregateValuesWriter()

  get size(): number {
    return this.#ints.length / INTS
  }

  add(kind: RowKind, result: WindowResult, previous = false): void {
    const { pane } = result
    const aggregates = (result as { readonly aggregates?: Readonly<Record<string, unknown>> }).aggregates
    if (aggregates !== undefined) this.#aggregates.add(aggregates)
    const flags =
      KINDS.indexOf(kind) |
      (STATUSES.indexOf(result.status) << STATUS_SHIFT) |
      ((result.final ? 1 : 0) << FINAL_SHIFT) |
      (BASES.indexOf(result.basis) << BASIS_SHIFT) |
      (TIMINGS.indexOf(pane.timing) << TIMING_SHIFT) |
      ((previous ? 1 : 0) << PREVIOUS_SHIFT) |
      ((aggregates === undefined ? 0 : 1) << AGGREGATES_SHIFT)
    this.#ints.push(this.#intern(result.window), this.#intern(result.key), flags, result.revision)
    this.#nums.push(result.start, result.end, result.count, result.sum, result.min, result.max, result.mean, pane.index, pane.onTimeIndex)
  }

  /** The columns; the writer starts empty again. */
  take(): WindowRows {
    const aggregates = this.#aggregates.take()
    const columns = { strings: this.#strings, ints: Uint32Array.from(this.#ints), nums: Float64Array.from(this.#nums) }
    const rows: WindowRows = aggregates === undefined ? columns : { ...columns, aggregates }
    this.#strings = []
    this.#index = new Map()
    this.#ints = []
    this.#nums = []
    return rows
  }

  #intern(text: string): number {
    let at = this.#index.get(text)
    if (at === undefined) {
      at = this.#strings.length
      this.#strings.push(text)
      this.#index.set(text, at)
    }
    return at
  }
}

/**
 * Encodes rows in one go.
 *
 * @example
 * const rows = encodeRows([{ kind: 'on_time', result }])
 * decodeRows(rows)[0]?.result // deep-equals result
 */
export function encodeRows(rows: readonly WindowRow[]): WindowRows {
  const writer = new WindowRowWriter()
  for (const { kind, result, previous } of rows) writer.add(kind, result, previous)
  return writer.take()
}

/** Rows in `rows`. */
export function rowCount(rows: WindowRows): number {
  return rows.ints.length / INTS
}

/**
 * Calls `visit` with each row in order, the result as a fresh object (the page keeps them as
 * its mirror's values); `previous` says whether the engine's change carried one. `intern` maps
 * each string of the frame to the copy the caller keeps, so results of every frame share one
 * copy of each window id and key (and, as in the engine, most pane infos are shared too).
 */
export function forEachRow(
  rows: WindowRows,
  visit: (kind: RowKind, result: WindowResult, previous: boolean) => void,
  intern?: (text: string) => string,
): void {
  const { ints, nums } = rows
  const strings = intern === undefined ? rows.strings : rows.strings.map(intern)
  const aggregates = rows.aggregates === undefined ? null : aggregateValuesReader(rows.aggregates)
  const n = ints.length / INTS
  for (let i = 0; i < n; i++) {
    const flags = ints[i * INTS + 2] as number
    const at = i * NUMS
    const pane: PaneInfo = paneInfo(TIMINGS[(flags >> TIMING_SHIFT) & 3] as PaneTiming, nums[at + 7] as number, nums[at + 8] as number)
    const fields: WindowResult = {
      window: strings[ints[i * INTS] as number] as string,
      key: strings[ints[i * INTS + 1] as number] as string,
      start: nums[at] as number,
      end: nums[at + 1] as number,
      count: nums[at + 2] as number,
      sum: nums[at + 3] as number,
      min: nums[at + 4] as number,
      max: nums[at + 5] as number,
      mean: nums[at + 6] as number,
      status: STATUSES[(flags >> STATUS_SHIFT) & 3] as ResultStatus,
      revision: ints[i * INTS + 3] as number,
      final: ((flags >> FINAL_SHIFT) & 1) === 1,
      basis: BASES[(flags >> BASIS_SHIFT) & 3] as Basis,
      pane,
    }
    // An engine with aggregates makes `WindowResult<A>`; the rows carry any `A`.
    const result = (((flags >> AGGREGATES_SHIFT) & 1) === 1 && aggregates !== null ? { ...fields, aggregates: aggregates() } : fields) as WindowResult
    visit(KINDS[flags & 7] as RowKind, result, ((flags >> PREVIOUS_SHIFT) & 1) === 1)
  }
}

/** The rows as a list (tests and tools). */
export function decodeRows(rows: WindowRows): WindowRow[] {
  const out: WindowRow[] = []
  forEachRow(rows, (kind, result, previous) => out.push(previous ? { kind, result, previous } : { kind, result }))
  return out
}

/** Why received rows cannot be decoded, or null when they can. */
export function rowsProblem(rows: unknown): string | null {
  if (typeof rows !== 'object' || rows === null) return 'the rows are not an object'
  const { strings, ints, nums, aggregates } = rows as Record<string, unknown>
  if (!Array.isArray(strings) || !(ints instanceof Uint32Array) || !(nums instanceof Float64Array)) return 'the rows lack strings, ints or nums'
  if (ints.length % INTS !== 0 || nums.length !== (ints.length / INTS) * NUMS) return 'the row columns have different lengths'
  let withAggregates = 0
  for (let i = 0; i < ints.length; i += INTS) {
    if ((ints[i] as number) >= strings.length || (ints[i + 1] as number) >= strings.length) return 'a row names a string out of range'
    const flags = ints[i + 2] as number
    if ((flags & 7) >= KINDS.length || ((flags >> STATUS_SHIFT) & 3) >= STATUSES.length || ((flags >> TIMING_SHIFT) & 3) >= TIMINGS.length || flags >>> FLAG_BITS !== 0) {
      return `a row has bad flags ${flags}`
    }
    const at = (i / INTS) * NUMS
    const index = nums[at + 7] as number
    const onTimeIndex = nums[at + 8] as number
    if (!Number.isInteger(index) || index < 0 || !Number.isInteger(onTimeIndex) || onTimeIndex < -1) return `a row has a bad pane (index ${index}, onTimeIndex ${onTimeIndex})`
    if (((flags >> AGGREGATES_SHIFT) & 1) === 1) withAggregates++
  }
  if (aggregates === undefined) return withAggregates === 0 ? null : `${withAggregates} rows have aggregates and the frame has no aggregate column`
  return aggregateValuesProblem(aggregates, withAggregates)
}

/**
 * Which aggregate of which window the structured clone refuses in `rows`, and why, as text for a
 * page's failure reason; null when none does (the clone refused something else).
 *
 * @example
 * uncloneableAggregate(rows) // 'aggregate "labelled" of window "tumbling:1000", key "bad", start 1000: DataCloneError: () => 1 could not be cloned.'
 */
export function uncloneableAggregate(rows: WindowRows): string | null {
  const found = rows.aggregates === undefined ? null : uncloneableResult(rows.aggregates)
  if (found === null) return null
  const { ints, nums, strings } = rows
  // The row is counted among the rows with aggregates: find it among all rows.
  let left = found.row
  let i = 0
  for (; i < ints.length / INTS; i++) {
    if ((((ints[i * INTS + 2] as number) >> AGGREGATES_SHIFT) & 1) === 0) continue
    if (left-- === 0) break
  }
  const window = strings[ints[i * INTS] as number]
  const key = strings[ints[i * INTS + 1] as number]
  const where = window === undefined || key === undefined ? '' : ` of window ${JSON.stringify(window)}, key ${JSON.stringify(key)}, start ${nums[i * NUMS] as number}`
  const error = found.error instanceof Error ? `${found.error.name}: ${found.error.message}` : String(found.error)
  return `aggregate ${JSON.stringify(found.name)}${where}: ${error}`
}

/** Transferables of the rows (their column buffers). */
export function rowBuffers(rows: WindowRows): ArrayBuffer[] {
  return rows.aggregates === undefined ? [rows.ints.buffer, rows.nums.buffer] : [rows.ints.buffer, rows.nums.buffer, rows.aggregates.values.buffer]
}
