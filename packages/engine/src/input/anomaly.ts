import type { StreamEvent } from './event.ts'

/**
 * Why an input, a peer's cell or a stored record was not applied.
 * docs/semantics.md lists each reason and where it is raised; the validation reasons name the exact field.
 * `conflicting_duplicate` is the one reason that refuses nothing new: it marks a duplicate
 * (counted in `duplicates` and under `duplicate` like any other) whose content provably
 * differs from the first delivery, which stays the one applied.
 *
 * @example
 * const reason: AnomalyReason = 'conflicting_duplicate'
 */
export type AnomalyReason =
  | 'invalid_event'
  | 'invalid_ts'
  | 'invalid_value'
  | 'missing_id'
  | 'invalid_id'
  | 'missing_source'
  | 'invalid_source'
  | 'invalid_seq'
  | 'invalid_key'
  | 'future_ts'
  | 'invalid_aggregate_input'
  | 'duplicate'
  | 'conflicting_duplicate'
  | 'beyond_lateness'
  | 'overflow'
  | 'invalid_remote_cell'
  | 'source_conflict'
  | 'finished_source'
  | 'corrupt_record'

/**
 * Every reason, for stats tables and exhaustive tests.
 *
 * @example
 * for (const reason of ANOMALY_REASONS) console.log(reason, engine.stats().anomalies[reason])
 */
export const ANOMALY_REASONS: readonly AnomalyReason[] = [
  'invalid_event',
  'invalid_ts',
  'invalid_value',
  'missing_id',
  'invalid_id',
  'missing_source',
  'invalid_source',
  'invalid_seq',
  'invalid_key',
  'future_ts',
  'invalid_aggregate_input',
  'duplicate',
  'conflicting_duplicate',
  'beyond_lateness',
  'overflow',
  'invalid_remote_cell',
  'source_conflict',
  'finished_source',
  'corrupt_record',
]

/**
 * One refused input with its reason, or one conflicting duplicate (`conflicting_duplicate`).
 *
 * @example
 * const a: Anomaly = { reason: 'invalid_ts', index: 3, id: 'd1-9', detail: 'ts must be a finite number within ±9007199254740.992 ms, got NaN' }
 */
export interface Anomaly {
  /** Why the input was refused. */
  readonly reason: AnomalyReason
  /** Position in the batch passed to `ingest` / `push`. */
  readonly index?: number
  /** The input's `id`, when it could be read (at most 1,024 units). */
  readonly id?: string
  /** The input's `source`, when it could be read. */
  readonly source?: string
  /** A human-readable explanation (the limit reached, the field and value refused). */
  readonly detail?: string
  /**
   * `future_ts` only: a copy of the refused event (its six fields), to send again once the
   * clock that stamped it is fixed or real time has caught up with it.
   */
  readonly event?: StreamEvent
}

/** A fresh zeroed counter per reason, with no prototype so any reason is a safe key. */
export function emptyAnomalyCounts(): Record<AnomalyReason, number> {
  const counts = Object.create(null) as Record<AnomalyReason, number>
  for (const reason of ANOMALY_REASONS) counts[reason] = 0
  return counts
}
