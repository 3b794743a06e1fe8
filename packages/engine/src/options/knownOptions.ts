/**
 * Option keys a function does not know are refused, not ignored: a typo (`allowedLatness`)
 * would otherwise leave the default in force without a word. The error names the key and the
 * closest known one.
 */

/**
 * Throws a TypeError when `options` has an own key outside `known`, naming the key and the
 * closest known key (or, when no known key is close, all of them). `moved` gives a hint for
 * options that live elsewhere (`doc`: bind it with `bindDoc`).
 *
 * @example
 * assertKnownOptions('createEngine', { windows: tumbling(10), allowedLatness: 5 }, ['windows', 'allowedLateness'])
 * // TypeError: createEngine: unknown option 'allowedLatness' (did you mean 'allowedLateness'?)
 */
export function assertKnownOptions(
  where: string,
  options: object,
  known: readonly string[],
  moved: Readonly<Record<string, string>> = {},
): void {
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue
    const hint = Object.hasOwn(moved, key) ? moved[key] : undefined
    if (hint !== undefined) throw new TypeError(`${where}: option '${key}' is not taken here; ${hint}`)
    const closest = closestName(key, known)
    const suggestion = closest === null ? `; known options: ${known.join(', ')}` : ` (did you mean '${closest}'?)`
    throw new TypeError(`${where}: unknown option '${key}'${suggestion}`)
  }
}

/**
 * The candidate nearest to `name` by edit distance (case-insensitive, a swap of two neighbours
 * counting as one edit), or null when none is within a third of the name's length (at least 1).
 *
 * @example
 * closestName('allowedLatness', ['allowedLateness', 'retention']) // 'allowedLateness'
 * closestName('colour', ['windows', 'watermark']) // null
 */
export function closestName(name: string, candidates: readonly string[]): string | null {
  const budget = Math.max(1, Math.floor(name.length / 3))
  let best: string | null = null
  let bestDistance = budget + 1
  for (const candidate of candidates) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase())
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1
  const cols = b.length + 1
  const d: number[] = new Array(rows * cols).fill(0)
  for (let i = 0; i < rows; i++) d[i * cols] = i
  for (let j = 0; j < cols; j++) d[j] = j
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min((d[(i - 1) * cols + j] as number) + 1, (d[i * cols + j - 1] as number) + 1, (d[(i - 1) * cols + j - 1] as number) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, (d[(i - 2) * cols + j - 2] as number) + 1)
      d[i * cols + j] = best
    }
  }
  return d[rows * cols - 1] as number
}

/**
 * An option's value as an error message names it: a function by what to do with it (a maker
 * passed uncalled, `windows: tumbling`, `early: never`, not its source code), a string quoted.
 *
 * @example
 * describeValue(tumbling) // 'a function (call it)'
 * describeValue('5') // "the string '5'"
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'function') return 'a function (call it)'
  return typeof value === 'string' ? `the string '${value}'` : String(value)
}
