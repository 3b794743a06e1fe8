import { type Anomaly, type AnomalyReason, emptyAnomalyCounts } from './anomaly.ts'
import { ChangeFeed } from './changeFeed.ts'
import type { Engine, EngineOptions, EngineStats, IngestReceipt, LateEvent, SyncStatus } from './engineApi.ts'
import { configurationOf, indexFor, type ResolvedOptions, resolveOptions } from './engineOptions.ts'
import { copyStreamEvent, invalidAnomaly, invalidReason, type StreamEvent } from './event.ts'
import { placementOrder } from './eventOrder.ts'
import { Frontiers } from './frontiers.ts'
import { LateLane } from './lateLane.ts'
import { OverflowError } from './overflowError.ts'
import { mergeRemoteCells, mergeRemoteClocks } from './remoteMerge.ts'
import type { CellEntry, ClockEntry, MergeReport, ReplicaPort } from './replicaPort.ts'
import { ReplicationOutbox } from './replicationOutbox.ts'
import type { SourceClock } from './sourceClock.ts'
import {
  ADMITTED_LATE,
  type BatchFrontiers,
  ON_TIME,
  REFUSED,
  type WindowIndex,
} from './windowIndex.ts'
import { compareResults, type ResultQuery, type WindowChange, type WindowResult } from './windowResult.ts'
import { WindowLifecycle } from './windowLifecycle.ts'

const DURABLE: Promise<void> = Promise.resolve()
const NO_CHANGES: readonly WindowChange[] = Object.freeze([])
const LOCAL_SYNC: SyncStatus = Object.freeze({ state: 'local', lastSync: null, pendingLocalUpdates: 0, peers: 0 })

/**
 * The window engine. One instance per replica; see DESIGN.md §2–§8 for the meaning
 * of every result. Created with `createEngine(options)`.
 */
