import { assertKnownOptions } from '@tidemark/engine/adapter'
import type { CheckpointPolicy } from '../persistence/persistence.ts'

/**
 * Checkpoint after 100,000 logged events or 30 s, whichever comes first.
 *
 * @example
 * DEFAULT_CHECKPOINT_EVERY // { events: 100000, ms: 30000 }
 * memoryPersistence({ checkpointEvery: { ms: DEFAULT_CHECKPOINT_EVERY.ms / 6 } }) // every 5 s, events unchanged
 */
export const DEFAULT_CHECKPOINT_EVERY: CheckpointPolicy = { events: 100_000, ms: 30_000 }

/**
 * Fills a partial policy from `base` (the defaults unless given) and checks it: `events` and
 * `ms` are numbers > 0 (Infinity turns that trigger off), not both infinite (a log that is never
 * checkpointed grows without bound). A trigger left out or `undefined` keeps `base`'s. Throws a
 * TypeError or RangeError naming `where` (`checkpointEvery`).
 *
 * @example
 * checkpointPolicy({ events: 10_000 }) // { events: 10_000, ms: 30_000 }
 * checkpointPolicy({ events: undefined, ms: 5_000 }, 'checkpointEvery', { events: 1_000, ms: 30_000 }) // { events: 1_000, ms: 5_000 }
 */
export function checkpointPolicy(partial: Partial<CheckpointPolicy> = {}, where = 'checkpointEvery', base: CheckpointPolicy = DEFAULT_CHECKPOINT_EVERY): CheckpointPolicy {
  if (typeof partial !== 'object' || partial === null) throw new TypeError(`${where} must be an object { events?, ms? }, got ${String(partial)}`)
  assertKnownOptions(where, partial, ['events', 'ms'])
  const policy = { ...base }
  for (const name of ['events', 'ms'] as const) {
    const value = partial[name]
    if (value === undefined) continue
    if (typeof value !== 'number' || !(value > 0)) {
      throw new RangeError(`${where}.${name} must be a number > 0 (Infinity: never by ${name === 'ms' ? 'time' : 'count'}), got ${String(value)}`)
    }
    policy[name] = value
  }
  if (policy.events === Number.POSITIVE_INFINITY && policy.ms === Number.POSITIVE_INFINITY) {
    throw new RangeError(`${where}: events and ms cannot both be Infinity: a log that is never checkpointed grows without bound`)
  }
  return policy
}
