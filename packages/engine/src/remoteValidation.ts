import { MAX_ABS_TS, MAX_NAME_LENGTH } from './event.ts'
import type { CellEntry, ClockEntry } from './replicaPort.ts'

/** Largest count a peer's cell may claim: beyond it the cell is absurd, not merely large. */
export const MAX_CELL_COUNT = 2 ** 40

function isName(value: unknown, minLength: number): value is string {
  return typeof value === 'string' && value.length >= minLength && value.length <= MAX_NAME_LENGTH
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= MAX_ABS_TS
}

/**
 * Why a peer's cell cannot be merged, or null. Every transport's cells pass here before they
 * touch window state, so a hostile or buggy peer can never poison results. A sum may be
 * ±Infinity (an honest overflow of huge values), never NaN.
 */
export function cellEntryProblem(entry: CellEntry): string | null {
  const address = entry?.address
  const cell = entry?.cell
  if (typeof address !== 'object' || address === null || typeof cell !== 'object' || cell === null) return 'not a cell entry'
  if (!isName(address.window, 1) || !isName(address.key, 0) || !isName(address.source, 1)) return 'bad window, key or source name'
  if (!isTime(address.start)) return `start must be a finite time: ${String(address.start)}`
  const { count, sum, min, max, maxTs, version } = cell
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > MAX_CELL_COUNT) return `count must be an integer in 0..2^40: ${String(count)}`
  if (typeof sum !== 'number' || Number.isNaN(sum)) return `sum must be a number: ${String(sum)}`
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) return `version must be a safe integer >= 0: ${String(version)}`
  if (typeof min !== 'number' || typeof max !== 'number' || typeof maxTs !== 'number') return 'min, max and maxTs must be numbers'
  if (count > 0) {
    if (!Number.isFinite(min) || !Number.isFinite(max) || min > max) return `min and max must be finite with min <= max: ${min}, ${max}`
    if (!isTime(maxTs)) return `maxTs must be a finite time: ${maxTs}`
    if (!sumFits(count, sum, min, max)) return `sum ${sum} is impossible for ${count} values in [${min}, ${max}]`
  } else if (Number.isNaN(min) || Number.isNaN(max) || Number.isNaN(maxTs)) {
    return 'a tombstone must not hold NaN'
  }
  return null
}

/** Why a peer's source clock cannot be taken, or null. */
export function clockEntryProblem(entry: ClockEntry): string | null {
  if (typeof entry !== 'object' || entry === null) return 'not a clock entry'
  if (!isName(entry.source, 1) || !isName(entry.writer, 1)) return 'bad source or writer name'
  if (typeof entry.maxTs !== 'number' || Number.isNaN(entry.maxTs) || entry.maxTs > MAX_ABS_TS) return `maxTs must be a time: ${String(entry.maxTs)}`
  if (typeof entry.prefix !== 'number' || !Number.isSafeInteger(entry.prefix) || entry.prefix < 0) return `prefix must be a safe integer >= 0: ${String(entry.prefix)}`
  if (typeof entry.prefixTs !== 'number' || Number.isNaN(entry.prefixTs) || entry.prefixTs > MAX_ABS_TS) return `prefixTs must be a time: ${String(entry.prefixTs)}`
  if (typeof entry.provable !== 'boolean') return 'provable must be a boolean'
  if (typeof entry.version !== 'number' || !Number.isSafeInteger(entry.version) || entry.version < 0) return `version must be a safe integer >= 0: ${String(entry.version)}`
  return null
}

/**
 * True when `count` values within [min, max] can add up to `sum`: only values near the float
 * limit can overflow to ±Infinity honestly.
 */
export function sumFits(count: number, sum: number, min: number, max: number): boolean {
  const bound = count * Math.max(Math.abs(min), Math.abs(max))
  return Math.abs(sum) <= bound * (1 + 1e-9) || !Number.isFinite(bound)
}
