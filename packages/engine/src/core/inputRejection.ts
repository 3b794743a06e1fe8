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

/** Records one refused input: its anomaly in the receipt, and its reason in the counters. */
export function rejectInput(
  anomalies: Anomaly[],
  counts: Record<AnomalyReason, number>,
  reason: AnomalyReason,
  event: unknown,
  index: number,
  detail?: string,
): void {
  let anomaly: Anomaly
  try {
    anomaly = invalidAnomaly(reason, event, index)
  } catch {
    anomaly = { reason, index, detail: 'the input could not be read (a getter threw, or a revoked Proxy)' }
  }
  anomalies.push(detail === undefined ? anomaly : { ...anomaly, detail })
  counts[reason]++
}
