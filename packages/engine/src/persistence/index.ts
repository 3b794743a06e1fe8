export { checkpointPolicy, DEFAULT_CHECKPOINT_EVERY } from './checkpointPolicy.ts'
export { indexedDbPersistence, SCHEMA_VERSION } from './indexedDbPersistence.ts'
export { memoryPersistence } from './memoryPersistence.ts'
export { isQuotaError, QuotaError } from './quotaError.ts'
export { claimSource } from './sourceClaim.ts'
export { decodeCheckpoint, decodeWalBatch, encodeCheckpoint, encodeWalBatch } from './walCodec.ts'

export type { IndexedDbPersistenceOptions } from './indexedDbPersistence.ts'
export type { MemoryPersistenceOptions } from './memoryPersistence.ts'
export type {
  Checkpoint,
  CheckpointPolicy,
  CorruptRecord,
  Persistence,
  PersistenceStats,
  RecoveredLog,
  WalBatch,
} from './persistence.ts'
export type { ClaimSourceOptions, SourceClaim, SourceLocks, SourceMemory } from './sourceClaim.ts'
export type { CheckpointDecodeResult, WalDecodeFailure, WalDecodeResult } from './walCodec.ts'
