/**
 * How cells and clocks are laid out in the shared `Y.Doc`, and how entries read from
 * peers are validated.
 *
 * Document layout (schema 1):
 *
 *   Y.Map   'tidemark:meta'               replicaId → [schema, configuration fingerprint]
 *   Y.Array 'tidemark:replica:<replicaId>' that replica's entries, appended in write order
 *
 * One root array per writing replica, used as a key-value log in the style of y-utility's
 * YKeyValue: a write appends the new entry and deletes the entries it supersedes. Only that
 * replica appends to its array, so its deleted entries are consecutive Yjs items of one
 * client and garbage-collect into a few runs; see README.md for the measurements that
 * chose this over a Y.Map or one shared array.
 *
 * Entries are flat arrays of Yjs "any" values (numbers are written as varints when they
 * are small integers, float32 when exact, else float64; ±Infinity are allowed):
 *
 *   cell   ['c', window, key, start, source, count, sum, min, max, maxTs, version]
 *   clock  ['k', source, writer, maxTs, prefix, prefixTs, provable (1 | 0), version]
 *
 * A key (window, key, start, source) or source may appear in several entries (a write not
 * yet cleaned up, two sessions of one replica, two writers of one source): readers take the
 * lattice join, so the order in which entries are seen never matters.
 */
import { sumFits } from '../remoteValidation.ts'
import { MAX_ABS_TS, MAX_NAME_LENGTH } from '../event.ts'
import type { CellEntry, ClockEntry } from '../replicaPort.ts'

/** Bumped when the layout above changes incompatibly; part of each replica's meta entry. */
export const DOC_SCHEMA = 1

export const META_NAME = 'tidemark:meta'
export const REPLICA_PREFIX = 'tidemark:replica:'

/** Counts above this are not plausible for one source in one window. */
export const MAX_CELL_COUNT = 2 ** 40

const CELL_TAG = 'c'
const CLOCK_TAG = 'k'
const CELL_LENGTH = 11
const CLOCK_LENGTH = 8

/** A cell or clock entry as stored in the doc. Never mutated: Yjs holds the same array. */
export type DocEntry = readonly unknown[]

/** The name of a replica's root array. */
export function replicaArrayName(replicaId: string): string {
  return REPLICA_PREFIX + replicaId
}

/** The meta value a replica writes for itself. */
export function metaValue(configuration: string): readonly [number, string] {
  return [DOC_SCHEMA, configuration]
}

/** The configuration fingerprint of a meta value, or `null` when it is malformed or another schema. */
export function readMeta(value: unknown): { readonly schema: number; readonly configuration: string } | null {
  if (!Array.isArray(value) || value.length !== 2) return null
  const [schema, configuration] = value as unknown[]
  if (typeof schema !== 'number' || !Number.isSafeInteger(schema)) return null
  if (typeof configuration !== 'string' || configuration.length > 64 * MAX_NAME_LENGTH) return null
  return { schema, configuration }
}

export function writeCellEntry(entry: CellEntry): DocEntry {
  const { address: a, cell: c } = entry
  return [CELL_TAG, a.window, a.key, a.start, a.source, c.count, c.sum, c.min, c.max, c.maxTs, c.version]
}

export function writeClockEntry(clock: ClockEntry): DocEntry {
  return [
    CLOCK_TAG,
    clock.source,
    clock.writer,
    clock.maxTs,
    clock.prefix,
    clock.prefixTs,
    clock.provable ? 1 : 0,
    clock.version,
  ]
}

/** Which kind of entry this is, checked only as far as the tag and length. */
export function entryKind(value: unknown): 'cell' | 'clock' | null {
  if (!Array.isArray(value)) return null
  if (value.length === CELL_LENGTH && value[0] === CELL_TAG) return 'cell'
  if (value.length === CLOCK_LENGTH && value[0] === CLOCK_TAG) return 'clock'
  return null
}

/**
 * A peer's cell entry, validated for type and shape; a string says why it is refused.
 * Window ids and window alignment are the engine's to check.
 */
