import { type Anomaly, type AnomalyReason, emptyAnomalyCounts } from './anomaly.ts'
import { ChangeFeed } from './changeFeed.ts'
import type { Engine, EngineOptions, EngineStats, IngestReceipt, LateEvent, SyncStatus } from './engineApi.ts'
import { indexFor, type ResolvedOptions, resolveOptions } from './engineOptions.ts'
import { copyStreamEvent, invalidAnomaly, invalidReason, type StreamEvent } from './event.ts'
import { compareEventOrder } from './eventOrder.ts'
import { EventTimeQueue } from './eventTimeQueue.ts'
import { Frontiers } from './frontiers.ts'
import { LateLane } from './lateLane.ts'
import { OverflowError } from './overflowError.ts'
import type { SourceClock } from './sourceClock.ts'
import { ADMITTED_LATE, type BatchFrontiers, ON_TIME, REFUSED, type WindowHooks, type WindowIndex } from './windowIndex.ts'
import type { Basis, ResultQuery, WindowChange, WindowResult } from './windowResult.ts'
import type { WindowState } from './windowState.ts'

const DURABLE: Promise<void> = Promise.resolve()
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
  /** Windows not yet fired, by end. */
  readonly #unfired = new EventTimeQueue<WindowState>()
  /** Fired windows not yet final, by end + allowedLateness. */
  readonly #unfinal = new EventTimeQueue<WindowState>()
  /** Final windows waiting to leave live state, by end + allowedLateness + retention. */
  readonly #expiring = new EventTimeQueue<WindowState>()
  #batch = 0
  #touched: WindowState[] = []
  #changes: WindowChange[] = []
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
    corrections: 0,
    finalityViolations: 0,
  }
  readonly #anomalies = emptyAnomalyCounts()
  readonly #hooks: WindowHooks = {
    created: (w) => {
      if (w.fired) {
        // Born past the firing frontier: record how that frontier knew, before it moves.
        w.basis = this.#basis(w.end)
        w.basisEnd = w.end
        this.#unfinal.push(w.end + this.#options.allowedLateness, w)
      } else this.#unfired.push(w.end, w)
    },
    touched: (w) => {
      this.#touched.push(w)
    },
    grown: (w) => {
      if (w.fired) this.#unfinal.push(w.end + this.#options.allowedLateness, w)
      else this.#unfired.push(w.end, w)
    },
    swallowed: (w) => {
      if (w.emitted !== null) this.#changes.push({ type: 'retract', result: w.emitted })
    },
  }

  constructor(options: EngineOptions) {
    this.#options = resolveOptions(options)
    this.#indexes = this.#options.specs.map(indexFor)
    this.#maxNewPerEvent = this.#indexes.reduce((n, index) => n + index.maxNewPerEvent, 0)
    this.#hasSessions = this.#options.specs.some((spec) => spec.kind === 'session')
    this.#frontiers = new Frontiers(this.#options.watermark, this.#options.idleTimeout)
    this.#lateLane = new LateLane(this.#options.limits.maxLateEvents)
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
      clock ??= this.#frontiers.source(event.source, now)
      lastClock = clock
      let outcome = 0
      for (let s = 0; s < indexes.length; s++) {
        const index = indexes[s] as WindowIndex
        const placed = index.place(key, clock.name, ts, value, frontiers, this.#hooks)
        if (placed & REFUSED) this.#lateLane.push({ event: copyStreamEvent(event), window: index.id, reason: 'beyond_lateness' })
        outcome |= placed
      }
      const before = clock.ahead.size + clock.ids.size
      clock.remember(seq, id, ts, now)
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
    return out.sort(byWindowKeyStart)
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
    return LOCAL_SYNC
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
      docBytes: 0,
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

  #basis(end: number): Basis {
    const f = this.#frontiers
    if (f.proof >= end) return 'proven'
    if (f.strictWatermark >= end) return 'derived'
    if (f.watermark >= end) return 'fallback'
    return 'unknown'
  }

  /** After frontiers moved: corrections, firings, provisional updates, finality and expiry, then one notification. */
  #settle(batch: BatchFrontiers | null): void {
    const changes = this.#changes
    const lateness = this.#options.allowedLateness
    const W = this.#frontiers.watermark
    const F = this.#frontiers.firingFrontier()
    const historyLimit = this.#options.historyLimit
    const provisional: WindowState[] = []
    for (const w of this.#touched) {
      if (!w.live) continue
      if (!w.fired) {
        provisional.push(w)
        continue
      }
      const revision = Math.max(w.revision + 1, 1)
      const final = w.end + lateness <= W
      let basis = this.#basis(w.end)
      if (basis === 'unknown' && w.end <= w.basisEnd) basis = w.basis
      const result = w.result('corrected', revision, final, basis)
      const previous = w.emitted
      changes.push(previous === null ? { type: 'correction', result } : { type: 'correction', result, previous })
      w.revision = revision
      w.remember(result, historyLimit)
      this.#counts.corrections++
    }
    this.#touched = []
    while (this.#unfired.peekAt() <= F) {
      const w = this.#unfired.pop()
      if (!w.live || w.fired || w.end > F) continue
      w.fired = true
      w.revision = 0
      w.basis = this.#basis(w.end)
      w.basisEnd = w.end
      const final = w.end + lateness <= W
      const result = w.result('on_time', 0, final, w.basis)
      changes.push({ type: 'on_time', result })
      w.remember(result, historyLimit)
      if (final) this.#markFinal(w)
      else this.#unfinal.push(w.end + lateness, w)
    }
    for (const w of provisional) {
      if (w.fired || !w.live) continue
      const result = w.result('provisional', 0, false, 'unknown')
      changes.push({ type: 'provisional', result })
      w.remember(result, historyLimit)
    }
    while (this.#unfinal.peekAt() <= W) {
      const w = this.#unfinal.pop()
      if (!w.live || w.final || w.end + lateness > W) continue
      const emitted = w.emitted
      if (emitted !== null) {
        // A session that grew past what was known gets its basis back: W passed end + lateness.
        const basis = emitted.basis === 'unknown' ? this.#basis(w.end) : emitted.basis
        const result: WindowResult = { ...emitted, final: true, basis }
        changes.push({ type: 'final', result })
        w.emitted = result
      }
      this.#markFinal(w)
    }
    const retention = this.#options.retention
    while (this.#expiring.peekAt() <= W) {
      const w = this.#expiring.pop()
      if (!w.live || w.end + lateness + retention > W) continue
      const index = this.#indexes.find((i) => i.id === w.window)
      index?.remove(w)
    }
    if (batch !== null && this.#dedupEntries > 2 * this.#dedupAtLastPurge + 4096) this.#purgeDedup(batch)
    this.#changes = []
    this.#feed.publish(changes)
  }

  #markFinal(w: WindowState): void {
    w.final = true
    this.#expiring.push(w.end + this.#options.allowedLateness + this.#options.retention, w)
  }
}

/**
 * Positions of a batch in the deterministic event order (ts, source, seq, id); invalid
 * inputs first, by position. Used only with session specs, where which session an event
 * joins depends on the events placed before it.
 */
function placementOrder(events: readonly StreamEvent[]): number[] {
  const order = Array.from({ length: events.length }, (_, i) => i)
  const valid = events.map((e) => invalidReason(e) === null)
  return order.sort((a, b) => {
    const va = valid[a] as boolean
    const vb = valid[b] as boolean
    if (!va || !vb) return va === vb ? a - b : va ? 1 : -1
    return compareEventOrder(events[a] as StreamEvent, events[b] as StreamEvent) || a - b
  })
}

function byWindowKeyStart(a: WindowResult, b: WindowResult): number {
  if (a.window !== b.window) return a.window < b.window ? -1 : 1
  if (a.key !== b.key) return a.key < b.key ? -1 : 1
  return a.start - b.start
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
