/**
 * streaming-150k-watermark-lag: the enforced guard (`pnpm bench:check`). 150k readings from 20
 * devices in shuffled pushes of 100; device 0 runs ~250 s of event time behind the others, so the
 * watermark (min over sources of max ts − 2 s) keeps most windows and events waiting; 2% of
 * events arrive 1–20 pushes late. Windows: 10 s tumbling plus a 1-minute window sliding every
 * 10 s (7 windows per event), 5 s allowed lateness.
 *
 * Window engine: Tidemark beside the plain-loop floor and RxJS on the same pushes; the guard is
 * Tidemark's throughput as a share of the floor's, measured in the same run. Also Tidemark with
 * early panes a second apart (`afterProcessingTime(1000)`, pushes 250 ms apart, a tick after
 * each) against its default of a pane for every push that changes a window.
 * Ordered stream: Tidemark's `createOrderedStream` with `flushReady()` after every push, beside
 * a naive stream that sorts its whole pending array on every flush; both must emit the same
 * sequence.
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/streaming-150k-watermark-lag.ts
 */
import { afterProcessingTime, boundedOutOfOrderness, sliding, tumbling } from '@tidemark/engine'
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { windowRatios } from './harness/ratios.ts'
import { isMain } from './measure.ts'
import { fixedWindows } from './peers/fixedWindows.ts'
import { naiveSortContender } from './peers/naiveSortStream.ts'
import { orderedStreamContender } from './peers/orderedStream.ts'
import { plainLoopContender } from './peers/plainLoop.ts'
import { rxjsContender } from './peers/rxjsWindows.ts'
import { tidemarkContender } from './peers/tidemark.ts'
import { eventCount, type LaggingFleetOptions, laggingFleet } from './workload.ts'

const OUT_OF_ORDERNESS = 2_000
/** Processing time between pushes, for the contender whose early panes are timed. */
const PUSH_EVERY_MS = 250
const ALLOWED_LATENESS = 5_000

export const FLEET_150K: LaggingFleetOptions = {
  events: 150_000,
  sources: 20,
  push: 100,
  spacing: 100,
  slowBehind: 250_000,
  delayedShare: 0.02,
  seed: 150,
}

/**
 * The window and ordered-stream contenders of a lagging-fleet profile (shared with the 250k one).
 * `naive`: include the sort-per-flush baseline (seconds per run; quadratic in the backlog).
 */
export function laggingFleetProfile(name: string, description: string, fleet: LaggingFleetOptions, naive: boolean): ProfileDefinition {
  const pushes = laggingFleet(fleet)
  const specs = [tumbling(10_000), sliding(60_000, 10_000)]
  const windows = fixedWindows(specs)
  const watermark = boundedOutOfOrderness(OUT_OF_ORDERNESS)
  return {
    name,
    description,
    events: eventCount(pushes),
    batches: pushes.length,
    contenders: [
      tidemarkContender(pushes, { windows: specs, watermark, allowedLateness: ALLOWED_LATENESS }),
      // The same with early panes a second of processing time apart: pushes arrive every 250 ms, a tick after each.
      tidemarkContender(
        pushes,
        { windows: specs, watermark, allowedLateness: ALLOWED_LATENESS, trigger: { early: afterProcessingTime(1_000) } },
        {
          clock: (push) => push * PUSH_EVERY_MS,
          tick: true,
          name: 'tidemark-early-1s',
          label: 'Tidemark with early: afterProcessingTime(1000): pushes 250 ms apart, tick() after each',
        },
      ),
      plainLoopContender(pushes, windows),
      rxjsContender(pushes, { windows, outOfOrderness: OUT_OF_ORDERNESS, allowedLateness: ALLOWED_LATENESS }),
      orderedStreamContender(pushes, { watermark, allowedLateness: ALLOWED_LATENESS, batchSize: 256 }),
      ...(naive ? [naiveSortContender(pushes, { outOfOrderness: OUT_OF_ORDERNESS, allowedLateness: ALLOWED_LATENESS })] : []),
    ],
    ratios: [
      ...windowRatios(),
      {
        name: 'early-1s-vs-default',
        label: 'early: afterProcessingTime(1000) against the default trigger',
        subject: 'tidemark-early-1s',
        reference: 'tidemark',
        format: 'times',
      },
      {
        name: 'ordered-vs-naive',
        label: 'ordered stream speed-up over the sort-per-flush baseline',
        subject: 'ordered-stream',
        reference: 'naive-sort',
        format: 'times',
      },
    ],
    agree: [
      ['tidemark', 'rxjs'],
      ['ordered-stream', 'naive-sort'],
    ],
  }
}

export function define(): ProfileDefinition {
  return laggingFleetProfile(
    'streaming-150k-watermark-lag',
    '150k readings, 20 devices, one 250 s behind (watermark lag), shuffled pushes of 100, 2% 1–20 pushes late; tumbling 10 s + sliding 60 s/10 s, out-of-orderness 2 s, lateness 5 s',
    FLEET_150K,
    true,
  )
}

if (isMain(import.meta.url)) await runProfileCli(define)
