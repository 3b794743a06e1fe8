import type { Anomaly, AnomalyReason } from './anomaly.ts'
import { invalidAnomaly, invalidReason } from './eventValidation.ts'

/** `invalidReason`, where an input whose getters throw (or a revoked Proxy) is an `invalid_event`. */
export function safeInvalidReason(event: unknown): AnomalyReason | null {
  try {
    return invalidReason(event)
  } catch {
    return 'invalid_event'
  }
}

/** The anomaly refusing an input for `reason` (with `detail` when given), also for an input that cannot be read. */
export function refusal(reason: AnomalyReason, event: unknown, index: number, detail?: string): Anomaly {
  let anomaly: Anomaly
  try {
    anomaly = invalidAnomaly(reason, event, index)
  } catch {
    anomaly = { reason, index, detail: 'the input could not be read (a getter threw, or a revoked Proxy)' }
  }
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
