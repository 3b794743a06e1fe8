import { PROTOCOL_VERSION, type StartMessage } from '../protocol/messages.ts'
import type { HostLink, LinkSink } from './hostLink.ts'

/**
 * Makes the app's host worker as a dedicated Worker (the app's own `new Worker(new URL(...))`, so bundlers find the file).
 *
 * @example
 * const dedicated: DedicatedWorkerFactory = (name) => new Worker(new URL('./tidemark.worker.ts', import.meta.url), { type: 'module', name })
 */
export type DedicatedWorkerFactory = (name: string) => Worker

/**
 * Starts the app's host worker in this tab (leader or single mode) and links to it through
 * its port. Closing the link ends the worker.
 */
export function startHostWorker(
  factory: DedicatedWorkerFactory,
  name: string,
  start: Omit<StartMessage, 't' | 'v'>,
  sink: LinkSink,
): HostLink {
  const worker = factory(name)
  try {
    return linkWorker(worker, start, sink)
  } catch (error) {
    // The first messages could not be sent (a `config` the structured clone cannot copy): the worker ends here.
    worker.terminate()
    throw error
  }
}

function linkWorker(worker: Worker, start: Omit<StartMessage, 't' | 'v'>, sink: LinkSink): HostLink {
  let open = true
  const link: HostLink = {
    send: (message) => {
      if (open) worker.postMessage(message)
    },
    close: () => {
      open = false
      worker.terminate()
    },
  }
  let heard = false
  worker.addEventListener('message', (event) => {
    heard = true
    sink.message(link, event.data)
  })
  worker.addEventListener('error', (event) => {
    // Once the host answered, an error is one of its own uncaught errors, already in the console.
    if (!open || heard) return
    event.preventDefault()
    // A script that does not load (a wrong URL, a CSP that forbids it) can never serve.
    const detail = event.message === '' || event.message === undefined ? 'the host worker failed to start' : event.message
    sink.failed(`${detail} (the worker file given to connectEngine({ dedicated }) did not run; check its URL and the page's worker-src CSP)`)
  })
  const message: StartMessage = { t: 'start', v: PROTOCOL_VERSION, ...start }
  worker.postMessage(message)
  sink.opened(link)
  return link
}
