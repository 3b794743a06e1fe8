import {
  type AggregateDefinitions,
  type Engine,
  type EngineCheckpoint,
  type EngineOptions,
  type EngineStats,
  type NoAggregates,
  TidemarkEngine,
  type WindowChange,
} from '@tidemark/engine'
import { assertKnownOptions, checkEngineOptions, ENGINE_OPTION_KEYS } from '@tidemark/engine/adapter'
import { decodeEngineCheckpoint, encodeEngineCheckpoint } from '../checkpoint/checkpointCodec.ts'
import { checkpointPolicy } from '../checkpoint/checkpointPolicy.ts'
import { laneFromRecords } from '../history/lateLaneRecords.ts'
import { LogConfigurationError } from './logConfigurationError.ts'
import type {
  CheckpointPolicy,
  CorruptRecord,
  LateLaneSnapshot,
  Persistence,
  RecoveredLog,
} from '../persistence/persistence.ts'
import { checkpointEvents, GLOBAL_RETRY_TIMERS, WalWriter, type WriteRetry, type WriteRetryTimers } from '../wal/walWriter.ts'

const REPLICA_ID_KEY = 'replicaId'
/** The configuration the log is written under, kept beside it from the first open on. */
const CONFIGURATION_KEY = 'configuration'
/**
 * The version floors of the replica's sources (`TidemarkEngine.raiseVersionFloor`), each with
 * the lsn of the last record logged before it was raised, kept beside the log from the first
 * recovery that lost records on: beside it, not in a checkpoint, since a damaged checkpoint
 * takes the versions it held with it. Every floor the tail after the checkpoint was written
 * under is kept, so replay raises each where it was raised.
 */
const VERSION_FLOOR_KEY = 'versionFloor'
/**
 * How far a recovery that lost records raises the floor above the highest version it knows of:
 * more versions than a source writes between two such recoveries (one per event; 2^40 is a
 * source writing 1,000 events a second for 34 years), and room for 8,191 raises within the
 * safe integers.
 */
const LOSS_VERSION_MARGIN = 2 ** 40
/** The highest floor a raise sets: every source still has `LOSS_VERSION_MARGIN` versions above it. */
const MAX_VERSION_FLOOR = Number.MAX_SAFE_INTEGER - LOSS_VERSION_MARGIN

/**
 * The engine checkpoint as `openEngine` stores it: the late lane's entries live in the
 * persistence's `lateLane` store, and `lateLaneInStore` says how many of them the lane held.
 */
type StoredEngineCheckpoint = EngineCheckpoint & { readonly lateLaneInStore: number }

/**
 * What `openEngine` takes: the engine's options (`A`: the type of `aggregates`) and its own.
 *
 * @example
 * const options: OpenEngineOptions = { windows: tumbling(60_000), persistence: memoryPersistence() }
 */
export interface OpenEngineOptions<A extends AggregateDefinitions = NoAggregates> extends EngineOptions<A> {
  /** Where the write-ahead log lives: `indexedDbPersistence(...)` in browsers, `memoryPersistence()` from `@tidemark/idb/memory` for tests and Node. */
  readonly persistence: Persistence
  /**
   * Checkpoint after this many logged events (merged cells and clocks count too) or this
   * many ms of processing time, whichever comes first. Defaults to the persistence's own
   * `checkpointEvery`, itself 100,000 events or 30 s by default.
   */
  readonly checkpointEvery?: Partial<CheckpointPolicy>
  /** After a failed write or checkpoint, retry a checkpoint after `firstMs`, doubling up to `maxMs` (default 1 s to 30 s). */
  readonly writeRetry?: Partial<WriteRetry>
  /**
   * Where the `writeRetry` delays are armed. Default the global `setTimeout` / `clearTimeout`
   * (a pending retry does not keep a Node process alive); a test gives fake ones and moves
   * their time itself, so it neither waits nor fakes the timers IndexedDB runs on.
   *
   * @example
   * const pending: (() => void)[] = []
   * const engine = await openEngine({
   *   windows: tumbling(60_000),
   *   persistence,
   *   timers: { setTimeout: (run) => pending.push(run), clearTimeout: () => {} },
   * })
   * pending.shift()?.() // the retry falls due now
   */
  readonly timers?: WriteRetryTimers
  /** Write a checkpoint in `close()` so the next open replays nothing (default true). */
  readonly checkpointOnClose?: boolean
}

