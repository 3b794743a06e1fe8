/**
 * The rows where two digests differ (`row: expected count/sum, got count/sum`), at most
 * `limit` of them: what a failed comparison prints.
 *
 * @example
 * digestDiff(truth.digest, dashboard.digest) // ['tumbling:1000|k1|1700000003000: expected 25/100, got 24/97']
 */
export function digestDiff(expected: string, actual: string, limit = 5): string[] {
  const rows = (digest: string): Map<string, string> => {
    const map = new Map<string, string>()
    for (const line of digest.split('\n')) {
      if (line === '') continue
      const parts = line.split('|')
      map.set(parts.slice(0, -2).join('|'), parts.slice(-2).join('/'))
    }
    return map
  }
  const want = rows(expected)
  const got = rows(actual)
  const diff: string[] = []
  for (const row of new Set([...want.keys(), ...got.keys()])) {
    if (want.get(row) === got.get(row)) continue
    diff.push(`${row}: expected ${want.get(row) ?? 'none'}, got ${got.get(row) ?? 'none'}`)
    if (diff.length >= limit) break
  }
  return diff
}
