import type { AnomalyReason } from '../input/anomaly.ts'
import type { IngestReceipt, LateEvent } from '../core/engineApi.ts'
import type { StreamEvent } from '../input/event.ts'
import type { FutureSource } from '../input/futureSources.ts'
import type { OrderedEvent } from './eventOrder.ts'
import type { WatermarkStrategy } from '../time/watermarkStrategy.ts'

/**
 * Options of `createOrderedStream`; all optional.
 *
 * @example
 * createOrderedStream({ watermark: boundedOutOfOrderness(5_000), allowedLateness: 60_000, batchSize: 500, onLate: 'drop' })
 */
export interface OrderedStreamOptions {
  /** Default `boundedOutOfOrderness(0)`. */
  readonly watermark?: WatermarkStrategy
  /**
   * Processing-time ms after which a silent source stops holding the watermark; default Infinity.
   * Once every source is idle, the watermark goes where the sources heard from last held it, as the
   * engine's does (docs/semantics.md, "Idle sources").
   */
  readonly idleTimeout?: number
  /** Event-time ms below the watermark within which a late event is still emitted as a correction; default 0. */
  readonly allowedLateness?: number
  /** Most events in one emitted batch; default 1,000. */
  readonly batchSize?: number
  /** What happens to an event for a range already released (`ts < W` at arrival); default `'emit_correction'`. */
  readonly onLate?: 'emit_correction' | 'drop'
  /** Processing-time clock; default `Date.now`. */
  readonly now?: () => number
  /**
   * Processing-time ms an event's `ts` may be ahead of `now()`, as the engine's option: a later
   * one is refused with `future_ts` (the anomaly carries a copy of the event) and leaves no trace,
   * so a device whose clock is a year ahead cannot move `W` a year forward and send every present
   * reading to the late lane. Default 86,400,000 (a day); Infinity accepts any; a `now()` reading
   * no finite time (NaN, an infinity) refuses nothing. Keep it small next to `allowedLateness` (docs/semantics.md, clock skew).
   *
   * @example
   * createOrderedStream({ watermark: boundedOutOfOrderness(5_000), maxFutureSkew: 60_000 }) // a minute of clock drift at most
   */
  readonly maxFutureSkew?: number
  /** Events held (waiting plus corrections not yet flushed); beyond it `push` refuses with `overflow`. Default 1,000,000. */
  readonly maxPending?: number
  /** Remembered ids and out-of-order seqs across sources; default 1,000,000. */
  readonly maxDedupEntries?: number
  /** Entries kept on the late lane; older ones are trimmed and counted. Default 10,000. */
  readonly maxLateEvents?: number
  /** Known sources; default 100,000. */
  readonly maxSources?: number
}

/** One emitted batch: events in order, at most `batchSize` of them. */
export interface OrderedBatch {
  /** `ready`: released by the watermark; `correction`: arrived late for an already released range. */
  readonly kind: 'ready' | 'correction'
  readonly events: readonly OrderedEvent[]
}

/** Work done by the pending buffer, in comparisons and element moves (not time). */
export interface OrderedStreamWork {
  readonly pushComparisons: number
  readonly pushMoves: number
  /** Includes sorting the corrections of each flush. */
  readonly flushComparisons: number
  readonly flushMoves: number
}

/**
 * The ordered stream's counters and gauges (`stream.stats()`); a snapshot.
 *
 * @example
 * const { pending, oldestPendingAge, lateLane } = stream.stats()
 */
export interface OrderedStreamStats {
  /** Events passed to `push`. */
  readonly pushed: number
  /** Held for emission: waiting for the watermark, or admitted late as a correction. */
  readonly accepted: number
  /** The admitted-late part of `accepted`. */
  readonly lateAdmitted: number
  readonly duplicates: number
  /** Put on the late lane (beyond lateness, or `onLate: 'drop'`). */
  readonly beyondLateness: number
  /** Invalid, stamped too far ahead (`future_ts`), of a finished source (`finished_source`), or refused by a full bound (`overflow`). */
  readonly rejected: number
  readonly anomalies: Readonly<Record<AnomalyReason, number>>
  /**
   * Sources whose events were refused as `future_ts` (stamped more than `maxFutureSkew` ahead of
   * `now()`), with counts: the 20 most recently seen, least recent first.
   */
  readonly futureSources: readonly FutureSource[]
  /** Events waiting for the watermark. */
  readonly pending: number
  /** Late events admitted and waiting for the next `flushReady`. */
  readonly pendingCorrections: number
  readonly peakPending: number
  /**
   * Processing-time ms since the oldest still-held event arrived; 0 when none is held, or while
   * the clock reads NaN or an infinity (an event pushed while it read one arrived at the next
   * finite reading).
   */
  readonly oldestPendingAge: number
  /** `flushReady` calls. */
  readonly flushes: number
  readonly readyEmitted: number
  readonly correctionsEmitted: number
  readonly readyBatches: number
  readonly correctionBatches: number
  /** Mean emitted batch size divided by `batchSize`: 1 when every batch is full, near 0 when flushes emit crumbs. */
  readonly batchFragmentation: number
  /** Times the pending buffer's storage was shrunk after a backlog drained. */
  readonly compactions: number
  readonly dedupEntries: number
  /** Dedup entries released below finality. */
  readonly dedupReleased: number
  readonly lateLane: number
  readonly lateLaneTrimmed: number
  readonly sources: number
  readonly watermark: number
  /** `watermark - allowedLateness`: nothing below it can be emitted any more. */
  readonly finality: number
  /** Proof frontier P: nothing not yet seen from a known source can fall below it (docs/semantics.md). */
  readonly proofFrontier: number
  /** Largest event time seen minus the watermark (0 when nothing is held back). */
  readonly watermarkLag: number
  readonly work: OrderedStreamWork
}

