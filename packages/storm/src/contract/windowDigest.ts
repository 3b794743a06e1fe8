/**
 * The canonical text of a set of window values, one row `window|key|start|count|sum` per
 * window, sorted: the page computes it from its engine's results, the driver from the ground
 * truth, and two pages agree exactly when their digests are equal.
 */

/**
 * One window value, as far as the digest needs it (a `WindowResult` is one).
 *
 * @example
 * const row: DigestRow = { window: 'tumbling:1000', key: 'k1', start: 1700000000000, count: 25, sum: 100 }
 */
export interface DigestRow {
  readonly window: string
  readonly key: string
  readonly start: number
  readonly count: number
  readonly sum: number
}

/**
 * A sum as a digest shows it: to 12 significant digits. Floating-point sums depend on the order
 * of their terms (an engine sums each source's cell, then the cells), so two right sums of the
 * same values can differ in their last bits.
 */
function sumText(sum: number): string {
  return Number.isInteger(sum) ? String(sum) : String(Number(sum.toPrecision(12)))
}

/**
 * The digest of `rows` ('' when there is none); sums to 12 significant digits.
 *
 * @example
 * windowDigest(engine.results()) // 'tumbling:1000|k0|1700000000000|25|100\ntumbling:1000|k1|...'
 */
export function windowDigest(rows: Iterable<DigestRow>): string {
  const lines: string[] = []
  for (const r of rows) lines.push(`${r.window}|${r.key}|${r.start}|${r.count}|${sumText(r.sum)}`)
  return lines.sort().join('\n')
}
