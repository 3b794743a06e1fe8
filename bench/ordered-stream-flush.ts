/**
 * ordered-stream-flush: `flushReady()` under a lagging watermark. 100k readings from 25 devices,
 * one 120 s behind, shuffled pushes of 200, 2% 1–20 pushes late; a flush after every push, so
 * each flush releases a few hundred ready events while ~30k wait. Flush cost must follow the
 * ready subset, not the backlog (docs/semantics.md, the ordered event stream): `flushWorkPerEmitted` shows it.
 *
 * Contenders: Tidemark's ordered stream; the floor (collect the valid events and sort them once
 * at the end: the least work for the same order, with no incremental release); RxJS (a `scan`
 * that sorts its pending array per upload). Tidemark and RxJS must emit the same sequence.
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/ordered-stream-flush.ts
 */
import { boundedOutOfOrderness, type StreamEvent } from '@tidemark/engine'
import type { Contender } from './harness/contender.ts'
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { isMain } from './measure.ts'
import { orderedStreamContender } from './peers/orderedStream.ts'
import { rxjsOrderedContender } from './peers/rxjsOrderedStream.ts'
import { eventCount, laggingFleet } from './workload.ts'

const OUT_OF_ORDERNESS = 2_000
const ALLOWED_LATENESS = 5_000

/** The floor for ordering: one pass collecting valid events, one sort of everything at the end. */
function sortOnceContender(pushes: readonly (readonly StreamEvent[])[]): Contender {
  return {
    name: 'plain-loop',
    label: 'plain floor: collect valid events, one sort at the end by (ts, source, seq, id); no dedup, no release',
    run: ({ probe }) => {
      const all: StreamEvent[] = []
      for (const push of pushes) {
        for (const e of push) if (Number.isFinite(e.ts) && Number.isFinite(e.value)) all.push(e)
        probe.tick()
      }
      all.sort((a, b) => {
        if (a.ts !== b.ts) return a.ts < b.ts ? -1 : 1
        if (a.source !== b.source) return a.source < b.source ? -1 : 1
        return (a.seq ?? 0) - (b.seq ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
      })
      return { end: { pending: 0 }, counts: { sorted: all.length }, state: all }
    },
  }
}

export function define(): ProfileDefinition {
  const pushes = laggingFleet({ events: 100_000, sources: 25, push: 200, spacing: 100, slowBehind: 120_000, delayedShare: 0.02, seed: 77 })
  return {
    name: 'ordered-stream-flush',
    description: '100k readings, 25 devices, one 120 s behind, shuffled pushes of 200, 2% 1–20 pushes late; flushReady() after every push; out-of-orderness 2 s, lateness 5 s',
    events: eventCount(pushes),
    batches: pushes.length,
    contenders: [
      orderedStreamContender(pushes, { watermark: boundedOutOfOrderness(OUT_OF_ORDERNESS), allowedLateness: ALLOWED_LATENESS, batchSize: 256 }),
      sortOnceContender(pushes),
      rxjsOrderedContender(pushes, { outOfOrderness: OUT_OF_ORDERNESS, allowedLateness: ALLOWED_LATENESS }),
    ],
    ratios: [
      {
        name: 'engine/floor',
        label: 'ordered stream throughput as a share of one sort at the end',
        subject: 'ordered-stream',
        reference: 'plain-loop',
        format: 'percent',
      },
      {
        name: 'engine-vs-rxjs',
        label: 'ordered stream speed-up over RxJS (sort per upload)',
        subject: 'ordered-stream',
        reference: 'rxjs',
        format: 'times',
      },
    ],
    agree: [['ordered-stream', 'rxjs']],
    // RxJS takes seconds per run here; one warm-up is enough for it to reach steady state.
    warmup: 1,
  }
}

if (isMain(import.meta.url)) await runProfileCli(define)