/**
 * Events in a deterministic total order, released by the watermark (docs/semantics.md, the ordered event stream).
 *
 * @example
 * const stream = createOrderedStream({ watermark: boundedOutOfOrderness(5_000), allowedLateness: 60_000 })
 * stream.push(batch)
 * for (const { kind, events } of stream.flushReady()) (kind === 'ready' ? timeline.append : timeline.amend)(events)
 */
export interface OrderedStream {
  /**
   * Validates, dedups and classifies one batch against the watermark as it stood before the call;
   * the watermark moves after it. `accepted + duplicates + beyondLateness + rejected === events.length`;
   * a duplicate whose content provably differs from the first delivery also gets a
   * `conflicting_duplicate` anomaly, as in `engine.ingest`. An event stamped more than
   * `maxFutureSkew` ahead of `now()` is refused with `future_ts` before anything else looks at it.
   * The stream refuses calls from inside `push` (an event's getter calling it): they throw, and
   * the event whose getter threw is refused as `invalid_event`.
   *
   * @example
   * const receipt = stream.push(events)
   * if (receipt.anomalies.some((a) => a.reason === 'overflow')) retryLater(events)
   */
  push(events: readonly StreamEvent[]): IngestReceipt
  /**
   * Moves the watermark forward (never back); meant for the `manual()` strategy.
   *
   * @example
   * stream.advanceWatermark(Date.parse('2026-01-01T00:00:00Z'))
   */
  advanceWatermark(t: number): void
  /**
   * Finishes `source`: a promise that it sends nothing more (a device retired, an upload that
   * ended). It stops holding the watermark back, so what it held is released at the next
   * `flushReady()`, and its later events are refused as `finished_source` (a copy of an event it
   * sent before stays a duplicate while dedup memory holds it). When every source finished, `advanceWatermark(Infinity)`
   * releases the rest. Throws for a name that is not one, or a new source past `maxSources`.
   *
   * @example
   * stream.finishSource('d9') // d9 was switched off for good
   */
  finishSource(source: string): void
  /**
   * Emits every held event with `ts < W` in order (`ready` batches), then the corrections admitted
   * since the last flush (`correction` batches, in order among themselves). Re-checks idle sources first.
   *
   * @example
   * for (const batch of stream.flushReady()) send(batch.kind, batch.events)
   */
  flushReady(): readonly OrderedBatch[]
  /**
   * Events held: waiting for the watermark plus corrections not yet flushed.
   *
   * @example
   * if (stream.pending() > 100_000) showBacklogWarning()
   */
  pending(): number
  /**
   * Events refused as late (beyond lateness, or `onLate: 'drop'`), oldest first, bounded.
   *
   * @example
   * const refused = stream.lateEvents().map((l) => l.event.id)
   */
  lateEvents(): readonly LateEvent[]
  /**
   * Counters and gauges, including the work the pending buffer did.
   *
   * @example
   * const { pending, oldestPendingAge, batchFragmentation } = stream.stats()
   */
  stats(): OrderedStreamStats
  /**
   * `W - allowedLateness`: once the events held when `W` last moved are flushed, nothing below
   * it can be emitted any more (until then `flushReady()` can still return held events and
   * corrections below it). Dedup memory below it is released by pushes (amortized: when it
   * doubled, or when its bound is reached), never by a flush.
   *
   * @example
   * archive.append(stream.flushReady())
   * archive.sealBefore(stream.finality())
   */
  finality(): number
  /**
   * The watermark W: events with `ts < W` are ready.
   *
   * @example
   * const lagMs = Date.now() - stream.watermark()
   */
  watermark(): number
}
