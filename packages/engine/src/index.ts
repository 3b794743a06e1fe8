/**
 * `@tidemark/engine`: event-time windows (tumbling, sliding, cumulating, session) with watermarks,
 * allowed lateness, triggers, corrections and a late lane, kept as lattice state per source, with
 * mergeable aggregates (quantiles, distinct counts, latest value, histograms, your own);
 * framework-free observers and frame schedulers for views. No runtime dependency, no DOM
 * required. The ordered event stream is its own entry, `@tidemark/engine/ordered`. What every
 * result means: docs/semantics.md in the repository.
 *
 * @module @tidemark/engine
 */
export { compareBytes, sameBytes } from './aggregates/byteOrder.ts'
export { defineAggregate } from './aggregates/defineAggregate.ts'
export { distinct } from './aggregates/distinct.ts'
export { histogram } from './aggregates/histogram.ts'
export { latest } from './aggregates/latest.ts'
export { quantiles } from './aggregates/quantiles.ts'
export { ANOMALY_REASONS } from './input/anomaly.ts'
export { createEngine, TidemarkEngine } from './core/engine.ts'
export { MAX_ABS_TS, MAX_NAME_LENGTH } from './input/event.ts'
export { invalidReason } from './input/eventValidation.ts'
export { isOverflowError, OverflowError } from './errors/overflowError.ts'
export { addToCell, cellKey, compareCells, emptyCell, mergeCell, mergeCellMaps, parseCellKey } from './lattice/cell.ts'
export { groupCell, groupCellEntries, packCellGroup } from './lattice/cellGroup.ts'
export { tickWhenDue } from './core/tickWhenDue.ts'
export { boundedOutOfOrderness, manual } from './time/watermarkStrategy.ts'
export { EngineFeed } from './view/engineFeed.ts'
export { EngineObserver } from './view/engineObserver.ts'
export {
  lateEventsSlice,
  statsSlice,
  syncStatusSlice,
  watermarkSlice,
  windowHistorySlice,
  windowSlice,
  windowsSlice,
} from './view/engineSlice.ts'
export { createFrameScheduler } from './view/frameScheduler.ts'
export { createManualScheduler } from './view/manualScheduler.ts'
export { shallowEqual } from './view/structuralSharing.ts'
export { afterProcessingTime, alignedProcessingTime, everyElement, never } from './windows/trigger.ts'
export { cumulating, session, sliding, tumbling, windowStart } from './windows/windowSpec.ts'

export type { Aggregate, AggregateDefinitions, AggregateResult, AggregateResults, AnyAggregate } from './aggregates/aggregate.ts'
export type { AggregateDefinition } from './aggregates/defineAggregate.ts'
export type { DistinctOptions } from './aggregates/distinct.ts'
export type { HistogramOptions } from './aggregates/histogram.ts'
export type { DistinctSketch } from './aggregates/hyperLogLog.ts'
export type { LatestOptions, LatestState } from './aggregates/latest.ts'
export type { QuantileSketch, QuantilesOptions } from './aggregates/quantiles.ts'
export type { BucketStore } from './aggregates/bucketStore.ts'
export type { Anomaly, AnomalyReason } from './input/anomaly.ts'
export type {
  Engine,
  EngineLimits,
  EngineOptions,
  EngineStats,
  IngestReceipt,
  LateEvent,
} from './core/engineApi.ts'
export type { StreamEvent } from './input/event.ts'
export type { FutureSource } from './input/futureSources.ts'
export type { Cell, CellMap } from './lattice/cell.ts'
export type { CellAddress } from './lattice/cellAddress.ts'
export type { CellEntry } from './lattice/cellEntry.ts'
export type { CellGroup } from './lattice/cellGroup.ts'
export type { EngineCheckpoint } from './recovery/engineCheckpoint.ts'
export type { WalOp, WriteAheadLog } from './recovery/writeAheadLog.ts'
export type {
  ClockEntry,
  ExportOptions,
  LocalWrite,
  MergeReport,
  ReplicaPort,
  ReplicaState,
} from './replica/replicaPort.ts'
export type { SyncStatus } from './replica/syncStatus.ts'
export type { TickedEngine, TickTimers, TickWhenDueOptions } from './core/tickWhenDue.ts'
export type { WatermarkStrategy } from './time/watermarkStrategy.ts'
export type { ObservedEngine } from './view/engineFeed.ts'
export type { EngineFrame } from './view/engineFrame.ts'
export type { EngineSlice } from './view/engineSlice.ts'
export type { FrameScheduler } from './view/frameScheduler.ts'
export type { ManualScheduler } from './view/manualScheduler.ts'
export type { Trigger, TriggerOptions } from './windows/trigger.ts'
export type {
  Accumulation,
  Basis,
  NoAggregates,
  PaneInfo,
  PaneTiming,
  ResultQuery,
  ResultStatus,
  WindowChange,
  WindowAggregates,
  WindowChangeType,
  WindowResult,
  WindowResultFields,
} from './windows/windowResult.ts'
export type { WindowSpec } from './windows/windowSpec.ts'
