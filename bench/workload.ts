import type { StreamEvent } from '@tidemark/engine'

/** Small deterministic PRNG (mulberry32), so every profile replays the same events. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

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
  const random = prng(o.seed)
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
