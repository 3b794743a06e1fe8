import type { AnomalyReason } from '../input/anomaly.ts'
import type { StreamEvent } from '../input/event.ts'
import type { CellGroup } from '../lattice/cellGroup.ts'
import type { ClockEntry, LocalWrite } from '../replica/replicaPort.ts'

/**
 * One operation of the write-ahead log. Replaying the log after a checkpoint, each
 * with its recorded processing time, rebuilds exactly the state before a crash.
 */
export type WalOp =
  | {
      readonly kind: 'ingest'
      readonly now: number
      /** The valid events of the batch, in input order (invalid inputs never change state). */
      readonly events: readonly StreamEvent[]
      /** Invalid inputs of the batch by reason, so anomaly counters survive replay too. */
      readonly rejected: Readonly<Partial<Record<AnomalyReason, number>>>
    }
  | {
      /**
       * Counts only: a batch refused whole (over `limits.maxBatch`, or while the log refuses
       * writes), whose inputs were counted (`ingested`, anomalies by reason) but nothing was
       * applied; or peers' state refused outside a merge's replayed work (the cells a merge's
       * checks left out before it was logged, `replica.reportAnomaly`), counted as
       * `invalid_remote_cell` or `source_conflict` and not as `ingested`. Replay counts them
       * again and changes nothing else.
       */
      readonly kind: 'refuse'
      readonly rejected: Readonly<Partial<Record<AnomalyReason, number>>>
    }
  | { readonly kind: 'advance'; readonly to: number }
  | { readonly kind: 'tick'; readonly now: number }
  /** `finishSource(source)` at processing time `now`. */
  | { readonly kind: 'finish'; readonly source: string; readonly now: number }
  | {
      /** Peers' state merged: their cells packed in groups (as the doc carries them) and their clocks. */
      readonly kind: 'merge'
      readonly now: number
      readonly groups: readonly CellGroup[]
      readonly clocks: readonly ClockEntry[]
    }

/** Where an engine logs every state-changing operation before it is published or acknowledged. */
export interface WriteAheadLog {
  /** Takes the operation synchronously (encode it now); resolves once it is durable. */
  record(op: WalOp): Promise<void>
  /** When set, ingest refuses new batches (for example, the storage quota is exhausted). */
  readonly blocked: Error | null
  /** Size of the log, for `engine.stats()`. */
  stats(): { readonly walRecords: number; readonly walBytes: number }
  /**
   * Called with each write for peers right after the op that made it was recorded; calls
   * `deliver(write)` once that op is durable, writes in order. Absent: writes go out at once.
   */
  publishWhenDurable?(write: LocalWrite, deliver: (write: LocalWrite) => void): void
  /**
   * Called once, when the log is attached, with the function to call each time what the log
   * reports changes outside a batch (`stats()`, a write error): the engine then notifies its
   * subscribers, so views of its stats show it.
   */
  watch?(changed: () => void): void
}

/**
 * Counts again, during replay, what an `ingest` or `refuse` record says was refused: each reason
 * into `anomalies`, and into `ingested` unless it is peers' state (`invalid_remote_cell`,
 * `source_conflict`), which was never an input.
 *
 * @example
 * countLoggedRefusals({ overflow: 3 }, anomalies, counts) // anomalies.overflow += 3, counts.ingested += 3
 */
export function countLoggedRefusals(
  rejected: Readonly<Partial<Record<AnomalyReason, number>>>,
  anomalies: Record<AnomalyReason, number>,
  counts: { ingested: number },
): void {
  for (const [reason, n] of Object.entries(rejected) as [AnomalyReason, number][]) {
    anomalies[reason] += n
    if (reason !== 'invalid_remote_cell' && reason !== 'source_conflict') counts.ingested += n
  }
}
