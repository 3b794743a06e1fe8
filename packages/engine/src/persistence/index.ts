export { decodeEngineCheckpoint, encodeEngineCheckpoint } from './checkpointCodec.ts'
export { decodeCheckpoint, encodeCheckpoint } from './checkpointEnvelope.ts'
export { checkpointPolicy, DEFAULT_CHECKPOINT_EVERY } from './checkpointPolicy.ts'
export { DEFAULT_ARCHIVE_LIMIT } from './finalArchive.ts'
export { indexedDbPersistence } from './indexedDbPersistence.ts'
export { SCHEMA_VERSION } from './indexedDbSchema.ts'
export { memoryPersistence } from './memoryPersistence.ts'
export { isQuotaError, QuotaError } from './quotaError.ts'
export { claimSource } from './sourceClaim.ts'
export { decodeWalRecord, encodeWalRecord } from './walCodec.ts'

export type { CheckpointDecodeResult } from './checkpointEnvelope.ts'
export type { IndexedDbPersistenceOptions } from './indexedDbPersistence.ts'
export type { MemoryPersistenceOptions } from './memoryPersistence.ts'
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
  WalOp,
  WalOpKind,
  WalRecord,
} from './persistence.ts'
export type { ClaimSourceOptions, SourceClaim, SourceLocks, SourceMemory } from './sourceClaim.ts'
export type { WalDecodeFailure, WalDecodeResult } from './walCodec.ts'
