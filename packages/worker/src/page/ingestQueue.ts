import { type IngestReceipt, OverflowError } from '@tidemark/engine'
import { batchSize, cloneProblem, type EventBatch } from '../protocol/eventColumns.ts'
import { errorFromWire, type ReceiptCounts, type WireError } from '../protocol/messages.ts'

/** One batch from `ingest` until it is durable (or failed): kept to be sent again to the next host. */
interface PendingBatch {
  readonly req: number
  readonly batch: EventBatch
  readonly size: number
  /** queued: waits for credits (or for a host); sent: the host has it. */
  state: 'queued' | 'sent'
  /** Sent to some host at least once: it may be in the log even while queued again. */
  reached: boolean
  receipt: IngestReceipt | null
  readonly resolveReceipt: (receipt: IngestReceipt) => void
  readonly rejectReceipt: (error: unknown) => void
  readonly resolveDurable: () => void
  readonly rejectDurable: (error: unknown) => void
  readonly durable: Promise<void>
}

/**
 * Options of an `IngestQueue`.
 *
 * @example
 * new IngestQueue({ maxQueuedEvents: 100_000, send: (req, batch) => port.postMessage({ t: 'ingest', req, batch }) })
 */
export interface IngestQueueOptions {
  /** Events that may wait on the page for credits or for a host; past it `ingest` refuses with `OverflowError`. */
  readonly maxQueuedEvents: number
  /** Hands one batch to the current host. */
  readonly send: (req: number, batch: EventBatch) => void
  /** Told before each batch goes, and after the queue sent what it could: `req` is the oldest batch not sent yet (Infinity: none). */
  readonly unsentFrom?: (req: number) => void
}

/**
 * The page side of ingest flow control. A host grants a window of credits (events sent and
 * not yet durable); batches beyond it wait here, up to `maxQueuedEvents`, and past that
 * `ingest` is refused at once with an `OverflowError` saying why: memory never grows without
 * bound on the page, on the port or in the host. Every batch is kept until the host reports it
 * durable, and sent again, in its original order, to the next host after a takeover: the
 * engine's dedup (by `source` and `seq`, or `id`) then counts what the old host had already
 * logged as duplicates, so nothing is lost and nothing counted twice.
 */
export class IngestQueue {
  readonly #options: IngestQueueOptions
  readonly #pending = new Map<number, PendingBatch>()
  #next = 1
  #credits = 0
  #inFlight = 0
  #queued = 0
  /** No host, or the host said it lost the log: nothing is sent until `connected`. */
  #paused = true
  #closed: Error | null = null
  /** Who waits for the batches up to a request number to settle. */
  #drained: { readonly upTo: number; readonly resolve: () => void }[] = []

  constructor(options: IngestQueueOptions) {
    this.#options = options
  }

  /** Events sent and not yet durable. */
  get inFlight(): number {
    return this.#inFlight
  }

  /** The request number of the last batch enqueued (0: none yet). */
  get lastReq(): number {
    return this.#next - 1
  }

  /** Events waiting on the page. */
  get queued(): number {
    return this.#queued
  }

  /** Batches not yet durable (queued or sent). */
  get pending(): number {
    return this.#pending.size
  }