export function readCellEntry(value: unknown): CellEntry | string {
  if (entryKind(value) !== 'cell') return `not a cell entry: ${preview(value)}`
  const [, window, key, start, source, count, sum, min, max, maxTs, version] = value as unknown[]
  if (!isName(window, 1)) return `window must be a string of 1..${MAX_NAME_LENGTH} characters: ${preview(window)}`
  if (!isName(key, 0)) return `key must be a string of at most ${MAX_NAME_LENGTH} characters: ${preview(key)}`
  if (!isName(source, 1)) return `source must be a string of 1..${MAX_NAME_LENGTH} characters: ${preview(source)}`
  if (!isTime(start)) return `start must be a finite time within ±${MAX_ABS_TS}: ${preview(start)}`
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > MAX_CELL_COUNT) {
    return `count must be an integer in 0..2^40: ${preview(count)}`
  }
  // ±Infinity is an honest overflow of huge values (the engine keeps it); NaN never is.
  if (typeof sum !== 'number' || Number.isNaN(sum)) return `sum must be a number: ${preview(sum)}`
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) {
    return `version must be a safe integer >= 0: ${preview(version)}`
  }
  if (typeof min !== 'number' || typeof max !== 'number' || typeof maxTs !== 'number') {
    return 'min, max and maxTs must be numbers'
  }
  if (count > 0) {
    if (!Number.isFinite(min) || !Number.isFinite(max) || min > max) {
      return `min and max must be finite with min <= max: ${preview(min)}, ${preview(max)}`
    }
    if (!isTime(maxTs)) return `maxTs must be a finite time within ±${MAX_ABS_TS}: ${preview(maxTs)}`
    if (!sumFits(count, sum, min, max)) return `sum is impossible for ${count} values in [${min}, ${max}]: ${preview(sum)}`
  } else if (Number.isNaN(min) || Number.isNaN(max) || Number.isNaN(maxTs) || maxTs > MAX_ABS_TS) {
    // A tombstone keeps the empty cell's infinities, but never NaN.
    return 'a tombstone must not hold NaN'
  }
  return {
    address: { window: window as string, key: key as string, start: start as number, source: source as string },
    cell: { count, sum, min, max, maxTs, version },
  }
}

/** A peer's clock entry, validated; a string says why it is refused. */
export function readClockEntry(value: unknown): ClockEntry | string {
  if (entryKind(value) !== 'clock') return `not a clock entry: ${preview(value)}`
  const [, source, writer, maxTs, prefix, prefixTs, provable, version] = value as unknown[]
  if (!isName(source, 1)) return `clock source must be a string of 1..${MAX_NAME_LENGTH} characters: ${preview(source)}`
  if (!isName(writer, 1)) return `clock writer must be a string of 1..${MAX_NAME_LENGTH} characters: ${preview(writer)}`
  if (!isTimeOrNone(maxTs)) return `clock maxTs must be a time or -Infinity: ${preview(maxTs)}`
  if (!isTimeOrNone(prefixTs)) return `clock prefixTs must be a time or -Infinity: ${preview(prefixTs)}`
  if (typeof prefix !== 'number' || !Number.isSafeInteger(prefix) || prefix < 0) {
    return `clock prefix must be a safe integer >= 0: ${preview(prefix)}`
  }
  if (provable !== 0 && provable !== 1) return `clock provable must be 0 or 1: ${preview(provable)}`
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) {
    return `clock version must be a safe integer >= 0: ${preview(version)}`
  }
  return {
    source: source as string,
    writer: writer as string,
    maxTs: maxTs as number,
    prefix,
    prefixTs: prefixTs as number,
    provable: provable === 1,
    version,
  }
}

/**
 * Total order on clocks: a higher version wins, and any fixed order on the content breaks
 * ties, so two writers of one source resolve the same way everywhere.
 */
export function compareClocks(a: ClockEntry, b: ClockEntry): number {
  return (
    order(a.version, b.version) ||
    order(a.maxTs, b.maxTs) ||
    order(a.prefix, b.prefix) ||
    order(a.prefixTs, b.prefixTs) ||
    order(Number(a.provable), Number(b.provable)) ||
    order(a.writer, b.writer)
  )
}

function order<T extends number | string>(x: T, y: T): number {
  return x < y ? -1 : x > y ? 1 : 0
}

function isName(value: unknown, minLength: number): value is string {
  return typeof value === 'string' && value.length >= minLength && value.length <= MAX_NAME_LENGTH
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value <= MAX_ABS_TS && value >= -MAX_ABS_TS
}

function isTimeOrNone(value: unknown): value is number {
  return value === Number.NEGATIVE_INFINITY || isTime(value)
}

/** A short, safe rendering of a hostile value for anomaly details. */
export function preview(value: unknown): string {
  let text: string
  if (typeof value === 'string') text = JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
  else if (Array.isArray(value)) text = `array(${value.length})`
  else if (value === null) text = 'null'
  else if (typeof value === 'object') text = value instanceof Uint8Array ? `bytes(${value.byteLength})` : 'object'
  else text = String(value)
  return text.length > 60 ? `${text.slice(0, 60)}…` : text
}
