import { DedupMemory } from '../windows/dedupMemory.ts'
import { type Anomaly, type AnomalyReason, emptyAnomalyCounts } from '../input/anomaly.ts'
import { type Arrival, ArrivalQueue } from './arrivalQueue.ts'
import type { IngestReceipt, LateEvent } from '../core/engineApi.ts'
import type { StreamEvent } from '../input/event.ts'
import { elementOrUnreadable, readInputOnce, refusal, safeInvalidReason, UNREADABLE } from '../input/inputRejection.ts'
import { type PendingEvent, toPendingEvent } from './eventOrder.ts'
import { Frontiers } from '../time/frontiers.ts'
import { finishableClock, finishedDetail } from '../time/sourceFinish.ts'
import { FutureSources, latestAdmittedTs } from '../input/futureSources.ts'
import { LateLane } from '../windows/lateLane.ts'
import type { OrderedBatch, OrderedStream, OrderedStreamOptions, OrderedStreamStats } from './orderedStreamApi.ts'
import { type ResolvedOrderedStreamOptions, resolveOrderedStreamOptions } from './orderedStreamOptions.ts'
import { OrderProof } from '../time/orderProof.ts'
import { emitCorrections, emitReady } from './orderedEmission.ts'
import { PendingBuffer } from './pendingBuffer.ts'
import type { SourceClock } from '../time/sourceClock.ts'

const DURABLE: Promise<void> = Promise.resolve()
const NO_ANOMALIES: readonly Anomaly[] = Object.freeze([])
const NO_BATCHES: readonly OrderedBatch[] = Object.freeze([])

/**
 * The ordered event stream (docs/semantics.md), on the engine's shared validation, source clocks,
 * frontiers and late lane. Created with `createOrderedStream(options)`.
 *
 * Classification follows the engine's rule that frontiers move between batches: every event of one `push` is judged against the watermark
 * as it stood before the call. `ts >= W`: it waits in the pending buffer until `ts < W`.
 * `ts < W` (its range was already released): a correction when `onLate` is `'emit_correction'`
 * and `ts >= W - allowedLateness`, otherwise the late lane. So what is emitted, and as which
 * kind, depends on pushes and watermark moves only. With `idleTimeout`, `flushReady` reads
 * `now()` as the engine's `tick()` does (idle sources stop holding the watermark), so a flush
 * can move the watermark that later pushes are judged against.
 * The member examples below continue one stream; `OrderedStream` documents each member in full.
 *
 * @example
 * const stream = new OrderedEventStream({ watermark: manual(), allowedLateness: 5_000 })
 */