/** What `openEngine` found and did, for logs and for a "some data was lost" banner. */
export interface RecoveryReport {
  /** The id this replica writes under, kept in the persistence across reloads. */
  readonly replicaId: string
  /** lsn of the checkpoint the state was restored from; null when there was none. */
  readonly checkpointLsn: number | null
  /** Log records replayed after the checkpoint, and the events in them. */
  readonly replayedRecords: number
  readonly replayedEvents: number
  /** Records skipped because they failed their checksum, could not be decoded or failed to replay (and a stored version floor that does not read). */
  readonly corrupt: readonly CorruptRecord[]
  /** Events known to be lost with those records. */
  readonly lostEvents: number
  /** True when some loss cannot be counted: a corrupt checkpoint, or a record whose header is damaged too. */
  readonly lossUnknown: boolean
  /** Wall time from the call to the engine being ready. */
  readonly durationMs: number
  /** Where that time went: reading storage, decoding and restoring the checkpoint, replaying the tail. */
  readonly phases: { readonly readMs: number; readonly restoreMs: number; readonly replayMs: number }
}

const reports = new WeakMap<Engine, RecoveryReport>()

/**
 * Opens an engine over a write-ahead log: restores the latest checkpoint,
 * replays the log after it in lsn order, then logs every later operation before it is
 * published. `ingest(...).durable` resolves once the batch's record is committed.
 *
 * Corrupt records are skipped and reported (`recoveryReport(engine)`,
 * `stats().persistenceError`, `stats().anomalies.corrupt_record`). A failed write (full
 * quota: `QuotaError`) rejects that batch's `durable` and blocks ingest, which refuses
 * batches with `overflow`, until a retried checkpoint commits. `close()` writes a last
 * checkpoint and closes the persistence. Writes for peers (a doc bound with `bindDoc`, any
 * `replica.onLocalWrite` listener) go out only once the op that made them is durable, so bind
 * the doc after `openEngine` resolves: peers' state merged from then on is logged too. The
 * late lane is kept in the persistence's `lateLane` store, and, when the persistence has an
 * archive (`archive: finalArchive()`), windows that turn final are staged in it
 * (`persistence.archive(query)`); both are written with each checkpoint.
 *
 * @example
 * const claim = await claimSource({ prefix: 'dashboard' })
 * const engine = await openEngine({
 *   windows: tumbling(60_000),
 *   persistence: indexedDbPersistence({ name: claim.database, claim }),
 * })
 * const receipt = engine.ingest(readings)
 * await receipt.durable // committed to IndexedDB: survives a crash or reload
 */
