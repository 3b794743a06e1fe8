/**
 * The relay's counters, rendered as Prometheus text at `GET /metrics`.
 */
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks'
import type { RefusalKind } from '../protocol/refusal.ts'
import { LatencySummary } from './latencySummary.ts'

/**
 * Store operations timed by `tidemark_relay_store_seconds{op}`.
 *
 * @example
 * metrics.timeStore('flush', 0.012)
 */
export type StoreOperation = 'load' | 'flush' | 'compact' | 'checkpoint'

/**
 * Values read at scrape time.
 *
 * @example
 * metrics.render({ connections: 3, roomsLoaded: 2, mostRoomsHeldBySubject: 2, storedBytes: 40_960, pendingBytes: 0, heldUpdates: 0, assemblingBytes: 0, unsharedRooms: 0, redisUnansweredBytes: 0, relayedHeldBytes: 0 })
 */
export interface MetricGauges {
  /** Open WebSocket connections. */
  readonly connections: number
  readonly roomsLoaded: number
  /** Rooms held open by the token subject holding the most (bounded by `maxRoomsPerSubject`). */
  readonly mostRoomsHeldBySubject: number
  /** Bytes of snapshots and updates in the store; null when the store did not answer. */
  readonly storedBytes: number | null
  /** Accepted updates waiting for the next store write. */
  readonly pendingBytes: number
  /** Updates held until the updates they depend on arrive. */
  readonly heldUpdates: number
  /** Bytes of messages received in parts, their last part not yet come. */
  readonly assemblingBytes: number
  /** Loaded rooms served by this relay alone: loaded while Redis was away, shared once it is back (0 without Redis). */
  readonly unsharedRooms: number
  /** Bytes of publishes sent to Redis that it has not answered yet (0 without Redis). */
  readonly redisUnansweredBytes: number
  /** Bytes of other relays' changes held until they say they stored them (0 without Redis). */
  readonly relayedHeldBytes: number
}

/**
 * Counters of one relay.
 *
 * @example
 * const metrics = new RelayMetrics()
 * metrics.refused('rate-limited')
 * metrics.refusalCount('rate-limited') // 1
 */
export class RelayMetrics {
  /** Client updates accepted and applied. */
  updatesIn = 0
  /** Updates sent to connections (one per update and receiving connection). */
  updatesOut = 0
  /** Update rows written to the store. */
  updatesStored = 0
  /** Updates this relay wrote that the store already held (written first by another relay sharing it, or by this one). */
  updatesAlreadyStored = 0
  /** Changes of other relays not written here: the relay that published them said it stored them. */
  relayedConfirmed = 0
  /** Changes of other relays written here: their relay did not say it stored them in time (or this relay closed first). */
  relayedWritten = 0
  /** Updates held until the updates they depend on arrived. */
  updatesHeld = 0
  /** Messages received in parts and put together whole. */
  messagesInParts = 0
  /** Messages in parts let go, stalled or overdue, to make room for other connections' parts. */
  messagesInPartsStalled = 0
  /** WebSocket protocol errors (invalid UTF-8, oversized frames, bad opcodes…). */
  socketErrors = 0
  /** Promise rejections nobody handled, logged instead of ending the process. */
  unhandledRejections = 0
  /** Redis operations that failed. */
  redisErrors = 0
  /** Messages not published to Redis because it did not answer (the relays' exchange repairs what they carried). */
  redisPublishesDropped = 0
  /** Rooms whose load failed. */
  loadFailures = 0
  /** Stored parts of rooms set aside: Yjs could not use them (`tidemark_relay_set_aside`). */
  partsSetAside = 0
  /** Room connections closed because their token expired. */
  tokensExpired = 0
  /** Awareness updates dropped for setting the presence of a client id another connection or replica holds. */
  presenceDropped = 0
  /**
   * Messages dropped unapplied because the room connection they were sent on had
   * already ended (its socket closed, the room refused, its token expired): those still waiting
   * for their turn when it ended, and those that arrived after it, until the room's next Auth on
   * the socket. Messages dropped because the relay is shutting down, or because it closed their
   * whole socket, are not counted.
   *
   * @example
   * metrics.closedConnectionMessagesDropped++ // a message reached its turn after its connection ended
   * metrics.render(gauges) // … tidemark_relay_closed_connection_messages_dropped_total 1
   */
  closedConnectionMessagesDropped = 0
  /** Catch-ups sent: what other relays sent a room through Redis that did not fit in a socket's queue, sent later in one message. */
  catchUps = 0
  /** Bytes of the catch-ups sent. */
  catchUpBytes = 0
  readonly #refusals = new Map<RefusalKind, number>()
  readonly #storeFailures = new Map<StoreOperation, number>()
  readonly #store = new Map<StoreOperation, LatencySummary>()
  #loopDelay: IntervalHistogram | undefined

