import type { Engine, EngineOptions } from '../core/engineApi.ts'
import { TidemarkEngine } from '../core/engine.ts'
import { indexFor, windowIndexes } from '../config/engineOptions.ts'
import { PerWindowIndex } from './perWindowIndex.ts'

/**
 * An engine whose tumbling, sliding and cumulating windows each keep their own cells (one per
 * source), as fixed windows were placed before they shared slices: an event updates every
 * window it falls in. What it shows (results, changes, late lane, stats other than `cells`) is
 * what `createEngine` shows for the same input (but for the last bits of a sliding or cumulating
 * window's sum of values that are not small integers, which `createEngine` folds from its slices
 * in another order), at the cost of `size / slide` cell updates per
 * event; it is the reference the sliced placement is checked and measured against. It neither
 * merges peers' cells nor restores checkpoints.
 *
 * @example
 * const reference = createPerWindowEngine({ windows: sliding(3_600_000, 60_000), now: () => clock.now })
 * reference.ingest(batch)
 * expect(createEngine(options).results()).toEqual(reference.results())
 */
export function createPerWindowEngine(options: EngineOptions): Engine {
  windowIndexes.of = (spec) => (spec.kind === 'session' ? indexFor(spec) : new PerWindowIndex(spec))
  try {
    return new TidemarkEngine(options)
  } finally {
    windowIndexes.of = indexFor
  }
}
