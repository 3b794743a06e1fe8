import type { IngestQueue } from './ingestQueue.ts'
import type { WorkerClock } from './platform.ts'

/** How long `close()` waits for a host while none serves the page (counted again each time one goes away). */
export const CLOSE_WAIT_MS = 10_000

/** What `drainForClose` returns: when the batches settled, and what to call whenever a host comes or goes. */
export interface CloseDrain {
  readonly drained: Promise<void>
  /** A host welcomed the page (the wait stops) or went away (the wait starts again). */
  watch(): void
}

/**
 * The wait of a closing page for its batches: resolves once every batch is durable or failed.
 * While a host serves the page (`served()`) it waits for that host; while none does (a takeover
 * under way), it waits up to `CLOSE_WAIT_MS` for the next one, and past that rejects the batches
 * still pending, saying of each whether it may be in the log (a host it was sent to went away
 * before saying) or is not (it never reached one). A page that failed has rejected them already.
 *
 * @example
 * const drain = drainForClose(queue, clock, () => welcomed, 'the remote engine is closed')
 * onHostChange = drain.watch
 * await drain.drained
 */
export function drainForClose(queue: IngestQueue, clock: WorkerClock, served: () => boolean, closed: string): CloseDrain {
  let timer: unknown = null
  const stopTimer = (): void => {
    if (timer !== null) clock.clearTimeout(timer)
    timer = null
  }
  const watch = (): void => {
    if (served()) {
      stopTimer()
      return
    }
    timer ??= clock.setTimeout(() => {
      timer = null
      const gaveUp = `${closed}: no host served this page within ${CLOSE_WAIT_MS} ms of close()`
      queue.close(
        new Error(`${gaveUp}; this batch never reached a host: not in the log`),
        new Error(`${gaveUp}; this batch's host went away before saying it was durable: it may be in the log (nextSeq(source) tells)`),
      )
    }, CLOSE_WAIT_MS)
  }
  const drained = queue.drained().then(stopTimer)
  watch()
  return { drained, watch }
}
