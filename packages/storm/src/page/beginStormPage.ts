/**
 * The page side of a storm: what an app's page calls so the driver can run it. The page calls
 * `beginStormPage()` first thing (it starts recording offline/online events and reads the
 * query the driver sent), opens its engine and sync however the app does, then hands the
 * engine over with `ready(...)`, which publishes the `StormPageApi` as `tidemarkStorm`.
 */
import type { StormGlobals, StormPageApi, StormSnapshot, StormStatusChange, StormTransition } from '../contract/stormPageApi.ts'
import { parseStormQuery, type StormQuery } from '../contract/stormQuery.ts'
import { type StormReading, stormReading } from '../contract/stormReading.ts'
import { windowDigest } from '../contract/windowDigest.ts'
import { DeviceIngest, type StormEngine } from './deviceIngest.ts'
import { ReportQueue } from './reportQueue.ts'
import { browserEnvironment, type StormPageEnvironment } from './stormPageEnvironment.ts'

/**
 * Something the driver may ask the page to do by name (`StormPageApi.command`), e.g. write
 * hostile entries into its document; its result must survive structured cloning.
 *
 * @example
 * const commands: Record<string, StormCommand> = { writeMalformed: (count) => hostile.write(Number(count)) }
 */
export type StormCommand = (argument: unknown) => unknown

/**
 * What the app hands over once its engine is open.
 *
 * @example
 * session.ready({ engine, source: claim.source, close: () => engine.close() })
 */
export interface StormApp {
  /** The app's engine (ingest, results, late lane, stats, sync status). */
  readonly engine: StormEngine
  /** The source this page ingests as (e.g. its `claimSource`). */
  readonly source: string
  /** The readings a device ingests; default `stormReading`. The driver's truth must use the same. */
  readonly reading?: StormReading
  /** Commands the driver may run by name. */
  readonly commands?: Readonly<Record<string, StormCommand>>
  /** Closes the app (sync connections, engine); called by `StormPageApi.close` after ingest stopped. */
  readonly close?: () => Promise<void> | void
  /**
   * Seqs `1..recovered` were produced in an earlier life of this page. Default: every event
   * the engine restored from its log (`applied + lateLane + lateLaneTrimmed` of `stats()`),
   * right for a device whose log holds only its own readings.
   */
  readonly recovered?: number
  /** Durable reports wait this long to travel together (one driver round trip per send); default 250 ms. */
  readonly reportEveryMs?: number
}

/**
 * A storm page between `beginStormPage()` and `ready()`.
 *
 * @example
 * const session = beginStormPage()
 * const relay = connectRelay({ url: session.query.server, token: session.params.get('token') ?? '' })
 * relay.join(doc, `${session.query.room}/${source}`)
 * syncStatusTracker(doc).subscribe(({ state }) => session.syncStatus(state))
 */
export interface StormPageSession {
  /** What the driver said: role, sync server URL, room, seed. */
  readonly query: StormQuery
  /** Every query parameter, for the app's own. */
  readonly params: URLSearchParams
  /** Records an app error (replication, persistence): it shows in `snapshot().errors` and fails the storm. */
  error(message: string): void
  /** Records a status change of the app's sync connection (`statusChanges()`). */
  syncStatus(status: string): void
  /** Publishes the page's `StormPageApi` as `tidemarkStorm`; once per page. */
  ready(app: StormApp): StormPageApi
  /** Publishes why the page could not open (`Name: message`) as `tidemarkStormError`, so the driver stops waiting; returns it. */
  failed(error: unknown): string
}

/**
 * Begins a storm page: records every offline/online event from now on and reads the storm
 * query (throwing, and publishing the reason as `tidemarkStormError`, when it is malformed).
 * Call it before anything slow.
 *
 * @example
 * const session = beginStormPage()
 * try {
 *   const engine = await openEngine({ windows: tumbling(1_000), allowedLateness: 2_000, persistence })
 *   session.ready({ engine, source })
 * } catch (error) {
 *   session.failed(error)
 * }
 */