export class TidemarkEngine implements Engine {
  readonly #options: ResolvedOptions
  readonly #indexes: readonly WindowIndex[]
  readonly #frontiers: Frontiers
  readonly #feed = new ChangeFeed()
  readonly #lateLane: LateLane
  #batch = 0
  #closed = false
  #writable: WritableStream<readonly StreamEvent[]> | null = null
  #maxNewPerEvent: number
  /** Session placement depends on the order of events in a batch, so batches are placed in event order. */
  readonly #hasSessions: boolean
  #dedupEntries = 0
  #dedupAtLastPurge = 0
  readonly #counts = {
    ingested: 0,
    applied: 0,
    duplicates: 0,
    lateAdmitted: 0,
    beyondLateness: 0,
    finalityViolations: 0,
  }
  readonly #anomalies = emptyAnomalyCounts()
  /** This replica's id: the writer of every source it ingests. */
  readonly replicaId: string
  readonly #outbox = new ReplicationOutbox()
  #syncStatus: SyncStatus = LOCAL_SYNC
  #docBytes = 0
  #replica: ReplicaPort | null = null
  readonly #lifecycle: WindowLifecycle


  constructor(options: EngineOptions) {
    this.#options = resolveOptions(options)
    this.#indexes = this.#options.specs.map(indexFor)
    this.#maxNewPerEvent = this.#indexes.reduce((n, index) => n + index.maxNewPerEvent, 0)
    this.#hasSessions = this.#options.specs.some((spec) => spec.kind === 'session')
    this.#frontiers = new Frontiers(this.#options.watermark, this.#options.idleTimeout)
    this.#lateLane = new LateLane(this.#options.limits.maxLateEvents)
    this.replicaId = this.#options.replicaId
    const writes = (source: string) => this.#frontiers.sources.get(source)?.writer === this.replicaId
    this.#lifecycle = new WindowLifecycle(this.#options, this.#frontiers, this.#indexes, this.#outbox, writes)
  }

  ingest(events: readonly StreamEvent[]): IngestReceipt {
    this.#assertOpen()
    if (!Array.isArray(events)) throw new TypeError('ingest expects an array of events')
    const n = events.length
    const anomalies: Anomaly[] = []
    if (n > this.#options.limits.maxBatch) {
      for (let i = 0; i < n; i++) anomalies.push({ reason: 'overflow', index: i, detail: `batch of ${n} exceeds limits.maxBatch` })
      this.#anomalies.overflow += n
      this.#counts.ingested += n
      return { accepted: 0, late: 0, duplicates: 0, beyondLateness: 0, rejected: n, anomalies, durable: DURABLE }
    }
    const now = this.#options.now()
    const frontiers: BatchFrontiers = {
      watermark: this.#frontiers.watermark,
      firing: this.#frontiers.firingFrontier(),
      lateness: this.#options.allowedLateness,
      batch: ++this.#batch,
    }
    const limits = this.#options.limits
    const indexes = this.#indexes
    const sources = this.#frontiers.sources
    let accepted = 0
    let late = 0
    let duplicates = 0
    let beyond = 0
    let lastClock: SourceClock | undefined
    const order = this.#hasSessions ? placementOrder(events) : null
    for (let k = 0; k < n; k++) {
      const i = order === null ? k : (order[k] as number)
      const event = events[i] as StreamEvent
      const reason = invalidReason(event)
      if (reason !== null) {
        this.#reject(anomalies, reason, event, i)
        continue
      }
      const { id, seq, ts, value } = event
      let clock = lastClock !== undefined && lastClock.name === event.source ? lastClock : sources.get(event.source)
      if (clock !== undefined && clock.writer !== this.replicaId) {
        this.#reject(anomalies, 'source_conflict', event, i, `source '${event.source}' is written by replica '${clock.writer}'`)
        continue
      }
      if (clock?.seen(seq, id)) {
        duplicates++
        continue
      }
      if (clock === undefined && sources.size >= limits.maxSources) {
        this.#reject(anomalies, 'overflow', event, i, `limits.maxSources (${limits.maxSources}) reached`)
        continue
      }
      if ((seq === undefined || seq !== (clock?.prefix ?? 0) + 1) && this.#dedupEntries >= limits.maxDedupEntries) {
        this.#purgeDedup(frontiers)
        if (this.#dedupEntries >= limits.maxDedupEntries) {
          this.#reject(anomalies, 'overflow', event, i, `limits.maxDedupEntries (${limits.maxDedupEntries}) reached`)
          continue
        }
      }
      const key = event.key ?? ''
      if (this.#windowCount() + this.#maxNewPerEvent > limits.maxWindows && !this.#roomFor(key, ts, frontiers)) {
        this.#reject(anomalies, 'overflow', event, i, `limits.maxWindows (${limits.maxWindows}) reached`)
        continue
      }
      // Created only once the event is accepted for placement: a refused first event
      // must not leave a clock that holds the watermark at -Infinity.
      if (clock === undefined) {
        clock = this.#frontiers.source(event.source, now)
        clock.writer = this.replicaId
      }
      lastClock = clock
      const version = clock.version + 1
      let outcome = 0
      for (let s = 0; s < indexes.length; s++) {
        const index = indexes[s] as WindowIndex
        const placed = index.place(key, clock.name, ts, value, version, frontiers, this.#lifecycle.hooks)
        if (placed & REFUSED) this.#lateLane.push({ event: copyStreamEvent(event), window: index.id, reason: 'beyond_lateness' })
        outcome |= placed
      }
      const before = clock.ahead.size + clock.ids.size
      clock.remember(seq, id, ts, now)
      this.#outbox.clock(clock)
      this.#dedupEntries += clock.ahead.size + clock.ids.size - before
      if (outcome & (ON_TIME | ADMITTED_LATE)) {
        accepted++
        if (outcome & ADMITTED_LATE) late++
      } else {
        beyond++
      }
    }
    const counts = this.#counts
    counts.ingested += n
    counts.applied += accepted
    counts.duplicates += duplicates
    counts.lateAdmitted += late
    counts.beyondLateness += beyond
    this.#anomalies.duplicate += duplicates
    this.#anomalies.beyond_lateness += beyond
    this.#frontiers.advance(now)
    this.#settle(frontiers)
    return {
      accepted,
      late,
      duplicates,
      beyondLateness: beyond,
      rejected: anomalies.length,
      anomalies,
      durable: DURABLE,
    }
  }

  advanceWatermark(t: number): void {
    this.#assertOpen()
    if (typeof t !== 'number' || Number.isNaN(t)) throw new RangeError(`advanceWatermark needs a number, got ${String(t)}`)
    if (!this.#frontiers.advanceTo(t)) return
    this.#settle(null)
  }

  tick(): void {
    this.#assertOpen()
    this.#frontiers.advance(this.#options.now())
    this.#settle(null)
  }

  results(query?: ResultQuery): readonly WindowResult[] {
    const out: WindowResult[] = []
    const from = query?.from ?? Number.NEGATIVE_INFINITY
    const to = query?.to ?? Number.POSITIVE_INFINITY
    for (const index of this.#indexes) {
      if (query?.window !== undefined && query.window !== index.id) continue
      for (const w of index.windows()) {
        if (w.emitted === null) continue
        if (query?.key !== undefined && query.key !== w.key) continue
        if (w.start < from || w.start >= to) continue
        out.push(w.emitted)
      }
    }
    return out.sort(compareResults)
  }

  history(window: string, key: string, start: number): readonly WindowResult[] {
    const index = this.#indexes.find((i) => i.id === window)
    return index?.find(key, start)?.history() ?? []
  }

  subscribe(listener: (changes: readonly WindowChange[]) => void): () => void {
    return this.#feed.subscribe(listener)
  }

  changes(): ReadableStream<readonly WindowChange[]> {
    return this.#feed.stream()
  }

  get writable(): WritableStream<readonly StreamEvent[]> {
    this.#writable ??= new WritableStream<readonly StreamEvent[]>(
      {
        write: async (batch) => {
          const receipt = this.ingest(batch)
          await receipt.durable
          const overflow = receipt.anomalies.filter((a) => a.reason === 'overflow').length
          if (overflow > 0) {
            // An erroring sink errors its stream for good; the next `writable` is a fresh one.
            this.#writable = null
            throw new OverflowError('engine', `${overflow} events of a written batch refused; resend them later`)
          }
        },
      },
      new CountQueuingStrategy({ highWaterMark: 8 }),
    )
    return this.#writable
  }

  watermark(): number {
    return this.#frontiers.watermark
  }

  lateEvents(): readonly LateEvent[] {
    return this.#lateLane.list()
  }

  syncStatus(): SyncStatus {
    return this.#syncStatus
  }

  /** The replication side of this engine (what a Yjs binding drives). */
  get replica(): ReplicaPort {
    this.#replica ??= {
      replicaId: this.replicaId,
      configuration: configurationOf(this.#options),
      onLocalWrite: (listener) => this.#outbox.listen(listener),
      mergeRemote: (cells, clocks) => this.#mergeRemote(cells, clocks),
      exportState: () => this.#exportState(),
      reportAnomaly: (reason) => {
        this.#anomalies[reason]++
      },
      setSyncStatus: (status, docBytes) => {
        this.#syncStatus = status
        this.#docBytes = docBytes
        this.#feed.publish(NO_CHANGES)
      },
    }
    return this.#replica
  }

  stats(): EngineStats {
    let cells = 0
    let pending = 0
    for (const index of this.#indexes) {
      for (const w of index.windows()) {
        cells += w.cells.size + w.fragments.length
        if (!w.fired) pending += w.count()
      }
    }
    const f = this.#frontiers
    return {
      ...this.#counts,
      corrections: this.#lifecycle.corrections,
      anomalies: { ...this.#anomalies },
      pending,
      openWindows: this.#windowCount(),
      cells,
      sources: f.sources.size,
      dedupEntries: this.#dedupEntries,
      lateLane: this.#lateLane.size,
      lateLaneTrimmed: this.#lateLane.trimmed,
      watermark: f.watermark,
      proofFrontier: f.proof,
      watermarkLag: f.maxTs > f.watermark ? f.maxTs - f.watermark : 0,
      docBytes: this.#docBytes,
      walRecords: 0,
      walBytes: 0,
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#feed.close()
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('engine is closed')
  }

  #reject(anomalies: Anomaly[], reason: AnomalyReason, event: unknown, index: number, detail?: string): void {
    const anomaly = invalidAnomaly(reason, event, index)
    anomalies.push(detail === undefined ? anomaly : { ...anomaly, detail })
    this.#anomalies[reason]++
  }

  #windowCount(): number {
    let n = 0
    for (const index of this.#indexes) n += index.size
    return n
  }

  #roomFor(key: string, ts: number, frontiers: BatchFrontiers): boolean {
    let missing = 0
    for (const index of this.#indexes) missing += index.missingWindows(key, ts, frontiers)
    return this.#windowCount() + missing <= this.#options.limits.maxWindows
  }

  /** Releases dedup memory behind the lateness horizon of every spec. */
  #purgeDedup(frontiers: BatchFrontiers): void {
    let horizon = Number.POSITIVE_INFINITY
    for (const index of this.#indexes) horizon = Math.min(horizon, index.horizon(frontiers))
    if (!Number.isFinite(horizon)) return
    for (const clock of this.#frontiers.sources.values()) this.#dedupEntries -= clock.forgetBefore(horizon)
    this.#dedupAtLastPurge = this.#dedupEntries
  }

  /** After frontiers moved: settle windows, purge dedup memory when due, publish to peers, then one notification. */
  #settle(batch: BatchFrontiers | null): void {
    const changes = this.#lifecycle.settle()
    if (batch !== null && this.#dedupEntries > 2 * this.#dedupAtLastPurge + 4096) this.#purgeDedup(batch)
    this.#outbox.flush()
    this.#feed.publish(changes)
  }

  #mergeRemote(cells: readonly CellEntry[], clocks: readonly ClockEntry[]): MergeReport {
    this.#assertOpen()
    const now = this.#options.now()
    const limits = this.#options.limits
    const conflicts = mergeRemoteClocks(this.#frontiers, clocks, this.replicaId, limits.maxSources, now)
    this.#anomalies.source_conflict += conflicts
    const frontiers = {
      watermark: this.#frontiers.watermark,
      firing: this.#frontiers.firingFrontier(),
      lateness: this.#options.allowedLateness,
      retention: this.#options.retention,
      batch: ++this.#batch,
    }
    const { invalid, ...merged } = mergeRemoteCells(this.#indexes, cells, frontiers, this.#lifecycle.hooks)
    this.#anomalies.invalid_remote_cell += invalid
    this.#counts.finalityViolations += merged.finalityViolations
    this.#frontiers.advance(now)
    this.#settle(frontiers)
    return { ...merged, conflicts }
  }

  #exportState(): { cells: CellEntry[]; clocks: ClockEntry[] } {
    const cells: CellEntry[] = []
    for (const index of this.#indexes) {
      for (const w of index.windows()) {
        for (const [source, cell] of w.cells) cells.push({ address: { window: w.window, key: w.key, start: w.start, source }, cell })
        for (const f of w.fragments) cells.push({ address: { window: w.window, key: w.key, start: f.start, source: f.source }, cell: f.cell })
      }
    }
    return { cells, clocks: [...this.#frontiers.sources.values()].map((clock) => clock.entry()) }
  }

}

/**
 * Creates an in-memory engine.
 *
 * @example
 * const engine = createEngine({ windows: tumbling(60_000), watermark: boundedOutOfOrderness(5_000), allowedLateness: 30_000 })
 * engine.subscribe((changes) => console.log(changes))
 * engine.ingest([{ id: 'a', source: 'd1', seq: 1, ts: 1_000, value: 3 }])
 */
export function createEngine(options: EngineOptions): Engine {
  return new TidemarkEngine(options)
}
