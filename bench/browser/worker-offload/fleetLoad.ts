/**
 * The load of the worker-offload bench, the same wherever the engine runs: simulated devices
 * whose readings arrive every 100 ms (one message for the whole fleet, as a socket would bring
 * them), and a fill of a fleet's last minute for the memory figures.
 */
import { boundedOutOfOrderness, type EngineOptions, manual, type StreamEvent, tumbling } from '@tidemark/engine'

/** The engine every scenario runs: 1 s tumbling windows, 10 s retention. */
export const BENCH_ENGINE: EngineOptions = { windows: tumbling(1_000), watermark: boundedOutOfOrderness(500), retention: 10_000 }

/** The engine of the memory fill: a minute of windows stays live. */
export const FILL_ENGINE: EngineOptions = { windows: tumbling(1_000), watermark: boundedOutOfOrderness(500), retention: 120_000 }

/**
 * The engine of the 10^6-event run: every window stays live, none final (a manual watermark that
 * never moves, retention without end), 50 keys × 1,000 windows at the end, as in the measurement
 * the worker was designed from.
 */
export const MILLION_ENGINE: EngineOptions = { windows: tumbling(1_000), watermark: manual(), retention: Number.MAX_SAFE_INTEGER }

/** The engine options of `scenario`. */
export function scenarioEngine(scenario: string): EngineOptions {
  return scenario === 'fill' ? FILL_ENGINE : scenario === 'million' ? MILLION_ENGINE : BENCH_ENGINE
}

/** The name the bench's pages and host agree on. */
export const BENCH_NAME = 'bench'

/** What a simulation is asked to do. */
export interface Simulation {
  /** Devices, each its own source and key. */
  readonly devices: number
  /** Readings per device per second. */
  readonly rate: number
  readonly seconds: number
}

/** Every device's readings of one 100 ms message, at processing time `now`. */
export function fleetMessage(devices: number, perMessage: number, now: number, seqs: number[]): StreamEvent[] {
  const events: StreamEvent[] = []
  for (let d = 0; d < devices; d++) {
    for (let k = 0; k < perMessage; k++) {
      const seq = (seqs[d] ?? 0) + 1
      seqs[d] = seq
      events.push({ id: `dev${d}#${seq}`, source: `dev${d}`, seq, ts: now - ((seq * 7919) % 300), key: `dev${d}`, value: (seq * 31) % 97 })
    }
  }
  return events
}

/** Ingests the fleet's messages every 100 ms for `seconds`; resolves with the events sent. */
export function simulate(ingest: (events: StreamEvent[]) => void, simulation: Simulation): Promise<number> {
  const perMessage = Math.round(simulation.rate / 10)
  const seqs: number[] = []
  let sent = 0
  const end = Date.now() + simulation.seconds * 1_000
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      if (Date.now() >= end) {
        clearInterval(timer)
        resolve(sent)
        return
      }
      const events = fleetMessage(simulation.devices, perMessage, Date.now(), seqs)
      sent += events.length
      if (events.length > 0) ingest(events)
    }, 100)
  })
}

/** A minute of a fleet's readings (`devices` × 10 per second), ingested in batches of 10,000: the memory fill. */
export function fill(ingest: (events: StreamEvent[]) => void, devices: number): number {
  const t0 = 1_700_000_000_000
  let batch: StreamEvent[] = []
  let total = 0
  for (let tenth = 0; tenth < 600; tenth++) {
    for (let d = 0; d < devices; d++) {
      const seq = tenth + 1
      batch.push({ id: `dev${d}#${seq}`, source: `dev${d}`, seq, ts: t0 + tenth * 100, key: `dev${d}`, value: (seq * 31) % 97 })
    }
    if (batch.length >= 10_000) {
      ingest(batch)
      total += batch.length
      batch = []
    }
  }
  if (batch.length > 0) ingest(batch)
  return total + batch.length
}

/** 10^6 events (or `total`) in batches of `size`, made lazily so only one batch is alive at a time. */
export function* millionBatches(total: number, size: number): Generator<StreamEvent[]> {
  for (let start = 0; start < total; start += size) {
    const batch: StreamEvent[] = new Array(Math.min(size, total - start))
    for (let i = 0; i < batch.length; i++) {
      const n = start + i
      batch[i] = { id: `m${n}`, source: `s${n % 20}`, seq: Math.floor(n / 20) + 1, ts: 1_700_000_000_000 + n, key: `k${n % 50}`, value: n % 97 }
    }
    yield batch
  }
}

/**
 * Feeds `batches` to `ingest`, as the 10^6-event run does: an ingest that answers with a promise
 * (a worker's, or the control's) has up to `inFlight` batches in flight, its answers holding the
 * rest back; one that answers at once (the page engine) gets one batch per task, `nextTask`
 * awaited after each, as batches from a socket would come. Resolves with the events fed.
 *
 * @example
 * await feedBatches(millionBatches(1_000_000, 10_000), (batch) => remote.ingest(batch), () => new Promise((resolve) => setTimeout(resolve, 0)))
 */
export async function feedBatches(
  batches: Iterable<StreamEvent[]>,
  ingest: (batch: StreamEvent[]) => Promise<unknown> | undefined,
  nextTask: () => Promise<unknown>,
  inFlight = 4,
): Promise<number> {
  let events = 0
  const pending: Promise<unknown>[] = []
  for (const batch of batches) {
    events += batch.length
    const answer = ingest(batch)
    if (answer !== undefined) {
      pending.push(answer)
      if (pending.length >= inFlight) await pending.shift()
    } else {
      await nextTask()
    }
  }
  await Promise.all(pending)
  return events
}
