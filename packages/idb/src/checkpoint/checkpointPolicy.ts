import type { CheckpointPolicy } from '../store/persistence.ts'

/**
 * Checkpoint after 100,000 logged events or 30 s, whichever comes first.
 *
 * @example
 * DEFAULT_CHECKPOINT_EVERY // { events: 100000, ms: 30000 }
 * memoryPersistence({ checkpointEvery: { ms: DEFAULT_CHECKPOINT_EVERY.ms / 6 } }) // every 5 s, events unchanged
 */
export const DEFAULT_CHECKPOINT_EVERY: CheckpointPolicy = { events: 100_000, ms: 30_000 }

/**
 * Fills a partial policy from the defaults and checks it.
 *
 * @example
 * checkpointPolicy({ events: 10_000 }) // { events: 10_000, ms: 30_000 }
 */
export function checkpointPolicy(partial: Partial<CheckpointPolicy> = {}): CheckpointPolicy {
  const policy = { ...DEFAULT_CHECKPOINT_EVERY, ...partial }
  if (!(policy.events > 0) || !(policy.ms > 0)) {
    throw new RangeError(`checkpointEvery needs events > 0 and ms > 0, got ${JSON.stringify(partial)}`)
  }
  return policy
}
