import type { AnomalyReason } from '../input/anomaly.ts'
import type { Cell } from '../lattice/cell.ts'
import type { LateEvent } from '../core/engineApi.ts'
import type { FutureSource } from '../input/futureSources.ts'
import type { Basis, WindowResult } from '../windows/windowResult.ts'

/**
 * Everything an engine needs to continue exactly where it was: lattice cells (also those
 * that came from peers), source clocks with their dedup memory, what was emitted per window,
 * the late lane and the counters. Plain data; `checkpointCodec.ts` turns it into bytes.
 */
export interface EngineCheckpoint {
  /** 2 since cells of fixed windows live in slices (`slices`); 1 (tumbling windows' cells on the windows) is still read. */
  readonly format: 1 | 2
  readonly configuration: string
  readonly replicaId: string
  readonly batch: number
  readonly frontiers: {
    readonly watermark: number
    readonly strictWatermark: number
    readonly maxTs: number
    readonly proof: number
    readonly idleSources: number
    /** The bound on the proof frontier from peers' clocks left out past `maxSources` (absent when none was). */
    readonly untrackedProof?: number
    /** The version a source this replica takes up starts at (`raiseVersionFloor`); absent when 0. */
    readonly versionFloor?: number
    /** The sources holding P and W at the last advance (`stats().proofHeldBy`, `watermarkHeldBy`); absent from checkpoints that predate them. */
    readonly heldBy?: { readonly proof: string | null; readonly watermark: string | null }
  }
  readonly sources: readonly SourceClockSnapshot[]
  readonly windows: readonly WindowSnapshot[]
  readonly sessions: readonly SessionIndexSnapshot[]
  /** Cells of tumbling, sliding and cumulating specs, by slice (format 2). */
  readonly slices?: readonly SliceIndexSnapshot[]
  /** The processing-time trigger armed last (timers fire in the order they were armed). */
  readonly timerSeq?: number
  /** Sources of `future_ts` events, for `stats().futureSources`. */
  readonly futureSources?: readonly FutureSource[]
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
  /** The source was finished (absent from checkpoints that predate finishing). */
  readonly finished?: boolean
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
  /** Format 1 only, tumbling windows: [source, cell] (their cells now live in `slices`). */
  readonly cells: readonly (readonly [string, Cell])[]
  /** Session windows: [source, fragment start, cell, its aggregate states encoded (with aggregates)]. */
  readonly fragments: readonly (readonly [string, number, Cell, (readonly Uint8Array[])?])[]
  /** Panes emitted, and how many of them on time or late. */
  readonly panes?: number
  readonly onTimePanes?: number
  /** Changed since its last pane. */
  readonly dirty?: boolean
  /** When its processing-time trigger fires (NaN: none armed), and the order it was armed in. */
  readonly timerAt?: number
  readonly timerSeq?: number
  /** Discarding mode: what arrived since its last pane, and whether the next pane carries the whole window. */
  readonly pending?: Cell | null
  /** With aggregates: the states of `pending`, encoded. */
  readonly pendingStates?: readonly Uint8Array[]
  readonly whole?: boolean
}

/**
 * One spec's slices: per key and slice start, its parts (`from`: the first window end counting
 * it), each a list of [source, cell, its aggregate states encoded (with aggregates)].
 */
export interface SliceIndexSnapshot {
  readonly window: string
  readonly slices: readonly (readonly [string, number, readonly (readonly [number, readonly (readonly [string, Cell, (readonly Uint8Array[])?])[]])[]])[]
}

export interface SessionIndexSnapshot {
  readonly window: string
  readonly sealed: readonly (readonly [string, number])[]
  readonly tombstones: readonly (readonly [string, readonly (readonly [string, number, Cell])[]])[]
}
