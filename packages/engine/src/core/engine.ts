import type { AggregateDefinitions } from '../aggregates/aggregate.ts'
import { type Anomaly, type AnomalyReason, emptyAnomalyCounts } from '../input/anomaly.ts'
import type { CellGroup } from '../lattice/cellGroup.ts'
import { ChangeFeed } from './changeFeed.ts'
import { EngineLiveness } from '../errors/engineLiveness.ts'
import type { Engine, EngineOptions, EngineStats, IngestReceipt, LateEvent } from './engineApi.ts'
import { type ResolvedOptions, resolveOptions, windowIndexes } from '../config/engineOptions.ts'
import type { StreamEvent } from '../input/event.ts'
import { Frontiers } from '../time/frontiers.ts'
import { finishableClock } from '../time/sourceFinish.ts'
import { LateLane } from '../windows/lateLane.ts'
import { ingestSink } from './ingestSink.ts'
import { elementOrUnreadable, refusal } from '../input/inputRejection.ts'
import type { EngineCheckpoint } from '../recovery/engineCheckpoint.ts'
import { DURABLE, EngineJournal } from '../recovery/engineJournal.ts'
import { countLoggedRefusals, type WalOp, type WriteAheadLog } from '../recovery/writeAheadLog.ts'
import { EnginePort } from '../replica/enginePort.ts'
import { PeerMerge } from '../replica/remoteMerge.ts'
import type { ClockEntry, MergeReport, ReplicaPort } from '../replica/replicaPort.ts'
import { exportReplicaState } from '../replica/replicaExport.ts'
import type { SyncStatus } from '../replica/syncStatus.ts'
import { ReplicationOutbox } from '../replica/replicationOutbox.ts'
import type { BatchFrontiers, WindowIndex } from '../windows/windowIndex.ts'
import type { NoAggregates, ResultQuery, WindowChange, WindowResult } from '../windows/windowResult.ts'
import { WindowLifecycle } from '../windows/windowLifecycle.ts'
import { captureEngine, type EngineParts, restoreEngine } from '../recovery/checkpointState.ts'
import { DedupMemory } from '../windows/dedupMemory.ts'
import { FutureSources } from '../input/futureSources.ts'
import { RemoteAnomalies } from '../replica/remoteAnomalies.ts'
import { BatchPlacement } from '../windows/batchPlacement.ts'
import { queryResults, windowHistory } from '../windows/liveWindows.ts'
import { type EngineCounts, engineStats } from './engineStats.ts'

const NO_CHANGES: readonly WindowChange[] = Object.freeze([])

/**
 * The window engine. One instance per replica; see docs/semantics.md for the meaning
 * of every result. Created with `createEngine(options)` (or `openEngine` with a write-ahead
 * log); the members of `Engine` are documented there. The members below are what recovery
 * and replication drive.
 *
 * @example
 * const engine = createEngine({ windows: tumbling(60_000), allowedLateness: 5_000 })
 * engine.ingest([{ id: 'd1-1', source: 'd1', seq: 1, ts: 1_000, key: 'temp', value: 21 }])
 * engine.results({ key: 'temp' })[0]?.status // 'provisional'
 */
