/**
 * streaming-100k: 100k events, 50 sources, ~10% late, 2% duplicates, tumbling 1 minute.
 * Prints engine events/s beside a plain loop that only sums per window (the floor).
 *
 *   node --import tsx --conditions=@tidemark/source bench/streaming-100k.ts
 */
import { boundedOutOfOrderness, createEngine, type StreamEvent, tumbling } from '@tidemark/engine'
import { isMain, perSecond, timeRuns } from './measure.ts'
import { deviceStream } from './workload.ts'

const WINDOW = 60_000

export function run() {
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
  const total = batches.reduce((n, b) => n + b.length, 0)

  let plainWindows = 0
  const plain = timeRuns(() => {
    const sums = new Map<number, number>()
    for (const batch of batches) {
      for (let i = 0; i < batch.length; i++) {
        const e = batch[i] as StreamEvent
        const start = e.ts - (e.ts % WINDOW)
        sums.set(start, (sums.get(start) ?? 0) + e.value)
      }
    }
    plainWindows = sums.size
  })

  let receiptTotals = { accepted: 0, late: 0, duplicates: 0, beyondLateness: 0, rejected: 0 }
  let windows = 0
  const engineRun = timeRuns(() => {
    const engine = createEngine({
      windows: tumbling(WINDOW),
      watermark: boundedOutOfOrderness(10_000),
      allowedLateness: 60_000,
      now: () => 0,
    })
    const totals = { accepted: 0, late: 0, duplicates: 0, beyondLateness: 0, rejected: 0 }
    for (const batch of batches) {
      const r = engine.ingest(batch)
      totals.accepted += r.accepted
      totals.late += r.late
      totals.duplicates += r.duplicates
      totals.beyondLateness += r.beyondLateness
      totals.rejected += r.rejected
    }
    windows = engine.stats().openWindows
    receiptTotals = totals
  })

  const figures = {
    profile: 'streaming-100k',
    events: total,
    engineEventsPerSec: perSecond(total, engineRun.medianMs),
    plainLoopEventsPerSec: perSecond(total, plain.medianMs),
    ratio: Number((plain.medianMs / engineRun.medianMs).toFixed(3)),
    engineMs: engineRun,
    plainMs: plain,
    receipts: receiptTotals,
    windows,
    plainWindows,
  }
  return figures
}

if (isMain(import.meta.url)) {
  const f = run()
  console.log(JSON.stringify(f, null, 2))
  console.log(
    `streaming-100k: engine ${f.engineEventsPerSec.toLocaleString('en')} ev/s, plain loop ${f.plainLoopEventsPerSec.toLocaleString('en')} ev/s, engine/plain = ${(f.ratio * 100).toFixed(1)}%`,
  )
}
