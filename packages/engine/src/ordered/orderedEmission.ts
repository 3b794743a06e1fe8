/**
 * What an ordered stream's flush emits: the held events the watermark passed, in the total order
 * `(ts, source, seq, id)`, then the corrections admitted since the last flush, sorted among
 * themselves; each event stamped with its order basis, in batches of at most `batchSize`.
 */
import type { OrderProof } from '../time/orderProof.ts'
import type { SourceClock } from '../time/sourceClock.ts'
import { compareEventOrder, type OrderedEvent, type PendingEvent } from './eventOrder.ts'
import type { OrderedBatch } from './orderedStreamApi.ts'
import type { PendingBuffer } from './pendingBuffer.ts'

/**
 * Pops every event of `buffer` with `ts < watermark` into `ready` batches: the ready subset
 * only, never the backlog. Returns how many events it emitted.
 *
 * @example
 * const emitted = emitReady(buffer, frontiers.watermark, 500, frontiers.sources, proof, batches)
 */
export function emitReady(
  buffer: PendingBuffer,
  watermark: number,
  batchSize: number,
  sources: ReadonlyMap<string, SourceClock>,
  proof: OrderProof,
  batches: OrderedBatch[],
): number {
  let batch: PendingEvent[] = []
  let previousTs = Number.NaN
  let clock: SourceClock | undefined
  let emitted = 0
  while (buffer.peekTs() < watermark) {
    const event = buffer.pop()
    const ts = event.ts
    const tie = ts === previousTs || ts === buffer.peekTs()
    previousTs = ts
    if (clock === undefined || clock.name !== event.source) clock = sources.get(event.source) as SourceClock
    event.basis = proof.basis(clock, event.seq, tie)
    batch.push(event)
    if (batch.length === batchSize) {
      batches.push({ kind: 'ready', events: batch })
      emitted += batch.length
      batch = []
    }
  }
  if (batch.length > 0) {
    batches.push({ kind: 'ready', events: batch })
    emitted += batch.length
  }
  return emitted
}

/**
 * Sorts `corrections` (O(c log c) in their number) and adds them as `correction` batches.
 * Returns the comparisons the sort made.
 *
 * @example
 * const comparisons = emitCorrections(corrections, 500, frontiers.sources, proof, batches)
 */
export function emitCorrections(
  corrections: PendingEvent[],
  batchSize: number,
  sources: ReadonlyMap<string, SourceClock>,
  proof: OrderProof,
  batches: OrderedBatch[],
): number {
  let comparisons = 0
  corrections.sort((a, b) => {
    comparisons++
    return compareEventOrder(a, b)
  })
  const c = corrections.length
  for (let i = 0; i < c; i++) {
    const event = corrections[i] as PendingEvent
    const tie = (corrections[i - 1]?.ts ?? Number.NaN) === event.ts || (corrections[i + 1]?.ts ?? Number.NaN) === event.ts
    event.basis = proof.basis(sources.get(event.source) as SourceClock, event.seq, tie)
  }
  for (let start = 0; start < c; start += batchSize) {
    const events: readonly OrderedEvent[] = c <= batchSize ? corrections : corrections.slice(start, start + batchSize)
    batches.push({ kind: 'correction', events })
  }
  return comparisons
}
