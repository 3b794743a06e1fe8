/**
 * The finish rule (docs/replication.md): a source is finished by its writer only, once; a finished
 * source takes no more events, from anyone.
 */
import { MAX_NAME_LENGTH } from '../input/event.ts'
import { OverflowError } from '../errors/overflowError.ts'
import type { Frontiers } from './frontiers.ts'
import type { SourceClock } from './sourceClock.ts'

/**
 * The detail of a `finished_source` refusal.
 *
 * @example
 * finishedDetail('d1') // "source 'd1' was finished: it takes no more events"
 */
export function finishedDetail(source: string): string {
  return `source '${source}' was finished: it takes no more events`
}

/**
 * The clock of a source `replicaId` may finish (`engine.finishSource`), or undefined for a source
 * not seen yet that there is room for; a source already finished, by whichever writer, is
 * returned as it is (finishing it again changes nothing). Throws for what cannot be finished: a
 * name that is not one, a source another replica writes and has not finished (only its writer
 * knows that nothing more comes), and a new source past `maxSources` (the option named `limit`).
 *
 * @example
 * finishableClock(frontiers, 'd1', 'tab-1', 10_000)?.finished // false: d1 can be finished
 */
export function finishableClock(frontiers: Frontiers, source: string, replicaId: string, maxSources: number, limit = 'limits.maxSources'): SourceClock | undefined {
  if (typeof source !== 'string' || source.length === 0 || source.length > MAX_NAME_LENGTH) {
    throw new TypeError(`finishSource needs a source name (a non-empty string of at most ${MAX_NAME_LENGTH} units), got ${typeof source === 'string' ? `a string of ${source.length}` : typeof source}`)
  }
  const clock = frontiers.sources.get(source)
  // A source its writer finished takes nothing more from anyone: finishing it again changes nothing.
  if (clock !== undefined && clock.writer !== replicaId && !clock.finished) {
    throw new Error(`source '${source}' is written by replica '${clock.writer}': only its writer can finish it`)
  }
  if (clock === undefined && frontiers.sources.size >= maxSources) throw new OverflowError('engine', `${limit} (${maxSources}) reached`)
  return clock
}
