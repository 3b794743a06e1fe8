/**
 * `@tidemark/engine/adapter`: what transports and storage adapters build on, beyond the
 * application API. `@tidemark/yjs` and `@tidemark/idb` are written on it; so can an adapter
 * for another transport (WebRTC, a custom server) or another store (OPFS, SQLite).
 *
 * - The packed cell-group layout the ports exchange, and its validation; the aggregate column
 *   that carries its cells' aggregate states.
 * - Typed-array blocks of shared buffers for decoding many small groups.
 * - The engine's total order of window results.
 * - The event-time frontiers (watermark, proof frontier) over source clocks, for operators
 *   and baselines that must keep the same time as the engine.
 * - Option checks, so an adapter refuses unknown or bad options the way the engine does.
 * - The global timers, unref'd, as `tickWhenDue` arms them by default.
 * - The change feed (listeners and `changes()` streams), the report of a listener's error and
 *   the `writable` stream of batches, for a stand-in of the engine (the worker's page mirror)
 *   to behave as the engine does.
 *
 * @module @tidemark/engine/adapter
 */
export { MAX_AGGREGATES } from './aggregates/aggregateSet.ts'
export { ChangeFeed } from './core/changeFeed.ts'
export { checkEngineOptions, ENGINE_OPTION_KEYS } from './config/engineOptions.ts'
export { ingestSink } from './core/ingestSink.ts'
export { reportListenerError } from './errors/listenerError.ts'
export { messageOf } from './errors/errorMessage.ts'
export { paneInfo } from './windows/paneInfo.ts'
export { callEach } from './view/frameTasks.ts'
export { assertKnownOptions, closestName } from './options/knownOptions.ts'
export { cellCount, cellEntriesOf, compareGroupRow, GROUP_COLUMNS, GroupIndex, MAX_CELL_COUNT, MAX_GROUP_CELLS, writeGroupRow } from './lattice/cellGroup.ts'
export { cellGroupProblem, cellValuesProblem, groupCellProblem, isName, isTime, isWindowStart, validCellGroups } from './lattice/cellGroupValidation.ts'
export { DoubleSlab } from './lattice/doubleSlab.ts'
export { encodeAggregateColumn, readAggregateColumn } from './lattice/aggregateColumn.ts'
export { compareResults } from './windows/windowResult.ts'
export { Frontiers } from './time/frontiers.ts'
export type { FrontiersSnapshot } from './time/frontiersSnapshot.ts'
export type { SourceClockSnapshot } from './time/sourceClock.ts'
export { GLOBAL_TICK_TIMERS } from './core/tickWhenDue.ts'
export { checkWatermarkStrategy } from './time/watermarkStrategy.ts'
