import type { AnomalyReason } from './anomaly.ts'
import type { Cell } from './cell.ts'
import type { CellGroup } from './cellGroup.ts'
import type { LateEvent } from './engineApi.ts'
import type { StreamEvent } from './event.ts'
import type { ClockEntry, LocalWrite } from './replicaPort.ts'
import type { Basis, WindowResult } from './windowResult.ts'

/**
 * Everything an engine needs to continue exactly where it was: lattice cells (also those
 * that came from peers), source clocks with their dedup memory, what was emitted per window,
 * the late lane and the counters. Plain data; `checkpointCodec.ts` turns it into bytes.
 */
export interface EngineCheckpoint {
  readonly format: 1
  readonly configuration: string
  readonly replicaId: string
  readonly batch: number
  readonly frontiers: {
    readonly watermark: number
    readonly strictWatermark: number
    readonly maxTs: number
    readonly proof: number
    readonly idleSources: number
  }
  readonly sources: readonly SourceClockSnapshot[]
  readonly windows: readonly WindowSnapshot[]
  readonly sessions: readonly SessionIndexSnapshot[]
  readonly lateLane: { readonly entries: readonly LateEvent[]; readonly trimmed: number; readonly total: number }
  readonly counts: Readonly<Record<string, number>>
  readonly anomalies: Readonly<Record<AnomalyReason, number>>
  readonly dedup: { readonly entries: number; readonly atLastPurge: number }
}

export interface SourceClockSnapshot {
  readonly name: string
  readonly writer: string
  readonly version: number
  readonly maxTs: number
  readonly lastSeen: number
  readonly prefix: number
  readonly prefixTs: number
  readonly lastPrefixTs: number
  readonly provable: boolean
  /** [seq, ts] seen above a gap. */
  readonly ahead: readonly (readonly [number, number])[]
  /** [id, ts] of events without seq. */
  readonly ids: readonly (readonly [string, number])[]
}

export interface WindowSnapshot {
  readonly window: string
  readonly key: string
  readonly start: number
  readonly end: number
  readonly fired: boolean
  readonly final: boolean
  readonly revision: number
  readonly basis: Basis
  readonly basisEnd: number
  readonly emitted: WindowResult | null
  readonly history: readonly WindowResult[]
  /** Fixed windows: [source, cell]. */
  readonly cells: readonly (readonly [string, Cell])[]
  /** Session windows: [source, fragment start, cell]. */
  readonly fragments: readonly (readonly [string, number, Cell])[]
}

export interface SessionIndexSnapshot {
  readonly window: string
  readonly sealed: readonly (readonly [string, number])[]
  readonly tombstones: readonly (readonly [string, readonly (readonly [string, number, Cell])[]])[]
}

/**
 * One operation of the write-ahead journal. Replaying the journal after a checkpoint, each
 * with its recorded processing time, rebuilds exactly the state before a crash.
 */
export type JournalOp =
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
       * A batch refused whole (over `limits.maxBatch`, or while the log refuses writes):
       * nothing was applied, but its inputs were counted (`ingested`, anomalies by reason),
       * so replay counts them again and changes nothing else.
       */
      readonly kind: 'refuse'
      readonly rejected: Readonly<Partial<Record<AnomalyReason, number>>>
    }
  | { readonly kind: 'advance'; readonly to: number }
  | { readonly kind: 'tick'; readonly now: number }
  | {
      /** Peers' state merged: their cells packed in groups (as the doc carries them) and their clocks. */
      readonly kind: 'merge'
      readonly now: number
      readonly groups: readonly CellGroup[]
      readonly clocks: readonly ClockEntry[]
    }

/** Where an engine logs every state-changing operation before it is published or acknowledged. */
export interface Journal {
  /** Takes the operation synchronously (encode it now); resolves once it is durable. */
  record(op: JournalOp): Promise<void>
  /** When set, ingest refuses new batches (for example, the storage quota is exhausted). */
  readonly blocked: Error | null
  /** Size of the log, for `engine.stats()`. */
  stats(): { readonly walRecords: number; readonly walBytes: number }
  /**
   * Called with each write for peers right after the op that made it was recorded; calls
   * `deliver(write)` once that op is durable, writes in order. Absent: writes go out at once.
   */
  publishWhenDurable?(write: LocalWrite, deliver: (write: LocalWrite) => void): void
}
