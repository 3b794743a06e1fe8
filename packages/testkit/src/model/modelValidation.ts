import { type AnomalyReason, MAX_ABS_TS, MAX_NAME_LENGTH, type StreamEvent } from '@tidemark/engine'

/** An anomaly as the model states it: the reason, the input's index, and its id when it has one. */
export interface ModelAnomaly {
  readonly reason: AnomalyReason
  readonly index: number
  readonly id?: string
}

/**
 * Why an input is refused before it reaches any window, or null, as docs/semantics.md states the
 * checks (id, source, ts, value, seq, key, in that order). Generated invalid inputs have a single fault.
 *
 * @example
 * modelValidation({ id: 'a', source: 'd1', ts: Number.NaN, value: 1 }) // 'invalid_ts'
 */
export function modelValidation(input: unknown): AnomalyReason | null {
  if (input === null || typeof input !== 'object') return 'invalid_event'
  const { id, source, ts, value, seq, key } = input as Record<string, unknown>
  if (typeof id !== 'string' || id === '') return 'missing_id'
  if (id.length > MAX_NAME_LENGTH) return 'invalid_id'
  if (typeof source !== 'string' || source === '') return 'missing_source'
  if (source.length > MAX_NAME_LENGTH) return 'invalid_source'
  if (typeof ts !== 'number' || !Number.isFinite(ts) || Math.abs(ts) > MAX_ABS_TS) return 'invalid_ts'
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'invalid_value'
  if (seq !== undefined && !(typeof seq === 'number' && Number.isInteger(seq) && seq >= 1 && seq <= Number.MAX_SAFE_INTEGER)) {
    return 'invalid_seq'
  }
  if (key !== undefined && (typeof key !== 'string' || key.length > MAX_NAME_LENGTH)) return 'invalid_key'
  return null
}

/**
 * A batch split into the anomalies of its invalid inputs and its valid events, both in input order.
 *
 * @example
 * const { invalid, valid } = partitionInputs([{ id: '', source: 'd1', ts: 1, value: 2 }, event])
 * invalid // [{ reason: 'missing_id', index: 0 }]; valid // [{ event, index: 1 }]
 */
export function partitionInputs(inputs: readonly unknown[]): { invalid: ModelAnomaly[]; valid: { event: StreamEvent; index: number }[] } {
  const invalid: ModelAnomaly[] = []
  const valid: { event: StreamEvent; index: number }[] = []
  inputs.forEach((input, index) => {
    const reason = modelValidation(input)
    if (reason === null) {
      valid.push({ event: input as StreamEvent, index })
      return
    }
    const id = (input as { id?: unknown } | null)?.id
    invalid.push(typeof id === 'string' && id !== '' ? { reason, index, id: id.slice(0, MAX_NAME_LENGTH) } : { reason, index })
  })
  return { invalid, valid }
}
