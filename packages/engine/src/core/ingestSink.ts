import type { IngestReceipt } from './engineApi.ts'
import type { StreamEvent } from '../input/event.ts'
import { OverflowError } from '../errors/overflowError.ts'

/**
 * `engine.writable`: a WritableStream of batches. A write completes once its batch is
 * durable, so a producer piping into it is held back by the log (backpressure). A batch
 * with events refused as `overflow` errors the stream with `OverflowError`, and a batch the
 * log could not make durable (a full disk) errors it with the log's error, so nothing is
 * silently lost; `onErrored` lets the engine hand out a fresh stream afterwards. `ingest` may
 * answer with the receipt or a promise of it (a remote engine's).
 *
 * @example
 * let writable: WritableStream<readonly StreamEvent[]> | null = null
 * const get = () => (writable ??= ingestSink((events) => remote.ingest(events), () => (writable = null)))
 */
export function ingestSink(
  ingest: (events: readonly StreamEvent[]) => IngestReceipt | Promise<IngestReceipt>,
  onErrored: () => void,
  highWaterMark = 8,
): WritableStream<readonly StreamEvent[]> {
  return new WritableStream<readonly StreamEvent[]>(
    {
      write: async (batch) => {
        try {
          const receipt = await ingest(batch)
          await receipt.durable
          const overflow = receipt.anomalies.filter((a) => a.reason === 'overflow').length
          if (overflow > 0) throw new OverflowError('engine', `${overflow} events of a written batch refused; resend them later`)
        } catch (error) {
          // The stream errors with it; the engine's next `writable` is a fresh one.
          onErrored()
          throw error
        }
      },
    },
    new CountQueuingStrategy({ highWaterMark }),
  )
}
