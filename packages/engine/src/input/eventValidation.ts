import type { Anomaly, AnomalyReason } from './anomaly.ts'
import { MAX_ABS_TS, MAX_NAME_LENGTH } from './event.ts'

/**
 * Checks one input against the rules for a valid event (docs/semantics.md, Events). Returns `null` when the event is valid,
 * otherwise the anomaly reason. Allocation-free: the hot path calls it per event.
 *
 * @example
 * invalidReason({ id: 'a', source: 's', ts: Number.NaN, value: 1 }) // 'invalid_ts'
 */
export function invalidReason(event: unknown): AnomalyReason | null {
  if (typeof event !== 'object' || event === null) return 'invalid_event'
  return invalidFields(event, (event as Record<string, unknown>).id)
}

/**
 * `invalidReason` of an input object whose `id` its caller read already: the other fields are
 * read once each. Where inputs come in many shapes, every field read is a lookup of its own
 * (a megamorphic load), so the id is not read twice.
 *
 * @example
 * const id = input.id
 * invalidFields(input, id) // null, or why the input is invalid
 */
export function invalidFields(event: object, id: unknown): AnomalyReason | null {
  const e = event as Record<string, unknown>
  if (typeof id !== 'string' || id.length === 0) return 'missing_id'
  if (id.length > MAX_NAME_LENGTH) return 'invalid_id'
  const source = e.source
  if (typeof source !== 'string' || source.length === 0) return 'missing_source'
  if (source.length > MAX_NAME_LENGTH) return 'invalid_source'
  const ts = e.ts
  if (typeof ts !== 'number' || !Number.isFinite(ts) || ts > MAX_ABS_TS || ts < -MAX_ABS_TS) return 'invalid_ts'
  const value = e.value
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'invalid_value'
  const seq = e.seq
  if (seq !== undefined && (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1)) return 'invalid_seq'
  const key = e.key
  if (key !== undefined && (typeof key !== 'string' || key.length > MAX_NAME_LENGTH)) return 'invalid_key'
  return null
}

/**
 * The fixed text of each validation reason's detail, made once: a refusal is on the path of every
 * bad input, and text put together per call (a number turned into text, a template's parts
 * joined) costs more than the rest of the refusal.
 */
const ID_TOO_LONG = `id longer than ${MAX_NAME_LENGTH} characters`
const SOURCE_TOO_LONG = `source longer than ${MAX_NAME_LENGTH} characters`
const KEY_INVALID = `key must be a string of at most ${MAX_NAME_LENGTH} characters`
const TS_INVALID = `ts must be a finite number within ±${MAX_ABS_TS} ms, got `
const VALUE_INVALID = 'value must be a finite number, got '
const SEQ_INVALID = 'seq must be a safe integer >= 1, got '

/** Human-readable explanation for each validation reason, used as `Anomaly.detail`. */
export function describeInvalid(reason: AnomalyReason, event: unknown): string {
  const e = (typeof event === 'object' && event !== null ? event : {}) as Record<string, unknown>
  switch (reason) {
    case 'invalid_event':
      return `expected an event object, got ${event === null ? 'null' : typeof event}`
    case 'missing_id':
      return 'id must be a non-empty string'
    case 'invalid_id':
      return ID_TOO_LONG
    case 'missing_source':
      return 'source must be a non-empty string'
    case 'invalid_source':
      return SOURCE_TOO_LONG
    case 'invalid_ts':
      return TS_INVALID + shown(e.ts)
    case 'invalid_value':
      return VALUE_INVALID + shown(e.value)
    case 'invalid_seq':
      return SEQ_INVALID + shown(e.seq)
    case 'invalid_key':
      return KEY_INVALID
    default:
      return reason
  }
}

/** The last fractional number `shown` turned into text, and that text. */
let lastFraction = 0.5
let lastFractionText = '0.5'

/**
 * `String(value)` for a refused field's value. Turning a double into text takes V8 about 80 ns,
 * more than the rest of a refusal, and bad input repeats itself (a device sending NaN, or the
 * same wrong seq, upload after upload): the non-finite numbers are written out, and the last
 * fractional number's text is kept.
 */
function shown(value: unknown): string {
  if (typeof value !== 'number' || Number.isInteger(value)) return String(value)
  if (Number.isNaN(value)) return 'NaN'
  if (value === Number.POSITIVE_INFINITY) return 'Infinity'
  if (value === Number.NEGATIVE_INFINITY) return '-Infinity'
  if (value !== lastFraction) {
    lastFraction = value
    lastFractionText = String(value)
  }
  return lastFractionText
}

/**
 * Builds the anomaly reported for an invalid input at `index` of a batch: its reason, index and
 * detail, and its `id` and `source` when they are non-empty strings (at most 1,024 units each).
 *
 * @example
 * invalidAnomaly('invalid_ts', { id: 'a', source: 's', ts: Number.NaN, value: 1 }, 3)
 * // { reason: 'invalid_ts', index: 3, detail: 'ts must be … got NaN', id: 'a', source: 's' }
 */
export function invalidAnomaly(reason: AnomalyReason, event: unknown, index: number): Anomaly {
  const detail = describeInvalid(reason, event)
  if (typeof event !== 'object' || event === null) return { reason, index, detail }
  // Each field read once, and each anomaly made whole in one literal of its final shape.
  const id = nameOf((event as Record<string, unknown>).id)
  const source = nameOf((event as Record<string, unknown>).source)
  if (id === undefined) return source === undefined ? { reason, index, detail } : { reason, index, detail, source }
  return source === undefined ? { reason, index, detail, id } : { reason, index, detail, id, source }
}

/** A non-empty string field as an anomaly names it (at most `MAX_NAME_LENGTH` units), else undefined. */
function nameOf(field: unknown): string | undefined {
  if (typeof field !== 'string' || field.length === 0) return undefined
  return field.length > MAX_NAME_LENGTH ? field.slice(0, MAX_NAME_LENGTH) : field
}