  /**
   * Queues one batch; resolves with its receipt once a host applied it.
   * Rejects at once with `OverflowError` when the queue is full, and with a `TypeError` naming
   * the event when the batch cannot be copied to the host (structured clone).
   */
  enqueue(batch: EventBatch): Promise<IngestReceipt> {
    if (this.#closed !== null) return Promise.reject(this.#closed)
    const unsendable = cloneProblem(batch)
    if (unsendable !== null) return Promise.reject(new TypeError(`ingest: ${unsendable}`))
    const size = batchSize(batch)
    const max = this.#options.maxQueuedEvents
    if (this.#queued > 0 && this.#queued + size > max) {
      return Promise.reject(
        new OverflowError(
          'worker ingest queue',
          `${this.#queued} events wait on this page for the host and ${size} more would pass maxQueuedEvents (${max}); await earlier ingests before sending more`,
        ),
      )
    }
    let resolveReceipt!: (receipt: IngestReceipt) => void
    let rejectReceipt!: (error: unknown) => void
    let resolveDurable!: () => void
    let rejectDurable!: (error: unknown) => void
    const receipt = new Promise<IngestReceipt>((resolve, reject) => {
      resolveReceipt = resolve
      rejectReceipt = reject
    })
    const durable = new Promise<void>((resolve, reject) => {
      resolveDurable = resolve
      rejectDurable = reject
    })
    // A caller that never awaits `durable` must not see an unhandled rejection (the engine does the same).
    durable.catch(() => {})
    const req = this.#next++
    this.#pending.set(req, { req, batch, size, state: 'queued', reached: false, receipt: null, resolveReceipt, rejectReceipt, resolveDurable, rejectDurable, durable })
    this.#queued += size
    this.#pump()
    return receipt
  }

  /** A host welcomed this page with `credits`: everything not yet durable goes to it, in order. */
  connected(credits: number): void {
    this.#credits = credits
    this.#paused = false
    for (const entry of this.#pending.values()) {
      if (entry.state !== 'sent') continue
      entry.state = 'queued'
      this.#queued += entry.size
    }
    this.#inFlight = 0
    this.#pump()
  }

  /** The host is gone: hold everything until the next one. */
  disconnected(): void {
    this.#paused = true
  }

  /** The host applied batch `req`. */
  receipt(req: number, counts: ReceiptCounts): void {
    const entry = this.#pending.get(req)
    if (entry === undefined || entry.receipt !== null) return
    entry.receipt = { ...counts, durable: entry.durable }
    entry.resolveReceipt(entry.receipt)
  }

  /** The host could not apply batch `req`; `retry` when the next host should get it. */
  refused(req: number, error: WireError, retry: boolean): void {
    const entry = this.#pending.get(req)
    if (entry === undefined) return
    if (retry) {
      this.#requeue(entry)
      return
    }
    this.#settle(entry)
    const failure = errorFromWire(error)
    entry.rejectReceipt(failure)
    entry.rejectDurable(failure)
    // Its credits are free again: the batches waiting for them go now.
    this.#pump()
  }

  /** Batch `req` is durable, or failed to be (`error`); `retry` when the next host should get it. */
  durable(req: number, error: WireError | undefined, retry: boolean): void {
    const entry = this.#pending.get(req)
    if (entry === undefined || entry.state !== 'sent') return
    if (error !== undefined && retry) {
      this.#requeue(entry)
      return
    }
    this.#settle(entry)
    if (error === undefined) entry.resolveDurable()
    else entry.rejectDurable(errorFromWire(error))
    this.#pump()
  }

  /**
   * Resolves once every batch enqueued so far settled; batches enqueued later are not waited for
   * (a page that keeps ingesting would otherwise hold the waiter back for as long as it does).
   */
  drained(): Promise<void> {
    if (this.#pending.size === 0) return Promise.resolve()
    return new Promise((resolve) => this.#drained.push({ upTo: this.#next - 1, resolve }))
  }

  /** True when a batch waits on the page (for credits, or for a host): a call made now must wait among them. */
  get waiting(): boolean {
    return this.#oldestQueued() !== Number.POSITIVE_INFINITY
  }

  /**
   * Refuses new batches with `error` and rejects every pending one with it, or with
   * `reachedError` one that was sent to a host (which may have logged it before it went away).
   */
  close(error: Error, reachedError: Error = error): void {
    this.#closed = error
    for (const entry of this.#pending.values()) {
      const failure = entry.reached ? reachedError : error
      if (entry.receipt === null) entry.rejectReceipt(failure)
      entry.rejectDurable(failure)
    }
    this.#pending.clear()
    this.#queued = 0
    this.#inFlight = 0
    this.#notifyDrained()
  }

  /** Refuses new batches (the page is closing) without touching pending ones. */
  stopAccepting(error: Error): void {
    this.#closed = error
  }

  #requeue(entry: PendingBatch): void {
    if (entry.state === 'sent') {
      this.#inFlight -= entry.size
      entry.state = 'queued'
      this.#queued += entry.size
    }
    // This host lost the log: the next host gets the batch once it welcomes this page.
    this.#paused = true
  }

  #settle(entry: PendingBatch): void {
    this.#pending.delete(entry.req)
    if (entry.state === 'sent') this.#inFlight -= entry.size
    else this.#queued -= entry.size
    this.#notifyDrained()
  }

  #notifyDrained(): void {
    // Pending batches are kept in request order: the first is the oldest still unsettled.
    let oldest = Number.POSITIVE_INFINITY
    for (const req of this.#pending.keys()) {
      oldest = req
      break
    }
    const waiting = this.#drained
    this.#drained = waiting.filter((w) => w.upTo >= oldest)
    for (const w of waiting) if (w.upTo < oldest) w.resolve()
  }

  /** The request number of the oldest batch that waits on the page, or Infinity. */
  #oldestQueued(): number {
    if (this.#queued === 0) return Number.POSITIVE_INFINITY
    for (const entry of this.#pending.values()) if (entry.state === 'queued') return entry.req
    return Number.POSITIVE_INFINITY
  }


  #pump(): void {
    if (this.#paused) return
    this.#send()
    this.#options.unsentFrom?.(this.#oldestQueued())
  }

  #send(): void {
    for (const entry of this.#pending.values()) {
      if (entry.state !== 'queued') continue
      // One batch larger than the whole window still goes, alone.
      if (this.#inFlight > 0 && this.#inFlight + entry.size > this.#credits) return
      this.#options.unsentFrom?.(entry.req)
      entry.state = 'sent'
      entry.reached = true
      this.#queued -= entry.size
      this.#inFlight += entry.size
      try {
        this.#options.send(entry.req, entry.batch)
      } catch (error) {
        // The batch cannot cross to the host (an event the structured clone cannot copy): it
        // fails alone, with the reason, and the batches after it still go.
        this.#unsendable(entry, error)
      }
    }
  }

  #unsendable(entry: PendingBatch, error: unknown): void {
    this.#settle(entry)
    const problem = cloneProblem(entry.batch)
    const failure = problem === null ? error : new TypeError(`ingest: ${problem}`)
    entry.rejectReceipt(failure)
    entry.rejectDurable(failure)
  }
}
