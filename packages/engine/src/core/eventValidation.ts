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
  const e = event as Record<string, unknown>
  const id = e.id
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

/** The range of `ts` as the anomalies say it, made once: a number turned into text costs more than the rest of a refusal. */
const TS_RANGE = `±${MAX_ABS_TS} ms`

/** Human-readable explanation for each validation reason, used as `Anomaly.detail`. */
export function describeInvalid(reason: AnomalyReason, event: unknown): string {
  const e = (typeof event === 'object' && event !== null ? event : {}) as Record<string, unknown>
  switch (reason) {
    case 'invalid_event':
      return `expected an event object, got ${event === null ? 'null' : typeof event}`
    case 'missing_id':
      return 'id must be a non-empty string'
    case 'invalid_id':
      return `id longer than ${MAX_NAME_LENGTH} characters`
    case 'missing_source':
      return 'source must be a non-empty string'
    case 'invalid_source':
      return `source longer than ${MAX_NAME_LENGTH} characters`
    case 'invalid_ts':
      return `ts must be a finite number within ${TS_RANGE}, got ${String(e.ts)}`
    case 'invalid_value':
      return `value must be a finite number, got ${String(e.value)}`
    case 'invalid_seq':
      return `seq must be a safe integer >= 1, got ${String(e.seq)}`
    case 'invalid_key':
      return `key must be a string of at most ${MAX_NAME_LENGTH} characters`
    default:
      return reason
  }
}

/** Builds the anomaly reported for an invalid input at `index` of a batch. */
export function invalidAnomaly(reason: AnomalyReason, event: unknown, index: number): Anomaly {
  const e = (typeof event === 'object' && event !== null ? event : {}) as Record<string, unknown>
  const anomaly: { -readonly [K in keyof Anomaly]: Anomaly[K] } = { reason, index, detail: describeInvalid(reason, event) }
  if (typeof e.id === 'string' && e.id.length > 0) anomaly.id = e.id.slice(0, MAX_NAME_LENGTH)
  if (typeof e.source === 'string' && e.source.length > 0) anomaly.source = e.source.slice(0, MAX_NAME_LENGTH)
  return anomaly
}
