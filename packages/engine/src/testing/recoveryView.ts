/**
 * What the crash tests compare between an engine and the one recovered from its log: what a
 * user can see, once everything written so far is durable.
 */
import type { Engine } from '../core/engineApi.ts'

/**
 * What a user can see of `engine`: results, late lane, watermark and stats, minus the log's own
 * size (a recovered log is compacted) and error text.
 *
 * @example
 * await whenDurable(live)
 * expect(visibleState(await openEngine(options))).toEqual(visibleState(live))
 */
export function visibleState(engine: Engine) {
  const { walRecords: _r, walBytes: _b, persistenceError: _e, ...stats } = engine.stats()
  return { results: engine.results(), late: engine.lateEvents(), watermark: engine.watermark(), stats }
}

/**
 * Resolves once every record appended so far is committed: an empty batch is logged after them all.
 *
 * @example
 * engine.ingest(events)
 * await whenDurable(engine) // a crash now loses nothing of `events`
 */
export async function whenDurable(engine: Engine): Promise<void> {
  await engine.ingest([]).durable
}
