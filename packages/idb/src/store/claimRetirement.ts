/**
 * A source claim's retirement, as `indexedDbPersistence` drives it: once a finish of the claim's
 * source is durable in the log, the claim is retired (`SourceClaim.retire`), so no later tab
 * session is handed a source that refuses every event. It happens as soon as the finish's
 * transaction committed, before its append resolves, so before the app, told that the finish is
 * durable, can release the claim: no other tab can claim the source in between (short of stealing
 * its lock). `open()` retires it too when the log it recovers holds such a finish: the tab that
 * wrote it closed (or crashed) between the commit and the retirement.
 */
import type { WalOp } from '@tidemark/engine'
import { reportListenerError } from '@tidemark/engine/adapter'
import type { IndexedDbPersistenceOptions } from './indexedDbOptions.ts'

type Claim = IndexedDbPersistenceOptions['claim'] | null

/** Whether `op` finishes the source of `claim` (a `claimSource` claim). */
export function finishesClaimed(claim: Claim, op: WalOp): boolean {
  return op.kind === 'finish' && op.source === claim?.source
}

/**
 * Retires the claim's source. A `retire` that throws (a claim not from `claimSource`, whose own
 * `retire` keeps storage errors in `memoryError`) is reported as uncaught: the finish is durable
 * all the same, and the append goes on.
 */
export function retireClaimed(claim: Claim): void {
  try {
    claim?.retire?.()
  } catch (error) {
    reportListenerError(error)
  }
}
