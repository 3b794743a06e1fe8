import { type EngineStats, statsSlice } from '@tidemark/engine'
import { useEngineSlice } from './useEngineSlice.ts'

/**
 * The engine's counters (`engine.stats()`). Re-read once per frame; renders
 * only when a counter changed, or with `selector` only when the selection
 * changed, which is how a badge avoids rendering on every ingest.
 *
 * @example
 * function Lag() {
 *   const lag = useEngineStats((s) => s.watermarkLag)
 *   return <span>{lag} ms behind</span>
 * }
 */
export function useEngineStats(): EngineStats
export function useEngineStats<S>(selector: (stats: EngineStats) => S, isEqual?: (a: S, b: S) => boolean): S
export function useEngineStats(
  selector?: (stats: EngineStats) => unknown,
  isEqual?: (a: unknown, b: unknown) => boolean,
): unknown {
  return useEngineSlice('useEngineStats', () => statsSlice, [], selector, isEqual)
}
