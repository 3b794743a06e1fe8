/**
 * A token bucket: `burst` tokens at most, refilled at `perSecond`; a message takes one, or as
 * many as it weighs (its bytes).
 */

/**
 * Rate limit of one connection's messages, or of a sender's update bytes.
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

  /** Takes `count` tokens (one by default); false, taking none, when fewer are left. */
  take(count = 1): boolean {
    this.#refill()
    if (this.#tokens < count) return false
    this.#tokens -= count
    return true
  }

  /** Whether the bucket is full again: a new one would be the same. */
  full(): boolean {
    this.#refill()
    return this.#tokens >= this.#burst
  }

  #refill(): void {
    const now = this.#now()
    this.#tokens = Math.min(this.#burst, this.#tokens + Math.max(0, now - this.#at) * this.#perMs)
    this.#at = now
  }
}
