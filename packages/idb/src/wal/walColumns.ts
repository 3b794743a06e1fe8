/**
 * The column readers of a log record (layout in walCodec.ts): each turns a record's typed-array
 * columns and string table back into an op's events, rejected counts, cell groups or clocks.
 * Never throws: a reference to a missing string or an impossible count gives the reason as a
 * string.
 */
import { ANOMALY_REASONS, type AnomalyReason, type CellGroup, type ClockEntry, type StreamEvent } from '@tidemark/engine'
import { GROUP_COLUMNS } from '@tidemark/engine/adapter'

/** The event key reference that means "no key". */
export const ABSENT_KEY = 0xffffffff
export const KNOWN_REASONS: ReadonlySet<string> = new Set(ANOMALY_REASONS)

type MutableEvent = { -readonly [K in keyof StreamEvent]: StreamEvent[K] }

export interface Columns {
  readonly f64: Float64Array
  readonly u32: Uint32Array
  readonly strings: readonly string[]
}

export function readEvents({ f64, u32, strings }: Columns, n: number): StreamEvent[] | string {
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
  return clocks
}
