/**
 * anomaly-heavy: 30% of the input is bad. 100k inputs: ~70k readings from 50 devices (10% up to
 * 60 s late) plus ~15% invalid (NaN or infinite ts, non-finite or non-number value, empty id,
 * missing source, seq 0 or fractional, numeric key) and ~15% duplicates (re-sends of recent
 * readings, some with a new id but the same seq), in uploads of ~700. One-minute tumbling
 * windows, 10 s out-of-orderness, 60 s lateness. Every bad input costs Tidemark an anomaly record
 * with a reason and detail; RxJS filters and `distinct`s them away.
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/anomaly-heavy.ts
 */
import { type StreamEvent, tumbling } from '@tidemark/engine'
import { seededRandom } from '@tidemark/seeded-random'
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { windowProfile } from './harness/windowProfile.ts'
import { isMain } from './measure.ts'
import { deviceStream } from './workload.ts'

const OUT_OF_ORDERNESS = 10_000
const ALLOWED_LATENESS = 60_000
/** Chance, per good reading, of inserting an invalid input and, separately, a duplicate: 0.15 / 0.7 each. */
const INSERT = 0.15 / 0.7

/** Ways an input can be invalid (docs/semantics.md, Events); cast because the point is that they break the type. */
const INVALID: readonly ((e: StreamEvent, n: number) => StreamEvent)[] = [
  (e, n) => ({ ...e, id: `bad-ts-${n}`, ts: Number.NaN }),
  (e, n) => ({ ...e, id: `inf-ts-${n}`, ts: Number.POSITIVE_INFINITY }),
  (e, n) => ({ ...e, id: `bad-value-${n}`, value: Number.NaN }),
  (e, n) => ({ ...e, id: `str-value-${n}`, value: '42' as unknown as number }),
  (e) => ({ ...e, id: '' }),
  (e, n) => ({ id: `no-source-${n}`, ts: e.ts, value: e.value }) as unknown as StreamEvent,
  (e, n) => ({ ...e, id: `seq0-${n}`, seq: 0 }),
  (e, n) => ({ ...e, id: `seq-frac-${n}`, seq: 1.5 }),
  (e, n) => ({ ...e, id: `num-key-${n}`, key: 7 as unknown as string }),
]

function anomalyHeavyStream(): StreamEvent[][] {
  const base = deviceStream({
    events: 70_000,
    sources: 50,
    lateShare: 0.1,
    duplicateShare: 0,
    spacing: 1_000,
    lateBy: 60_000,
    seed: 30,
    batchSize: 500,
  })
  const random = seededRandom(31)
  const recent: StreamEvent[] = []
  let n = 0
  return base.map((batch) => {
    const out: StreamEvent[] = []
    for (const event of batch) {
      out.push(event)
      recent.push(event)
      if (recent.length > 2_000) recent.shift()
      if (random() < INSERT) {
        const make = INVALID[Math.floor(random() * INVALID.length)] as (e: StreamEvent, n: number) => StreamEvent
        out.push(make(event, n++))
      }
      if (random() < INSERT) {
        const original = recent[Math.floor(random() * recent.length)] as StreamEvent
        // Half exact re-sends, half a new id for the same (source, seq): both count once.
        out.push(random() < 0.5 ? original : { ...original, id: `${original.id}-retry` })
      }
    }
    return out
  })
}

export function define(): ProfileDefinition {
  const batches = anomalyHeavyStream()
  return windowProfile({
    name: 'anomaly-heavy',
    description: '~100k inputs: 70% readings (50 devices, 10% up to 60 s late), 15% invalid of 9 kinds, 15% duplicates; tumbling 1 min, out-of-orderness 10 s, lateness 60 s',
    batches,
    specs: [tumbling(60_000)],
    outOfOrderness: OUT_OF_ORDERNESS,
    allowedLateness: ALLOWED_LATENESS,
  })
}

if (isMain(import.meta.url)) await runProfileCli(define)