export async function openEngine<A extends AggregateDefinitions = NoAggregates>(options: OpenEngineOptions<A>): Promise<Engine<A>> {
  const started = performance.now()
  if (typeof options !== 'object' || options === null) throw new TypeError('openEngine needs an options object')
  assertKnownOptions('openEngine', options, OPEN_ENGINE_OPTION_KEYS)
  const { persistence, checkpointEvery, writeRetry, checkpointOnClose, timers, ...engineOptions } = options
  // Every option is checked before the storage is opened.
  checkEngineOptions(engineOptions, 'openEngine')
  if (typeof persistence !== 'object' || persistence === null || typeof persistence.open !== 'function') {
    throw new TypeError(`openEngine: persistence must be a Persistence (indexedDbPersistence(...), or memoryPersistence() from @tidemark/idb/memory), got ${String(persistence)}`)
  }
  if (checkpointOnClose !== undefined && typeof checkpointOnClose !== 'boolean') {
    throw new TypeError(`openEngine: checkpointOnClose must be true or false, got ${String(checkpointOnClose)}`)
  }
  if (timers !== undefined && (typeof timers !== 'object' || timers === null || typeof timers.setTimeout !== 'function' || typeof timers.clearTimeout !== 'function')) {
    throw new TypeError(`openEngine: timers must be { setTimeout, clearTimeout }, got ${String(timers)}`)
  }
  // The persistence's cadence is checked too (a Persistence of the app's own may carry any), then `checkpointEvery` over it.
  const policy = checkpointPolicy(checkpointEvery, 'openEngine: checkpointEvery', checkpointPolicy(persistence.checkpointEvery, 'openEngine: checkpointEvery'))
  const retry = writeRetryOf(writeRetry)
  const now = options.now ?? Date.now
  const recovered = await persistence.open()
  const read = performance.now()
  let engine: TidemarkEngine<A>
  let wal: WalWriter
  let report: RecoveryReport
  try {
    const corrupt = [...recovered.corrupt]
    const checkpoint = readCheckpoint(recovered, corrupt)
    const replicaId = ownReplicaId(options.replicaId, recovered, checkpoint)
    engine = new TidemarkEngine(replicaId === undefined ? engineOptions : { ...engineOptions, replicaId })
    // Before anything of the log is read into the engine. A log kept before the configuration was
    // stored beside it and holding no checkpoint yet cannot tell: its records are replayed.
    const logged = recovered.meta.get(CONFIGURATION_KEY) ?? checkpoint?.configuration
    if (logged !== undefined && logged !== engine.replica.configuration) throw new LogConfigurationError(logged, engine.replica.configuration)
    if (checkpoint !== null) engine.restore(checkpoint)
    const restored = performance.now()
    // Windows that turn final from here on (replay included) go to the archive, if there is one; earlier ones are in it already.
    if (persistence.archiveFinal !== undefined) engine.subscribe((changes) => archiveFinals(persistence, changes))
    const floors = storedVersionFloors(recovered, corrupt)
    const replayed = replay(engine, recovered, corrupt, floors)
    const phases = { readMs: read - started, restoreMs: restored - read, replayMs: performance.now() - restored }
    if (recovered.meta.get(REPLICA_ID_KEY) !== engine.replicaId) await persistence.putMeta(REPLICA_ID_KEY, engine.replicaId)
    // Also beside a log judged by its checkpoint alone (kept by an older version): a later corrupt checkpoint must not leave it unjudged.
    if (recovered.meta.get(CONFIGURATION_KEY) === undefined) await persistence.putMeta(CONFIGURATION_KEY, engine.replica.configuration)
    if (corrupt.some(lowersVersions)) {
      // Replay gave back lower versions than peers may hold of this replica's writes: its later
      // writes start above every one of them. Stored before the engine writes anything above it.
      const reached = engine.raiseVersionFloor(0)
      const raised: VersionFloor = { floor: Math.max(reached, Math.min(reached + LOSS_VERSION_MARGIN, MAX_VERSION_FLOOR)), afterLsn: persistence.lastLsn }
      await persistence.putMeta(VERSION_FLOOR_KEY, JSON.stringify([...floorsAfter(floors, recovered.checkpoint?.upToLsn ?? 0), raised]))
      engine.raiseVersionFloor(raised.floor)
    }
    report = {
      replicaId: engine.replicaId,
      checkpointLsn: recovered.checkpoint?.upToLsn ?? null,
      replayedRecords: replayed.records,
      replayedEvents: replayed.events,
      corrupt,
      lostEvents: corrupt.reduce((sum, record) => sum + (record.lostEvents ?? 0), 0),
      // The late lane and the archive hold no accepted events: their damage loses history, not data.
      lossUnknown: corrupt.some(
        (record) => record.store === 'checkpoints' || (record.store === 'wal' && record.kind === undefined && record.lostEvents === undefined),
      ),
      durationMs: 0,
      phases,
    }
    const live = engine
    wal = new WalWriter({
      persistence,
      policy,
      retry,
      timers: timers ?? GLOBAL_RETRY_TIMERS,
      now,
      snapshot: () => snapshot(live),
      // Every record of the tail, not only ingests, and merged cells as well as events: the
      // next open replays all of them until a checkpoint covers them.
      tail: { records: recovered.tail.length, events: recovered.tail.reduce((sum, { op }) => sum + checkpointEvents(op), 0) },
      checkpointOnClose: checkpointOnClose ?? true,
    })
    engine.attachLog(wal)
  } catch (error) {
    await persistence.close()
    throw error
  }
  // Corrupt records stay on disk until a checkpoint truncates them; do it now, so the next open is clean.
  if (report.corrupt.length > 0) await wal.checkpoint()
  wrap(engine, wal, describeLoss(report), report.corrupt.length)
  report = { ...report, durationMs: performance.now() - started }
  reports.set(engine, report)
  return engine
}

/** The keys `openEngine` takes: the engine's, and its own. */
const OPEN_ENGINE_OPTION_KEYS: readonly string[] = [...ENGINE_OPTION_KEYS, 'persistence', 'checkpointEvery', 'writeRetry', 'checkpointOnClose', 'timers']

