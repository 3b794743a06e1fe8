import type { Anomaly, AnomalyReason } from './anomaly.ts'
import { copyStreamEvent, type StreamEvent } from './event.ts'
import { invalidAnomaly, invalidFields, invalidReason } from './eventValidation.ts'

/** `invalidReason`, where an input whose getters throw (or a revoked Proxy) is an `invalid_event`. */
export function safeInvalidReason(event: unknown): AnomalyReason | null {
  try {
    return invalidReason(event)
  } catch {
    return 'invalid_event'
  }
}

/** `invalidFields` (the input's `id` read already), where an input whose getters throw (or a revoked Proxy) is an `invalid_event`. */
export function safeInvalidFields(event: object, id: unknown): AnomalyReason | null {
  try {
    return invalidFields(event, id)
  } catch {
    return 'invalid_event'
  }
}

/** What `readInputOnce` answers for an input that cannot be read (a getter threw, or a revoked Proxy). */
export const UNREADABLE: unique symbol = Symbol('unreadable input')

/**
 * An input as it is to be validated and kept: a plain object (its prototype `Object.prototype`
 * or null: a literal, parsed JSON) as it is; any other object (a class instance, or a Proxy over one) read
 * once, into a plain copy of its six fields, so that a getter read again cannot answer otherwise
 * than what was validated (docs/bad-input.md, B07); anything else as it is (validation refuses
 * it). `UNREADABLE` when reading it throws.
 *
 * @example
 * readInputOnce({ id: 'a', source: 's', ts: 1, value: 2 }) // the same object
 * readInputOnce(new Reading()) // a plain copy of its id, source, ts, value, seq and key
 */
export function readInputOnce(input: unknown): unknown {
  if (typeof input !== 'object' || input === null) return input
  try {
    const prototype = Object.getPrototypeOf(input)
    return prototype === Object.prototype || prototype === null ? input : copyStreamEvent(input as StreamEvent)
  } catch {
    return UNREADABLE
  }
}

/**
 * `events[i]`, or `UNREADABLE` when reading it throws (a Proxy over an array).
 *
 * @example
 * refusal('invalid_event', elementOrUnreadable(events, i), i) // names its id when the element can be read
 */
export function elementOrUnreadable(events: readonly unknown[], i: number): unknown {
  try {
    return events[i]
  } catch {
    return UNREADABLE
  }
}

/** The anomaly refusing an input for `reason` (with `detail` when given), also for an input that cannot be read (or `UNREADABLE`, all that is known of it). */
export function refusal(reason: AnomalyReason, event: unknown, index: number, detail?: string): Anomaly {
  let anomaly: Anomaly | null = null
  if (event !== UNREADABLE) {
    try {
      anomaly = invalidAnomaly(reason, event, index)
    } catch {
      // Described below, as an input that could not be read.
    }
  }
  anomaly ??= { reason, index, detail: 'the input could not be read (a getter threw, or a revoked Proxy)' }
  return detail === undefined ? anomaly : { ...anomaly, detail }
}

/** Records one refused input: its anomaly in the receipt, and its reason in the counters. */
export function rejectInput(
  anomalies: Anomaly[],
  counts: Record<AnomalyReason, number>,
  reason: AnomalyReason,
  event: unknown,
  index: number,
  detail?: string,
): void {
  anomalies.push(refusal(reason, event, index, detail))
  counts[reason]++
}
