import type { AggregateDefinitions } from '../aggregates/aggregate.ts'
import type { Anomaly, AnomalyReason } from '../input/anomaly.ts'
import type { ReplicaPort } from '../replica/replicaPort.ts'
import type { StreamEvent } from '../input/event.ts'
import type { SyncStatus } from '../replica/syncStatus.ts'
import type { FutureSource } from '../input/futureSources.ts'
import type { LateEvent } from '../windows/lateLane.ts'
import type { NoAggregates, ResultQuery, WindowChange, WindowResult } from '../windows/windowResult.ts'

// What `createEngine` takes is declared with its resolution (config/), the late lane's entries
// with the lane (windows/): the layers below that read them import them from there.
export type { EngineLimits, EngineOptions } from '../config/engineOptions.ts'
export type { LateEvent } from '../windows/lateLane.ts'

/**
 * What happened to one `ingest` batch.
 * Always `accepted + duplicates + beyondLateness + rejected === events.length`, and
 * `rejected` counts the anomalies other than `conflicting_duplicate`.
 *
 * @example
 * const receipt = engine.ingest(batch)
 * for (const anomaly of receipt.anomalies) console.warn(anomaly.reason, anomaly.id)
 * await receipt.durable
 */
export interface IngestReceipt {
  /** Applied to at least one window, on time or admitted late. */
  readonly accepted: number
  /** The admitted-late part of `accepted`. */
  readonly late: number
  /**
   * Events whose `(source, seq)` (or, without `seq`, `(source, id)`) was already taken: the
   * first delivery wins and a copy changes nothing, whatever it holds. Conflicting copies
   * (see `anomalies`) are counted here too.
   */
  readonly duplicates: number
  /** Admitted by no window; kept on the late lane. */
  readonly beyondLateness: number
  /** Invalid input or refused by a full buffer (`overflow`). */
  readonly rejected: number
  /**
   * One entry per rejected event, plus one `conflicting_duplicate` per duplicate whose content
   * provably differs from the first delivery (counted in `duplicates`, not in `rejected`):
   * its `ts` differs from the one the engine still remembers for that seq or id. The engine
   * remembers the ts of events without `seq`, of seqs above a gap and of the last seq of the
   * gap-free prefix, until dedup memory releases them behind the lateness horizon; for a seq
   * inside the gap-free prefix it only knows the prefix's latest ts, so a copy is caught when
   * its ts is later than that (a producer that restarted its numbering, for example). A copy
   * that differs only in `key`, `value` or `id`, or whose first delivery left dedup memory,
   * is a plain duplicate.
   */
  readonly anomalies: readonly Anomaly[]
  /** Resolves once the batch is durable (committed to the write-ahead log, or at once without one). */
  readonly durable: Promise<void>
}

/**
 * The engine's counters (`engine.stats()`); a snapshot, not live.
 *
 * @example
 * const { ingested, applied, duplicates, watermarkLag } = engine.stats()
 */
