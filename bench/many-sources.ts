/**
 * many-sources: a dashboard following a large fleet, an upload per room update. 10,000 devices
 * each read every 10 s; uploads arrive every 100 ms of processing time, each with the readings
 * of the 100 devices whose turn it is (a hundredth of the fleet), so a batch changes few of many
 * source clocks. 1% of the devices drop offline once, for 40–120 s, and go idle after 30 s (they
 * stop holding the watermark); on reconnect each uploads its backlog in one go, late. One-minute
 * tumbling windows, 5 s out-of-orderness, 2 min lateness, 50 rooms as keys.
 *
 * The question: does a batch cost what its events cost, or also a pass over every source? (The
 * engine's frontiers follow the clocks a batch changed; they used to visit all 10,000 per batch.)
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/many-sources.ts
 */
import { type StreamEvent, tumbling } from '@tidemark/engine'
import { seededRandom } from '@tidemark/seeded-random'
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { windowProfile } from './harness/windowProfile.ts'
import { isMain } from './measure.ts'

const SOURCES = 10_000
const PER_UPLOAD = 100
const UPLOADS = 1_000
const UPLOAD_MS = 100
const OUT_OF_ORDERNESS = 5_000
const ALLOWED_LATENESS = 120_000
const IDLE_TIMEOUT = 30_000

/** Upload `i` arrives at processing time i × 100 ms. */
const clock = (batch: number): number => batch * UPLOAD_MS

function manySourcesStream(): StreamEvent[][] {
  const random = seededRandom(10_000)
  const start = 1_700_000_000_000
  const uploads: StreamEvent[][] = Array.from({ length: UPLOADS }, () => [])
  const turns = SOURCES / PER_UPLOAD
  for (let s = 0; s < SOURCES; s++) {
    const offline = random() < 0.01
    const from = offline ? 100 + Math.floor(random() * 500) : UPLOADS
    const until = offline ? Math.min(UPLOADS - 1, from + 400 + Math.floor(random() * 800)) : UPLOADS
    const backlog: StreamEvent[] = []
    let seq = 0
    // Device s reads at uploads s mod 100, +100, +200, … (every 10 s).
    for (let u = s % turns; u < UPLOADS; u += turns) {
      seq++
      const event: StreamEvent = {
        id: `d${s}-${seq}`,
        source: `d${s}`,
        seq,
        ts: start + u * UPLOAD_MS + Math.floor(random() * UPLOAD_MS),
        key: `room-${s % 50}`,
        value: Math.round(random() * 1000) / 10,
      }
      if (u >= from && u < until) backlog.push(event)
      else (uploads[u] as StreamEvent[]).push(event)
    }
    if (backlog.length > 0) (uploads[until] as StreamEvent[]).push(...backlog)
  }
  return uploads
}

export function define(): ProfileDefinition {
  const batches = manySourcesStream()
  return windowProfile({
    name: 'many-sources',
    description: '100k readings, 10,000 devices every 10 s, uploads of 100 every 100 ms (a batch changes 1% of the clocks); 1% offline 40–120 s, idle after 30 s; tumbling 1 min, out-of-orderness 5 s, lateness 2 min',
    batches,
    specs: [tumbling(60_000)],
    outOfOrderness: OUT_OF_ORDERNESS,
    allowedLateness: ALLOWED_LATENESS,
    idleTimeout: IDLE_TIMEOUT,
    clock,
  })
}

if (isMain(import.meta.url)) await runProfileCli(define)
