/**
 * streaming-100k: the routine comparison band. 100k readings from 50 devices, ~10% delivered
 * up to 90 s late, 2% re-sent, in uploads of 500; one-minute tumbling windows, 10 s
 * out-of-orderness, 60 s allowed lateness. Tidemark beside the plain-loop floor and RxJS.
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/streaming-100k.ts
 */
import { tumbling } from '@tidemark/engine'
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { windowProfile } from './harness/windowProfile.ts'
import { isMain } from './measure.ts'
import { deviceStream } from './workload.ts'

const OUT_OF_ORDERNESS = 10_000
const ALLOWED_LATENESS = 60_000

export function define(): ProfileDefinition {
  const batches = deviceStream({
    events: 100_000,
    sources: 50,
    lateShare: 0.1,
    duplicateShare: 0.02,
    spacing: 1_000,
    lateBy: 90_000,
    seed: 42,
    batchSize: 500,
  })
  return windowProfile({
    name: 'streaming-100k',
    description: '100k readings, 50 devices, 10% up to 90 s late, 2% re-sent; tumbling 1 min, out-of-orderness 10 s, lateness 60 s',
    batches,
    specs: [tumbling(60_000)],
    outOfOrderness: OUT_OF_ORDERNESS,
    allowedLateness: ALLOWED_LATENESS,
    floorTarget: 0.4,
  })
}

if (isMain(import.meta.url)) await runProfileCli(define)
