/**
 * sessions-100k: session windows. 100k readings from 200 devices that report in bursts (1–40
 * readings 2 s apart, then 30–330 s of silence), each device its own key, so every burst is one
 * session of a 30 s gap once all its readings arrived. Uploads of 500, each ingested when its
 * latest reading was taken. Late readings: 2% one by one, up to 5 min after their time (they move
 * a session's start or end, or correct a fired one), and in a tenth of the bursts long enough,
 * the run after the first reading, spanning more than the gap, held back as a block for up to
 * 5 min (a device that buffered it): until it arrives the burst shows as two sessions, which it
 * then merges. Out-of-orderness 10 s, idle timeout 1 min (a silent device stops holding the
 * watermark), lateness 10 min: every reading is admitted, so the floor's sessions are the
 * engine's (start, end, count and sum are checked every run).
 *
 * - tidemark: the engine with `session(30_000)`: each batch placed in event order, one cell per
 *   source and session, a provisional result per changed session, the on-time result at the
 *   watermark, corrections, and retractions when a reading merges sessions or moves a start.
 * - plain-loop: the floor: per key an array of sessions in start order, each reading joining or
 *   merging the sessions it reaches; no dedup, watermark, lateness or emission.
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/sessions-100k.ts
 */
import { boundedOutOfOrderness, session } from '@tidemark/engine'
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { isMain } from './measure.ts'
import { plainSessionLoopContender } from './peers/plainSessionLoop.ts'
import { PROCESSING_START, tidemarkContender } from './peers/tidemark.ts'
import { eventCount, sessionFleet } from './workload.ts'

const GAP = 30_000
const MINUTE = 60_000

export function define(): ProfileDefinition {
  const batches = sessionFleet({ events: 100_000, sources: 200, spacing: 2_000, maxBurst: 40, gap: GAP, maxSilence: 300_000, lateShare: 0.02, heldRunShare: 0.1, lateBy: 5 * MINUTE, seed: 30, batchSize: 500 })
  const spec = session(GAP)
  // Processing time runs with the fleet: a batch is ingested when its latest reading was taken.
  const arrived = batches.map((batch) => batch.reduce((latest, e) => Math.max(latest, e.ts), PROCESSING_START))
  return {
    name: 'sessions-100k',
    description: '100k readings, 200 devices in bursts (1–40 readings 2 s apart, then 30–330 s silent), 2% up to 5 min late, a tenth of the bursts of 18 readings or more split by a held-back block that later merges them; sessions of a 30 s gap per device, out-of-orderness 10 s, idle timeout 1 min, lateness 10 min',
    events: eventCount(batches),
    batches: batches.length,
    contenders: [
      tidemarkContender(batches, { windows: [spec], watermark: boundedOutOfOrderness(10_000), allowedLateness: 10 * MINUTE, idleTimeout: MINUTE }, { clock: (batch) => (arrived[batch] as number) - PROCESSING_START }),
      plainSessionLoopContender(batches, spec.id, GAP),
    ],
    ratios: [
      {
        name: 'engine/floor',
        label: 'Tidemark throughput as a share of the session plain-loop floor',
        subject: 'tidemark',
        reference: 'plain-loop',
        format: 'percent',
      },
    ],
    agree: [['tidemark', 'plain-loop']],
  }
}

if (isMain(import.meta.url)) await runProfileCli(define)
