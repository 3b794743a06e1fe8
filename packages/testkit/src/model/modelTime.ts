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

/**
 * A source's contribution to P: the largest ts of its gap-free seq prefix, if ts never decreased
 * along it and no seq delivered above a gap had a ts below the prefix's end as it stood then.
 * `deliveries` are the source's, in the order they arrived.
 *
 * @example
 * proofOf([{ source: 'a', seq: 1, ts: 10, now: 0 }, { source: 'a', seq: 3, ts: 5, now: 0 }]) // -Infinity
 */
export function proofOf(deliveries: readonly Delivery[]): number {
  if (deliveries.some((d) => d.seq === undefined)) return Number.NEGATIVE_INFINITY
  const held = new Map<number, number>()
  let prefix = 0
  let proof = Number.NEGATIVE_INFINITY
  for (const { seq, ts } of deliveries) {
    if (ts < proof) return Number.NEGATIVE_INFINITY
    if (seq !== prefix + 1) {
      held.set(seq as number, ts)
      continue
    }
    proof = ts
    prefix = seq
    for (let next = held.get(prefix + 1); next !== undefined; next = held.get(prefix + 1)) {
      if (next < proof) return Number.NEGATIVE_INFINITY
      proof = next
      prefix++
    }
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
