import type { StreamEvent } from '../../src/event.ts'
import type { WalOp } from '../../src/persistence/index.ts'

/** An ingest op as the engine journals it, for tests that only care about the events. */
export function ingestOp(events: readonly StreamEvent[], now = 0): WalOp {
  return { kind: 'ingest', now, events, rejected: {} }
}
