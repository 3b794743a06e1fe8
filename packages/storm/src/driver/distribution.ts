/** Order statistics of a list of durations, for the figures every storm test prints. */

/**
 * Nearest-rank order statistics of some durations, ms.
 *
 * @example
 * const { p50, p90 }: Distribution = storm.toggles.observedMs
 */
export interface Distribution {
  readonly n: number
  readonly min: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
  readonly mean: number
}

/**
 * Nearest-rank order statistics of `values` (all zero when empty).
 *
 * @example
 * distribution([50, 120, 480]) // { n: 3, min: 50, p50: 120, p90: 480, p99: 480, max: 480, mean: 216.7 }
 */
export function distribution(values: readonly number[]): Distribution {
  if (values.length === 0) return { n: 0, min: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0 }
  const sorted = [...values].sort((a, b) => a - b)
  const rank = (p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number
  const total = sorted.reduce((sum, v) => sum + v, 0)
  return {
    n: sorted.length,
    min: sorted[0] as number,
    p50: rank(0.5),
    p90: rank(0.9),
    p99: rank(0.99),
    max: sorted[sorted.length - 1] as number,
    mean: Math.round((total / sorted.length) * 10) / 10,
  }
}

/**
 * One line: `n=… min/p50/p90/p99/max … ms`.
 *
 * @example
 * formatDistribution(distribution([50, 120, 480])) // 'n=3 min 50 p50 120 p90 480 p99 480 max 480 ms'
 */
export function formatDistribution(d: Distribution): string {
  const r = (v: number): number => Math.round(v)
  return `n=${d.n} min ${r(d.min)} p50 ${r(d.p50)} p90 ${r(d.p90)} p99 ${r(d.p99)} max ${r(d.max)} ms`
}
