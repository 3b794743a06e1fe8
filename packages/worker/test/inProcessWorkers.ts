/**
 * A test host's workers as `connectEngine`'s factories make them, in this process: what crosses
 * a port crosses as a structured clone, a macrotask later.
 */
import type { ClientLink } from '../src/host/hostClient.ts'
import type { TestHost } from './hostHarness.ts'

/** The page's end of a link to the host: what the host sends it reaches `listeners` as a structured clone, a macrotask later. */
export function pageEnd(): { readonly own: ClientLink; readonly listeners: ((event: { readonly data: unknown }) => void)[] } {
  const listeners: ((event: { readonly data: unknown }) => void)[] = []
  const own: ClientLink = {
    send: (message, transfer) => {
      const copy = structuredClone(message, { transfer })
      setImmediate(() => {
        for (const listener of listeners) listener({ data: copy })
      })
    },
  }
  return { own, listeners }
}

/** The host's dedicated worker, in this process: messages cross as a structured clone, a macrotask later. */
export function workerOf(host: TestHost): Worker {
  const { own, listeners } = pageEnd()
  const worker = {
    postMessage(message: unknown) {
      const copy = structuredClone(message)
      // The worker file's `hostEngine` takes the start message; the test's host is already made.
      setImmediate(() => {
        if ((copy as { t?: string }).t !== 'start') host.host.receive(own, copy)
      })
    },
    addEventListener(type: string, listener: (event: { readonly data: unknown }) => void) {
      if (type === 'message') listeners.push(listener)
    },
    terminate() {},
  }
  return worker as unknown as Worker
}

/** The host's SharedWorker, in this process: its port carries messages as `workerOf` does. */
export function sharedWorkerOf(host: TestHost): SharedWorker {
  const { own, listeners } = pageEnd()
  const port = {
    postMessage(message: unknown) {
      const copy = structuredClone(message)
      setImmediate(() => host.host.receive(own, copy))
    },
    addEventListener(type: string, listener: (event: { readonly data: unknown }) => void) {
      if (type === 'message') listeners.push(listener)
    },
    start() {},
    close() {},
  }
  return { port, addEventListener() {} } as unknown as SharedWorker
}
