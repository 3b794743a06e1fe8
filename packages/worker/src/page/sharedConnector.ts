import type { HostConnector, HostLink, LinkSink } from './hostLink.ts'
import type { WorkerClock } from './platform.ts'

/**
 * How long a page waits for its SharedWorker's first answer to its hello (a welcome, or word that
 * the host is starting) before it makes the SharedWorker again (ms).
 */
export const HELLO_ANSWER_MS = 5_000

/**
 * Makes the app's host worker as a SharedWorker (the app's own `new SharedWorker(new URL(...), { type: 'module', name })`).
 *
 * @example
 * const shared: SharedWorkerFactory = (name) => new SharedWorker(new URL('./tidemark.worker.ts', import.meta.url), { type: 'module', name })
 */
export type SharedWorkerFactory = (name: string) => SharedWorker

/**
 * Shared mode: every tab connects a port to the one SharedWorker of the origin (same script
 * URL and `name`), which hosts the engine. When that worker is gone (its lock is released:
 * a crash, or it lost the log), the page makes the SharedWorker again, which starts a new one.
 * A SharedWorker made while the previous one is closing is that one, where nothing answers any
 * more (Chromium): a page whose hello gets no answer within `HELLO_ANSWER_MS` lets it go and
 * makes the SharedWorker again.
 */
export class SharedConnector implements HostConnector {
  readonly #factory: SharedWorkerFactory
  readonly #name: string
  readonly #clock: WorkerClock
  #link: HostLink | null = null
  #sink: LinkSink | null = null

  constructor(factory: SharedWorkerFactory, name: string, clock: WorkerClock) {
    this.#factory = factory
    this.#name = name
    this.#clock = clock
  }

  start(sink: LinkSink): void {
    this.#sink = sink
    this.#open(sink)
  }

  gone(link: HostLink): void {
    if (link !== this.#link || this.#sink === null) return
    link.close()
    this.#open(this.#sink)
  }

  stop(): void {
    this.#link?.close()
    this.#link = null
    this.#sink = null
  }

  #open(sink: LinkSink): void {
    let worker: SharedWorker
    try {
      worker = this.#factory(this.#name)
    } catch (error) {
      // A factory that throws can never serve: the page fails with the reason.
      this.stop()
      sink.failed(`the SharedWorker could not be started: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)} (check connectEngine({ shared }))`)
      return
    }
    const port = worker.port
    const clock = this.#clock
    let open = true
    let silence: unknown = null
    const link: HostLink = {
      send: (message) => {
        if (open) port.postMessage(message)
      },
      close: () => {
        open = false
        if (silence !== null) clock.clearTimeout(silence)
        port.close()
      },
    }
    this.#link = link
    silence = clock.setTimeout(() => {
      silence = null
      if (!open || link !== this.#link) return
      sink.lost(link, `the SharedWorker did not answer within ${HELLO_ANSWER_MS} ms`)
      this.gone(link)
    }, HELLO_ANSWER_MS)
    port.addEventListener('message', (event) => {
      if (silence !== null) {
        clock.clearTimeout(silence)
        silence = null
      }
      sink.message(link, event.data)
    })
    worker.addEventListener('error', () => {
      if (open) sink.failed("the SharedWorker did not run (check the URL given to connectEngine({ shared }) and the page's worker-src CSP)")
    })
    port.start()
    sink.opened(link)
  }
}
