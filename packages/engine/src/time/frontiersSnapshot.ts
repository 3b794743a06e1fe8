import type { SourceClockSnapshot } from './sourceClock.ts'

/**
 * The frontiers and every source clock as a checkpoint keeps them: what `Frontiers.snapshot()`
 * gives and `restore` takes (`EngineCheckpoint` extends it, so a whole checkpoint is one).
 */
export interface FrontiersSnapshot {
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
}