export interface EngineStats {
  /** Inputs passed to `ingest`, valid or not. */
  readonly ingested: number
  /** Events applied to at least one window. */
  readonly applied: number
  /** Events already counted. */
  readonly duplicates: number
  /**
   * Count per reason. `duplicate` equals `duplicates`; `conflicting_duplicate` counts the part
   * of them whose content provably differed from the first delivery (see `IngestReceipt.anomalies`).
   */
  readonly anomalies: Readonly<Record<AnomalyReason, number>>
  /** Events admitted late by at least one window: each shows in a late pane (at once with the default late trigger; with another, at its deadline or at finality). */
  readonly lateAdmitted: number
  /** Events refused by every window they belong to. */
  readonly beyondLateness: number
  /** The counts of the windows that have not fired yet, summed (waiting for completeness): an event in several such windows, as in sliding ones, counts in each. */
  readonly pending: number
  /** Live windows over all specs and keys. */
  readonly openWindows: number
  /** Cells held in live state: one per source per slice (part) for tumbling, sliding and cumulating specs, one per session fragment. */
  readonly cells: number
  /** Known sources, local and learnt from peers. */
  readonly sources: number
  /** Of `sources`, those finished (`finishSource`, here or by their writer on a peer): they hold neither the watermark nor the proof frontier back. */
  readonly finishedSources: number
  /** Of `sources`, those idle (silent past `idleTimeout`) when idleness was last judged (by the last batch, merge, tick or `finishSource`). */
  readonly idleSources: number
  /** Remembered ids and out-of-order seqs (`limits.maxDedupEntries`). */
  readonly dedupEntries: number
  /** Entries on the late lane now. */
  readonly lateLane: number
  /** Late-lane entries dropped by its bound (`limits.maxLateEvents`). */
  readonly lateLaneTrimmed: number
  /** Correction changes emitted. */
  readonly corrections: number
  /** The watermark W. */
  readonly watermark: number
  /** Proof frontier P: nothing not yet seen from a known source can fall below it (docs/semantics.md). */
  readonly proofFrontier: number
  /** Largest event time seen minus the watermark (0 when nothing is held back). */
  readonly watermarkLag: number
  /**
   * The source whose clock holds the proof frontier where it is: the known source with the
   * lowest proof (a gap in its seqs, its last reading, or an event without seq or out of order
   * along seq, which proves nothing). null when `proofFrontier` is Infinity or there is no
   * source, or when a peer's clock left out past `limits.maxSources` holds it lower.
   */
  readonly proofHeldBy: string | null
  /**
   * Under `boundedOutOfOrderness`, the source the watermark waits for: of the sources neither
   * idle nor finished, the one whose latest event time is the lowest. null under a manual
   * watermark, or when every source is idle or finished.
   */
  readonly watermarkHeldBy: string | null
  /** Peers' cells that changed a window already final here (merged anyway). */
  readonly finalityViolations: number
  /** The encoded Yjs document as last measured by the binding; 0 without one. */
  readonly docBytes: number
  /** Write-ahead log records and bytes stored (an engine from `openEngine`; 0 otherwise). */
  readonly walRecords: number
  /** See `walRecords`. */
  readonly walBytes: number
  /** Last error the write-ahead log reported (quota, corruption), or null. */
  readonly persistenceError: string | null
  /** Last replication error (for example a peer with another window configuration), or null. */
  readonly replicationError: string | null
  /** The last (up to 20) anomalies found in peers' state, with details. */
  readonly remoteAnomalies: readonly string[]
  /**
   * Sources whose events were refused as `future_ts` (stamped more than `maxFutureSkew` ahead of
   * `now()`), with counts: the 20 most recently seen, least recent first.
   */
  readonly futureSources: readonly FutureSource[]
  /** Processing-time triggers armed now (at most one per live window). */
  readonly timers: number
}

/**
 * The event-time window engine; docs/semantics.md says what every result means. `A`: its
 * aggregates (the type of the `aggregates` option), which type `result.aggregates`. The member
 * examples below share this engine.
 *
 * @example
 * const engine: Engine = createEngine({ windows: tumbling(60_000), watermark: manual() })
 * const sketched = createEngine({ windows: tumbling(60_000), aggregates: { p: quantiles({ at: [0.99] }) } })
 * sketched.results()[0]?.aggregates.p // number[]
 */
