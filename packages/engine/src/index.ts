export { ANOMALY_REASONS } from './anomaly.ts'
export { addToCell, cellKey, compareCells, emptyCell, mergeCell, mergeCellMaps, parseCellKey } from './cell.ts'
export { createEngine, TidemarkEngine } from './engine.ts'
export { compareEventOrder } from './eventOrder.ts'
export { invalidReason, MAX_ABS_TS, MAX_NAME_LENGTH } from './event.ts'
export { orderEvents } from './orderEvents.ts'
export { createOrderedStream, OrderedEventStream } from './orderedStream.ts'
export { openEngine, recoveryReport } from './openEngine.ts'
export { isOverflowError, OverflowError } from './overflowError.ts'
export {
  checkpointPolicy,
  claimSource,
  DEFAULT_CHECKPOINT_EVERY,
  DEFAULT_ARCHIVE_LIMIT,
  decodeCheckpoint,
  decodeWalRecord,
  encodeCheckpoint,
  encodeWalRecord,
  indexedDbPersistence,
  isQuotaError,
  memoryPersistence,
  QuotaError,
  SCHEMA_VERSION,
} from './persistence/index.ts'
export {
  applyPeerUpdate,
  bindDoc,
  BroadcastChannelProvider,
  ConfigurationMismatchError,
  connectWebsocket,
  DOC_SCHEMA,
  isConfigurationMismatchError,
  jitterReconnects,
  jitterWindow,
  openBroadcastChannel,
  SyncStatusTracker,
  syncStatusTracker,
} from './replication/index.ts'
export { boundedOutOfOrderness, manual } from './watermarkStrategy.ts'
export { session, sliding, tumbling } from './windowSpec.ts'

export type { Anomaly, AnomalyReason } from './anomaly.ts'
export type { Cell, CellMap } from './cell.ts'
export type { CellGroup } from './cellGroup.ts'
export { groupCell, groupCellEntries, packCellGroup } from './cellGroup.ts'
export type {
  Engine,
  EngineLimits,
  EngineOptions,
  EngineStats,
  IngestReceipt,
  LateEvent,
  SyncStatus,
} from './engineApi.ts'
export type { StreamEvent } from './event.ts'
export type { EngineCheckpoint, Journal, JournalOp } from './engineCheckpoint.ts'
export type { CellAddress, CellEntry, ClockEntry, LocalWrite, MergeReport, ReplicaPort, ReplicaState } from './replicaPort.ts'
export type {
  BindDocOptions,
  BroadcastChannelProviderOptions,
  ConnectWebsocketOptions,
  DocBinding,
  JitteredProvider,
  OpenTabChannel,
  PeerAwareness,
  ReconnectJitterOptions,
  RejectedUpdate,
  SyncProvider,
  TabChannel,
  WebsocketConnection,
} from './replication/index.ts'
export type { OrderedEvent } from './eventOrder.ts'
export type { OpenEngineOptions, RecoveryReport } from './openEngine.ts'
export type { OrderedEvents, OrderEventsOptions } from './orderEvents.ts'
export type {
  OrderedBatch,
  OrderedStream,
  OrderedStreamOptions,
  OrderedStreamStats,
  OrderedStreamWork,
} from './orderedStreamApi.ts'
export type {
  ArchivedChange,
  ArchiveQuery,
  Checkpoint,
  CheckpointDecodeResult,
  CheckpointPolicy,
  ClaimSourceOptions,
  CorruptRecord,
  IndexedDbPersistenceOptions,
  LateLaneRecord,
  LateLaneSnapshot,
  MemoryPersistenceOptions,
  Persistence,
  PersistenceStats,
  RecoveredLog,
  SourceClaim,
  SourceLocks,
  SourceMemory,
  WalDecodeFailure,
  WalDecodeResult,
  WalOp,
  WalOpKind,
  WalRecord,
} from './persistence/index.ts'
export type { WatermarkStrategy } from './watermarkStrategy.ts'
export type {
  Basis,
  ResultQuery,
  ResultStatus,
  WindowChange,
  WindowChangeType,
  WindowResult,
} from './windowResult.ts'
export type { WindowSpec } from './windowSpec.ts'
