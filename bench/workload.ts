import type { StreamEvent } from '@tidemark/engine'
import { seededRandom } from '@tidemark/seeded-random'

/** Event time of a fleet's first readings (Nov 2023), ms since epoch. */
const FLEET_START = 1_700_000_000_000

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
  for (let i = 0; i < o.events; i++) {
    const event = fleetReading(i, o, seqs, random, 0)
    if (random() < o.lateShare) held.push({ event, releaseAt: i + Math.ceil((o.lateBy / o.spacing) * o.sources * random()) })
    else delivered.push(event)
    if (random() < o.duplicateShare) delivered.push(event)
    while (held.length > 0 && (held[0] as { releaseAt: number }).releaseAt <= i) delivered.push((held.shift() as { event: StreamEvent }).event)
  }
  for (const h of held) delivered.push(h.event)
  return inBatches(delivered, o.batchSize)
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
  const all: StreamEvent[] = []
  for (let i = 0; i < o.events; i++) all.push(fleetReading(i, o, seqs, random, i % o.sources === 0 ? o.slowBehind : 0))
  const pushes = inBatches(all, o.push)
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

/**
 * Reading `i` of a fleet whose sources take turns: the next gap-free seq of source `i % sources`,
 * at a random time inside its `spacing` slot, `behind` ms earlier. Draws twice from `random`
 * (time, then value), so the workloads replay the same events from the same seed.
 */
function fleetReading(
  i: number,
  o: { readonly sources: number; readonly spacing: number },
  seqs: number[],
  random: () => number,
  behind: number,
): StreamEvent {
  const s = i % o.sources
  const seq = (seqs[s] ?? 0) + 1
  seqs[s] = seq
  const ts = FLEET_START + Math.floor(i / o.sources) * o.spacing + Math.floor(random() * o.spacing) - behind
  return { id: `d${s}-${seq}`, source: `d${s}`, seq, ts, key: `m${s % 5}`, value: Math.round(random() * 100) }
}

export interface MetricFleetOptions {
  readonly events: number
  readonly sources: number
  /** Metrics (series keys) each device reports in turn, every `spacing` ms. */
  readonly metrics: number
  readonly spacing: number
  /** Share of readings delivered late, up to `lateBy` ms after their time. */
  readonly lateShare: number
  readonly lateBy: number
  readonly seed: number
  readonly batchSize: number
}

/**
 * A fleet of multi-metric devices: every `spacing` ms each device reports each of its metrics
 * (keys `temp`, `humidity`, ...), one after another, with gap-free seqs; consecutive readings of a
 * device alternate keys. Keys are fleet-wide metrics: windows aggregate every device's reading of
 * a metric. Some readings are held back and delivered late. Returned as ingest batches.
 */
export function metricFleet(o: MetricFleetOptions): StreamEvent[][] {
  const random = seededRandom(o.seed)
  const names = ['temp', 'humidity', 'pressure', 'co2', 'noise', 'light']
  const seqs = new Array<number>(o.sources).fill(0)
  const delivered: StreamEvent[] = []
  const held: { event: StreamEvent; releaseAt: number }[] = []
  for (let i = 0; delivered.length + held.length < o.events; i++) {
    const s = i % o.sources
    const round = Math.floor(i / o.sources)
    for (let m = 0; m < o.metrics && delivered.length + held.length < o.events; m++) {
      const seq = (seqs[s] ?? 0) + 1
      seqs[s] = seq
      const ts = FLEET_START + round * o.spacing + Math.floor(random() * o.spacing)
      const event: StreamEvent = { id: `d${s}-${seq}`, source: `d${s}`, seq, ts, key: names[m % names.length] as string, value: Math.round(random() * 1000) / 10 }
      if (random() < o.lateShare) held.push({ event, releaseAt: delivered.length + Math.ceil((o.lateBy / o.spacing) * o.sources * o.metrics * random()) })
      else delivered.push(event)
      while (held.length > 0 && (held[0] as { releaseAt: number }).releaseAt <= delivered.length) delivered.push((held.shift() as { event: StreamEvent }).event)
    }
  }
  for (const h of held) delivered.push(h.event)
  return inBatches(delivered, o.batchSize)
}

