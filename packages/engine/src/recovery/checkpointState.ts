/**
 * What a checkpoint holds of a running engine, and how it is put back: frontiers, windows,
 * late lane, counters and dedup memory (the `EngineCheckpoint` shape).
 */
import type { AggregateSet } from '../aggregates/aggregateSet.ts'
import type { AnomalyReason } from '../input/anomaly.ts'
import type { DedupMemory } from '../windows/dedupMemory.ts'
import type { EngineLiveness } from '../errors/engineLiveness.ts'
import type { FutureSources } from '../input/futureSources.ts'
import type { EngineCheckpoint, SessionIndexSnapshot, SliceIndexSnapshot, WindowSnapshot } from './engineCheckpoint.ts'
import { configurationOf, type ResolvedOptions } from '../config/engineOptions.ts'
import { checkpointRefusal } from './checkpointValidation.ts'
import type { Frontiers } from '../time/frontiers.ts'
import type { LateLane } from '../windows/lateLane.ts'
import type { WindowIndex } from '../windows/windowIndex.ts'
import { SlicedWindowIndex } from '../windows/slicedWindowIndex.ts'
import type { WindowLifecycle } from '../windows/windowLifecycle.ts'
import { checkpointStates, WindowState } from '../windows/windowState.ts'

/** The parts of an engine a checkpoint captures; `restoreEngine` writes into the mutable ones. */
export interface EngineParts {
  readonly options: ResolvedOptions
  readonly replicaId: string
  readonly frontiers: Frontiers
  readonly indexes: readonly WindowIndex[]
  readonly lifecycle: WindowLifecycle
  readonly lateLane: LateLane
  readonly counts: Record<string, number>
  readonly anomalies: Record<AnomalyReason, number>
  readonly dedup: DedupMemory
  readonly futureSources: FutureSources
}

/**
 * Everything needed to continue exactly from here; `batch` is the engine's batch counter.
 *
 * @example
 * const checkpoint = captureEngine(parts, batch)
 */
export function captureEngine(parts: EngineParts, batch: number): EngineCheckpoint {
  const { lateLane, dedup } = parts
  return {
    format: 2,
    configuration: configurationOf(parts.options),
    replicaId: parts.replicaId,
    batch,
    ...parts.frontiers.snapshot(),
    ...captureWindows(parts.indexes, parts.options.aggregates),
    timerSeq: parts.lifecycle.timerSeq,
    futureSources: parts.futureSources.list(),
    lateLane: { entries: [...lateLane.list()], trimmed: lateLane.trimmed, total: lateLane.total },
    counts: { ...parts.counts, corrections: parts.lifecycle.corrections },
    anomalies: { ...parts.anomalies },
    dedup: { entries: dedup.entries, atLastPurge: dedup.atLastPurge },
  }
}

/**
 * Loads a checkpoint into a fresh engine's parts (same window configuration); returns the
 * batch counter to continue from. The whole checkpoint is checked first (`checkpointRefusal`):
 * one of another format, configuration or replica, or with a field out of type or range, throws
 * naming why, and nothing changed.
 *
 * @example
 * batch = restoreEngine(parts, checkpoint, liveness)
 */
export function restoreEngine(parts: EngineParts, checkpoint: EngineCheckpoint, liveness: EngineLiveness): number {
  try {
    // Checked inside the guard, where aggregates decode its states: one that calls the engine is refused (B51). A refusal returns, so the engine serves.
    const refusal = liveness.guard(() => checkpointRefusal(checkpoint, parts))
    if (refusal !== null) throw refusal
    // What can still throw past the checks (an aggregate's `init`) leaves the engine half restored: it stops.
    return liveness.guard(() => restoreParts(parts, checkpoint))
  } finally {
    // The states decoded and not taken: a refused checkpoint's, tombstones'.
    checkpointStates.clear()
  }
}

function restoreParts(parts: EngineParts, checkpoint: EngineCheckpoint): number {
  parts.frontiers.restore(checkpoint)
  restoreWindows(parts.indexes, parts.lifecycle, checkpoint, parts.options.aggregates)
  parts.lateLane.restore(checkpoint.lateLane.entries, checkpoint.lateLane.trimmed, checkpoint.lateLane.total)
  for (const name of Object.keys(parts.counts)) parts.counts[name] = checkpoint.counts[name] ?? 0
  parts.lifecycle.corrections = checkpoint.counts.corrections ?? 0
  for (const reason of Object.keys(parts.anomalies) as AnomalyReason[]) parts.anomalies[reason] = checkpoint.anomalies[reason] ?? 0
  // Counted from the clocks, not read: a count that said more than they hold would refuse every event out of seq order as `overflow`, for good.
  let entries = 0
  for (const clock of parts.frontiers.sources.values()) entries += clock.dedupEntries()
  parts.dedup.restore(entries, checkpoint.dedup.atLastPurge)
  // Past every restored window's timer: the next one armed must not share its place in the order of due panes.
  let timerSeq = checkpoint.timerSeq ?? 0
  for (const w of checkpoint.windows) timerSeq = Math.max(timerSeq, w.timerSeq ?? 0)
  parts.lifecycle.timerSeq = timerSeq
  parts.futureSources.restore(checkpoint.futureSources ?? [])
  return checkpoint.batch
}

/** Every live window and each index's extra state (sessions' sealed ends and tombstones, fixed specs' slices), for a checkpoint. */
function captureWindows(indexes: readonly WindowIndex[], aggregates: AggregateSet | null): { windows: WindowSnapshot[]; sessions: SessionIndexSnapshot[]; slices: SliceIndexSnapshot[] } {
  const windows: WindowSnapshot[] = []
  const sessions: SessionIndexSnapshot[] = []
  const slices: SliceIndexSnapshot[] = []
  for (const index of indexes) {
    for (const w of index.windows()) windows.push(w.snapshot(aggregates))
    const extra = index.snapshot()
    if (extra === null) continue
    if ('sealed' in extra) sessions.push(extra)
    else slices.push(extra)
  }
  return { windows, sessions, slices }
}

/** Puts a checkpoint's windows back into their indexes and queues each for its next lifecycle step. */
function restoreWindows(indexes: readonly WindowIndex[], lifecycle: WindowLifecycle, checkpoint: EngineCheckpoint, aggregates: AggregateSet | null): void {
  for (const s of checkpoint.windows) {
    // Every window's spec is this engine's: checked with the rest (`checkpointRefusal`).
    const index = indexes.find((i) => i.id === s.window) as WindowIndex
    const w = WindowState.restore(s, aggregates)
    index.adopt(w)
    lifecycle.adopt(w)
    // Format 1: a tumbling window held its own cells, which are now its slice's.
    if (s.cells.length > 0 && index instanceof SlicedWindowIndex) index.adoptCells(w, s.cells)
  }
  for (const s of checkpoint.sessions) indexes.find((i) => i.id === s.window)?.restore(s)
  for (const s of checkpoint.slices ?? []) indexes.find((i) => i.id === s.window)?.restore(s)
}
