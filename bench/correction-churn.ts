/**
 * correction-churn: repeated corrections in one engine. 120k readings from 10 devices, 40% of
 * them delivered up to ~100 s late, 1% re-sent, uploads of 200. Windows are 5 s tumbling with no
 * out-of-orderness allowance, so they fire as soon as every device has passed them, and 2 min of
 * allowed lateness, so almost every late reading corrects a window that already fired: dozens of
 * late readings per window, each upload that brings some re-emitting it as a correction (a few
 * times per window) before it turns final.
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/correction-churn.ts
 */
import { tumbling } from '@tidemark/engine'
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { windowProfile } from './harness/windowProfile.ts'
import { isMain } from './measure.ts'
import { deviceStream } from './workload.ts'

const OUT_OF_ORDERNESS = 0
const ALLOWED_LATENESS = 120_000

export function define(): ProfileDefinition {
  const batches = deviceStream({
    events: 120_000,
    sources: 10,
    lateShare: 0.4,
    duplicateShare: 0.01,
    spacing: 100,
    lateBy: 100_000,
    seed: 7,
    batchSize: 200,
  })
  return windowProfile({
    name: 'correction-churn',
    description: '120k readings, 10 devices, 40% up to ~100 s late, 1% re-sent; tumbling 5 s firing at once (out-of-orderness 0), lateness 2 min: most late readings correct a fired window',
    batches,
    specs: [tumbling(5_000)],
    outOfOrderness: OUT_OF_ORDERNESS,
    allowedLateness: ALLOWED_LATENESS,
  })
}

if (isMain(import.meta.url)) await runProfileCli(define)
