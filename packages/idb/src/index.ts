/**
 * `@tidemark/idb`: a write-ahead log in IndexedDB for an engine. `openEngine` recovers the
 * latest checkpoint plus the log tail and logs every later operation before it is published;
 * `claimSource` gives each tab its own source id; `indexedDbPersistence` is the store, fenced
 * by the writer epoch of a claim from `claimLog` (in `@tidemark/idb/log`)
 * (`memoryPersistence`, for tests and Node, is in `@tidemark/idb/memory`; the opt-in
 * final-window archive, `finalArchive`, in `@tidemark/idb/archive`).
 *
 * @module @tidemark/idb
 */
export { decodeEngineCheckpoint, encodeEngineCheckpoint } from './checkpoint/checkpointCodec.ts'
export { decodeCheckpoint, encodeCheckpoint } from './checkpoint/checkpointEnvelope.ts'
export { checkpointPolicy, DEFAULT_CHECKPOINT_EVERY } from './checkpoint/checkpointPolicy.ts'
export { indexedDbPersistence } from './store/indexedDbPersistence.ts'
export { SCHEMA_VERSION } from './store/indexedDbSchema.ts'
export { FencedError, isFencedError } from './persistence/fencedError.ts'
export { isLogConfigurationError, LogConfigurationError } from './engine/logConfigurationError.ts'
export { isQuotaError, QuotaError } from './persistence/quotaError.ts'
export { claimSource } from './claims/sourceClaim.ts'
export { deleteSource, listSources } from './claims/sourceCleanup.ts'
export { sourceDatabaseName } from './claims/sourceRegistry.ts'
export { openEngine, recoveryReport } from './engine/openEngine.ts'
export { decodeWalRecord, encodeWalRecord } from './wal/walCodec.ts'

export type { CheckpointDecodeResult } from './checkpoint/checkpointEnvelope.ts'
export type { FencedErrorOptions } from './persistence/fencedError.ts'
export type { ArchiveKey, ArchivePort, ArchiveWrite } from './history/archivePort.ts'
export type { IndexedDbPersistenceOptions } from './store/indexedDbOptions.ts'
export type {
  ArchivedChange,
  ArchiveQuery,
  Checkpoint,
  CheckpointPolicy,
  CorruptRecord,
  LateLaneRecord,
  LateLaneSnapshot,
  Persistence,
  PersistenceStats,
  RecoveredLog,
  WalOpKind,
  WalRecord,
} from './persistence/persistence.ts'
export type { OpenEngineOptions, RecoveryReport } from './engine/openEngine.ts'
export type { ClaimSourceOptions, SourceClaim, SourceMemory } from './claims/sourceClaim.ts'
export type { SourceCleanupOptions, SourceListing } from './claims/sourceCleanup.ts'
export type { SourceRegistryStorage } from './claims/sourceRegistry.ts'
export type { SourceLocks } from './claims/webLocks.ts'
export type { WalDecodeFailure, WalDecodeResult } from './wal/walCodec.ts'
export type { WriteRetryTimers } from './wal/walWriter.ts'
