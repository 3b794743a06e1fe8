/**
 * What a worker e2e page or its host reports of an engine: window values (as the storm driver
 * digests them) and late lane, so a test compares a page's mirror with the host's own engine.
 */
import type { LateEvent, WindowResult } from '@tidemark/engine'
import { windowDigest } from '@tidemark/storm/page'

/** The window values and late lane of an engine, as the storm driver compares them. */
export interface WorkerPageSnapshot {
  readonly digest: string
  readonly windows: number
  readonly lateIds: Readonly<Record<string, readonly string[]>>
  readonly applied: number
}

/**
 * The snapshot of `engine` (a page's remote engine or the host's own).
 *
 * @example
 * const view = engineSnapshot(engine) // { digest, windows, lateIds: { 'device-a': ['device-a#404'] }, applied }
 */
export function engineSnapshot(engine: { lateEvents(): readonly LateEvent[]; results(): readonly WindowResult[]; stats(): { readonly applied: number } }): WorkerPageSnapshot {
  const lateIds: Record<string, string[]> = {}
  for (const { event } of engine.lateEvents()) {
    lateIds[event.source] ??= []
    lateIds[event.source]?.push(event.id)
  }
  const results = engine.results()
  return { digest: windowDigest(results), windows: results.length, lateIds, applied: engine.stats().applied }
}
