/**
 * How many rooms a relay connection lets open at once (their Auth sent, not in sync yet): the
 * relay counts each against its unauthenticated budget and closes a socket past it (4413).
 */

/**
 * The share of the relay's unauthenticated budget (1 MiB by default) the rooms opening at once
 * may take: each costs it about 600 bytes besides its token.
 */
const UNAUTHENTICATED_SHARE = 1 << 19

/** How long a bound halved for the relay's budget stays before it doubles again on a new socket. */
const REGROW_AFTER_MS = 10 * 60_000

/**
 * `maxPendingRooms`, halved each time the relay closes a socket for its budget, and doubled again
 * (up to the option) on a new socket once 10 minutes passed since it last changed. Grown within a
 * socket, it would make the next wave as large as the one the relay closed the socket for, and
 * the rooms would never all open; per socket and spaced out, a relay whose budget is still as
 * small costs one close in that time.
 *
 * @example
 * const bound = new OpeningBound(256, Date.now)
 * bound.halve() // the relay closed the socket with 4413
 * bound.capFor(token) // at most 128, less with a long token
 */
export class OpeningBound {
  readonly #configured: number
  readonly #now: () => number
  #max: number
  /** When the bound was last halved or grown again. */
  #changedAt = Number.NEGATIVE_INFINITY

  constructor(maxPendingRooms: number, now: () => number) {
    this.#configured = maxPendingRooms
    this.#max = maxPendingRooms
    this.#now = now
  }

  /** The relay closed a socket for its unauthenticated budget (4413). */
  halve(): void {
    this.#max = Math.max(1, this.#max >> 1)
    this.#changedAt = this.#now()
  }

  /** A new socket opened: a halved bound doubles again once 10 minutes passed since it last changed. */
  regrow(): void {
    if (this.#max >= this.#configured || !(this.#now() - this.#changedAt >= REGROW_AFTER_MS)) return
    this.#max = Math.min(this.#configured, 2 * this.#max)
    this.#changedAt = this.#now()
  }

  /** Rooms that may be opening at once with `token` (its length counts against the relay's budget). */
  capFor(token: string): number {
    return Math.max(1, Math.min(this.#max, Math.floor(UNAUTHENTICATED_SHARE / (600 + token.length))))
  }
}
