import type {
  AggregateDefinitions,
  EngineStats,
  IngestReceipt,
  LateEvent,
  NoAggregates,
  ObservedEngine,
  ResultQuery,
  StreamEvent,
  SyncStatus,
  WindowChange,
  WindowResult,
} from '@tidemark/engine'
import type { RecoveryReport } from '@tidemark/idb'
import type { HostMode } from '../protocol/messages.ts'

/**
 * Where a page stands with the engine's host.
 *
 * @example
 * const { mode, state, leader, takeovers } = engine.connection()
 * badge.textContent = state === 'connected' ? `${mode} host` : 'looking for the host…'
 */
export interface WorkerConnection {
  /** `shared`: a SharedWorker; `leader`: a leader tab's worker; `single`: this tab's own worker. */
  readonly mode: HostMode
  /**
   * `connected`: a host welcomed this page; `reconnecting`: the host went away and the next one
   * has not welcomed it yet (reads show the last state, batches wait); `failed`: no host can
   * serve this page (see `reason`), and it stops looking for one for good; `closed`: `close()` was called.
   */
  readonly state: 'connected' | 'reconnecting' | 'failed' | 'closed'
  /** This tab runs the host's worker (leader mode: it leads; single mode: always). */
  readonly leader: boolean
  /** The host instance now (every tab of the origin sees the same). */
  readonly instance: string
  /** The log's writer epoch of that host. */
  readonly epoch: number
  /** Hosts this page moved to after its first (each a takeover). */
  readonly takeovers: number
  /** ms from losing the last host to the next one's welcome; null before any takeover. */
  readonly lastTakeoverMs: number | null
  /** Events sent and not yet durable, and events waiting on this page. */
  readonly inFlightEvents: number
  readonly queuedEvents: number
  /** Why the state is `failed` (or the last host went away); null otherwise. */
  readonly reason: string | null
}

/**
 * The engine as a page sees it when a worker hosts it (`connectEngine`). Reads are
 * synchronous, from the page's mirror of the windows, kept in step about once per frame with
 * only the windows that changed; it is an `ObservedEngine`, so `EngineProvider`, every hook of
 * `@tidemark/react` and `createEngineStore` take it as they take an engine. Writes cross to the
 * worker: `ingest` resolves to the receipt once the host applied the batch, and
 * `receipt.durable` once the log committed it. `A`: the host engine's aggregates (the type of its
 * `aggregates` option), which type `result.aggregates` as on `Engine<A>`.
 *
 * @example
 * const engine = await connectEngine({ name: 'fleet', shared, dedicated, aggregates })
 * createRoot(el).render(<EngineProvider engine={engine}><Dashboard /></EngineProvider>)
 * const receipt = await engine.ingest(readings)
 * await receipt.durable
 * engine.results()[0]?.aggregates.latency // number[], when aggregates has a quantiles `latency`
 */
