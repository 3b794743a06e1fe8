/**
 * A source claim's retirement, as `indexedDbPersistence` drives it: once a finish of the claim's
 * source is durable in the log, the claim is retired (`SourceClaim.retire`), so no later tab
 * session is handed a source that refuses every event. It happens as soon as the finish's
 * transaction committed, before its append resolves, so before the app, told that the finish is
 * durable, can release the claim: no other tab can claim the source in between (short of stealing
 * its lock). `open()` retires it too when the log it recovers holds such a finish: the tab that
 * wrote it closed (or crashed) between the commit and the retirement, or its registry refused
 * the retirement (`memoryError`). A checkpoint truncates the finish record, so the record's
 * transaction also leaves a mark in the `meta` store, which no checkpoint removes. A finish whose
 * record failed (a full disk) is applied all the same and becomes durable with the next
 * checkpoint: that checkpoint's transaction leaves the mark, and its commit retires the claim.
 */
import type { WalOp } from '@tidemark/engine'
import { reportListenerError } from '@tidemark/engine/adapter'
import type { IndexedDbPersistenceOptions } from './indexedDbOptions.ts'
import type { LogStore, LogWrite } from './indexedDbSchema.ts'
import type { RecoveredLog } from '../persistence/persistence.ts'

type Claim = IndexedDbPersistenceOptions['claim'] | null

/** Whether `op` finishes the source of `claim` (a `claimSource` claim). */
export function finishesClaimed(claim: Claim, op: WalOp): boolean {
  return op.kind === 'finish' && op.source === claim?.source
}

/** The `meta` key of the mark a durable finish of `source` leaves in this log. */
const finishedKey = (source: string): string => `finished:${source}`

/**
 * The stores and writes of a transaction (an append's: `['wal', 'checkpoints']` and its records),
 * and when it makes a finish of the claim's source durable (`finishes`) a mark of it in `meta`,
 * which outlives the record.
 *
 * @example
 * const { stores, writes } = withFinishMark(claim, true, ['wal', 'checkpoints'], [(tx) => tx.objectStore('wal').add(bytes, lsn)])
 * stores // ['wal', 'checkpoints', 'meta']
 */
export function withFinishMark(claim: Claim, finishes: boolean, stores: readonly LogStore[], writes: LogWrite[]): { stores: LogStore[]; writes: LogWrite[] } {
  const source = claim?.source
  if (!finishes || source === undefined) return { stores: [...stores], writes }
  return { stores: stores.includes('meta') ? [...stores] : [...stores, 'meta'], writes: [...writes, (tx) => tx.objectStore('meta').put('1', finishedKey(source))] }
}

/** Whether the log `open()` recovered holds a durable finish of the claim's source: in its tail, or behind a checkpoint (its mark). */
export function recoveredFinish(claim: Claim, recovered: RecoveredLog): boolean {
  const source = claim?.source
  return source !== undefined && (recovered.meta.has(finishedKey(source)) || recovered.tail.some(({ op }) => finishesClaimed(claim, op)))
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