export function beginStormPage(environment: StormPageEnvironment = browserEnvironment()): StormPageSession {
  const { globals, network } = environment
  const transitions: StormTransition[] = []
  network.addEventListener('offline', () => transitions.push({ at: environment.now(), online: false }))
  network.addEventListener('online', () => transitions.push({ at: environment.now(), online: true }))
  const failed = (error: unknown): string => {
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
    globals.tidemarkStormError = reason
    return reason
  }
  let query: StormQuery
  try {
    query = parseStormQuery(environment.search)
  } catch (error) {
    failed(error)
    throw error
  }
  const errors: string[] = []
  const statusChanges: StormStatusChange[] = []
  let readyApi: StormPageApi | null = null
  return {
    query,
    params: new URLSearchParams(environment.search),
    error: (message) => {
      errors.push(message)
    },
    syncStatus: (status) => {
      statusChanges.push({ at: environment.now(), status })
    },
    failed,
    ready(app) {
      if (readyApi !== null) throw new Error(`storm page: ready() was already called (source ${readyApi.source})`)
      readyApi = stormPageApi({ app, query, environment, errors, transitions, statusChanges })
      globals.tidemarkStorm = readyApi
      return readyApi
    },
  }
}

function stormPageApi(page: {
  readonly app: StormApp
  readonly query: StormQuery
  readonly environment: StormPageEnvironment
  readonly errors: string[]
  readonly transitions: readonly StormTransition[]
  readonly statusChanges: readonly StormStatusChange[]
}): StormPageApi {
  const { app, query, environment, errors } = page
  const { engine, source } = app
  if (typeof source !== 'string' || source === '') throw new Error(`storm page: source must be a non-empty string, got ${JSON.stringify(source)}`)
  const onError = (message: string): void => {
    errors.push(message)
  }
  const globals: StormGlobals = environment.globals
  const reports = new ReportQueue((batch) => globals.tidemarkStormReport?.(batch), app.reportEveryMs ?? 250, onError)
  const restored = engine.stats()
  const ingest = new DeviceIngest({
    engine,
    source,
    seed: query.seed,
    reading: app.reading ?? stormReading,
    recovered: app.recovered ?? restored.applied + restored.lateLane + restored.lateLaneTrimmed,
    reports,
    onError,
  })
  const commands = app.commands ?? {}
  const snapshot = (): StormSnapshot => {
    const stats = engine.stats()
    const sync = engine.syncStatus()
    const results = engine.results()
    let counted = 0
    for (const r of results) counted += r.count
    return {
      role: query.role,
      source,
      seed: query.seed,
      ...ingest.figures,
      lateLane: stats.lateLane,
      lateIds: engine.lateEvents().map((late) => late.event.id),
      lateWindows: engine.lateEvents().map((late) => late.window ?? ''),
      lateLaneTrimmed: stats.lateLaneTrimmed,
      counted,
      digest: windowDigest(results),
      windows: results.length,
      syncState: sync.state,
      pendingLocalUpdates: sync.pendingLocalUpdates,
      refusal: sync.refusal,
      online: environment.isOnline(),
      invalidRemote: stats.anomalies.invalid_remote_cell ?? 0,
      remoteAnomalies: [...stats.remoteAnomalies],
      errors: [...errors],
    }
  }
  return {
    source,
    role: query.role,
    start(options) {
      if (query.role === 'device') ingest.start(options)
    },
    stop: () => ingest.stop(),
    snapshot,
    transitions: () => [...page.transitions],
    statusChanges: () => [...page.statusChanges],
    async command(name, argument) {
      const run = Object.hasOwn(commands, name) ? commands[name] : undefined
      if (run === undefined) throw new Error(`storm page: no command ${JSON.stringify(name)} (this page has: ${Object.keys(commands).join(', ') || 'none'})`)
      return await run(argument)
    },
    async close() {
      await ingest.stop()
      await app.close?.()
    },
  }
}
