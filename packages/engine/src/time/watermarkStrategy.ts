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

/**
 * Checks a `watermark` option: a strategy made by `boundedOutOfOrderness(ms)` or `manual()`.
 * Throws a TypeError (a number, a string, anything else) or a RangeError (a bounded strategy
 * with a bad `outOfOrderness`) naming the option, so a mistake never leaves the watermark at
 * `-Infinity` without a word.
 *
 * @example
 * checkWatermarkStrategy(boundedOutOfOrderness(5_000)) // { kind: 'bounded', outOfOrderness: 5000 }
 * checkWatermarkStrategy(5_000) // TypeError: watermark must be a strategy ... write watermark: boundedOutOfOrderness(5000)
 */
export function checkWatermarkStrategy(value: unknown, name = 'watermark'): WatermarkStrategy {
  const made = 'a strategy made by boundedOutOfOrderness(ms) or manual()'
  if (typeof value === 'number') {
    throw new TypeError(
      `${name} must be ${made}, got the number ${value}; for events up to ${value} ms out of order write ${name}: boundedOutOfOrderness(${value})`,
    )
  }
  if (typeof value !== 'object' || value === null) throw new TypeError(`${name} must be ${made}, got ${describe(value)}`)
  const strategy = value as { kind?: unknown; outOfOrderness?: unknown }
  if (strategy.kind === 'manual') return { kind: 'manual' }
  if (strategy.kind !== 'bounded') throw new TypeError(`${name} must be ${made}, got an object with kind ${describe(strategy.kind)}`)
  const ms = strategy.outOfOrderness
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new RangeError(`${name}.outOfOrderness must be a finite number of ms >= 0, got ${describe(ms)}`)
  }
  return { kind: 'bounded', outOfOrderness: ms }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `the string '${value}'`
  if (typeof value === 'function') return 'a function (call it: boundedOutOfOrderness(ms), manual())'
  return String(value)
}