export interface RemoteEngine<A extends AggregateDefinitions = NoAggregates> extends ObservedEngine {
  /**
   * Sends one batch to the host; resolves with its receipt once applied. Batches beyond the
   * host's credits wait on the page; past `maxQueuedEvents` this rejects at once with an
   * `OverflowError`. A batch not yet durable when its host goes away is sent again to the next
   * host (dedup by `seq` or `id` makes that exact), so `durable` resolves once some host's log
   * committed it.
   *
   * @example
   * const receipt = await engine.ingest([{ id: 'd1#8', source: 'd1', seq: 8, ts: Date.now(), key: 'temp', value: 21 }])
   * receipt.accepted // 1
   * await receipt.durable
   */
  ingest(events: readonly StreamEvent[]): Promise<IngestReceipt>
  /**
   * The `seq` for the next event of `source` (the host engine's `nextSeq`).
   *
   * @example
   * let seq = await engine.nextSeq(claim.source)
   */
  nextSeq(source: string): Promise<number>
  /**
   * Moves the host engine's watermark up to `t`. While no host serves the page, waiting
   * advances merge into one, to the highest `t`.
   *
   * @example
   * await engine.advanceWatermark(60_000)
   */
  advanceWatermark(t: number): Promise<void>
  /**
   * Runs the host engine's `tick()`. While no host serves the page, waiting ticks merge into
   * one; past 10,000 calls waiting on the page (`nextSeq`, `command`, ...), a call rejects at
   * once with an `OverflowError`. A host that calls `tickWhenDue(engine)` in its `setup` ticks
   * itself, when a trigger or an idle source is due, and needs no page to.
   *
   * @example
   * await engine.tick() // fire what is due now, e.g. after the device's clock was corrected
   */
  tick(): Promise<void>
  /**
   * Finishes `source` on the host engine (`Engine.finishSource`: its writer's promise that it
   * sends nothing more). Sent once every batch this page ingested before is settled, so none of
   * them is refused as `finished_source`; resolves once the finish is durable in the host's log.
   *
   * @example
   * await engine.finishSource(claim.source) // this device is retired for good
   */
  finishSource(source: string): Promise<void>
  /**
   * Runs one of the host's app commands (`hostEngine({ commands })`) and resolves with its value.
   *
   * @example
   * const peers = await engine.command('peers')
   */
  command(name: string, payload?: unknown): Promise<unknown>
  /**
   * What the host's `openEngine` recovered when it opened the log (null with `log: false`).
   *
   * @example
   * const report = engine.recovery()
   * if (report !== null && report.lostEvents > 0) showBanner(`${report.lostEvents} readings were lost`)
   */
  recovery(): RecoveryReport | null
  /**
   * Where this page stands with the host.
   *
   * @example
   * engine.connection().state // 'connected'
   */
  connection(): WorkerConnection
  /**
   * Calls `listener` when the connection changes (a takeover, a failure); returns the function that unsubscribes.
   *
   * @example
   * const stop = engine.onConnection((c) => console.log(c.state, c.instance))
   */
  onConnection(listener: (connection: WorkerConnection) => void): () => void
  /**
   * A sink for batches: each write is one `ingest`, complete once durable; a batch with events
   * refused as `overflow` errors the stream with `OverflowError`.
   *
   * @example
   * await readable.pipeTo(engine.writable)
   */
  readonly writable: WritableStream<readonly StreamEvent[]>
  /**
   * The change batches `subscribe` sees, as a stream; a reader more than 1,024 batches behind gets an `OverflowError`.
   *
   * @example
   * for await (const changes of engine.changes()) console.log(changes.length)
   */
  changes(): ReadableStream<readonly WindowChange<A>[]>
  /**
   * Disconnects this page once every batch it sent is durable (or failed); the host keeps
   * serving the other tabs (in leader mode, another tab takes over when this one led). While no
   * host serves the page (a takeover under way) it waits up to 10 s for the next one, counted
   * again each time a host goes away; past that it rejects the batches still waiting, saying
   * they are not in the log. `ingest` is refused from the call on; later calls reject.
   *
   * @example
   * addEventListener('pagehide', () => void engine.close())
   */
  close(): Promise<void>
  // The reads, as documented on `Engine`, answered from the mirror.
  results(query?: ResultQuery): readonly WindowResult<A>[]
  subscribe(listener: (changes: readonly WindowChange<A>[]) => void): () => void
  watermark(): number
  lateEvents(): readonly LateEvent[]
  stats(): EngineStats
  syncStatus(): SyncStatus
  /**
   * Every on-time and late pane of one window, oldest first (each with its `pane`); `end` names
   * one window of a cumulating spec (without it, the one ending last), as on `Engine`. The
   * first read of a window asks the host for its history, and until it arrives every read returns
   * the window's latest fired result (the whole history when it was never corrected); it arrives
   * within a frame, with a change for that window, and is kept in step from then on.
   *
   * @example
   * engine.history('tumbling:60000', 'temp', 0).map((r) => r.revision) // [0, 1]
   * engine.history('cumulating:86400000:3600000', 'temp', day, day + 7_200_000) // the window [day, day + 2 h)
   */
  history(window: string, key: string, start: number, end?: number): readonly WindowResult<A>[]
}
