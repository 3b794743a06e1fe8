/**
 * Time in the reference model: the order a batch is placed in, a source's share of the proof
 * frontier, and when a processing-time trigger fires.
 */
import type { StreamEvent, Trigger } from '@tidemark/engine'

/** A valid, first-seen event as its source delivered it. */
export interface Delivery {
  readonly source: string
  readonly seq: number | undefined
  readonly ts: number
  /** Processing time of the ingest that brought it. */
  readonly now: number
}

/** The engine's deterministic event order: ts, then source, seq (absent first) and id by UTF-16 code units. */
export function eventOrder(a: StreamEvent, b: StreamEvent): number {
  const keyOf = (e: StreamEvent) => [e.ts, e.source, e.seq ?? 0, e.id] as const
  const [x, y] = [keyOf(a), keyOf(b)]
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return (x[i] as number | string) < (y[i] as number | string) ? -1 : 1
  return 0
}

/** A source's contribution to P: the largest ts of its gap-free seq prefix, if ts never decreased along it. */
export function proofOf(deliveries: readonly Delivery[]): number {
  if (deliveries.some((d) => d.seq === undefined)) return Number.NEGATIVE_INFINITY
  const tsBySeq = new Map(deliveries.map((d) => [d.seq as number, d.ts]))
  let proof = Number.NEGATIVE_INFINITY
  for (let seq = 1; tsBySeq.has(seq); seq++) {
    const ts = tsBySeq.get(seq) as number
    if (ts < proof) return Number.NEGATIVE_INFINITY
    proof = ts
  }
  return proof
}

/**
 * When `trigger`, armed at processing time `now`, fires; NaN for a trigger with no timer.
 *
 * @example
 * triggerDeadline(afterProcessingTime(1_000), 5_500) // 6_500
 * triggerDeadline(alignedProcessingTime(1_000, 0), 5_500) // 6_000
 */
export function triggerDeadline(trigger: Trigger, now: number): number {
  if (trigger.kind === 'after_processing_time') return now + trigger.delayMs
  if (trigger.kind === 'aligned_processing_time') return Math.floor((now - trigger.offsetMs) / trigger.periodMs) * trigger.periodMs + trigger.offsetMs + trigger.periodMs
  return Number.NaN
}