export interface Engine<A extends AggregateDefinitions = NoAggregates> {
  /**
   * Applies one batch of events to their windows and says what became of each event;
   * changes reach subscribers before it returns.
   *
   * @example
   * const receipt = engine.ingest([
   *   { id: 'a', source: 'd1', ts: 1_000, key: 'temp', value: 20 },
   *   { id: 'b', source: 'd1', ts: 2_000, key: 'temp', value: 22 },
   * ])
   * receipt.accepted // 2
   */
  ingest(events: readonly StreamEvent[]): IngestReceipt
  /**
   * Moves the watermark up to `t` (never back) and fires the windows it completes; `Infinity`
   * ends event time (every window fires and turns final; later events go to the late lane).
   *
   * @example
   * engine.advanceWatermark(60_000)
   * engine.results()[0]?.status // 'on_time' (the minute [0, 60000) fired)
   */
  advanceWatermark(t: number): void
  /**
   * Finishes `source`: its writer's promise that it sends nothing more, as a device that leaves
   * the fleet for good or an upload that ended. From here on the source holds neither the
   * watermark nor the proof frontier back (when every known source finished, every window
   * fires, `proven`), its later events are refused (`finished_source`; copies of events it sent
   * still count as duplicates while dedup memory holds them), and its clock carries the promise to every peer. Only the replica
   * that writes the source can finish it. Resolves once the promise is durable in the log (at
   * once without one); while the log refuses writes, rejects and changes nothing. Finishing a
   * finished source changes nothing and answers as its first finish does, resolved once that is
   * durable; if that finish's write failed, it writes it again (the way to retry). A source its
   * writer finished on a peer is finished here too: finishing it resolves at once. Throws for a
   * name that is not one, a source another replica writes and has not finished, or a new source
   * past `limits.maxSources`.
   *
   * @example
   * engine.ingest([{ id: 'd9-1', source: 'd9', seq: 1, ts: 1_000, value: 7 }])
   * await engine.finishSource('d9') // d9 was switched off for good
   * engine.ingest([{ id: 'd9-2', source: 'd9', seq: 2, ts: 2_000, value: 8 }]).anomalies[0]?.reason // 'finished_source'
   */
  finishSource(source: string): Promise<void>
  /**
   * Whether `source` is finished here: by `finishSource` on this engine (applied, even while its
   * log record is not yet durable: `finishSource` again resolves once it is), or by its writer on
   * a peer whose clock merged here, or replayed from the log. A source never heard of is not.
   *
   * @example
   * await engine.finishSource('d9')
   * engine.isFinished('d9') // true
   * engine.isFinished('never-seen') // false
   */
  isFinished(source: string): boolean
  /**
   * Reads the processing-time clock (`now`) so that sources silent for `idleTimeout` stop holding
   * the watermark, and fires the processing-time triggers now due (`afterProcessingTime`,
   * `alignedProcessingTime`).
   *
   * @example
   * tickWhenDue(engine) // ticks at nextTickAt(), and only then
   * engine.tick() // or by hand
   */
  tick(): void
  /**
   * The processing time (on `now()`) at which `tick()` next has work, +Infinity when no tick can
   * change anything until the next ingest or merge: the earliest armed processing-time trigger,
   * or the moment a source turns idle (the first whole millisecond after its `idleTimeout` runs out). Ticking only then,
   * rather than on an interval, fires each pane on time and writes no log record for ticks that
   * change nothing. `tickWhenDue(engine)` does it for you.
   *
   * @example
   * const engine = createEngine({ windows: tumbling(60_000), trigger: { early: afterProcessingTime(1_000) }, now: () => clock })
   * engine.ingest([{ id: 'a', source: 'd1', ts: 1_000, value: 3 }]) // at clock = 5_000: arms the window's timer
   * engine.nextTickAt() // 6000
   */
  nextTickAt(): number
  /**
   * The current result of every live window matching `query`, ordered by window spec, key and start.
   *
   * @example
   * engine.results({ window: 'tumbling:60000', key: 'temp', from: 0, to: 60_000 }).map((r) => r.mean) // [21]
   */
  results(query?: ResultQuery): readonly WindowResult<A>[]
  /**
   * Called synchronously after every batch, watermark move or tick, with the window changes it caused (possibly none).
   * Returns the function that unsubscribes.
   *
   * @example
   * const unsubscribe = engine.subscribe((changes) => {
   *   for (const { type, result } of changes) console.log(type, result.key, result.mean)
   * })
   * unsubscribe()
   */
  subscribe(listener: (changes: readonly WindowChange<A>[]) => void): () => void
  /**
   * The engine watermark `W` in event-time ms (`-Infinity` before any event or move).
   *
   * @example
   * engine.watermark() // 60000
   */
  watermark(): number
  /**
   * The late lane: events no window admitted (beyond allowed lateness), oldest first, up to `limits.maxLateEvents`.
   *
   * @example
   * engine.ingest([{ id: 'c', source: 'd1', ts: 3_000, key: 'temp', value: 30 }]) // after the minute fired
   * engine.lateEvents().map((late) => late.reason) // ['beyond_lateness']
   */
  lateEvents(): readonly LateEvent[]
  /**
   * The `seq` to give the next event of `source`: 1 + the highest seq this engine has taken
   * from it, 1 for a source it has not seen. O(1).
   *
   * "Taken" means accepted, admitted late or sent to the late lane: a seq above a gap counts
   * too (reusing it would make the new event a duplicate of the old one), also once its dedup
   * memory was released. Seqs of refused events (invalid input, `overflow`) do not count:
   * those events were not taken and should be sent again with their own seq. The answer
   * survives a checkpoint and recovery by `openEngine`, so a producer that reloads resumes
   * its numbering here instead of keeping a counter of its own. For a source another replica
   * writes, it counts what that replica's clock has told this one (its gap-free prefix).
   *
   * @example
   * // after a reload: continue the tab's own source where the log left it
   * let seq = engine.nextSeq('d1')
   * engine.ingest([{ id: `d1-${seq}`, source: 'd1', seq: seq++, ts: Date.now(), key: 'temp', value: 21 }])
   * engine.nextSeq('d1') === seq // true
   * engine.nextSeq('never-seen') // 1
   */
  nextSeq(source: string): number
  /**
   * A snapshot of the engine's counters.
   *
   * @example
   * engine.stats().beyondLateness // 1
   */
  stats(): EngineStats
  /**
   * Connection state of the replication providers attached to the engine's doc.
   *
   * @example
   * engine.syncStatus().state // 'local' (no provider)
   */
  syncStatus(): SyncStatus
  /**
   * Every on-time and late pane this engine emitted for one live window, oldest first (each with
   * its `pane`). The windows of a cumulating spec share their start: `end` names one (without
   * it, the one ending last).
   *
   * @example
   * engine.history('tumbling:60000', 'temp', 0).map((r) => `${r.status} #${r.revision}`) // ['on_time #0']
   * engine.history('cumulating:86400000:3600000', 'temp', day, day + 7_200_000) // the window [day, day + 2 h)
   */
  history(window: string, key: string, start: number, end?: number): readonly WindowResult<A>[]
  /**
   * A sink for batches: each write is one `ingest`, done once its batch is durable; a write with refused (`overflow`) events
   * rejects with `OverflowError`, one the log could not make durable with the log's error (`QuotaError` for a full disk).
   *
   * @example
   * await readable.pipeTo(engine.writable)
   */
  readonly writable: WritableStream<readonly StreamEvent[]>
  /**
   * The batches `subscribe` sees, as a stream; a reader that falls too far behind gets an `OverflowError`.
   *
   * @example
   * const reader = engine.changes().getReader()
   * const { value: changes } = await reader.read()
   */
  changes(): ReadableStream<readonly WindowChange<A>[]>
  /**
   * The replication side (what a Yjs binding or another transport drives).
   *
   * @example
   * const binding = bindDoc(engine, new Y.Doc()) // from @tidemark/yjs
   */
  readonly replica: ReplicaPort
  /**
   * Stops the engine: detaches it from its doc, drops subscribers and ends `changes()` streams
   * (an engine from `openEngine` also writes a last checkpoint and closes its log). Later calls throw `engine is closed`.
   *
   * @example
   * await engine.close()
   */
  close(): Promise<void>
}
