import type { EngineStats, IngestReceipt, LateEvent, ResultQuery, StreamEvent, SyncStatus, WindowChange, WindowResult } from '@tidemark/engine'
import type { RecoveryReport } from '@tidemark/idb'
import { ChangeFeed, ingestSink, reportListenerError } from '@tidemark/engine/adapter'
import { reportUnlessWithdrawn } from '../common/reportError.ts'
import { addressOf, sharesStart, specSize } from '../common/windowAddress.ts'
import { encodeEvents } from '../protocol/eventColumns.ts'
import {
  type FrameMessage,
  type HostCall,
  type HostMessage,
  type AggregateIdentity,
  type HostMode,
  PROTOCOL_VERSION,
  type WelcomeMessage,
  type WireError,
  errorFromWire,
} from '../protocol/messages.ts'
import { rowsProblem } from '../protocol/windowRows.ts'
import { drainForClose } from './closeDrain.ts'
import { HostCalls } from './hostCalls.ts'
import type { HostConnector, HostLink, LinkSink } from './hostLink.ts'
import { IngestQueue } from './ingestQueue.ts'
import { lockNames, type WorkerClock, type WorkerLocks } from './platform.ts'
import type { RemoteEngine, WorkerConnection } from './remoteEngine.ts'
import { deposedFailure } from './deposedHost.ts'
import { MirroredState } from './mirroredState.ts'
import { welcomeProblem } from './welcomeProblem.ts'
import { retireFinishedClaim, retireWhenFinished, type WorkerSourceClaim } from './sourceRetirement.ts'

/** What a `MirroredEngine` is made of (`connectEngine` assembles it). */
export interface MirroredEngineOptions {
  readonly name: string
  readonly tab: string
  readonly mode: HostMode
  readonly config: unknown
  /** The aggregates the page expects the host's engine to have (none given: whatever it has). */
  readonly aggregates?: readonly AggregateIdentity[]
  readonly maxQueuedEvents: number
  readonly connector: HostConnector
  readonly locks: WorkerLocks | null
  readonly clock: WorkerClock
  /** Whether `link` belongs to a worker this tab runs. */
  readonly ownsHost: (link: HostLink) => boolean
  /** The tab's source claim, retired once a finish of its source is durable in the host's log. */
  readonly claim?: WorkerSourceClaim
}

const NO_HISTORY: readonly WindowResult[] = Object.freeze([])
const CLOSED = 'the remote engine is closed'
export { CLOSE_WAIT_MS } from './closeDrain.ts'

/**
 * The `RemoteEngine` behind `connectEngine`: the page's mirror of the host engine, fed by
 * frames, and the queue that carries its batches. It speaks to one host at a time through the
 * link its connector opened, and starts over with the next host's snapshot after a takeover.
 */
export class MirroredEngine implements RemoteEngine, LinkSink {
  readonly #options: MirroredEngineOptions
  readonly #state = new MirroredState()
  readonly #queue: IngestQueue
  readonly #feed = new ChangeFeed()
  readonly #connectionListeners = new Set<(connection: WorkerConnection) => void>()
  readonly #calls = new HostCalls()
  #link: HostLink | null = null
  #welcomed = false
  #recovery: RecoveryReport | null = null
  #connection: WorkerConnection
  #lostAt: number | null = null
  #hostWatch: AbortController | null = null
  #writable: WritableStream<readonly StreamEvent[]> | null = null
  #ready: { resolve: () => void; reject: (error: unknown) => void } | null = null
  /** Why no host can serve this page, once none can: what `ready` and every later call reject with. */
  #failure: Error | null = null
  /** Set while `close()` waits for this page's batches: told when a host welcomes the page or goes away. */
  #closeWatch: (() => void) | null = null
  #closing = false
  /** Resolves when the first host welcomed this page. */
  readonly ready: Promise<void>

