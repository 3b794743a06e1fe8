import type { IngestReceipt } from './engineApi.ts'
import type { StreamEvent } from './event.ts'
import { OverflowError } from './overflowError.ts'

/**
 * `engine.writable`: a WritableStream of batches. A write completes once its batch is
 * durable, so a producer piping into it is held back by the log (backpressure). A batch
 * with events refused as `overflow` errors the stream with `OverflowError`, so nothing
 * is silently lost; `onErrored` lets the engine hand out a fresh stream afterwards.
 */
export function ingestSink(
  ingest: (events: readonly StreamEvent[]) => IngestReceipt,
  onErrored: () => void,
  highWaterMark = 8,
): WritableStream<readonly StreamEvent[]> {
  return new WritableStream<readonly StreamEvent[]>(
    {
      write: async (batch) => {
        const receipt = ingest(batch)
        await receipt.durable
        const overflow = receipt.anomalies.filter((a) => a.reason === 'overflow').length
        if (overflow > 0) {
          onErrored()
          throw new OverflowError('engine', `${overflow} events of a written batch refused; resend them later`)
        }
      },
    },
    new CountQueuingStrategy({ highWaterMark }),
  )
}
