/**
 * The slope of the least-squares line through (x, y) points: how fast a series grows, robust to
 * the ups and downs of garbage collection in a memory series.
 */

/**
 * Slope of the least-squares line through `points` (NaN with fewer than two distinct x).
 *
 * @example
 * leastSquaresSlope([[0, 300], [1, 301], [2, 302]]) // 1 (MB per minute, for RSS samples by minute)
 */
export function leastSquaresSlope(points: readonly (readonly [number, number])[]): number {
  const n = points.length
  if (n < 2) return Number.NaN
  let sx = 0
  let sy = 0
  for (const [x, y] of points) {
    sx += x
    sy += y
  }
  const mx = sx / n
  const my = sy / n
  let sxy = 0
  let sxx = 0
  for (const [x, y] of points) {
    sxy += (x - mx) * (y - my)
    sxx += (x - mx) * (x - mx)
  }
  return sxx === 0 ? Number.NaN : sxy / sxx
}
