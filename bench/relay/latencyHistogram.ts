/**
 * Latencies in whole milliseconds (the readings' `ts` and the receiving clock are both
 * `Date.now()`), counted in one bucket per millisecond up to five minutes: percentiles are exact
 * for such samples, and a histogram of any number of samples costs 1.2 MB.
 */

/** Largest latency with its own bucket; longer ones share the last bucket. */
const MAX_MS = 300_000

/**
 * Percentiles of a set of latencies, in ms.
 *
 * @example
 * const summary: LatencySummary = { count: 100_000, p50: 4, p90: 9, p99: 31, max: 112, mean: 5.2 }
 */
export interface LatencySummary {
  readonly count: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
  readonly mean: number
}

/**
 * A histogram of millisecond latencies.
 *
 * @example
 * const histogram = new LatencyHistogram()
 * histogram.add(Date.now() - reading.ts)
 * histogram.summary().p99
 */
export class LatencyHistogram {
  readonly #buckets = new Uint32Array(MAX_MS + 1)
  #count = 0
  #sum = 0
  #max = 0

  /** Counts one latency; negative ones (clock rounding) count as 0. */
  add(ms: number): void {
    const value = Math.max(0, Math.round(ms))
    const bucket = Math.min(value, MAX_MS)
    this.#buckets[bucket] = (this.#buckets[bucket] as number) + 1
    this.#count++
    this.#sum += value
    if (value > this.#max) this.#max = value
  }

  /** Adds every sample of `other`. */
  merge(other: LatencyHistogram): void {
    const theirs = other.#buckets
    for (let i = 0; i <= MAX_MS; i++) this.#buckets[i] = (this.#buckets[i] as number) + (theirs[i] as number)
    this.#count += other.#count
    this.#sum += other.#sum
    if (other.#max > this.#max) this.#max = other.#max
  }

  /** Forgets every sample. */
  reset(): void {
    this.#buckets.fill(0)
    this.#count = 0
    this.#sum = 0
    this.#max = 0
  }

  get count(): number {
    return this.#count
  }

  /** The smallest latency at or above which lie no more than `1 - q` of the samples. */
  quantile(q: number): number {
    if (this.#count === 0) return Number.NaN
    const rank = Math.max(1, Math.ceil(q * this.#count))
    let seen = 0
    for (let i = 0; i <= MAX_MS; i++) {
      seen += this.#buckets[i] as number
      if (seen >= rank) return i
    }
    return MAX_MS
  }

  summary(): LatencySummary {
    return {
      count: this.#count,
      p50: this.quantile(0.5),
      p90: this.quantile(0.9),
      p99: this.quantile(0.99),
      max: this.#count === 0 ? Number.NaN : this.#max,
      mean: this.#count === 0 ? Number.NaN : this.#sum / this.#count,
    }
  }
}