export class TidemarkEngine<A extends AggregateDefinitions = NoAggregates> implements Engine<A> {
  readonly #options: ResolvedOptions
  readonly #indexes: readonly WindowIndex[]
  readonly #frontiers: Frontiers
  readonly #feed = new ChangeFeed()
  readonly #lateLane: LateLane
  #batch = 0
  // Subscribers first: a transport letting go reports its status, and must reach none of them.
  readonly #liveness = new EngineLiveness(() => {
    this.#feed.close()
    this.#port.close()
  }, () => this.#feed.assertSettles())
  #writable: WritableStream<readonly StreamEvent[]> | null = null
  readonly #dedup = new DedupMemory()
  readonly #futureSources = new FutureSources()
  readonly #counts: EngineCounts = { ingested: 0, applied: 0, duplicates: 0, lateAdmitted: 0, beyondLateness: 0, finalityViolations: 0 }
  readonly #anomalies = emptyAnomalyCounts()
  /**
   * This replica's id: the writer of every source it ingests.
   *
   * @example
   * new TidemarkEngine({ windows: tumbling(1_000), replicaId: 'tab-1' }).replicaId // 'tab-1'
   */
  readonly replicaId: string
  readonly #outbox = new ReplicationOutbox()
  readonly #journal = new EngineJournal(() => this.#feed.publish(NO_CHANGES))
  readonly #remoteAnomalies = new RemoteAnomalies(this.#anomalies)
  readonly #lifecycle: WindowLifecycle
  readonly #placement: BatchPlacement
  readonly #peers: PeerMerge
  readonly #port: EnginePort

  constructor(options: EngineOptions<A>) {
    this.#options = resolveOptions(options)
    this.#indexes = this.#options.specs.map((spec) => windowIndexes.of(spec))
    for (const index of this.#indexes) {
      index.discarding = this.#options.accumulation === 'discarding'
      index.aggregates = this.#options.aggregates
    }
    this.#outbox.aggregates = this.#options.aggregates
    this.#frontiers = new Frontiers(this.#options.watermark, this.#options.idleTimeout)
    this.#lateLane = new LateLane(this.#options.limits.maxLateEvents)
    this.replicaId = this.#options.replicaId
    const writes = (source: string) => this.#frontiers.sources.get(source)?.writer === this.replicaId
    this.#lifecycle = new WindowLifecycle(this.#options, this.#frontiers, this.#indexes, this.#outbox, writes)
    this.#placement = new BatchPlacement({
      options: this.#options,
      replicaId: this.replicaId,
      indexes: this.#indexes,
      frontiers: this.#frontiers,
      lateLane: this.#lateLane,
      outbox: this.#outbox,
      dedup: this.#dedup,
      anomalies: this.#anomalies,
      tracker: this.#lifecycle.tracker,
      futureSources: this.#futureSources,
    })
    this.#peers = new PeerMerge({
      options: this.#options,
      replicaId: this.replicaId,
      frontiers: this.#frontiers,
      indexes: this.#indexes,
      tracker: this.#lifecycle.tracker,
      counts: this.#counts,
      remoteAnomalies: this.#remoteAnomalies,
      publish: (clock) => this.#outbox.clock(clock),
    })
    this.#port = new EnginePort({
      replicaId: this.replicaId,
      options: this.#options,
      outbox: this.#outbox,
      peers: this.#peers,
      mergeGroups: (check, clocks) => {
        this.#liveness.assertOpen()
        return this.#mergeAt(check, clocks, this.#options.now(), this.#journal.wal)
      },
      reportAnomaly: (reason, detail) => {
        this.#remoteAnomalies.report(reason, detail)
        this.#journal.refused(reason, 1, this.#liveness.closed)
      },
      exportState: (writer) => exportReplicaState(this.#indexes, this.#frontiers.sources.values(), writer),
      notify: () => this.#feed.publish(NO_CHANGES),
      settles: () => this.#feed.assertSettles(),
      assertOpen: () => this.#liveness.assertOpen(),
    })
  }

  ingest(events: readonly StreamEvent[]): IngestReceipt {
    this.#liveness.assertOpen()
    if (!Array.isArray(events)) throw new TypeError('ingest expects an array of events')
    const n = events.length
    const blocked = this.#journal.wal?.blocked ?? null
    if (n > this.#options.limits.maxBatch || blocked !== null) {
      // Refused whole: nothing is applied, but the counts are logged so recovery shows them too.
      const detail = blocked !== null ? `storage refused: ${blocked.message}` : `batch of ${n} exceeds limits.maxBatch`
      const anomalies: Anomaly[] = []
      // Each names its input's id and source where they can be read, as every anomaly does.
      for (let i = 0; i < n; i++) anomalies.push(refusal('overflow', elementOrUnreadable(events, i), i, detail))
      this.#anomalies.overflow += n
      this.#counts.ingested += n
      const logged = this.#journal.refused('overflow', n, this.#liveness.closed)
      const durable = blocked === null ? logged : Promise.reject(blocked)
      // The receipt reports the refusal; a caller that never awaits `durable` must not crash the host.
      durable.catch(() => {})
      // No window changed, its counters did: views of the stats hear of it as of any batch.
      this.#feed.publish(NO_CHANGES)
      return { accepted: 0, late: 0, duplicates: 0, beyondLateness: 0, rejected: n, anomalies, durable }
    }
    return this.#ingestAt(events, this.#options.now(), this.#journal.wal)
  }

  /** Applies one batch at processing time `now`; logs it to `wal` when one is given (not during replay). */
  #ingestAt(events: readonly StreamEvent[], now: number, wal: WriteAheadLog | null): IngestReceipt {
    const n = events.length
    const anomalies: Anomaly[] = []
    const logged: StreamEvent[] | null = wal === null ? null : []
    const invalid: Partial<Record<AnomalyReason, number>> = {}
    const frontiers: BatchFrontiers = {
      watermark: this.#frontiers.watermark,
      firing: this.#frontiers.firingFrontier(),
      lateness: this.#options.allowedLateness,
      batch: ++this.#batch,
      publish: this.#outbox.listening,
    }
    // User code (an aggregate's add) that throws leaves the batch half applied, and not logged.
    const { accepted, late, duplicates, conflicting, beyond } = this.#liveness.guard(() =>
      this.#placement.place(events, now, frontiers, anomalies, logged, invalid),
    )
    const counts = this.#counts
    counts.ingested += n
    counts.applied += accepted
    counts.duplicates += duplicates
    counts.lateAdmitted += late
    counts.beyondLateness += beyond
    this.#anomalies.duplicate += duplicates
    this.#anomalies.beyond_lateness += beyond
    const quiet = n === 0 && this.#frontiers.settledAt(now) // nothing changes: a listener's `ingest([])` is not announced
    this.#frontiers.advance(now)
    // Logged before any change is published or acknowledged; `durable` resolves on commit.
    const durable =
      wal === null || logged === null ? DURABLE : this.#journal.record({ kind: 'ingest', now, events: logged, rejected: invalid })
    this.#settle(frontiers, now, false, quiet)
    return {
      accepted,
      late,
      duplicates,
      beyondLateness: beyond,
      rejected: anomalies.length - conflicting,
      anomalies,
      durable,
    }
  }

  advanceWatermark(t: number): void {
    this.#liveness.assertOpen()
    if (typeof t !== 'number' || Number.isNaN(t)) throw new RangeError(`advanceWatermark needs a number, got ${String(t)}`)
    if (!this.#frontiers.advanceTo(t)) return
    if (this.#journal.wal !== null) this.#journal.record({ kind: 'advance', to: t })
    this.#settle(null, Number.NaN, false)
  }

  finishSource(source: string): Promise<void> {
    this.#liveness.assertOpen()
    const clock = finishableClock(this.#frontiers, source, this.replicaId, this.#options.limits.maxSources)
    // The promise is only as durable as the record that made it (written again if it failed).
    if (clock?.finished === true) return this.#journal.finished(source, this.#options.now())
    const blocked = this.#journal.wal?.blocked ?? null
    if (blocked !== null) return Promise.reject(blocked)
    const now = this.#options.now()
    const durable = this.#journal.wal === null ? DURABLE : this.#journal.finish(source, now)
    this.#finishAt(source, now)
    return durable
  }

  isFinished(source: string): boolean {
    if (typeof source !== 'string') throw new TypeError(`isFinished needs a source name (a string), got ${typeof source}`)
    return this.#frontiers.sources.get(source)?.finished === true
  }

  /** Finishes `source` at processing time `now`: its clock marked and published, the frontiers moved, windows settled. */
  #finishAt(source: string, now: number): void {
    const clock = this.#frontiers.source(source, now)
    clock.writer = this.replicaId
    clock.finish()
    this.#outbox.clock(clock)
    this.#frontiers.advance(now)
    this.#settle(null, now, false)
  }

  tick(): void {
    this.#liveness.assertOpen()
    const now = this.#options.now()
    // Nothing due: not logged (ticks on an interval would log a record each, all day), nor announced when a listener made it.
    const quiet = this.#lifecycle.nextTimerAt() > now && this.#frontiers.settledAt(now) && !this.#lifecycle.stampsAt(now)
    if (this.#journal.wal !== null && !quiet) this.#journal.record({ kind: 'tick', now })
    this.#frontiers.advance(now)
    this.#settle(null, now, true, quiet)
  }

  nextTickAt(): number {
    this.#liveness.assertOpen(false)
    return Math.min(this.#lifecycle.nextTimerAt(), this.#frontiers.nextIdleAt())
  }

  /**
   * Logs every later state-changing operation to `wal` (write-ahead log). Used by
   * `openEngine`; an engine has at most one log.
   *
   * @example
   * const engine = new TidemarkEngine({ windows: tumbling(60_000) })
   * const ops: WalOp[] = []
   * engine.attachLog({ record: (op) => (ops.push(op), Promise.resolve()), blocked: null, stats: () => ({ walRecords: ops.length, walBytes: 0 }) })
   */
  attachLog(wal: WriteAheadLog): void {
    // What the log reports in `stats()` changes without a batch (a write fails, a checkpoint truncates it): views hear of it.
    this.#journal.attach(wal)
    // Peers see a write only once the op that made it is durable here: a crash cannot leave them ahead of this replica.
    if (wal.publishWhenDurable !== undefined) this.#outbox.gate((write, deliver) => wal.publishWhenDurable?.(write, deliver))
  }

  /**
   * Re-applies one logged operation during recovery (not logged again).
   *
   * @example
   * const copy = new TidemarkEngine(options)
   * for (const op of ops) copy.replay(op) // the same results as the engine that logged them
   */
  replay(op: WalOp): void {
    this.#liveness.assertOpen()
    switch (op.kind) {
      case 'ingest':
        this.#ingestAt(op.events, op.now, null)
        countLoggedRefusals(op.rejected, this.#anomalies, this.#counts)
        return
      case 'refuse':
        countLoggedRefusals(op.rejected, this.#anomalies, this.#counts)
        return
      case 'advance':
        if (this.#frontiers.advanceTo(op.to)) this.#settle(null, Number.NaN, false)
        return
      case 'tick':
        this.#frontiers.advance(op.now)
        this.#settle(null, op.now, true)
        return
      case 'merge':
        this.#mergeAt(() => op.groups, op.clocks, op.now, null)
        return
      case 'finish':
        this.#finishAt(op.source, op.now)
        return
    }
  }

  /**
   * Makes every later write of this replica's sources outrank what it wrote of them before a
   * loss: each source it writes whose version is below `floor` is raised to it, and a source it
   * takes up from now on starts there, so its next cell and clock carry a version above `floor`.
   * What `openEngine` does after a recovery that skipped damaged log records or a damaged
   * checkpoint: replay then gives back lower versions than peers may already hold, and a new
   * write at one of those would tie with a different cell of the earlier session. Cells keep
   * their versions: a newer copy a peer still holds is merged back as before. Not logged: the
   * caller keeps the floor (`openEngine` beside its log) and raises it again when a later replay
   * reaches the record it was raised after. A `checkpoint()` taken after it carries it, and
   * `restore` takes it back. Returns the highest version of a
   * source this replica writes, or the floor when that is higher.
   *
   * @example
   * const engine = new TidemarkEngine({ windows: tumbling(60_000), replicaId: 'tab-1' })
   * engine.ingest([{ id: 'd1-1', source: 'd1', seq: 1, ts: 1_000, value: 1 }])
   * engine.raiseVersionFloor(0) // 1: d1's version
   * engine.raiseVersionFloor(2 ** 40) // 2 ** 40: d1's next cell has version 2 ** 40 + 1
   */
  raiseVersionFloor(floor: number): number {
    this.#liveness.assertOpen()
    if (!Number.isSafeInteger(floor) || floor < 0) throw new RangeError(`raiseVersionFloor needs a safe integer >= 0, got ${String(floor)}`)
    return this.#frontiers.raiseVersionFloor(floor, this.replicaId)
  }

  /**
   * Everything needed to continue exactly from here (see `EngineCheckpoint`).
   *
   * @example
   * const engine = new TidemarkEngine({ windows: tumbling(60_000) })
   * const bytes = encodeEngineCheckpoint(engine.checkpoint()) // from @tidemark/idb
   */
  checkpoint(): EngineCheckpoint {
    // A stopped engine's state is half updated, as is one in the middle of its own operation: a checkpoint of it would outlive the log's truth.
    this.#liveness.assertWhole()
    return captureEngine(this.#parts(), this.#batch)
  }

  /**
   * Loads a checkpoint into this fresh engine (same window configuration and replica id). The
   * whole checkpoint is checked first: one of another configuration or replica, or with a field of
   * the wrong type or out of range, throws naming why, and the engine is as it was. Emits nothing.
   *
   * @example
   * const checkpoint = new TidemarkEngine(options).checkpoint()
   * const resumed = new TidemarkEngine(options)
   * resumed.restore(checkpoint)
   */
  restore(checkpoint: EngineCheckpoint): void {
    this.#liveness.assertOpen()
    if (this.#batch !== 0 || this.#frontiers.sources.size > 0) throw new Error('restore needs a fresh engine')
    this.#batch = restoreEngine(this.#parts(), checkpoint, this.#liveness)
  }

  #parts(): EngineParts {
    return {
      options: this.#options,
      replicaId: this.replicaId,
      frontiers: this.#frontiers,
      indexes: this.#indexes,
      lifecycle: this.#lifecycle,
      lateLane: this.#lateLane,
      counts: this.#counts,
      anomalies: this.#anomalies,
      dedup: this.#dedup,
      futureSources: this.#futureSources,
    }
  }

  results(query?: ResultQuery): readonly WindowResult<A>[] {
    return queryResults(this.#indexes, query) as WindowResult<A>[]
  }

  history(window: string, key: string, start: number, end?: number): readonly WindowResult<A>[] {
    return windowHistory(this.#indexes, window, key, start, end) as readonly WindowResult<A>[]
  }

  subscribe(listener: (changes: readonly WindowChange<A>[]) => void): () => void {
    this.#liveness.assertOpen(false)
    return this.#feed.subscribe(listener as (changes: readonly WindowChange[]) => void)
  }

  changes(): ReadableStream<readonly WindowChange<A>[]> {
    this.#liveness.assertOpen(false)
    return this.#feed.stream() as ReadableStream<readonly WindowChange<A>[]>
  }

  get writable(): WritableStream<readonly StreamEvent[]> {
    this.#writable ??= ingestSink(
      (events) => this.ingest(events),
      () => {
        this.#writable = null
      },
    )
    return this.#writable
  }

  watermark(): number {
    return this.#frontiers.watermark
  }

  lateEvents(): readonly LateEvent[] {
    return this.#lateLane.list()
  }

  nextSeq(source: string): number {
    if (typeof source !== 'string') throw new TypeError(`nextSeq needs a source name (a string), got ${typeof source}`)
    const clock = this.#frontiers.sources.get(source)
    return clock === undefined ? 1 : clock.highestSeq() + 1
  }

  syncStatus(): SyncStatus {
    return this.#port.status
  }

  /** The replication side of this engine (what a Yjs binding drives). */
  get replica(): ReplicaPort {
    return this.#port
  }

  stats(): EngineStats {
    const links = { journal: this.#journal, port: this.#port, remoteAnomalies: this.#remoteAnomalies }
    return engineStats({ ...this.#parts(), ...links, counts: this.#counts })
  }

  async close(): Promise<void> {
    this.#liveness.close()
  }

  /**
   * After frontiers moved at processing time `now`: settle windows (firing due processing-time
   * triggers on a tick), purge dedup memory when due, publish to peers, then one notification.
   */
  #settle(batch: BatchFrontiers | null, now: number, tick: boolean, quiet?: boolean): void {
    // User code (an aggregate's merge or result) may throw partway through the panes; its encode
    // while the outbox encodes the batch's cells for peers. The transports it hands them to run
    // outside: they may call the engine (a checkpoint as a write goes out).
    const changes = this.#liveness.guard(() => this.#lifecycle.settle(now, tick))
    if (batch !== null && this.#dedup.due) this.#dedup.purge(this.#indexes, this.#frontiers, batch)
    const write = this.#liveness.guard(() => this.#outbox.take())
    if (write !== null) this.#outbox.send(write)
    this.#feed.publish(changes, quiet)
  }

  /**
   * Peers' groups (`check` reports and leaves out invalid ones) and clocks, checked, logged to
   * `wal` unless replaying (what the checks left out first, as counts: replay never sees it, and
   * a clock that is not one could not be encoded), merged and settled with one notification.
   */
  #mergeAt(check: () => readonly CellGroup[], peerClocks: readonly ClockEntry[], now: number, wal: WriteAheadLog | null): MergeReport {
    const refused = this.#anomalies.invalid_remote_cell
    const groups = this.#peers.validGroups(check())
    const clocks = this.#peers.validClocks(peerClocks)
    if (wal !== null) {
      this.#journal.refused('invalid_remote_cell', this.#anomalies.invalid_remote_cell - refused, this.#liveness.closed)
      this.#journal.record({ kind: 'merge', now, groups, clocks })
    }
    const { report, frontiers } = this.#liveness.guard(() => this.#peers.merge(groups, clocks, now, ++this.#batch))
    this.#settle(frontiers, now, false)
    return report
  }
}

/**
 * Creates an in-memory engine. With `aggregates`, results carry `aggregates`, typed from the option.
 *
 * @example
 * const sketched = createEngine({ windows: tumbling(60_000), aggregates: { latency: quantiles({ at: [0.5, 0.99] }) } })
 * sketched.results()[0]?.aggregates.latency // [p50, p99]
 * const engine = createEngine({ windows: tumbling(60_000), watermark: boundedOutOfOrderness(5_000), allowedLateness: 30_000 })
 * engine.subscribe((changes) => console.log(changes))
 * engine.ingest([{ id: 'a', source: 'd1', seq: 1, ts: 1_000, value: 3 }])
 */
export function createEngine<A extends AggregateDefinitions = NoAggregates>(options: EngineOptions<A>): Engine<A> {
  return new TidemarkEngine(options)
}
