import type { StreamEvent } from '@tidemark/engine'
import { seededRandom } from '@tidemark/seeded-random'

export interface DeviceStreamOptions {
  readonly events: number
  readonly sources: number
  /** Share of events delivered late (held back, then sent after newer ones). */
  readonly lateShare: number
  /** Share of events re-sent as exact duplicates. */
  readonly duplicateShare: number
  /** Event-time spacing per source, ms. */
  readonly spacing: number
  /** How far back a late event reaches, ms. */
  readonly lateBy: number
  readonly seed: number
  readonly batchSize: number
}

/**
 * A fleet's upload stream: each source emits readings with gap-free seqs and increasing
 * times; some are delivered late, some twice. Returned as ingest batches.
 */
export function deviceStream(o: DeviceStreamOptions): StreamEvent[][] {
  const random = seededRandom(o.seed)
  const seqs = new Array<number>(o.sources).fill(0)
  const delivered: StreamEvent[] = []
  const held: { event: StreamEvent; releaseAt: number }[] = []
  const start = 1_700_000_000_000
  for (let i = 0; i < o.events; i++) {
    const s = i % o.sources
    const seq = (seqs[s] ?? 0) + 1
    seqs[s] = seq
    const ts = start + Math.floor(i / o.sources) * o.spacing + Math.floor(random() * o.spacing)
    const event: StreamEvent = { id: `d${s}-${seq}`, source: `d${s}`, seq, ts, key: `m${s % 5}`, value: Math.round(random() * 100) }
    if (random() < o.lateShare) held.push({ event, releaseAt: i + Math.ceil((o.lateBy / o.spacing) * o.sources * random()) })
    else delivered.push(event)
    if (random() < o.duplicateShare) delivered.push(event)
    while (held.length > 0 && (held[0] as { releaseAt: number }).releaseAt <= i) delivered.push((held.shift() as { event: StreamEvent }).event)
  }
  for (const h of held) delivered.push(h.event)
  const batches: StreamEvent[][] = []
  for (let i = 0; i < delivered.length; i += o.batchSize) batches.push(delivered.slice(i, i + o.batchSize))
  return batches
}

export interface LaggingFleetOptions {
  readonly events: number
  readonly sources: number
  /** Events per push. */
  readonly push: number
  /** Event-time spacing between a source's readings, ms. */
  readonly spacing: number
  /** How far source 0 runs behind the others in event time, ms: it holds the watermark back. */
  readonly slowBehind: number
  /** Share of events delivered 1–20 pushes late. */
  readonly delayedShare: number
  readonly seed: number
}

/**
 * A fleet whose slowest device lags: every source emits gap-free seqs every `spacing` ms, source 0
 * `slowBehind` ms behind the rest, so a min-over-sources watermark keeps most events waiting.
 * Pushes are shuffled internally and a share of events arrives 1–20 pushes late.
 */
export function laggingFleet(o: LaggingFleetOptions): StreamEvent[][] {
  const random = seededRandom(o.seed)
  const seqs = new Array<number>(o.sources).fill(0)
  const start = 1_700_000_000_000
  const all: StreamEvent[] = []
  for (let i = 0; i < o.events; i++) {
    const s = i % o.sources
    const seq = (seqs[s] ?? 0) + 1
    seqs[s] = seq
    const ts = start + Math.floor(i / o.sources) * o.spacing + Math.floor(random() * o.spacing) - (s === 0 ? o.slowBehind : 0)
    all.push({ id: `d${s}-${seq}`, source: `d${s}`, seq, ts, key: `m${s % 5}`, value: Math.round(random() * 100) })
  }
  const pushes: StreamEvent[][] = []
  for (let i = 0; i < all.length; i += o.push) pushes.push(all.slice(i, i + o.push))
  for (const push of pushes) shuffle(push, random)
  for (let p = 0; p < pushes.length; p++) {
    const push = pushes[p] as StreamEvent[]
    for (let i = push.length - 1; i >= 0; i--) {
      if (random() >= o.delayedShare) continue
      const to = pushes[Math.min(pushes.length - 1, p + 1 + Math.floor(random() * 20))] as StreamEvent[]
      to.push(...push.splice(i, 1))
    }
  }
  return pushes
}

/** Fisher–Yates in place. */
export function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    const t = items[i] as T
    items[i] = items[j] as T
    items[j] = t
  }
}

export function eventCount(batches: readonly (readonly unknown[])[]): number {
  let n = 0
  for (const b of batches) n += b.length
  return n
}
