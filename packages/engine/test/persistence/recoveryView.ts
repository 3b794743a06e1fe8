/**
 * What the crash tests compare between an engine and the one recovered from its log: what a
 * user can see, once everything written so far is durable.
 */
import type { Engine } from '../../src/index.ts'

/**
 * What a user can see of `engine`: results, late lane, watermark and stats, minus the log's own
 * size (a recovered log is compacted) and error text.
 *
 * @example
 * await drain(live)
 * expect(visible(await openEngine(options))).toEqual(visible(live))
 */
export function visible(engine: Engine) {
  const { walRecords: _r, walBytes: _b, persistenceError: _e, ...stats } = engine.stats()
  return { results: engine.results(), late: engine.lateEvents(), watermark: engine.watermark(), stats }
}

/**
 * Resolves once every record appended so far is committed: an empty batch is logged after them all.
 *
 * @example
 * engine.ingest(events)
 * await drain(engine) // a crash now loses nothing of `events`
 */
export async function drain(engine: Engine): Promise<void> {
  await engine.ingest([]).durable
}
