/**
 * A token bucket: `burst` tokens at most, refilled at `perSecond`; each message takes one.
 */

/**
 * Rate limit of one connection's messages.
 *
 * @example
 * const bucket = new TokenBucket(100, 1000, Date.now)
 * if (!bucket.take()) console.log('rate-limited')
 */
export class TokenBucket {
  readonly #perMs: number
  readonly #burst: number
  readonly #now: () => number
  #tokens: number
  #at: number

  constructor(perSecond: number, burst: number, now: () => number) {
    this.#perMs = perSecond / 1000
    this.#burst = burst
    this.#now = now
    this.#tokens = burst
    this.#at = now()
  }

  /** Takes one token; false when the bucket is empty. */
  take(): boolean {
    const now = this.#now()
    this.#tokens = Math.min(this.#burst, this.#tokens + Math.max(0, now - this.#at) * this.#perMs)
    this.#at = now
    if (this.#tokens < 1) return false
    this.#tokens -= 1
    return true
  }
}
