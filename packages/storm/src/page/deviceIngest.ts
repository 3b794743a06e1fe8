/**
 * A device's ingest loop: one batch of readings per tick, each reported to the driver once
 * its receipt says it is durable. One batch per task and nothing else, so the page stays free
 * to notice offline/online on time.
 */
import type { Engine, StreamEvent } from '@tidemark/engine'
import type { StormIngest } from '../contract/stormPageApi.ts'
import type { StormReading } from '../contract/stormReading.ts'
import type { ReportQueue } from './reportQueue.ts'

/**
 * What the page side needs of an engine: a Tidemark `Engine` has all of it.
 *
 * @example
 * const engine: StormEngine = await openEngine({ windows: tumbling(1_000), persistence })
 */
export type StormEngine = Pick<Engine, 'ingest' | 'stats' | 'results' | 'lateEvents' | 'syncStatus'>

/** How long `stop()` waits for the produced batches to turn durable, ms. */
const STOP_TIMEOUT_MS = 60_000

/**
 * Produces readings `recovered + 1, recovered + 2, …` of one source into an engine.
 *
 * @example
 * const ingest = new DeviceIngest({ engine, source, seed, reading: stormReading, recovered: 0, reports, onError })
 * ingest.start({ batch: 20, everyMs: 200 })
 * await ingest.stop() // every produced batch durable and reported
 */
export class DeviceIngest {
  readonly #engine: StormEngine
  readonly #source: string
  readonly #seed: number
  readonly #reading: StormReading
  readonly #reports: ReportQueue
  readonly #onError: (message: string) => void
  /** Batches not yet durable (or failed), with their seq range. */
  readonly #pending = new Map<Promise<void>, string>()
  #timer: ReturnType<typeof setTimeout> | null = null
  #produced: number
  #durable: number
  #accepted = 0
  #beyondLateness = 0

  constructor(options: {
    readonly engine: StormEngine
    readonly source: string
    readonly seed: number
    readonly reading: StormReading
    /** Seqs `1..recovered` were produced in an earlier life of this page (restored from its log). */
    readonly recovered: number
    readonly reports: ReportQueue
    readonly onError: (message: string) => void
  }) {
    if (!Number.isSafeInteger(options.recovered) || options.recovered < 0) throw new RangeError(`storm page: recovered must be a non-negative integer, got ${options.recovered}`)
    this.#engine = options.engine
    this.#source = options.source
    this.#seed = options.seed
    this.#reading = options.reading
    this.#reports = options.reports
    this.#onError = options.onError
    this.#produced = options.recovered
    this.#durable = options.recovered
  }

  /** Highest seq produced, highest seq whose batch is durable, and this life's receipt totals. */
  get figures(): { readonly produced: number; readonly durable: number; readonly accepted: number; readonly beyondLateness: number } {
    return { produced: this.#produced, durable: this.#durable, accepted: this.#accepted, beyondLateness: this.#beyondLateness }
  }

  get running(): boolean {
    return this.#timer !== null
  }

  /** Starts the loop; does nothing while it runs. */
  start({ batch, everyMs }: StormIngest): void {
    if (!Number.isSafeInteger(batch) || batch <= 0) throw new RangeError(`storm page: ingest batch must be a positive integer, got ${batch}`)
    if (!Number.isFinite(everyMs) || everyMs < 0) throw new RangeError(`storm page: ingest everyMs must be a non-negative number, got ${everyMs}`)
    if (this.#timer === null) this.#pump(batch, everyMs)
  }

  /**
   * Stops the loop; resolves once every produced batch is durable (or failed) and reported, or
   * after `STOP_TIMEOUT_MS`, each batch still not durable then recorded as an error.
   */
  async stop(): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        for (const range of this.#pending.values()) this.#onError(`durable ${range}: not durable after ${STOP_TIMEOUT_MS} ms`)
        resolve()
      }, STOP_TIMEOUT_MS)
    })
    await Promise.race([Promise.all([...this.#pending.keys()]), late])
    clearTimeout(timer)
    await this.#reports.flush()
  }

  #pump(size: number, everyMs: number): void {
    const events: StreamEvent[] = []
    const from = this.#produced + 1
    const to = from + size - 1
    for (let seq = from; seq <= to; seq++) events.push(this.#reading(this.#seed, this.#source, seq))
    this.#produced = to
    const receipt = this.#engine.ingest(events)
    this.#accepted += receipt.accepted
    this.#beyondLateness += receipt.beyondLateness
    const { accepted, beyondLateness, duplicates, rejected } = receipt
    const done = receipt.durable.then(
      () => {
        this.#durable = Math.max(this.#durable, to)
        this.#reports.add({ source: this.#source, from, to, accepted, beyondLateness, duplicates, rejected })
      },
      (error: unknown) => this.#onError(`durable ${from}..${to}: ${error instanceof Error ? error.message : String(error)}`),
    )
    this.#pending.set(done, `${from}..${to}`)
    void done.finally(() => this.#pending.delete(done))
    this.#timer = setTimeout(() => this.#pump(size, everyMs), everyMs)
  }
}
