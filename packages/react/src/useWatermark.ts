import { watermarkSlice } from '@tidemark/engine'
import { useEngineSlice } from './useEngineSlice.ts'

/**
 * The engine watermark (event-time ms), as `engine.watermark()` returns it. Re-read
 * once per frame; renders only when it moved.
 *
 * @example
 * function Watermark() {
 *   const watermark = useWatermark()
 *   return <time>{Number.isFinite(watermark) ? new Date(watermark).toISOString() : '—'}</time>
 * }
 */
export function useWatermark(): number {
  return useEngineSlice('useWatermark', () => watermarkSlice, [])
}