export class OrderedEventStream implements OrderedStream {
  readonly #options: ResolvedOrderedStreamOptions
  readonly #frontiers: Frontiers
  readonly #proof = new OrderProof()
  readonly #buffer = new PendingBuffer()
  readonly #arrivals = new ArrivalQueue()
  #corrections: PendingEvent[] = []
  #correctionArrivals: Arrival[] = []
  readonly #lateLane: LateLane
  readonly #anomalies = emptyAnomalyCounts()
  readonly #dedup = new DedupMemory()
  readonly #futureSources = new FutureSources()
  #peakPending = 0
  readonly #counts = {
    pushed: 0,
    accepted: 0,
    lateAdmitted: 0,
    duplicates: 0,
    beyondLateness: 0,
    rejected: 0,
    flushes: 0,
    readyEmitted: 0,
    correctionsEmitted: 0,
    readyBatches: 0,
    correctionBatches: 0,
    dedupReleased: 0,
  }
  readonly #work = { pushComparisons: 0, pushMoves: 0, flushComparisons: 0, flushMoves: 0 }
  /**
   * True while `push` reads and applies its batch, which runs user code (an event's getters, a
   * Proxy over the array) with the batch half applied and the watermark it judges against read
   * already: a call of the stream from there is refused (`#assertOutsidePush`).
   */
  #pushing = false

  /**
   * Same as `createOrderedStream(options)`.
   *
   * @example
   * new OrderedEventStream().watermark() // -Infinity (default bounded strategy, no event yet)
   */
  constructor(options?: OrderedStreamOptions) {
    this.#options = resolveOrderedStreamOptions(options)
    this.#frontiers = new Frontiers(this.#options.watermark, this.#options.idleTimeout)
    this.#lateLane = new LateLane(this.#options.maxLateEvents)
  }

  /**
   * Validates, dedups and classifies one batch (see `OrderedStream.push`).
   *
   * @example
   * stream.push([{ id: 'b', source: 'd1', seq: 2, ts: 2_000, value: 1 }, { id: 'a', source: 'd1', seq: 1, ts: 1_000, value: 1 }]).accepted // 2
   */
  push(events: readonly StreamEvent[]): IngestReceipt {
    this.#assertOutsidePush()
    this.#pushing = true
    try {
      return this.#pushBatch(events)
    } finally {
      this.#pushing = false
    }
  }

  /** `push`, with calls of the stream from inside refused. */
  #pushBatch(events: readonly StreamEvent[]): IngestReceipt {
    if (!Array.isArray(events)) throw new TypeError('push expects an array of events')
    const options = this.#options
    const now = options.now()
    const watermark = this.#frontiers.watermark
    const horizon = watermark - options.allowedLateness
    // Later than this is stamped too far ahead of the clock.
    const future = latestAdmittedTs(now, options.maxFutureSkew)
    const admitLate = options.onLate === 'emit_correction'
    const sources = this.#frontiers.sources
    const buffer = this.#buffer
    const comparisons = buffer.comparisons
    const moves = buffer.moves
    const n = events.length
    let anomalies: Anomaly[] | null = null
    let arrival: Arrival | null = null
    let accepted = 0
    let late = 0
    let duplicates = 0
    let conflicting = 0
    let beyond = 0
    let lastClock: SourceClock | undefined
    for (let i = 0; i < n; i++) {
      // Each element read once, here: one that throws when read (a Proxy over an array) is refused,
      // not thrown halfway with the inputs before it applied and never counted. Read as it comes,
      // not into an array of the batch first: that was an allocation per push.
      const element = elementOrUnreadable(events, i)
      const event = (element === UNREADABLE ? UNREADABLE : readInputOnce(element)) as StreamEvent
      const unreadable = (event as unknown) === UNREADABLE
      const reason = unreadable ? 'invalid_event' : safeInvalidReason(event)
      if (reason !== null) {
        anomalies ??= []
        // An input that could not be read is described from the element itself, when it can be had.
        anomalies.push(this.#refuse(reason, unreadable ? elementOrUnreadable(events, i) : event, i))
        continue
      }
      const { id, seq, ts } = event
      // Before anything else looks at it, as the engine judges it: it leaves no clock, dedup memory or frontier move.
      if (ts > future) {
        anomalies ??= []
        anomalies.push(this.#futureSources.refuse(event, i, now, options.maxFutureSkew, this.#anomalies))
        continue
      }
      let clock = lastClock !== undefined && lastClock.name === event.source ? lastClock : sources.get(event.source)
      if (clock === undefined && sources.size >= options.maxSources) {
        anomalies ??= []
        anomalies.push(this.#refuse('overflow', event, i, `maxSources (${options.maxSources}) reached`))
        continue
      }
      if (clock?.seen(seq, id)) {
        duplicates++
        const conflict = clock.conflict(event)
        if (conflict !== null) {
          anomalies ??= []
          anomalies.push({ reason: 'conflicting_duplicate', index: i, id, source: event.source, detail: conflict })
          this.#anomalies.conflicting_duplicate++
          conflicting++
        }
        continue
      }
      if (clock?.finished === true) {
        anomalies ??= []
        anomalies.push(this.#refuse('finished_source', event, i, finishedDetail(event.source)))
        continue
      }
      if ((seq === undefined || seq !== (clock?.prefix ?? 0) + 1) && this.#dedup.entries >= options.maxDedupEntries) {
        this.#releaseDedup()
        if (this.#dedup.entries >= options.maxDedupEntries) {
          anomalies ??= []
          anomalies.push(this.#refuse('overflow', event, i, `maxDedupEntries (${options.maxDedupEntries}) reached`))
          continue
        }
      }
      const onTime = ts >= watermark
      if (onTime || (admitLate && ts >= horizon)) {
        if (buffer.size + this.#corrections.length >= options.maxPending) {
          anomalies ??= []
          anomalies.push(this.#refuse('overflow', event, i, `maxPending (${options.maxPending}) reached`))
          continue
        }
        arrival ??= this.#arrivals.open(now)
        if (onTime) {
          buffer.push(toPendingEvent(event, 'unknown'), arrival)
        } else {
          this.#corrections.push(toPendingEvent(event, 'unknown'))
          this.#correctionArrivals.push(arrival)
          arrival.remaining++
          late++
        }
        accepted++
      } else {
        this.#lateLane.keep(event)
        beyond++
      }
      // Created only for an applied event: a source whose first event was refused must not hold
      // the watermark at -Infinity (with a full buffer, that would never drain).
      clock ??= this.#frontiers.source(event.source, now)
      lastClock = clock
      const before = clock.dedupEntries()
      clock.lastSeen = now
      this.#proof.record(clock, event)
      this.#frontiers.changes.note(clock)
      this.#dedup.remembered(clock.dedupEntries() - before, ts)
    }
    const rejected = anomalies === null ? 0 : anomalies.length - conflicting
    const counts = this.#counts
    counts.pushed += n
    counts.accepted += accepted
    counts.lateAdmitted += late
    counts.duplicates += duplicates
    counts.beyondLateness += beyond
    counts.rejected += rejected
    this.#anomalies.duplicate += duplicates
    this.#anomalies.beyond_lateness += beyond
    this.#work.pushComparisons += buffer.comparisons - comparisons
    this.#work.pushMoves += buffer.moves - moves
    const held = buffer.size + this.#corrections.length
    if (held > this.#peakPending) this.#peakPending = held
    this.#arrivals.heard(now)
    this.#frontiers.advance(now)
    // Here, not in flushReady: what is remembered (so which copies are duplicates) must follow
    // pushes and watermark moves only, never when the stream was flushed.
    if (this.#dedup.due) this.#releaseDedup()
    return { accepted, late, duplicates, beyondLateness: beyond, rejected, anomalies: anomalies ?? NO_ANOMALIES, durable: DURABLE }
  }

  /**
   * Moves the watermark forward, never back (see `OrderedStream.advanceWatermark`).
   *
   * @example
   * stream.advanceWatermark(10_000)
   */
  advanceWatermark(t: number): void {
    this.#assertOutsidePush()
    if (typeof t !== 'number' || Number.isNaN(t)) throw new RangeError(`advanceWatermark needs a number, got ${String(t)}`)
    this.#frontiers.advanceTo(t)
  }

  /**
   * Finishes a source: it stops holding the watermark, and its later events are refused (see `OrderedStream.finishSource`).
   *
   * @example
   * stream.finishSource('d9') // d9 was switched off for good
   */
  finishSource(source: string): void {
    this.#assertOutsidePush()
    const now = this.#options.now()
    const clock = finishableClock(this.#frontiers, source, '', this.#options.maxSources, 'maxSources') ?? this.#frontiers.source(source, now)
    clock.finish()
    this.#arrivals.heard(now)
    this.#frontiers.advance(now)
  }

  /**
   * Emits held events below the watermark in order, then pending corrections (see `OrderedStream.flushReady`).
   *
   * @example
   * stream.flushReady().map((b) => [b.kind, b.events.map((e) => e.id)]) // [['ready', ['a', 'b']]]
   */
  flushReady(): readonly OrderedBatch[] {
    this.#assertOutsidePush()
    // Read first: a reading that is not a number throws before the flush changes anything.
    const now = this.#options.now()
    this.#counts.flushes++
    this.#arrivals.heard(now)
    // Between batches: idle sources stop holding the watermark from here.
    this.#frontiers.advance(now)
    const buffer = this.#buffer
    const comparisons = buffer.comparisons
    const moves = buffer.moves
    const batches: OrderedBatch[] = []
    const watermark = this.#frontiers.watermark
    const { batchSize } = this.#options
    const counts = this.#counts
    if (buffer.peekTs() < watermark) {
      const emitted = emitReady(buffer, watermark, batchSize, this.#frontiers.sources, this.#proof, batches)
      counts.readyEmitted += emitted
      counts.readyBatches += Math.ceil(emitted / batchSize)
    }
    this.#work.flushComparisons += buffer.comparisons - comparisons
    this.#work.flushMoves += buffer.moves - moves
    const corrections = this.#corrections
    if (corrections.length > 0) {
      for (const arrival of this.#correctionArrivals) arrival.remaining--
      this.#corrections = []
      this.#correctionArrivals = []
      this.#work.flushComparisons += emitCorrections(corrections, batchSize, this.#frontiers.sources, this.#proof, batches)
      this.#work.flushMoves += corrections.length
      counts.correctionsEmitted += corrections.length
      counts.correctionBatches += Math.ceil(corrections.length / batchSize)
    }
    return batches.length === 0 ? NO_BATCHES : batches
  }

  /**
   * Events held: waiting for the watermark plus corrections not yet flushed.
   *
   * @example
   * stream.pending() // 0 after the flush above
   */
  pending(): number {
    return this.#buffer.size + this.#corrections.length
  }

  /**
   * Events refused as late, oldest first, bounded by `maxLateEvents`.
   *
   * @example
   * stream.push([{ id: 'd', source: 'd1', seq: 4, ts: 1_000, value: 1 }]) // below finality (5000)
   * stream.lateEvents().map((l) => l.reason) // ['beyond_lateness']
   */
  lateEvents(): readonly LateEvent[] {
    return this.#lateLane.list()
  }

  /**
   * The watermark W: events with `ts < W` are ready.
   *
   * @example
   * stream.watermark() // 10000
   */
  watermark(): number {
    return this.#frontiers.watermark
  }

  /**
   * `W - allowedLateness`: after the next `flushReady()`, nothing below it can be emitted any more.
   *
   * @example
   * stream.finality() // 5000
   */
  finality(): number {
    return this.#frontiers.watermark - this.#options.allowedLateness
  }

  /**
   * Counters and gauges (see `OrderedStreamStats`).
   *
   * @example
   * const { pushed, accepted, beyondLateness } = stream.stats()
   */
  stats(): OrderedStreamStats {
    const counts = this.#counts
    const f = this.#frontiers
    const batches = counts.readyBatches + counts.correctionBatches
    const emitted = counts.readyEmitted + counts.correctionsEmitted
    const now = this.#options.now()
    this.#arrivals.heard(now)
    const oldest = this.#arrivals.oldest()
    // Not finite while the clock reads NaN or an infinity (or has read nothing finite since the oldest arrived): 0 then.
    const age = oldest === null ? 0 : now - oldest
    const oldestPendingAge = Number.isFinite(age) ? Math.max(0, age) : 0
    return {
      ...counts,
      anomalies: { ...this.#anomalies },
      futureSources: this.#futureSources.list(),
      pending: this.#buffer.size,
      pendingCorrections: this.#corrections.length,
      peakPending: this.#peakPending,
      oldestPendingAge,
      batchFragmentation: batches === 0 ? 0 : emitted / batches / this.#options.batchSize,
      compactions: this.#buffer.compactions,
      dedupEntries: this.#dedup.entries,
      lateLane: this.#lateLane.size,
      lateLaneTrimmed: this.#lateLane.trimmed,
      sources: f.sources.size,
      watermark: f.watermark,
      finality: this.finality(),
      proofFrontier: f.proof,
      watermarkLag: f.maxTs > f.watermark ? f.maxTs - f.watermark : 0,
      work: { ...this.#work },
    }
  }

  /**
   * Throws when called from inside `push` (an event's getter calling the stream): a flush there
   * would release events the batch then places behind them as on time, and a push would be
   * judged against a watermark the outer batch no longer holds. The getter's throw refuses its
   * event (`invalid_event`); the rest of the batch is applied.
   */
  #assertOutsidePush(): void {
    if (this.#pushing) throw new Error('ordered stream called from inside its own push (by a getter of an event being pushed): call it once push returned')
  }

  /**
   * Releases dedup memory below finality: a copy of such an event can only land on the late
   * lane, never be emitted twice. One pass over remembered entries, so it runs only when they
   * doubled since the last release (amortized O(1) per event) or a bound is reached. With the
   * bound reached, every event that needs an entry asks for a release: one that can free
   * nothing (finality did not move, and nothing below it was remembered since) skips the pass,
   * or a full memory would cost a pass over all of it per refused event.
   */
  #releaseDedup(): void {
    this.#counts.dedupReleased += this.#dedup.release(this.finality(), this.#frontiers.sources.values())
  }

  #refuse(reason: AnomalyReason, event: unknown, index: number, detail?: string): Anomaly {
    this.#anomalies[reason]++
    return refusal(reason, event, index, detail)
  }
}

/**
 * Creates an ordered event stream: events come out in the total order `(ts, source, seq, id)`
 * once the watermark passes them, in batches of at most `batchSize`.
 *
 * @example
 * const stream = createOrderedStream({ watermark: manual(), allowedLateness: 5_000, batchSize: 500 })
 * stream.push([{ id: 'b', source: 'd1', seq: 2, ts: 2_000, value: 1 }, { id: 'a', source: 'd1', seq: 1, ts: 1_000, value: 1 }])
 * stream.advanceWatermark(10_000)
 * for (const batch of stream.flushReady()) render(batch.kind, batch.events) // 'ready', [a, b]
 */
export function createOrderedStream(options?: OrderedStreamOptions): OrderedStream {
  return new OrderedEventStream(options)
}