  constructor(options: MirroredEngineOptions) {
    this.#options = options
    this.#queue = new IngestQueue({
      maxQueuedEvents: options.maxQueuedEvents,
      send: (req, batch) => this.#link?.send({ t: 'ingest', req, batch }),
      // Calls re-sent to a next host go between the batches as they were made.
      unsentFrom: (req) => {
        if (this.#welcomed && this.#link !== null) this.#calls.sendWaiting(this.#link, req)
      },
    })
    this.#connection = {
      mode: options.mode,
      state: 'reconnecting',
      leader: false,
      instance: '',
      epoch: 0,
      takeovers: 0,
      lastTakeoverMs: null,
      inFlightEvents: 0,
      queuedEvents: 0,
      reason: null,
    }
    this.ready = new Promise((resolve, reject) => {
      this.#ready = { resolve, reject }
    })
    this.ready.catch(() => {})
  }

  // ---- LinkSink: what the connector reports ----

  opened(link: HostLink): void {
    // A closed or failed page takes no host any more: it never turns connected again.
    if (this.#connection.state === 'closed' || this.#connection.state === 'failed') {
      link.close()
      return
    }
    if (this.#link !== null && this.#link !== link) this.lost(this.#link, 'another host took over')
    this.#link = link
    link.send({ t: 'hello', v: PROTOCOL_VERSION, tab: this.#options.tab, config: this.#options.config, ...(this.#options.claim && { claim: this.#options.claim.source }) })
  }

  message(link: HostLink, data: unknown): void {
    if (link !== this.#link || typeof data !== 'object' || data === null) return
    const message = data as HostMessage
    switch (message.t) {
      case 'welcome':
        this.#welcome(link, message)
        return
      case 'frame':
        if (this.#welcomed) this.#frame(link, message, false)
        return
      case 'receipt':
        this.#queue.receipt(message.req, message.receipt)
        return
      case 'ingest-refused':
        this.#queue.refused(message.req, message.error, message.retry)
        return
      case 'durable':
        this.#queue.durable(message.req, message.error, message.retry === true)
        return
      case 'reply':
        this.#calls.reply(message.req, message.value, message.error, message.retry === true)
        return
      case 'finished':
        if (this.#welcomed) this.#retireFinished()
        return
      case 'waiting':
        // Watched while it starts: a host that crashes meanwhile is noticed by its lock.
        if (!this.#welcomed && typeof message.instance === 'string') this.#watchHost(link, message.instance)
        return
      case 'refused': {
        // Only a deposed host sends the page on (a takeover): any other refusal fails it, whatever its reason.
        const deposed = message.deposed === true
        const failure = deposed ? deposedFailure(message.reason, this.#options.mode, this.#options.locks !== null) : message.reason
        if (!deposed || failure !== null) this.failed(failure as string, deposed ? undefined : message.error)
        else {
          this.lost(link, message.reason)
          this.#options.connector.gone(link)
        }
        return
      }
    }
  }

  lost(link: HostLink, reason: string): void {
    if (link !== this.#link) return
    this.#link = null
    this.#welcomed = false
    this.#hostWatch?.abort()
    this.#hostWatch = null
    this.#lostAt = this.#options.clock.now()
    this.#queue.disconnected()
    this.#calls.hostLost(reason)
    if (this.#connection.state === 'connected') this.#setConnection({ state: 'reconnecting', reason })
    this.#closeWatch?.()
  }

  /** No host can serve this page; `cause`, the host's start error, lends its name and fields to what the page rejects with. */
  failed(reason: string, cause?: WireError): void {
    if (this.#connection.state === 'closed' || this.#connection.state === 'failed') return
    const link = this.#link
    this.#link = null
    this.#welcomed = false
    this.#hostWatch?.abort()
    this.#hostWatch = null
    // A leader tab lets its host go (the connector stops below): it no longer runs the host.
    this.#setConnection({ state: 'failed', leader: false, reason })
    const error = cause === undefined ? new Error(`connectEngine: ${reason}`) : errorFromWire({ ...cause, message: `connectEngine: ${reason}` })
    if (cause !== undefined) error.cause = errorFromWire(cause)
    this.#failure = error
    this.#ready?.reject(error)
    this.#queue.close(error)
    this.#calls.rejectAll(error)
    // No host will serve this page: it stops looking for one (a leader tab lets leadership go and
    // ends its host's worker; the channel and the watchdog close), and its host forgets it.
    link?.send({ t: 'bye' })
    this.#options.connector.stop()
  }

  /**
   * The page goes away for good (without Web Locks, which would tell the host): its host
   * forgets it. Batches already sent are applied; nothing more is sent or awaited.
   */
  leave(): void {
    this.#link?.send({ t: 'bye' })
  }

  // ---- RemoteEngine ----

  ingest(events: readonly StreamEvent[]): Promise<IngestReceipt> {
    if (!Array.isArray(events)) return Promise.reject(new TypeError('ingest expects an array of events'))
    return this.#queue.enqueue(encodeEvents(events))
  }

  nextSeq(source: string): Promise<number> {
    if (typeof source !== 'string') return Promise.reject(new TypeError(`nextSeq needs a source name (a string), got ${typeof source}`))
    return this.#call({ op: 'nextSeq', source }, true, this.#queue.waiting) as Promise<number>
  }

  async advanceWatermark(t: number): Promise<void> {
    if (typeof t !== 'number' || Number.isNaN(t)) throw new RangeError(`advanceWatermark needs a number, got ${String(t)}`)
    await this.#call({ op: 'advance', to: t }, true, this.#queue.waiting)
  }

  async tick(): Promise<void> {
    await this.#call({ op: 'tick' }, true, this.#queue.waiting)
  }

  async finishSource(source: string): Promise<void> {
    if (typeof source !== 'string') throw new TypeError(`finishSource needs a source name (a string), got ${typeof source}`)
    // A batch still on its way would reach the host after the finish, and be refused.
    await this.#queue.drained()
    await retireWhenFinished(this.#options.claim, source, this.#call({ op: 'finish', source }, true))
  }

  command(name: string, payload?: unknown): Promise<unknown> {
    if (typeof name !== 'string') return Promise.reject(new TypeError(`command needs a name (a string), got ${typeof name}`))
    // Behind a call held among waiting batches, as the app made them.
    return this.#call({ op: 'command', name, payload }, false, this.#calls.waiting)
  }

  recovery(): RecoveryReport | null {
    return this.#recovery
  }

  connection(): WorkerConnection {
    return { ...this.#connection, inFlightEvents: this.#queue.inFlight, queuedEvents: this.#queue.queued }
  }

  onConnection(listener: (connection: WorkerConnection) => void): () => void {
    const entry = (connection: WorkerConnection): void => listener(connection)
    this.#connectionListeners.add(entry)
    return () => {
      this.#connectionListeners.delete(entry)
    }
  }

  results(query?: ResultQuery): readonly WindowResult[] {
    return this.#state.windows.results(query)
  }

  subscribe(listener: (changes: readonly WindowChange[]) => void): () => void {
    return this.#feed.subscribe(listener)
  }

  watermark(): number {
    return this.#state.watermark
  }

  lateEvents(): readonly LateEvent[] {
    return this.#state.lateLane
  }

  stats(): EngineStats {
    const stats = this.#state.stats
    if (stats === null) throw new Error('the remote engine has no stats before its host welcomed it')
    return stats
  }

  syncStatus(): SyncStatus {
    return this.#state.sync
  }

  history(window: string, key: string, start: number, end?: number): readonly WindowResult[] {
    // A tumbling or sliding window has one end: the engine finds nothing for another (a session's end it ignores).
    const size = specSize(window)
    if (end !== undefined && !sharesStart(window) && !Number.isNaN(size) && end !== start + size) return NO_HISTORY
    const address = addressOf(end === undefined ? { window, key, start } : { window, key, start, end })
    const windows = this.#state.windows
    const kept = windows.history(address)
    // A fired window's history is never empty: an empty one is still on its way (an earlier read asked for it).
    if (kept !== undefined && kept.length > 0) return kept
    if (windows.watch(address) && this.#welcomed) this.#link?.send({ t: 'watch-history', ...address })
    const latest = windows.get(address)
    return latest === undefined || latest.status === 'provisional' ? NO_HISTORY : [latest]
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

  changes(): ReadableStream<readonly WindowChange[]> {
    return this.#feed.stream()
  }

  async close(): Promise<void> {
    if (this.#connection.state === 'closed' || this.#closing) throw new Error(CLOSED)
    this.#closing = true
    const closing = new Error(CLOSED)
    this.#queue.stopAccepting(closing)
    const drain = drainForClose(this.#queue, this.#options.clock, () => this.#welcomed, CLOSED)
    this.#closeWatch = drain.watch
    await drain.drained
    this.#closeWatch = null
    this.#setConnection({ state: 'closed', leader: false, reason: null })
    this.#queue.close(closing)
    this.#calls.rejectAll(closing)
    this.#link?.send({ t: 'bye' })
    this.#link = null
    this.#hostWatch?.abort()
    this.#options.connector.stop()
    this.#feed.close()
  }

  // ---- internals ----

  #welcome(link: HostLink, welcome: WelcomeMessage): void {
    const problem = welcomeProblem(welcome, this.#options.aggregates)
    if (problem !== null) {
      this.failed(problem)
      return
    }
    const previous = this.#connection
    const takeover = previous.instance !== '' && previous.instance !== welcome.instance
    this.#state.windows.options = welcome.options
    this.#recovery = welcome.recovery
    this.#welcomed = true
    this.#frame(link, welcome.frame, true)
    this.#watchHost(link, welcome.instance)
    for (const address of this.#state.windows.watched()) link.send({ t: 'watch-history', ...address })
    this.#queue.connected(welcome.credits)
    if (welcome.finished === true) this.#retireFinished()
    this.#setConnection({
      state: 'connected',
      leader: this.#options.ownsHost(link),
      instance: welcome.instance,
      epoch: welcome.epoch,
      mode: welcome.mode,
      takeovers: previous.takeovers + (takeover ? 1 : 0),
      lastTakeoverMs: takeover && this.#lostAt !== null ? this.#options.clock.now() - this.#lostAt : previous.lastTakeoverMs,
      reason: null,
    })
    this.#ready?.resolve()
    this.#closeWatch?.()
  }

  /** The host's engine holds a finish of the claimed source (its welcome said so, or a merge since): finish it again, then retire the claim. */
  #retireFinished(): void {
    retireFinishedClaim(this.#options.claim, (source) => this.finishSource(source), () => this.#connection.state === 'closed' || this.#connection.state === 'failed')
  }

  /** Applies a frame; `welcome`: the first frame of a host (its rows were checked with the welcome). */
  #frame(link: HostLink, frame: FrameMessage, welcome: boolean): void {
    const problem = welcome ? null : rowsProblem(frame.rows)
    if (problem !== null) {
      // Left unread, the page would show stale windows for good: the host sends nothing more to
      // a page that stopped acknowledging. A host of this protocol version never sends such rows.
      this.failed(`the host sent a frame this page cannot read (${problem}): reload the page`)
      return
    }
    const { changes, unwatched } = this.#state.apply(frame, welcome)
    for (const address of unwatched) link.send({ t: 'unwatch-history', ...address })
    link.send({ t: 'ack', frame: frame.frame })
    this.#feed.publish(changes)
  }

  /** Waits on the host's lock: granted when the host is gone, whatever ended it. */
  #watchHost(link: HostLink, instance: string): void {
    this.#hostWatch?.abort()
    const locks = this.#options.locks
    if (locks === null) return
    const controller = new AbortController()
    this.#hostWatch = controller
    locks
      .request(lockNames.host(this.#options.name, instance), { signal: controller.signal }, () => {
        if (controller.signal.aborted || link !== this.#link) return undefined
        this.lost(link, 'the host stopped')
        this.#options.connector.gone(link)
        return undefined
      })
      // Withdrawn when the page leaves this host: expected. Anything else is reported.
      .catch(reportUnlessWithdrawn(controller.signal))
  }

  /**
   * A call to the host in its place among the batches, as on an engine beside the app: sent at
   * once (through the port the batches took), or, with `hold` (batches or calls made before it
   * wait on the page), kept among them; the queue sends it (`unsentFrom`) right before the first
   * batch made after it.
   */
  #call(call: HostCall, retry: boolean, hold = false): Promise<unknown> {
    const state = this.#connection.state
    if (state === 'closed') return Promise.reject(new Error(CLOSED))
    if (state === 'failed') return Promise.reject(this.#failure)
    return this.#calls.add(call, retry, this.#welcomed && !hold ? this.#link : null, this.#queue.lastReq)
  }

  #setConnection(change: Partial<WorkerConnection>): void {
    this.#connection = { ...this.#connection, ...change }
    const snapshot = this.connection()
    for (const listener of this.#connectionListeners) {
      try {
        listener(snapshot)
      } catch (error) {
        reportListenerError(error)
      }
    }
  }
}