/** `writeRetry` with defaults: finite ms > 0, the first at most the largest. */
function writeRetryOf(given: Partial<WriteRetry> | undefined): WriteRetry {
  if (given === undefined) return { firstMs: 1000, maxMs: 30_000 }
  if (typeof given !== 'object' || given === null) throw new TypeError(`openEngine: writeRetry must be an object { firstMs?, maxMs? }, got ${String(given)}`)
  assertKnownOptions('openEngine: writeRetry', given, ['firstMs', 'maxMs'])
  const retry = { firstMs: given.firstMs ?? 1000, maxMs: given.maxMs ?? 30_000 }
  for (const name of ['firstMs', 'maxMs'] as const) {
    const value = retry[name]
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      throw new RangeError(`openEngine: writeRetry.${name} must be a finite number of ms > 0, got ${String(value)}`)
    }
  }
  if (retry.firstMs > retry.maxMs) throw new RangeError(`openEngine: writeRetry.firstMs (${retry.firstMs}) must be at most maxMs (${retry.maxMs})`)
  return retry
}

/**
 * What `openEngine` recovered for this engine: checkpoint, replayed records, corrupt
 * records and the events lost with them. `undefined` for an engine not made by `openEngine`.
 *
 * @example
 * const report = recoveryReport(engine)
 * if (report && (report.lostEvents > 0 || report.lossUnknown)) showBanner(`${report.lostEvents} readings were lost`)
 */
export function recoveryReport(engine: Engine): RecoveryReport | undefined {
  return reports.get(engine)
}

/** The engine's state for a checkpoint, its late lane apart (the persistence keeps it in its own store). */
function snapshot(engine: TidemarkEngine<AggregateDefinitions>): { state: Uint8Array; lateLane: LateLaneSnapshot } {
  const checkpoint = engine.checkpoint()
  const { entries, trimmed, total } = checkpoint.lateLane
  const stored: StoredEngineCheckpoint = { ...checkpoint, lateLane: { entries: [], trimmed, total }, lateLaneInStore: entries.length }
  return { state: encodeEngineCheckpoint(stored), lateLane: { entries, total } }
}

function archiveFinals(persistence: Persistence, changes: readonly WindowChange[]): void {
  for (const change of changes) {
    if (!change.result.final) continue
    persistence.archiveFinal?.({ type: change.type === 'retract' ? 'retract' : 'final', result: change.result })
  }
}

/** Decodes the checkpoint and puts its late lane back together from the `lateLane` store. */
function readCheckpoint(recovered: RecoveredLog, corrupt: CorruptRecord[]): EngineCheckpoint | null {
  if (recovered.checkpoint === null) return null
  let checkpoint: StoredEngineCheckpoint
  try {
    checkpoint = decodeEngineCheckpoint(recovered.checkpoint.state) as StoredEngineCheckpoint
    if (typeof checkpoint.lateLaneInStore !== 'number') throw new RangeError('it does not say how many late-lane entries are in the lateLane store')
  } catch (error) {
    // The envelope's checksum held, so these bytes are intact: written by another version, not damaged.
    throw new Error(
      `openEngine: the checkpoint at lsn ${recovered.checkpoint.upToLsn} cannot be read (${(error as Error).message}); open it with the version that wrote it, or use a new persistence name`,
      { cause: error },
    )
  }
  const { lateLaneInStore: inStore, ...restored } = checkpoint
  const { trimmed, total } = checkpoint.lateLane
  const lane = laneFromRecords(recovered.lateLane, total - inStore, total)
  if (lane.missing > 0) {
    corrupt.push({
      store: 'lateLane',
      key: `${total - inStore}-${total - 1}`,
      reason: `${lane.missing} of the checkpoint's ${inStore} late-lane entries are not in the store`,
    })
  }
  return { ...restored, lateLane: { entries: lane.entries, trimmed, total } }
}

/** The stored replica id wins: a log's sources belong to the replica that wrote them. */
function ownReplicaId(given: string | undefined, recovered: RecoveredLog, checkpoint: EngineCheckpoint | null): string | undefined {
  const stored = recovered.meta.get(REPLICA_ID_KEY) ?? checkpoint?.replicaId
  if (stored !== undefined && given !== undefined && given !== stored) {
    throw new Error(`openEngine: this log belongs to replica '${stored}', but options.replicaId is '${given}'; omit replicaId or use a new persistence name`)
  }
  return stored ?? given
}

/** A version floor as kept beside the log: raised after the record at `afterLsn` was logged. */
interface VersionFloor {
  readonly floor: number
  readonly afterLsn: number
}

