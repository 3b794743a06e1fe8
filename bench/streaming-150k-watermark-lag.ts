/**
 * streaming-150k-watermark-lag: the ordered stream under a lagging watermark. 150k events from
 * 20 sources; one source runs ~250 s of event time behind the others, so the watermark
 * (bounded out-of-orderness, min over sources) holds most events pending across ~1,500
 * flushes. Pushes of 100 events, shuffled, 2% delivered a few pushes late, `flushReady()` after
 * every push.
 *
 * Beside it, in the same run, a naive baseline that differs only in the pending structure: the
 * same validation, dedup and watermark (shared SourceClock / Frontiers), but an array that is
 * sorted whole on every flush. Both must emit the same sequence; the run checks it.
 *
 *   node --import tsx --conditions=@tidemark/source bench/streaming-150k-watermark-lag.ts
 */
import type { StreamEvent } from '@tidemark/engine'
import {
  boundedOutOfOrderness,
  compareEventOrder,
  createOrderedStream,
  invalidReason,
  type OrderedStreamStats,
} from '@tidemark/engine'
// The naive baseline reuses the engine's watermark bookkeeping, which is internal.
import { Frontiers } from '../packages/engine/src/frontiers.ts'
import { isMain, perSecond, timeRuns } from './measure.ts'
import { prng } from './workload.ts'

const EVENTS = 150_000
const SOURCES = 20
const PUSH = 100
const SPACING = 100
const SLOW_BEHIND = 250_000
const OUT_OF_ORDERNESS = 2_000
const ALLOWED_LATENESS = 5_000
const BATCH_SIZE = 256

/** Pushes of 100: every source emits gap-free seqs every ~100 ms; source 0 lags ~250 s behind. */
function workload(): StreamEvent[][] {
  const random = prng(150)
  const seqs = new Array<number>(SOURCES).fill(0)
  const start = 1_700_000_000_000
  const all: StreamEvent[] = []
  for (let i = 0; i < EVENTS; i++) {
    const s = i % SOURCES
    const seq = (seqs[s] ?? 0) + 1
    seqs[s] = seq
    const ts = start + Math.floor(i / SOURCES) * SPACING + Math.floor(random() * SPACING) - (s === 0 ? SLOW_BEHIND : 0)
    all.push({ id: `d${s}-${seq}`, source: `d${s}`, seq, ts, key: `m${s % 5}`, value: Math.round(random() * 100) })
  }
  const pushes: StreamEvent[][] = []
  for (let i = 0; i < all.length; i += PUSH) pushes.push(all.slice(i, i + PUSH))
  for (const push of pushes) {
    for (let i = push.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1))
      const t = push[i] as StreamEvent
      push[i] = push[j] as StreamEvent
      push[j] = t
    }
  }
  // 2% delivered 1–20 pushes later.
  for (let p = 0; p < pushes.length; p++) {
    const push = pushes[p] as StreamEvent[]
    for (let i = push.length - 1; i >= 0; i--) {
      if (random() >= 0.02) continue
      const to = pushes[Math.min(pushes.length - 1, p + 1 + Math.floor(random() * 20))] as StreamEvent[]
      to.push(...push.splice(i, 1))
    }
  }
  return pushes
}

interface Outcome {
  readonly emitted: number
  readonly corrections: number
  readonly flushes: number
  readonly peakPending: number
  /** Order-sensitive hash of everything emitted, to check both runs agree. */
  readonly checksum: number
}

function hashId(h: number, id: string): number {
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619)
  return h >>> 0
}

function runStream(pushes: readonly StreamEvent[][]): Outcome & { stats: OrderedStreamStats } {
  const stream = createOrderedStream({
    watermark: boundedOutOfOrderness(OUT_OF_ORDERNESS),
    allowedLateness: ALLOWED_LATENESS,
    batchSize: BATCH_SIZE,
    now: () => 0,
  })
  let emitted = 0
  let corrections = 0
  let checksum = 2166136261
  for (const push of pushes) {
    stream.push(push)
    for (const batch of stream.flushReady()) {
      for (const e of batch.events) checksum = hashId(checksum, e.id)
      if (batch.kind === 'ready') emitted += batch.events.length
      else corrections += batch.events.length
    }
  }
  const stats = stream.stats()
  return { emitted, corrections, flushes: stats.flushes, peakPending: stats.peakPending, checksum, stats }
}

