/**
 * `@tidemark/idb/log`: `claimLog`, the claim of a fixed log by one writer per origin (a
 * SharedWorker, or a leader tab's worker, hosting the origin's engine): its Web Lock, waited for
 * or stolen, and a writer epoch that `indexedDbPersistence` checks in every write transaction.
 * Apps where each tab writes its own source use `claimSource` instead, and do not load this.
 *
 * @module @tidemark/idb/log
 */
export { claimLog, logDatabaseName } from './claims/logClaim.ts'

export type { ClaimLogOptions, LogClaim, LogLocks } from './claims/logClaim.ts'