/**
 * The version floors kept beside the log, in the order they were raised (none: never raised).
 * A value that does not read as them (the store edited by hand) is reported with the corrupt
 * records: the floors it held are lost, and this recovery raises one again.
 */
function storedVersionFloors(recovered: RecoveredLog, corrupt: CorruptRecord[]): VersionFloor[] {
  const stored = recovered.meta.get(VERSION_FLOOR_KEY)
  if (stored === undefined) return []
  try {
    const read: unknown = JSON.parse(stored)
    if (Array.isArray(read) && read.every(isVersionFloor)) return read.map(({ floor, afterLsn }) => ({ floor, afterLsn }))
  } catch {
    // Reported below.
  }
  corrupt.push({ store: 'meta', key: VERSION_FLOOR_KEY, reason: `not a version floor: ${stored.slice(0, 60)}` })
  return []
}

function isVersionFloor(read: unknown): read is VersionFloor {
  if (typeof read !== 'object' || read === null) return false
  const { floor, afterLsn } = read as Record<string, unknown>
  return Number.isSafeInteger(floor) && (floor as number) >= 0 && Number.isSafeInteger(afterLsn)
}

/**
 * The floors a replay from the checkpoint at `checkpointLsn` still raises: those raised after
 * it, and the last one before it (raised first, it holds the sources a new one starts).
 */
function floorsAfter(floors: readonly VersionFloor[], checkpointLsn: number): VersionFloor[] {
  const first = floors.findLastIndex((floor) => floor.afterLsn <= checkpointLsn)
  return floors.slice(Math.max(first, 0))
}

/**
 * True for a damaged record after which replay may give this replica's sources lower versions
 * than it wrote (a log record, a checkpoint, the stored floor); damage to the late lane or the
 * archive loses history only.
 */
function lowersVersions(record: CorruptRecord): boolean {
  return record.store !== 'lateLane' && record.store !== 'archive'
}

/**
 * Replays the tail in lsn order, raising each version floor where it was raised (records logged
 * after one were written above it; those before it, below); an op that throws is reported with
 * the corrupt records and skipped.
 */
function replay(
  engine: TidemarkEngine<AggregateDefinitions>,
  recovered: RecoveredLog,
  corrupt: CorruptRecord[],
  floors: readonly VersionFloor[],
): { records: number; events: number } {
  let records = 0
  let events = 0
  let raised = 0
  for (const { lsn, op } of recovered.tail) {
    for (; raised < floors.length && lsn > (floors[raised] as VersionFloor).afterLsn; raised++) engine.raiseVersionFloor((floors[raised] as VersionFloor).floor)
    try {
      engine.replay(op)
    } catch (error) {
      const lost: CorruptRecord = { store: 'wal', key: String(lsn), reason: `replay failed: ${(error as Error).message}`, kind: op.kind }
      corrupt.push(op.kind === 'ingest' ? { ...lost, lostEvents: op.events.length } : lost)
      continue
    }
    records++
    if (op.kind === 'ingest') events += op.events.length
  }
  for (; raised < floors.length; raised++) engine.raiseVersionFloor((floors[raised] as VersionFloor).floor)
  return { records, events }
}

function describeLoss(report: RecoveryReport): string | null {
  if (report.corrupt.length === 0) return null
  const lost = report.lossUnknown ? `at least ${report.lostEvents} events lost` : `${report.lostEvents} events lost`
  const first = report.corrupt[0] as CorruptRecord
  return `recovery skipped ${report.corrupt.length} corrupt record(s), ${lost}; first: ${first.store} ${first.key}: ${first.reason}`
}

/** Makes `close()` close the log too, and `stats()` report what recovery and the log know. */
function wrap(engine: TidemarkEngine<AggregateDefinitions>, wal: WalWriter, recoveryError: string | null, corruptRecords: number): void {
  const closeEngine = engine.close.bind(engine)
  const engineStats = engine.stats.bind(engine)
  let closing: Promise<void> | null = null
  engine.close = () => {
    closing ??= (async () => {
      await closeEngine()
      await wal.close()
    })()
    return closing
  }
  engine.stats = (): EngineStats => {
    const stats = engineStats()
    const persistenceError = wal.lastError ?? stats.persistenceError ?? recoveryError
    if (corruptRecords === 0 && persistenceError === stats.persistenceError) return stats
    return {
      ...stats,
      persistenceError,
      anomalies: { ...stats.anomalies, corrupt_record: stats.anomalies.corrupt_record + corruptRecords },
    }
  }
}
