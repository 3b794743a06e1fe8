/** What a storm page (`storm.html`) exposes to the storm driver as `window.storm`. */

/** Engine configuration every storm page shares (peers with another one are refused). */
export const STORM_WINDOW_MS = 1_000
export const STORM_LATENESS_MS = 2_000
/** Event time of seq 0; event `seq` of a device has ts `STORM_T0 + seq * STORM_TS_STEP` unless it is a straggler. */
export const STORM_T0 = 1_700_000_000_000
export const STORM_TS_STEP = 10

/** One durable batch, as the device reports it through the `stormReport` binding. */
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

export interface StormSnapshot {
  readonly role: 'device' | 'dashboard'
  readonly source: string
  /** Highest seq produced (ingested) and highest seq whose batch is durable. */
  readonly produced: number
  readonly durable: number
  readonly accepted: number
  readonly beyondLateness: number
  /** Events on this engine's late lane, and their ids. */
  readonly lateLane: number
  readonly lateIds: readonly string[]
  /** Sum of `count` over every window in `results()`: events counted, all sources. */
  readonly counted: number
  /** Canonical text of every window value (window, key, start, count, sum): equal on converged pages. */
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
  /** Starts ingesting `batch` events every `everyMs`; one event in `stragglerEvery` is late by up to 3 × lateness. */
  start(options: { batch: number; everyMs: number; stragglerEvery: number; seed: number }): void
  /** Stops ingesting and resolves once every produced batch is durable. */
  stop(): Promise<void>
  snapshot(): StormSnapshot
  /** Acts as a hostile peer: registers a fake replica under this page's configuration and writes `count` malformed entries into its log. */
  writeMalformed(count: number): void
  close(): Promise<void>
}

declare global {
  interface Window {
    storm?: StormPageApi
    stormError?: string
    /** Exposed by the storm driver: one call per durable batch. */
    stormReport?: (report: StormBatchReport) => Promise<void>
  }
}
