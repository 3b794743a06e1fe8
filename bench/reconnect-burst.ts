/**
 * reconnect-burst: fragmented backlogs from many sources. 400 devices read every second for
 * 500 s of event time; uploads arrive once per second of processing time with every online
 * device's live reading. 30% of the devices drop offline once, for 30–200 s; on reconnect each
 * uploads its backlog in fragments of 10–40 readings, shuffled and spread over the next 1–10
 * uploads, interleaved with live traffic, and 5% of fragments are sent twice (a retry).
 *
 * Offline devices go idle after 10 s (processing time) and stop holding the watermark, so their
 * backlogs land late: within the 2 min lateness as corrections, older than that on the late
 * lane. While a device catches up it holds the watermark again, and pending state grows.
 * One-minute tumbling windows, 5 s out-of-orderness, 20 zones as keys.
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/reconnect-burst.ts
 */
import { type StreamEvent, tumbling } from '@tidemark/engine'
import { seededRandom } from '@tidemark/seeded-random'
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { windowProfile } from './harness/windowProfile.ts'
import { isMain } from './measure.ts'
import { shuffle } from './workload.ts'

const SOURCES = 400
const TICKS = 500
const TICK_MS = 1_000
const OUT_OF_ORDERNESS = 5_000
const ALLOWED_LATENESS = 120_000
const IDLE_TIMEOUT = 10_000

/** Upload `i` arrives at processing time i × 1 s. */
const clock = (batch: number): number => batch * TICK_MS

function reconnectBurstStream(): StreamEvent[][] {
  const random = seededRandom(404)
  const start = 1_700_000_000_000
  const uploads: StreamEvent[][] = Array.from({ length: TICKS + 12 }, () => [])
  for (let s = 0; s < SOURCES; s++) {
    const offline = random() < 0.3
    const from = offline ? 50 + Math.floor(random() * 250) : TICKS
    const until = offline ? Math.min(TICKS - 1, from + 30 + Math.floor(random() * 171)) : TICKS
    const backlog: StreamEvent[] = []
    for (let t = 0; t < TICKS; t++) {
      const event: StreamEvent = {
        id: `d${s}-${t + 1}`,
        source: `d${s}`,
        seq: t + 1,
        ts: start + t * TICK_MS + Math.floor(random() * TICK_MS),
        key: `zone-${s % 20}`,
        value: Math.round(random() * 1000) / 10,
      }
      if (t >= from && t < until) backlog.push(event)
      else (uploads[t] as StreamEvent[]).push(event)
    }
    if (backlog.length === 0) continue
    const fragments: StreamEvent[][] = []
    for (let i = 0; i < backlog.length; ) {
      const size = 10 + Math.floor(random() * 31)
      fragments.push(backlog.slice(i, i + size))
      i += size
    }
    shuffle(fragments, random)
    for (const fragment of fragments) {
      const at = until + Math.floor(random() * 10)
      ;(uploads[at] as StreamEvent[]).push(...fragment)
      if (random() < 0.05) (uploads[at + 1 + Math.floor(random() * 2)] as StreamEvent[]).push(...fragment)
    }
  }
  return uploads
}

export function define(): ProfileDefinition {
  const batches = reconnectBurstStream()
  return windowProfile({
    name: 'reconnect-burst',
    description: '~200k readings, 400 devices, 30% offline 30–200 s then uploading shuffled 10–40-reading fragments (5% twice) amid live traffic; idle after 10 s; tumbling 1 min, out-of-orderness 5 s, lateness 2 min',
    batches,
    specs: [tumbling(60_000)],
    outOfOrderness: OUT_OF_ORDERNESS,
    allowedLateness: ALLOWED_LATENESS, idleTimeout: IDLE_TIMEOUT, clock,
  })
}

if (isMain(import.meta.url)) await runProfileCli(define)
