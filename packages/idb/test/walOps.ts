import type { WalOp } from '@tidemark/engine'
import type { StreamEvent } from '@tidemark/engine'

/** An ingest op as the engine journals it, for tests that only care about the events. */
export function ingestOp(events: readonly StreamEvent[], now = 0): WalOp {
  return { kind: 'ingest', now, events, rejected: {} }
}
