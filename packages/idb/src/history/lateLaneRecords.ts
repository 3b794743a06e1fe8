import type { LateEvent } from '@tidemark/engine'
import { encodeHistoryRecord } from './historyRecord.ts'
import { LATE_LANE_COLUMNS } from './lateLaneColumns.ts'
import type { LateLaneRecord, LateLaneSnapshot } from '../persistence/persistence.ts'

/** Past this many records, the next checkpoint writes the lane whole, as one record. */
export const MAX_LATE_LANE_RECORDS = 16

/** What one checkpoint does to the `lateLane` store, in its transaction. */
export interface LateLaneWrite {
  /** Delete every stored record first. */
  readonly clear: boolean
  /** The new record, keyed by `from`; null when the lane holds nothing the store lacks. */
  readonly put: { readonly from: number; readonly count: number; readonly bytes: Uint8Array<ArrayBuffer> } | null
  /** Keys (`from`) of records whose entries the lane trimmed. */
  readonly remove: readonly number[]
}

interface Range {
  readonly from: number
  readonly count: number
}

/**
 * What the `lateLane` store holds, by record: runs of consecutive lane entries keyed by
 * the number of their first entry. Each checkpoint adds the entries the store lacks as one
 * record and deletes the records the lane's bound trimmed, so the store holds the engine's
 * lane plus at most one record's worth of trimmed entries. When the store no longer
 * matches the lane (a damaged record, entries from a run that was lost, too many small
 * records), the next checkpoint writes the lane whole.
 */
export class LateLaneRecords {
  /** Stored records, by `from` ascending. */
  #ranges: Range[] = []
  #damaged = false

  /** Takes what `open()` read: valid records, and whether some record could not be read. */
  load(records: readonly LateLaneRecord[], damaged: boolean): void {
    this.#ranges = records.map((r) => ({ from: r.from, count: r.entries.length })).sort((a, b) => a.from - b.from)
    this.#damaged = damaged
  }

  get records(): number {
    return this.#ranges.length
  }

  get entries(): number {
    let n = 0
    for (const r of this.#ranges) n += r.count
    return n
  }

  /** The writes that make the store hold `lane` (and nothing it trimmed but one record's worth). */
  plan(lane: LateLaneSnapshot): LateLaneWrite | null {
    const first = lane.total - lane.entries.length
    const kept = this.#ranges.filter((r) => r.from + r.count > first)
    const trimmed = this.#ranges.filter((r) => r.from + r.count <= first).map((r) => r.from)
    if (this.#consistent(kept, first, lane.total)) {
      const end = kept.length === 0 ? first : lastEnd(kept)
      const missing = lane.entries.slice(end - first)
      if (missing.length === 0 && trimmed.length === 0) return null
      return { clear: false, put: record(end, missing), remove: trimmed }
    }
    return { clear: true, put: record(first, lane.entries), remove: [] }
  }

  /** The plan committed. */
  applied(write: LateLaneWrite): void {
    if (write.clear) {
      this.#ranges = []
      this.#damaged = false
    } else if (write.remove.length > 0) {
      const removed = new Set(write.remove)
      this.#ranges = this.#ranges.filter((r) => !removed.has(r.from))
    }
    if (write.put !== null) this.#ranges.push({ from: write.put.from, count: write.put.count })
  }

  /** Whether the kept records are one run that starts at or before the lane and ends within it. */
  #consistent(kept: readonly Range[], first: number, total: number): boolean {
    if (this.#damaged || kept.length >= MAX_LATE_LANE_RECORDS) return false
    if (kept.length === 0) return true
    if ((kept[0] as Range).from > first || lastEnd(kept) > total) return false
    for (let i = 1; i < kept.length; i++) {
      const before = kept[i - 1] as Range
      if (before.from + before.count !== (kept[i] as Range).from) return false
    }
    return true
  }
}

/**
 * The late lane a checkpoint describes, from the records `open()` returned: entries
 * `first..total-1` that the records hold, in order, and how many they lack (damage).
 */
export function laneFromRecords(records: readonly LateLaneRecord[], first: number, total: number): { entries: LateEvent[]; missing: number } {
  const slots = new Array<LateEvent | undefined>(Math.max(0, total - first))
  for (const r of records) {
    const from = Math.max(first, r.from)
    const to = Math.min(total, r.from + r.entries.length)
    for (let i = from; i < to; i++) slots[i - first] = r.entries[i - r.from]
  }
  const entries: LateEvent[] = []
  for (const entry of slots) if (entry !== undefined) entries.push(entry)
  return { entries, missing: slots.length - entries.length }
}

function lastEnd(ranges: readonly Range[]): number {
  const last = ranges[ranges.length - 1] as Range
  return last.from + last.count
}

function record(from: number, entries: readonly LateEvent[]): LateLaneWrite['put'] {
  if (entries.length === 0) return null
  return { from, count: entries.length, bytes: encodeHistoryRecord(LATE_LANE_COLUMNS, from, entries) }
}