  /**
   * Samples the event loop's delay (every 10 ms) for `nodejs_eventloop_lag_*_seconds`, until the
   * returned function is called. Every update waits behind whatever holds the loop, so this is
   * the first figure to read when latency rises.
   */
  watchEventLoop(): () => void {
    const histogram = monitorEventLoopDelay({ resolution: 10 })
    histogram.enable()
    this.#loopDelay = histogram
    return () => {
      histogram.disable()
      if (this.#loopDelay === histogram) this.#loopDelay = undefined
    }
  }

  /** Counts one refusal. */
  refused(kind: RefusalKind): void {
    this.#refusals.set(kind, (this.#refusals.get(kind) ?? 0) + 1)
  }

  /** Refusals of one kind so far. */
  refusalCount(kind: RefusalKind): number {
    return this.#refusals.get(kind) ?? 0
  }

  /** Records how long a store operation took. */
  timeStore(op: StoreOperation, seconds: number): void {
    let summary = this.#store.get(op)
    if (summary === undefined) {
      summary = new LatencySummary()
      this.#store.set(op, summary)
    }
    summary.observe(seconds)
  }

  /** Counts a failed store operation. */
  storeFailed(op: StoreOperation): void {
    this.#storeFailures.set(op, (this.#storeFailures.get(op) ?? 0) + 1)
  }

  /** The Prometheus text exposition. */
  render(gauges: MetricGauges): string {
    const lines: string[] = []
    const metric = (name: string, type: 'counter' | 'gauge' | 'summary', help: string, samples: string[]): void => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples)
    }
    metric('tidemark_relay_connections', 'gauge', 'Open WebSocket connections.', [`tidemark_relay_connections ${gauges.connections}`])
    metric('tidemark_relay_rooms_loaded', 'gauge', 'Rooms loaded in memory.', [`tidemark_relay_rooms_loaded ${gauges.roomsLoaded}`])
    metric('tidemark_relay_subject_rooms_most', 'gauge', 'Rooms held open by the token subject holding the most (at most maxRoomsPerSubject).', [
      `tidemark_relay_subject_rooms_most ${gauges.mostRoomsHeldBySubject}`,
    ])
    metric('tidemark_relay_updates_in_total', 'counter', 'Client updates accepted and applied.', [`tidemark_relay_updates_in_total ${this.updatesIn}`])
    metric('tidemark_relay_updates_out_total', 'counter', 'Updates sent to connections.', [`tidemark_relay_updates_out_total ${this.updatesOut}`])
    metric('tidemark_relay_updates_stored_total', 'counter', 'Update rows written to the store.', [`tidemark_relay_updates_stored_total ${this.updatesStored}`])
    metric('tidemark_relay_updates_already_stored_total', 'counter', 'Updates written that the store already held (written first by another relay sharing it, or by this one): no row added.', [
      `tidemark_relay_updates_already_stored_total ${this.updatesAlreadyStored}`,
    ])
    metric('tidemark_relay_relayed_confirmed_total', 'counter', 'Changes of other relays (through Redis) not written here: the relay that published them said it stored them.', [
      `tidemark_relay_relayed_confirmed_total ${this.relayedConfirmed}`,
    ])
    metric('tidemark_relay_relayed_written_total', 'counter', 'Changes of other relays (through Redis) written here: their relay did not say it stored them in time.', [
      `tidemark_relay_relayed_written_total ${this.relayedWritten}`,
    ])
    metric(
      'tidemark_relay_refusals_total',
      'counter',
      'Refusals by reason: rooms not opened, updates refused, sockets closed.',
      [...this.#refusals].sort(([a], [b]) => a.localeCompare(b)).map(([kind, n]) => `tidemark_relay_refusals_total{reason="${kind}"} ${n}`),
    )
    const summaries = [...this.#store].sort(([a], [b]) => a.localeCompare(b))
    metric('tidemark_relay_store_seconds', 'summary', 'Store operations: loads, writes of accepted updates, compactions, checkpoints of the embedded store.', summaries.flatMap(([op, s]) => s.lines('tidemark_relay_store_seconds', `op="${op}"`)))
    metric(
      'tidemark_relay_store_failures_total',
      'counter',
      'Store operations that failed (retried).',
      [...this.#storeFailures].map(([op, n]) => `tidemark_relay_store_failures_total{op="${op}"} ${n}`),
    )
    metric('tidemark_relay_stored_bytes', 'gauge', 'Bytes of snapshots and updates in the store (NaN when it did not answer).', [
      `tidemark_relay_stored_bytes ${gauges.storedBytes ?? Number.NaN}`,
    ])
    metric('tidemark_relay_store_pending_bytes', 'gauge', 'Accepted update bytes waiting for the next store write.', [`tidemark_relay_store_pending_bytes ${gauges.pendingBytes}`])
    metric('tidemark_relay_updates_held_total', 'counter', 'Updates that arrived before the updates they depend on, held until those came.', [`tidemark_relay_updates_held_total ${this.updatesHeld}`])
    metric('tidemark_relay_catch_ups_total', 'counter', "Catch-ups sent: what the other relays sent a room through Redis that did not fit in a socket's queue, sent once it had room, in one message.", [
      `tidemark_relay_catch_ups_total ${this.catchUps}`,
    ])
    metric('tidemark_relay_catch_up_bytes_total', 'counter', 'Bytes of the catch-ups sent.', [`tidemark_relay_catch_up_bytes_total ${this.catchUpBytes}`])
    metric('tidemark_relay_held_updates', 'gauge', 'Updates held until the updates they depend on arrive.', [`tidemark_relay_held_updates ${gauges.heldUpdates}`])
    metric('tidemark_relay_messages_in_parts_total', 'counter', 'Messages over the message size limit received in parts and put together whole.', [
      `tidemark_relay_messages_in_parts_total ${this.messagesInParts}`,
    ])
    metric('tidemark_relay_messages_in_parts_stalled_total', 'counter', "Messages in parts let go, stalled or overdue, to make room for other connections' parts.", [
      `tidemark_relay_messages_in_parts_stalled_total ${this.messagesInPartsStalled}`,
    ])
    metric('tidemark_relay_assembling_bytes', 'gauge', 'Bytes of messages received in parts, their last part not yet come.', [`tidemark_relay_assembling_bytes ${gauges.assemblingBytes}`])
    metric('tidemark_relay_tokens_expired_total', 'counter', 'Room connections closed because their token expired (the client joins again with a fresh one).', [
      `tidemark_relay_tokens_expired_total ${this.tokensExpired}`,
    ])
    metric('tidemark_relay_presence_dropped_total', 'counter', "Awareness updates dropped: for setting the presence of a client id another connection or replica holds, or past the sender's presence bytes per second.", [
      `tidemark_relay_presence_dropped_total ${this.presenceDropped}`,
    ])
    metric(
      'tidemark_relay_closed_connection_messages_dropped_total',
      'counter',
      'Messages dropped unapplied because their room connection had already ended (socket closed, room refused, token expired): waiting for their turn when it ended, or arriving after it.',
      [`tidemark_relay_closed_connection_messages_dropped_total ${this.closedConnectionMessagesDropped}`],
    )
    metric('tidemark_relay_room_load_failures_total', 'counter', 'Rooms whose load failed.', [`tidemark_relay_room_load_failures_total ${this.loadFailures}`])
    metric('tidemark_relay_store_parts_set_aside_total', 'counter', 'Stored snapshots and update rows Yjs could not use, moved to tidemark_relay_set_aside.', [
      `tidemark_relay_store_parts_set_aside_total ${this.partsSetAside}`,
    ])
    metric('tidemark_relay_socket_errors_total', 'counter', 'WebSocket protocol errors.', [`tidemark_relay_socket_errors_total ${this.socketErrors}`])
    metric('tidemark_relay_redis_errors_total', 'counter', 'Redis operations that failed.', [`tidemark_relay_redis_errors_total ${this.redisErrors}`])
    metric('tidemark_relay_unshared_rooms', 'gauge', 'Loaded rooms served by this relay alone: loaded while Redis was away, shared with the other relays once it is back.', [
      `tidemark_relay_unshared_rooms ${gauges.unsharedRooms}`,
    ])
    metric('tidemark_relay_redis_unanswered_bytes', 'gauge', 'Bytes of publishes sent to Redis that it has not answered yet.', [`tidemark_relay_redis_unanswered_bytes ${gauges.redisUnansweredBytes}`])
    metric('tidemark_relay_relayed_held_bytes', 'gauge', 'Bytes of other relays\' changes held until they say they stored them.', [`tidemark_relay_relayed_held_bytes ${gauges.relayedHeldBytes}`])
    metric('tidemark_relay_redis_publishes_dropped_total', 'counter', 'Messages not published to Redis because it did not answer: the state-vector exchange repairs them once it does.', [
      `tidemark_relay_redis_publishes_dropped_total ${this.redisPublishesDropped}`,
    ])
    metric('tidemark_relay_unhandled_rejections_total', 'counter', 'Unhandled promise rejections logged instead of ending the process.', [
      `tidemark_relay_unhandled_rejections_total ${this.unhandledRejections}`,
    ])
    const loop = this.#loopDelay
    if (loop !== undefined) {
      // Since the previous scrape: a window, as a rate is, not the whole life of the process.
      const seconds = (nanoseconds: number): number => (loop.count === 0 ? Number.NaN : nanoseconds / 1e9)
      metric('nodejs_eventloop_lag_p50_seconds', 'gauge', 'Median event loop delay since the previous scrape.', [`nodejs_eventloop_lag_p50_seconds ${seconds(loop.percentile(50))}`])
      metric('nodejs_eventloop_lag_p99_seconds', 'gauge', '99th percentile of the event loop delay since the previous scrape.', [`nodejs_eventloop_lag_p99_seconds ${seconds(loop.percentile(99))}`])
      metric('nodejs_eventloop_lag_max_seconds', 'gauge', 'Longest event loop delay since the previous scrape.', [`nodejs_eventloop_lag_max_seconds ${seconds(loop.max)}`])
      loop.reset()
    }
    const memory = process.memoryUsage()
    metric('process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes.', [`process_resident_memory_bytes ${memory.rss}`])
    metric('nodejs_heap_size_total_bytes', 'gauge', 'V8 heap reserved, in bytes.', [`nodejs_heap_size_total_bytes ${memory.heapTotal}`])
    metric('nodejs_heap_size_used_bytes', 'gauge', 'V8 heap in use (live objects and garbage not yet collected), in bytes.', [`nodejs_heap_size_used_bytes ${memory.heapUsed}`])
    metric('nodejs_external_memory_bytes', 'gauge', 'Memory of C++ objects bound to JavaScript objects (ArrayBuffers included), in bytes.', [
      `nodejs_external_memory_bytes ${memory.external}`,
    ])
    metric('nodejs_array_buffers_bytes', 'gauge', "Memory of the relay thread's ArrayBuffers and SharedArrayBuffers, in bytes (the embedded store's WebAssembly memory, on its own thread, counts in resident memory only).", [
      `nodejs_array_buffers_bytes ${memory.arrayBuffers}`,
    ])
    metric(
      'nodejs_active_resources',
      'gauge',
      'Resources keeping the event loop alive, by type (Timeout: timers; TCPWrap: sockets): a count that grows under steady load is a leak.',
      activeResources().map(([type, n]) => `nodejs_active_resources{type="${type}"} ${n}`),
    )
    return `${lines.join('\n')}\n`
  }
}

/** The event loop's active resources counted by type, sorted by type. */
function activeResources(): [string, number][] {
  const counts = new Map<string, number>()
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1)
  return [...counts].sort(([a], [b]) => a.localeCompare(b))
}
