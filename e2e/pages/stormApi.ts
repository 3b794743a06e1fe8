/**
 * What a storm page (`storm.html`) exposes to the storm driver as `window.storm`, and the
 * readings its devices produce. A reading is a pure function of the page's seed, its source
 * and its seq, so the driver recomputes every event a device reports as produced and derives
 * the ground truth without trusting any engine.
 */
import type { StreamEvent } from '@tidemark/engine'

/** Engine configuration every storm page shares (peers with another one are refused). */
export const STORM_WINDOW_MS = 1_000
export const STORM_LATENESS_MS = 2_000
/** Event time of seq 0; event `seq` of a device has ts `STORM_T0 + seq * STORM_TS_STEP` unless it is a straggler. */
export const STORM_T0 = 1_700_000_000_000
export const STORM_TS_STEP = 10
/** About one reading in this many is a straggler, up to 3 × (lateness + window) behind its seq's time. */
export const STORM_STRAGGLER_EVERY = 20

/** A 32-bit mix of `seed` and `seq` (a Murmur3 finalizer), the same in every browser and in Node. */
function mix(seed: number, seq: number): number {
  let h = (seed ^ Math.imul(seq, 0x9e3779b1)) >>> 0
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0
  return (h ^ (h >>> 16)) >>> 0
}

/**
 * Reading `seq` of `source` on a page opened with `seed`: always the same event, in the
 * page and in the driver. Which readings are stragglers depends on `seed` and `seq` only,
 * so a run's seed replays its readings whatever source names the pages claim.
 *
 * @example
 * stormReading(7, 'storm-device-ab12', 1) // { id: 'storm-device-ab12#1', seq: 1, ts: 1700000000010, key: 'k1', value: 2, ... }
 */
export function stormReading(seed: number, source: string, seq: number): StreamEvent {
  const h = mix(seed, seq)
  let ts = STORM_T0 + seq * STORM_TS_STEP
  if (h % STORM_STRAGGLER_EVERY === 0) ts -= (h >>> 8) % (3 * (STORM_LATENESS_MS + STORM_WINDOW_MS))
  return { id: `${source}#${seq}`, source, seq, ts, key: `k${seq % 4}`, value: (seq % 7) + 1 }
}

/** Durable batches of one device, as it reports them through the `stormReport` binding (several per call). */
export interface StormBatchReport {
  readonly source: string
  /** Seqs `from..to` (inclusive) were produced in this batch and are now durable. */
  readonly from: number
  readonly to: number
  readonly accepted: number
  readonly beyondLateness: number
  readonly duplicates: number
  readonly rejected: number
}

/** When the page saw the browser go offline or online (`Date.now()`, the driver's clock too). */
export interface StormTransition {
  readonly at: number
  readonly online: boolean
}

/** A websocket status change of the page's sync connection (y-websocket `status`: connecting, connected, disconnected). */
export interface StormStatusChange {
  readonly at: number
  readonly status: string
}

export interface StormSnapshot {
  readonly role: 'device' | 'dashboard'
  readonly source: string
  /** The page's `seed` (readings are `stormReading(seed, source, seq)`). */
  readonly seed: number
  /** Highest seq produced (ingested) and highest seq whose batch is durable, this page's life and earlier ones (recovered). */
  readonly produced: number
  readonly durable: number
  /** Receipt totals of this page's life (not of events recovered from the log). */
  readonly accepted: number
  readonly beyondLateness: number
  /** Events on this engine's late lane, and their ids. */
  readonly lateLane: number
  readonly lateIds: readonly string[]
  /** Sum of `count` over every window in `results()`: events counted, all sources. */
  readonly counted: number
  /** Canonical text of every window value (`window|key|start|count|sum`, sorted): equal on converged pages. */
  readonly digest: string
  readonly windows: number
  readonly syncState: string
  readonly online: boolean
  readonly invalidRemote: number
  readonly remoteAnomalies: readonly string[]
  readonly errors: readonly string[]
}

export interface StormPageApi {
  readonly source: string
  /** Starts ingesting `batch` readings every `everyMs` (devices only). */
  start(options: { batch: number; everyMs: number }): void
  /** Stops ingesting; resolves once every produced batch is durable and reported. */
  stop(): Promise<void>
  snapshot(): StormSnapshot
  /** Every offline/online event this page saw, oldest first. */
  transitions(): readonly StormTransition[]
  /** Every status change of the page's websocket connection, oldest first. */
  statusChanges(): readonly StormStatusChange[]
  /** Acts as a hostile peer: registers a fake replica under this page's configuration and writes `count` malformed entries into its log. */
  writeMalformed(count: number): void
  /** Acts as a hostile tab: posts `count` undecodable frames to the other tabs of its context (half bad framing, half a sync update that is not Yjs). */
  writeGarbageFrames(count: number): void
  close(): Promise<void>
}

declare global {
  interface Window {
    storm?: StormPageApi
    stormError?: string
    /** Exposed by the storm driver: durable batches, flushed a few times a second. */
    stormReport?: (reports: readonly StormBatchReport[]) => Promise<void>
  }
}
