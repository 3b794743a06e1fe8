import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'
import type { StreamEvent } from '../input/event.ts'
import type { Cell } from '../lattice/cell.ts'
import type { CellAddress } from '../lattice/cellAddress.ts'
import type { SourceClock } from '../time/sourceClock.ts'
import type { WindowSpec } from './windowSpec.ts'

/*
 * What placement and the window lifecycle use of the engine's other parts, declared here so the
 * windows depend on nothing above them: the engine's `ResolvedOptions` (config/engineOptions.ts),
 * `LateLane` (lateLane.ts) and `ReplicationOutbox` (replica/replicationOutbox.ts) are these.
 */

/** The options placement reads (the engine's resolved options: every default filled in, every value checked). */
export interface PlacementOptions {
  readonly specs: readonly WindowSpec[]
  readonly limits: { readonly maxWindows: number; readonly maxDedupEntries: number; readonly maxSources: number }
  readonly maxFutureSkew: number
  /** The aggregates, in name order; null without. */
  readonly aggregates: AggregateSet | null
}

/** Where placement keeps the events every spec refused beyond lateness (the engine's late lane). */
export interface LateEventSink {
  /** Keeps a copy of `event`, refused beyond lateness (by window spec `window`, when one refused it). */
  keep(event: StreamEvent, window?: string): void
}

/** Where placement and the window lifecycle hand what the local replica wrote, for replication. */
export interface WriteOutbox {
  /** Someone listens: with nobody, what is handed here is dropped, and callers may skip building it. */
  readonly listening: boolean
  /** A cell written locally, and its states; one entry per address per batch (the last write wins). */
  cell(window: string, key: string, start: number, source: string, cell: Cell, states: States | null): void
  /** A source's clock changed by this batch. */
  clock(clock: SourceClock): void
  /** A cell this replica writes left live state: it may leave the shared document. */
  expire(address: CellAddress): void
}
