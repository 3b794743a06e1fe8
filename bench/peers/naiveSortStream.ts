/**
 * The naive ordered stream: the same validation, dedup and watermark as Tidemark's ordered
 * stream (its own Frontiers and source clocks, imported from the engine's internals), but the
 * pending buffer is one array sorted whole on every flush. It differs only in the pending
 * structure, so the ratio isolates what the heap buys.
 */
import { boundedOutOfOrderness, invalidReason, type StreamEvent } from '@tidemark/engine'
import { compareEventOrder } from '@tidemark/engine/ordered'
import { Frontiers } from '@tidemark/engine/adapter'
// Internal on purpose: the baseline must share the engine's watermark bookkeeping exactly.
import type { Contender, Outcome, RunContext } from '../harness/contender.ts'
import { CHECKSUM_SEED, hashId } from './emissionChecksum.ts'

export interface NaiveSortOptions {
  readonly outOfOrderness: number
  readonly allowedLateness: number
}

export function naiveSortContender(pushes: readonly (readonly StreamEvent[])[], options: NaiveSortOptions): Contender {
  return {
    name: 'naive-sort',
    label: 'naive ordered stream: same dedup and watermark, pending array sorted whole on every flush (one run: it takes seconds)',
    rounds: 1,
    warmup: 0,
    run: (context) => runNaive(pushes, options, context),
  }
}

function runNaive(pushes: readonly (readonly StreamEvent[])[], o: NaiveSortOptions, { probe }: RunContext): Outcome {
  const frontiers = new Frontiers(boundedOutOfOrderness(o.outOfOrderness), Number.POSITIVE_INFINITY)
  let pending: StreamEvent[] = []
  let late: StreamEvent[] = []
  let emitted = 0
  let corrections = 0
  let peakPending = 0
  let checksum = CHECKSUM_SEED
  for (const push of pushes) {
    const W = frontiers.watermark
    for (const event of push) {
      if (invalidReason(event) !== null) continue
      const clock = frontiers.source(event.source, 0)
      if (clock.seen(event.seq, event.id)) continue
      if (event.ts >= W) pending.push({ ...event })
      else if (event.ts >= W - o.allowedLateness) late.push({ ...event })
      clock.remember(event, 0)
    }
    frontiers.advance(0)
    peakPending = Math.max(peakPending, pending.length + late.length)
    pending.sort(compareEventOrder)
    let ready = 0
    while (ready < pending.length && (pending[ready] as StreamEvent).ts < frontiers.watermark) ready++
    for (let i = 0; i < ready; i++) checksum = hashId(checksum, (pending[i] as StreamEvent).id)
    emitted += ready
    pending = pending.slice(ready)
    late.sort(compareEventOrder)
    for (const e of late) checksum = hashId(checksum, e.id)
    corrections += late.length
    late = []
    probe.tick()
  }
  return {
    end: { pending: pending.length, peakPending },
    counts: { emittedReady: emitted, emittedCorrections: corrections },
    checksum,
    state: pending,
  }
}
