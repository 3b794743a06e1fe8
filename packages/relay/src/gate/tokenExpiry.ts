/**
 * When room connections' tokens expire: one deadline per connection at its grant's `exp`,
 * armed on the relay's clock and timers. A deadline farther than a timer can wait (about 24.8
 * days) is armed in steps.
 */
import type { RelayTimers } from '../relayOptions.ts'

/** Longest delay a timer takes (2^31 − 1 ms); longer ones would fire at once. */
const MAX_DELAY_MS = 2 ** 31 - 1

/**
 * The deadlines of open connections, by the object that owns each (its connection gate).
 *
 * @example
 * const expiry = new TokenExpiry(Date.now, timers)
 * expiry.arm(gate, gate.grant.expiresAt, () => closeExpired(gate))
 * expiry.disarm(gate) // the connection closed first
 */
export class TokenExpiry {
  readonly #now: () => number
  readonly #timers: RelayTimers
  readonly #armed = new Map<object, unknown>()
  #closed = false

  constructor(now: () => number, timers: RelayTimers) {
    this.#now = now
    this.#timers = timers
  }

  /** Deadlines armed now. */
  get size(): number {
    return this.#armed.size
  }

  /** Runs `expire` once the clock reaches `at` (at once if it has), unless `disarm(owner)` comes first. */
  arm(owner: object, at: number, expire: () => void): void {
    this.disarm(owner)
    if (this.#closed) return
    const wait = (): void => {
      const left = at - this.#now()
      if (left <= 0) {
        this.#armed.delete(owner)
        expire()
        return
      }
      this.#armed.set(owner, this.#timers.setTimeout(wait, Math.min(left, MAX_DELAY_MS)))
    }
    wait()
  }

  disarm(owner: object): void {
    if (!this.#armed.has(owner)) return
    this.#timers.clearTimeout(this.#armed.get(owner))
    this.#armed.delete(owner)
  }

  /** Disarms every deadline and arms no more (the relay is closing). */
  close(): void {
    this.#closed = true
    for (const handle of this.#armed.values()) this.#timers.clearTimeout(handle)
    this.#armed.clear()
  }
}
