/**
 * The contract between a storm page (the app, in the browser) and the storm driver (Node,
 * Playwright): what the page exposes, what it reports, and the three globals through which
 * they meet. The page side (`@tidemark/storm/page`) implements it; the driver
 * (`@tidemark/storm`) only reads it.
 */

/**
 * A device ingests its own readings; a dashboard only shows what it syncs.
 *
 * @example
 * if (session.query.role === 'device') claimPrefix = 'storm-device'
 */
export type StormRole = 'device' | 'dashboard'

/**
 * How fast a device ingests: `batch` readings every `everyMs` (0: as fast as the page allows, one batch per task).
 *
 * @example
 * await startIngest(device.page, { batch: 20, everyMs: 200 } satisfies StormIngest)
 */
export interface StormIngest {
  readonly batch: number
  readonly everyMs: number
}

/**
 * Durable batches of one device, as it reports them through the driver's binding (several per
 * call): the batch's seq range and its ingest receipt.
 *
 * @example
 * const report: StormBatchReport = { source: 'device-a1', from: 1, to: 20, accepted: 20, beyondLateness: 0, duplicates: 0, rejected: 0 }
 */
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

/**
 * When the page saw the browser go offline or online (`Date.now()`: the driver's clock too,
 * since both run on one machine).
 *
 * @example
 * const seen: StormTransition = { at: 1764410000123, online: false }
 */
export interface StormTransition {
  readonly at: number
  readonly online: boolean
}

/**
 * A status change of the page's sync connection, as the app reports it (for a Tidemark sync
 * status: `connecting`, `connected`, `offline`, or a refusal).
 *
 * @example
 * const change: StormStatusChange = { at: 1764410000456, status: 'connected' }
 */
export interface StormStatusChange {
  readonly at: number
  readonly status: string
}

/**
 * What a page shows at one moment: its counters, its window values as a canonical digest
 * (`windowDigest`), its late lane, its sync state and every error the app reported.
 *
 * @example
 * const snapshot = await snapshotOf(page)
 * expect(snapshot.digest).toBe(truth.digest)
 */
export interface StormSnapshot {
  readonly role: StormRole
  readonly source: string
  /** The page's `seed` (its readings are `reading(seed, source, seq)`). */
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
  /** The window spec that refused each of `lateIds` (an event is on the lane once per spec that refused it). */
  readonly lateWindows: readonly string[]
  /** Late-lane entries the engine dropped by its bound (`limits.maxLateEvents`). */
  readonly lateLaneTrimmed: number
  /** Sum of `count` over every window in `results()`: events counted, all sources. */
  readonly counted: number
  /** Canonical text of every window value (`window|key|start|count|sum`, sorted): equal on converged pages. */
  readonly digest: string
  readonly windows: number
  /** The engine's `syncStatus().state`. */
  readonly syncState: string
  /** The engine's `syncStatus().pendingLocalUpdates`: local updates the sync server has not acknowledged. */
  readonly pendingLocalUpdates: number
  /** The engine's `syncStatus().refusal`: why the sync server refused this page, or null. */
  readonly refusal: string | null
  /** `navigator.onLine` as the page sees it. */
  readonly online: boolean
  /** `invalid_remote_cell` anomalies: peers' entries this engine refused. */
  readonly invalidRemote: number
  /** The engine's last (up to 20) remote anomalies, with details. */
  readonly remoteAnomalies: readonly string[]
  /** Every error the app or the page side reported (replication, durability, reports), oldest first. */
  readonly errors: readonly string[]
}

/**
 * What a ready storm page exposes to the driver (as `tidemarkStorm` on its global object).
 *
 * @example
 * const api = session.ready({ engine, source })
 * api.start({ batch: 20, everyMs: 200 })
 * await api.stop()
 * api.snapshot().produced // 20 × batches ingested
 */
export interface StormPageApi {
  readonly source: string
  readonly role: StormRole
  /** Starts ingesting (devices only; a dashboard ignores it, and so does a device already ingesting). */
  start(ingest: StormIngest): void
  /** Stops ingesting; resolves once every produced batch is durable and reported. */
  stop(): Promise<void>
  /** What the page shows and has produced, now: its window digest, late lane, counts and sync status. */
  snapshot(): StormSnapshot
  /** Every offline/online event this page saw since it began, oldest first. */
  transitions(): readonly StormTransition[]
  /** Every status change of the page's sync connection the app reported, oldest first. */
  statusChanges(): readonly StormStatusChange[]
  /** Runs a command the app registered (`commands`), e.g. a hostile write; rejects naming the known ones when there is no such command. */
  command(name: string, argument?: unknown): Promise<unknown>
  /** Stops ingesting, sends the last reports and closes the app (its `close`). */
  close(): Promise<void>
}

/**
 * The globals through which a storm page and the driver meet, on the page's global object.
 * The page side sets `tidemarkStorm` (or `tidemarkStormError`); the driver exposes
 * `tidemarkStormReport` (a Playwright binding) on every context before its pages load.
 *
 * @example
 * const source = await page.evaluate(() => (globalThis as StormGlobals).tidemarkStorm?.source)
 */
export interface StormGlobals {
  tidemarkStorm?: StormPageApi
  /** Why the page failed to become ready (`Name: message`). */
  tidemarkStormError?: string
  /** Durable batches, a few times a second; resolves once the driver recorded them. */
  tidemarkStormReport?: (reports: readonly StormBatchReport[]) => Promise<void>
}

/**
 * The name of the driver's report binding (`StormGlobals.tidemarkStormReport`).
 *
 * @example
 * await context.exposeBinding(STORM_REPORT_BINDING, (_source, reports) => ledger.record(reports))
 */
export const STORM_REPORT_BINDING = 'tidemarkStormReport' satisfies keyof StormGlobals
