import type { AnomalyReason } from '../core/anomaly.ts'
import type { Cell } from '../lattice/cell.ts'
import type { LateEvent } from '../core/engineApi.ts'
import type { Basis, WindowResult } from '../windows/windowResult.ts'

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
  /** Highest seq remembered, also above a gap whose dedup memory was released (what `engine.nextSeq` counts from). */
  readonly highestSeq: number
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
