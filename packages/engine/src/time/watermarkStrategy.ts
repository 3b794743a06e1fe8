/**
 * How the engine watermark `W` is derived (docs/semantics.md, the watermark W).
 * - `bounded`: per source `maxTs(source) - outOfOrderness`, engine W = min over active sources.
 * - `manual`: only `advanceWatermark(t)` moves it.
 */
export type WatermarkStrategy =
  | { readonly kind: 'bounded'; readonly outOfOrderness: number }
  | { readonly kind: 'manual' }

/**
 * The default strategy: every source may be up to `ms` out of order.
 *
 * @example
 * createEngine({ windows: tumbling(60_000), watermark: boundedOutOfOrderness(5_000) })
 */
export function boundedOutOfOrderness(ms: number): WatermarkStrategy {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`boundedOutOfOrderness needs a finite ms >= 0, got ${String(ms)}`)
  return { kind: 'bounded', outOfOrderness: ms }
}

/**
 * The caller drives the watermark with `engine.advanceWatermark(t)`.
 *
 * @example
 * const engine = createEngine({ windows: tumbling(1_000), watermark: manual() })
 * engine.advanceWatermark(5_000)
 */
export function manual(): WatermarkStrategy {
  return { kind: 'manual' }
}
