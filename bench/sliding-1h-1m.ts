/**
 * sliding-1h-1m: one-hour windows sliding every minute (60 windows per reading). 100k readings
 * from 50 devices, each reporting 4 metrics every 20 s (keys alternate along a device's
 * readings), 5% delivered up to 2 min late, in uploads of 500: about 2.8 h of event time, 4 keys.
 * Out-of-orderness 1 min, lateness 5 min.
 *
 * - tidemark: the engine, whose windows share one-minute slices (one cell update per reading).
 * - per-window: the same engine on the per-window placement (`createPerWindowEngine`): every
 *   window keeps its own cells, 60 cell updates per reading. Its results and changes are the
 *   sliced engine's (checked in the test kit), so the ratio is the cost of placement alone.
 * - plain-loop: the floor of a sliced implementation: nested Maps per key and slice, every
 *   window combined from its slices once at the end; no dedup, watermark, lateness or emission.
 * - rules-loop: the rules floor over slices: one hand-written loop keeping the engine's rules
 *   (validation, dedup, watermark, lateness, per-upload emission) with one slice update per
 *   event, each upload's changed windows swept from their slices. Its share of the plain-loop
 *   floor is the most any implementation of the rules reaches here.
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/sliding-1h-1m.ts
 */
import { boundedOutOfOrderness, sliding } from '@tidemark/engine'
import { createPerWindowEngine } from '@tidemark/engine/testing'
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { rulesRatios } from './harness/ratios.ts'
import { isMain } from './measure.ts'
import { fixedWindows } from './peers/fixedWindows.ts'
import { plainSlicedLoopContender } from './peers/plainSlicedLoop.ts'
import { slicedRulesLoopContender } from './peers/slicedRulesLoop.ts'
import { tidemarkContender } from './peers/tidemark.ts'
import { eventCount, metricFleet } from './workload.ts'

const HOUR = 3_600_000
const MINUTE = 60_000

export function define(): ProfileDefinition {
  const batches = metricFleet({ events: 100_000, sources: 50, metrics: 4, spacing: 20_000, lateShare: 0.05, lateBy: 2 * MINUTE, seed: 61, batchSize: 500 })
  const spec = sliding(HOUR, MINUTE)
  const options = { windows: [spec], watermark: boundedOutOfOrderness(MINUTE), allowedLateness: 5 * MINUTE }
  const window = fixedWindows([spec])[0]
  if (window === undefined) throw new Error('no window')
  return {
    name: 'sliding-1h-1m',
    description: '100k readings, 50 devices × 4 metrics every 20 s, 5% up to 2 min late; sliding 1 h every 1 min (60 windows per reading), out-of-orderness 1 min, lateness 5 min',
    events: eventCount(batches),
    batches: batches.length,
    contenders: [
      tidemarkContender(batches, options),
      tidemarkContender(batches, options, {
        create: createPerWindowEngine,
        name: 'per-window',
        label: 'Tidemark on the per-window placement (createPerWindowEngine): every window keeps its own cells, 60 updates per reading',
      }),
      plainSlicedLoopContender(batches, window),
      slicedRulesLoopContender(batches, { window, outOfOrderness: MINUTE, allowedLateness: 5 * MINUTE }),
    ],
    ratios: [
      {
        name: 'engine/floor',
        label: 'Tidemark throughput as a share of the sliced plain-loop floor',
        subject: 'tidemark',
        reference: 'plain-loop',
        format: 'percent',
        target: 0.35,
      },
      {
        name: 'sliced-vs-per-window',
        label: 'sliced placement speed-up over the per-window placement',
        subject: 'tidemark',
        reference: 'per-window',
        format: 'times',
        target: 10,
      },
      ...rulesRatios(),
    ],
    agree: [
      ['tidemark', 'per-window'],
      ['tidemark', 'rules-loop'],
    ],
  }
}

if (isMain(import.meta.url)) await runProfileCli(define)