export interface SessionFleetOptions {
  readonly events: number
  readonly sources: number
  /** Event-time spacing of a device's readings within a burst, ms. */
  readonly spacing: number
  /** Readings per burst: from 1 to this many. */
  readonly maxBurst: number
  /** Silence after a burst: from `gap` to `gap + maxSilence` ms (the session gap closes the session). */
  readonly gap: number
  readonly maxSilence: number
  /** Share of readings delivered late, one by one, up to `lateBy` ms after their time. */
  readonly lateShare: number
  /**
   * Share of bursts whose middle is held back: after the burst's first reading, a run of readings
   * spanning more than the gap is delivered as one block, up to `lateBy` ms after its last reading
   * (a device that buffered them). Until it arrives, the burst shows as two sessions; the block
   * merges them.
   */
  readonly heldRunShare: number
  readonly lateBy: number
  readonly seed: number
  readonly batchSize: number
}

/**
 * A fleet whose devices report in bursts (a trip, a shift, a user's visit): each device sends 1 to
 * `maxBurst` readings `spacing` ms apart, then falls silent for longer than the session gap. Each
 * device is its own key, so every burst is one session once all its readings arrived. Devices
 * interleave in event time; some readings are delivered late one by one (moving their session's
 * start or end), and some bursts' middles late as a block (merging two sessions). Returned as
 * ingest batches.
 */
export function sessionFleet(o: SessionFleetOptions): StreamEvent[][] {
  const random = seededRandom(o.seed)
  const next = Array.from({ length: o.sources }, () => FLEET_START + Math.floor(random() * o.gap))
  const left = Array.from({ length: o.sources }, () => 0)
  // Per device: readings of the current burst still delivered at once before a held run, the run's length still to hold, and the run held so far.
  const before = new Array<number>(o.sources).fill(0)
  const holding = new Array<number>(o.sources).fill(0)
  const runs = Array.from({ length: o.sources }, (): StreamEvent[] => [])
  const runLength = Math.floor(o.gap / o.spacing) + 1
  const startBurst = (s: number): void => {
    const length = 1 + Math.floor(random() * o.maxBurst)
    left[s] = length
    const held = length >= runLength + 2 && random() < o.heldRunShare
    before[s] = held ? 1 : 0
    holding[s] = held ? runLength : 0
  }
  for (let s = 0; s < o.sources; s++) startBurst(s)
  const seqs = new Array<number>(o.sources).fill(0)
  const delivered: StreamEvent[] = []
  const held: { event: StreamEvent; releaseAt: number }[] = []
  while (delivered.length + held.length + runs.reduce((n, run) => n + run.length, 0) < o.events) {
    // The device whose next reading comes first (a linear scan: the fleet is small).
    let s = 0
    for (let d = 1; d < o.sources; d++) if ((next[d] as number) < (next[s] as number)) s = d
    const ts = next[s] as number
    const seq = (seqs[s] ?? 0) + 1
    seqs[s] = seq
    const event: StreamEvent = { id: `d${s}-${seq}`, source: `d${s}`, seq, ts, key: `d${s}`, value: Math.round(random() * 1000) / 10 }
    const run = runs[s] as StreamEvent[]
    if ((before[s] as number) > 0) {
      before[s] = (before[s] as number) - 1
      delivered.push(event)
    } else if ((holding[s] as number) > 0) {
      run.push(event)
      holding[s] = (holding[s] as number) - 1
      if (holding[s] === 0) {
        // The held run is delivered as one block once the fleet passes its last reading plus up to `lateBy`.
        const releaseAt = ts + Math.ceil(o.lateBy * random())
        for (const e of run) held.push({ event: e, releaseAt })
        run.length = 0
      }
    } else if (random() < o.lateShare) held.push({ event, releaseAt: ts + Math.ceil(o.lateBy * random()) })
    else delivered.push(event)
    const remaining = (left[s] as number) - 1
    if (remaining > 0) {
      left[s] = remaining
      next[s] = ts + o.spacing
    } else {
      startBurst(s)
      next[s] = ts + o.gap + 1 + Math.floor(random() * o.maxSilence)
    }
    for (let h = 0; h < held.length; h++) {
      const due = held[h] as { event: StreamEvent; releaseAt: number }
      if (due.releaseAt > ts) continue
      delivered.push(due.event)
      held.splice(h--, 1)
    }
  }
  for (const h of held) delivered.push(h.event)
  for (const run of runs) delivered.push(...run)
  return inBatches(delivered, o.batchSize)
}

/** `items` cut into consecutive runs of `size` (the last may be shorter). */
function inBatches<T>(items: readonly T[], size: number): T[][] {
  const batches: T[][] = []
  for (let i = 0; i < items.length; i += size) batches.push(items.slice(i, i + size))
  return batches
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
