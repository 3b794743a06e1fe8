/**
 * A Prometheus summary over the most recent observations: count and sum since start, quantiles
 * over a sliding window (the last 1024 observations), so a scrape costs a sort of 1024 numbers.
 */

const WINDOW = 1024
const QUANTILES = [0.5, 0.9, 0.99] as const

/**
 * Count, sum and recent quantiles of one kind of duration.
 *
 * @example
 * const summary = new LatencySummary()
 * summary.observe(0.004)
 * summary.lines('tidemark_relay_store_seconds', 'op="flush"') // Prometheus text lines
 */
export class LatencySummary {
  readonly #window: number[] = []
  #next = 0
  #count = 0
  #sum = 0

  /** Records one observation, in seconds. */
  observe(seconds: number): void {
    this.#count++
    this.#sum += seconds
    if (this.#window.length < WINDOW) this.#window.push(seconds)
    else this.#window[this.#next] = seconds
    this.#next = (this.#next + 1) % WINDOW
  }

  /** How many observations so far. */
  get count(): number {
    return this.#count
  }

  /** The summary's sample lines (quantiles, `_sum`, `_count`) with `labels` (`a="b",…` or empty). */
  lines(name: string, labels: string): string[] {
    const sorted = [...this.#window].sort((a, b) => a - b)
    const out: string[] = []
    for (const q of QUANTILES) {
      const value = sorted.length === 0 ? Number.NaN : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number)
      out.push(`${name}{${labels}${labels === '' ? '' : ','}quantile="${q}"} ${value}`)
    }
    const suffix = labels === '' ? '' : `{${labels}}`
    out.push(`${name}_sum${suffix} ${this.#sum}`, `${name}_count${suffix} ${this.#count}`)
    return out
  }
}