/** The same stream semantics with the pending buffer as one array, sorted whole on every flush. */
function runNaive(pushes: readonly StreamEvent[][]): Outcome {
  const frontiers = new Frontiers(boundedOutOfOrderness(OUT_OF_ORDERNESS), Number.POSITIVE_INFINITY)
  let pending: StreamEvent[] = []
  let late: StreamEvent[] = []
  let emitted = 0
  let corrections = 0
  let flushes = 0
  let peakPending = 0
  let checksum = 2166136261
  for (const push of pushes) {
    const W = frontiers.watermark
    for (const event of push) {
      if (invalidReason(event) !== null) continue
      const clock = frontiers.source(event.source, 0)
      if (clock.seen(event.seq, event.id)) continue
      if (event.ts >= W) pending.push({ ...event })
      else if (event.ts >= W - ALLOWED_LATENESS) late.push({ ...event })
      clock.remember(event.seq, event.id, event.ts, 0)
    }
    frontiers.advance(0)
    peakPending = Math.max(peakPending, pending.length + late.length)
    flushes++
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
  }
  return { emitted, corrections, flushes, peakPending, checksum }
}

export function run() {
  const pushes = workload()
  const total = pushes.reduce((n, p) => n + p.length, 0)
  let streamed: ReturnType<typeof runStream> | undefined
  const streamMs = timeRuns(() => {
    streamed = runStream(pushes)
  }, 5, 2)
  let naive: Outcome | undefined
  // One run: it takes seconds, and JIT warm-up is noise next to 1,500 whole-buffer sorts.
  const naiveMs = timeRuns(() => {
    naive = runNaive(pushes)
  }, 1, 0)
  const s = streamed as ReturnType<typeof runStream>
  const n = naive as Outcome
  if (s.checksum !== n.checksum || s.emitted !== n.emitted || s.corrections !== n.corrections) {
    throw new Error(`ordered stream and naive baseline disagree: ${JSON.stringify({ stream: s, naive: n })}`)
  }
  const stats = s.stats
  return {
    profile: 'streaming-150k-watermark-lag',
    events: total,
    eventsPerSec: perSecond(total, streamMs.medianMs),
    naiveEventsPerSec: perSecond(total, naiveMs.medianMs),
    /** Naive time over ordered-stream time: how many times faster the heap is. */
    ratio: Number((naiveMs.medianMs / streamMs.medianMs).toFixed(2)),
    streamMs,
    naiveMs,
    flushes: s.flushes,
    peakPending: s.peakPending,
    emittedReady: s.emitted,
    emittedCorrections: s.corrections,
    beyondLateness: stats.beyondLateness,
    batches: stats.readyBatches + stats.correctionBatches,
    batchFragmentation: Number(stats.batchFragmentation.toFixed(3)),
    compactions: stats.compactions,
    flushWorkPerEmitted: Number(((stats.work.flushComparisons + stats.work.flushMoves) / (s.emitted + s.corrections)).toFixed(1)),
    pushWorkPerEvent: Number(((stats.work.pushComparisons + stats.work.pushMoves) / total).toFixed(1)),
  }
}

if (isMain(import.meta.url)) {
  const f = run()
  console.log(JSON.stringify(f, null, 2))
  console.log(
    `streaming-150k-watermark-lag: ordered stream ${f.eventsPerSec.toLocaleString('en')} ev/s, naive sort-per-flush ${f.naiveEventsPerSec.toLocaleString('en')} ev/s, ${f.ratio}x; ${f.flushes} flushes, peak pending ${f.peakPending.toLocaleString('en')}`,
  )
}
