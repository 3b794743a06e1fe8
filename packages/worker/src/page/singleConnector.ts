import type { HostConnector, HostLink, LinkSink } from './hostLink.ts'
import { type DedicatedWorkerFactory, startHostWorker } from './hostWorker.ts'

/**
 * Single-tab mode, where there are neither SharedWorkers nor Web Locks: this tab runs the
 * host in its own dedicated worker, as if it were the only tab. A second tab's host claims the
 * log after it; this one's writes are then refused by the epoch fence, and its page fails
 * (`MirroredEngine` does not send it to another host: the two would take the log from each
 * other forever). With Web Locks (`mode: 'single'` asked for), a worker that ended is noticed
 * through its lock and started again (`gone`); without them nothing notices it.
 */
export class SingleConnector implements HostConnector {
  readonly #factory: DedicatedWorkerFactory
  readonly #name: string
  readonly #tab: string
  #link: HostLink | null = null
  #sink: LinkSink | null = null

  constructor(factory: DedicatedWorkerFactory, name: string, tab: string) {
    this.#factory = factory
    this.#name = name
    this.#tab = tab
  }

  owns(link: HostLink): boolean {
    return link === this.#link
  }

  start(sink: LinkSink): void {
    this.#sink = sink
    this.#start(sink)
  }

  gone(link: HostLink): void {
    if (link !== this.#link || this.#sink === null) return
    link.close()
    this.#start(this.#sink)
  }

  stop(): void {
    this.#link?.close()
    this.#link = null
    this.#sink = null
  }

  /** Starts this tab's host worker; a factory that throws can never serve, so the page fails with the reason. */
  #start(sink: LinkSink): void {
    this.#link = null
    try {
      this.#link = startHostWorker(this.#factory, this.#name, { mode: 'single', tab: this.#tab, steal: false, heartbeatMs: 0 }, sink)
    } catch (error) {
      this.stop()
      sink.failed(`the host worker could not be started: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)} (check connectEngine({ dedicated }))`)
    }
  }
}
