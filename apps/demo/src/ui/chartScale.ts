/** A linear value axis with round tick values. */
export interface ValueAxis {
  readonly min: number
  readonly max: number
  readonly ticks: readonly number[]
  /** Decimals that tell the ticks apart. */
  readonly decimals: number
}

/**
 * An axis covering `values` with some headroom, ticked at 1, 2 or 5 × 10^n, never finer than
 * `minStep` (1 for counts: no tick between two whole numbers). A flat series still gets a
 * visible span.
 */
export function valueAxis(values: readonly number[], tickCount = 4, minStep = 0): ValueAxis {
  let lo = Number.POSITIVE_INFINITY
  let hi = Number.NEGATIVE_INFINITY
  for (const v of values) {
    if (v < lo) lo = v
    if (v > hi) hi = v
  }
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return { min: 0, max: 1, ticks: [0, 0.5, 1], decimals: 1 }
  const span = Math.max(hi - lo, Math.abs(hi) * 0.01, 0.1, minStep)
  const step = Math.max(niceStep(span / tickCount), minStep)
  const min = Math.floor((lo - span * 0.15) / step) * step
  const max = Math.ceil((hi + span * 0.15) / step) * step
  const ticks: number[] = []
  for (let t = min; t <= max + step / 2; t += step) ticks.push(Number(t.toFixed(10)))
  return { min, max, ticks, decimals: Math.max(0, -Math.floor(Math.log10(step) + 1e-9)) }
}

function niceStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(raw))
  const fraction = raw / power
  if (fraction <= 1) return power
  if (fraction <= 2) return 2 * power
  if (fraction <= 5) return 5 * power
  return 10 * power
}
