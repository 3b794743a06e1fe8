/**
 * The bytes of updates each sender may have the relay decode, per room: checking an update
 * decodes it whole, and applying it decodes it again, so a sender's bytes are its cost to every
 * other room on the relay's thread. Presence states are charged here too (the relay parses each
 * and sends it to every connection of the room). Kept across connections, so joining again gives
 * no new burst.
 */
import { TokenBucket } from './tokenBucket.ts'

/** Buckets kept before the full ones are let go (a full bucket is what a new one would be). */
const SWEEP_FROM = 1024

/**
 * A token bucket of bytes per sender (a token's subject) and room: `burst` bytes at most (a
 * room's whole state, so a join always passes), refilled at `perSecond`.
 *
 * @example
 * const budget = new UpdateBytes(256 << 10, 16 << 20, Date.now)
 * if (!budget.take('dev:d07', 'fleet-a/d07', update.byteLength)) console.log('rate-limited')
 */
export class UpdateBytes {
  readonly #perSecond: number
  readonly #burst: number
  readonly #now: () => number
  readonly #buckets = new Map<string, TokenBucket>()
  #sweepAt = SWEEP_FROM

  constructor(perSecond: number, burst: number, now: () => number) {
    this.#perSecond = perSecond
    this.#burst = burst
    this.#now = now
  }

  /** Takes `bytes` of `sender`'s budget in `room`; false, taking none, when less is left. One message is never charged more than `burst`. */
  take(sender: string, room: string, bytes: number): boolean {
    const key = `${sender}\u0000${room}`
    let bucket = this.#buckets.get(key)
    if (bucket === undefined) {
      if (this.#buckets.size >= this.#sweepAt) this.#sweep()
      bucket = new TokenBucket(this.#perSecond, this.#burst, this.#now)
      this.#buckets.set(key, bucket)
    }
    return bucket.take(Math.min(bytes, this.#burst))
  }

  /** Buckets kept: every one not full again, and full ones until the next sweep. */
  get size(): number {
    return this.#buckets.size
  }

  #sweep(): void {
    for (const [key, bucket] of this.#buckets) if (bucket.full()) this.#buckets.delete(key)
    this.#sweepAt = Math.max(SWEEP_FROM, 2 * this.#buckets.size)
  }
}
