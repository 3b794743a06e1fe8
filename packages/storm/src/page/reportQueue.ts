/**
 * Durable batch reports on their way to the driver. Each send is a round trip through a
 * Playwright binding, so reports wait `everyMs` to travel together instead of one call per
 * batch; `flush` sends what is queued at once.
 */
import type { StormBatchReport } from '../contract/stormPageApi.ts'

/**
 * Sends reports to the driver; `undefined` when no driver listens (a page opened by hand).
 *
 * @example
 * const sink: ReportSink = (reports) => (globalThis as StormGlobals).tidemarkStormReport?.(reports)
 */
export type ReportSink = (reports: readonly StormBatchReport[]) => Promise<void> | undefined

/**
 * Batches reports for `sink`, at most one send per `everyMs`.
 *
 * @example
 * const queue = new ReportQueue((reports) => globals.tidemarkStormReport?.(reports), 250, (message) => errors.push(message))
 * queue.add({ source, from: 1, to: 20, accepted: 20, beyondLateness: 0, duplicates: 0, rejected: 0 })
 * await queue.flush()
 */
export class ReportQueue {
  readonly #sink: ReportSink
  readonly #everyMs: number
  readonly #onError: (message: string) => void
  #queued: StormBatchReport[] = []
  #timer: ReturnType<typeof setTimeout> | null = null
  /** The sends under way, settled or not: a flush resolves after them too. */
  #sending: Promise<unknown> = Promise.resolve()

  constructor(sink: ReportSink, everyMs: number, onError: (message: string) => void) {
    if (!Number.isFinite(everyMs) || everyMs < 0) throw new RangeError(`storm page: reportEveryMs must be a non-negative number of ms, got ${everyMs}`)
    this.#sink = sink
    this.#everyMs = everyMs
    this.#onError = onError
  }

  /** Queues `report`; it leaves with the next send, at most `everyMs` from now. */
  add(report: StormBatchReport): void {
    this.#queued.push(report)
    this.#timer ??= setTimeout(() => {
      this.flush().catch((error: unknown) => this.#onError(`report: ${error instanceof Error ? error.message : String(error)}`))
    }, this.#everyMs)
  }

  /**
   * Sends every queued report now; resolves once the driver recorded them and every send
   * started before (by the timer) has settled. It rejects when its own send fails; a timer's
   * send that failed was reported to `onError` already.
   */
  async flush(): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    const earlier = this.#sending
    const send = this.#queued.length === 0 ? undefined : this.#sink(this.#queued)
    this.#queued = []
    this.#sending = Promise.allSettled([earlier, send])
    await earlier
    await send
  }
}
