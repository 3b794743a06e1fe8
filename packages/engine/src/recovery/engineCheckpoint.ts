import type { AnomalyReason } from '../input/anomaly.ts'
import type { LateEvent } from '../windows/lateLane.ts'
import type { FutureSource } from '../input/futureSources.ts'
import type { FrontiersSnapshot } from '../time/frontiersSnapshot.ts'
import type { SessionIndexSnapshot, SliceIndexSnapshot, WindowSnapshot } from '../windows/windowSnapshot.ts'

export type { SourceClockSnapshot } from '../time/sourceClock.ts'
export type { SessionIndexSnapshot, SliceIndexSnapshot, WindowSnapshot } from '../windows/windowSnapshot.ts'

/**
 * Everything an engine needs to continue exactly where it was: lattice cells (also those
 * that came from peers), source clocks with their dedup memory, what was emitted per window,
 * the late lane and the counters. Plain data; `checkpointCodec.ts` turns it into bytes.
 */
export interface EngineCheckpoint extends FrontiersSnapshot {
  /** 2 since cells of fixed windows live in slices (`slices`); 1 (tumbling windows' cells on the windows) is still read. */
  readonly format: 1 | 2
  readonly configuration: string
  readonly replicaId: string
  readonly batch: number
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
