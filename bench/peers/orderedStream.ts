/**
 * Tidemark's ordered event stream as a contender: `push` then `flushReady()` after every push,
 * as a consumer that wants events in order (a timeline, an export) would call it.
 */
import type { StreamEvent } from '@tidemark/engine'
import { createOrderedStream, type OrderedStreamOptions } from '@tidemark/engine/ordered'
import type { Contender, Outcome, RunContext } from '../harness/contender.ts'
import { CHECKSUM_SEED, hashId } from './emissionChecksum.ts'

export function orderedStreamContender(
  pushes: readonly (readonly StreamEvent[])[],
  options: Omit<OrderedStreamOptions, 'now'>,
): Contender {
  return {
    name: 'ordered-stream',
    label: 'Tidemark createOrderedStream: push, then flushReady() after every push (pending heap)',
    run: (context) => runOrderedStream(pushes, options, context),
  }
}

function runOrderedStream(
  pushes: readonly (readonly StreamEvent[])[],
  options: Omit<OrderedStreamOptions, 'now'>,
  { probe, record }: RunContext,
): Outcome {
  // Processing time plays no part (no idleTimeout): the fleets are stamped in 2023 while this clock reads 0, so no event is refused as ahead of it.
  const stream = createOrderedStream({ ...options, now: () => 0, maxFutureSkew: Number.POSITIVE_INFINITY })
  let emitted = 0
  let corrections = 0
  let checksum = CHECKSUM_SEED
  for (const push of pushes) {
    stream.push(push)
    for (const batch of stream.flushReady()) {
      if (record) for (const e of batch.events) checksum = hashId(checksum, e.id)
      if (batch.kind === 'ready') emitted += batch.events.length
      else corrections += batch.events.length
    }
    probe.tick()
  }
  const s = stream.stats()
  const outcome: Outcome = {
    end: {
      pending: stream.pending(),
      peakPending: s.peakPending,
      dedupEntries: s.dedupEntries,
      lateLane: s.lateLane,
      watermarkLagMs: s.watermarkLag,
    },
    counts: {
      emittedReady: emitted,
      emittedCorrections: corrections,
      beyondLateness: s.beyondLateness,
      duplicates: s.duplicates,
      rejected: s.rejected,
      flushes: s.flushes,
      batchFragmentation: Number(s.batchFragmentation.toFixed(3)),
      compactions: s.compactions,
      flushWorkPerEmitted: Number(((s.work.flushComparisons + s.work.flushMoves) / Math.max(1, emitted + corrections)).toFixed(1)),
      pushWorkPerEvent: Number(((s.work.pushComparisons + s.work.pushMoves) / Math.max(1, s.pushed)).toFixed(1)),
    },
    state: stream,
  }
  return record ? { ...outcome, checksum } : outcome
}
