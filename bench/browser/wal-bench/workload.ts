import { type StreamEvent, tumbling } from '@tidemark/engine'

/** The engine configuration every WAL bench uses: one-minute windows, the engine's defaults otherwise. */
export const benchWindows = tumbling(60_000)

const SOURCES = 10
const KEYS = 8
const BASE_TS = 1_700_000_000_000

/**
 * `count` readings in batches of `batchSize`: 10 devices taking turns, each reading 100 ms
 * after its previous one, in seq order, over 8 series keys. Plain objects, as an app would
 * hand them to `ingest`.
 */
export function readingBatches(count: number, batchSize: number): StreamEvent[][] {
  const batches: StreamEvent[][] = []
  for (let at = 0; at < count; at += batchSize) {
    const batch: StreamEvent[] = []
    for (let i = at; i < Math.min(count, at + batchSize); i++) {
      const source = `device-${i % SOURCES}`
      const seq = Math.floor(i / SOURCES) + 1
      batch.push({ id: `${source}#${seq}`, source, seq, ts: BASE_TS + seq * 100, key: `metric-${(i * 7) % KEYS}`, value: (i % 1000) / 10 })
    }
    batches.push(batch)
  }
  return batches
}

/**
 * `readingBatches`, but every `lateEvery`-th reading is a late one: the device's next seq
 * with the stream's first timestamp, beyond lateness once the first window closed. Those land
 * on the late lane (bounded, trimmed), which the log's checkpoints keep in their own store.
 */
export function lateReadingBatches(count: number, batchSize: number, lateEvery = 10): StreamEvent[][] {
  return readingBatches(count, batchSize).map((batch, b) =>
    batch.map((event, i) => ((b * batchSize + i) % lateEvery === lateEvery - 1 ? { ...event, ts: BASE_TS } : event)),
  )
}
