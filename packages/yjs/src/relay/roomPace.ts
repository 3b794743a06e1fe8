/**
 * A relay room's send pace: the one token bucket (`updatesPerSecond`, after a burst of twice as
 * many) its paced senders, the update outbox and the presence, draw from. The relay counts every
 * message of a room connection after its Auth (but its Close) against one bucket, a Sync message,
 * each Part of a message in parts and an Awareness message alike, and refuses the connection past
 * it as `rate-limited`; so a turn takes a token for each message it puts on the socket, its parts
 * included. A room's step 1 and step 2 go at once, outside the pace: they are the first messages
 * of a connection, whose bucket at the relay starts full (its `updateBurst`).
 */

/** What a pace needs from its room's relay client. */
export interface PaceClock {
  schedule(run: () => void, ms: number): unknown
  cancel(handle: unknown): void
  /** The clock the pace is counted by, in ms. */
  now(): number
  /** Messages a room sends per second, past a burst of twice as many (`updatesPerSecond`). */
  readonly updatesPerSecond: number
}

/**
 * A sender's turn: it sends what waits, as it is now, once `take(messages)` said the pace has
 * tokens for the messages that takes (false: nothing may go, and the turn comes again once they
 * are there, without asking). A turn that calls no `take` sends nothing.
 */
export type PacedTurn = (take: (messages: number) => boolean) => void

/**
 * The pace of a room. Senders ask for a turn with `request`; turns run once the task is over, one
 * after the other in the order they were asked for while tokens last, and a sender served asks
 * again behind the others: with both waiting, the outbox and the presence take turns, so neither
 * starves the other, and a sender waits for at most one turn of the other. Each turn sends what
 * its sender holds then, merged: a task's updates, each client's latest presence.
 *
 * @example
 * const pace = new RoomPace(link)
 * const turn: PacedTurn = (take) => { if (take(1)) link.send(message) }
 * pace.request(turn)
 */
export class RoomPace {
  readonly #clock: PaceClock
  /** Turns asked for and not run yet, in order. */
  #queue: PacedTurn[] = []
  /** Turns are queued: a microtask (true), or a timer while the pace holds them back. */
  #flushing: unknown = null
  /** Messages that may go now (below zero after a turn of more messages than the burst), and when that was counted. */
  #tokens: number
  #tokensAt: number

  constructor(clock: PaceClock) {
    this.#clock = clock
    this.#tokens = 2 * clock.updatesPerSecond
    this.#tokensAt = clock.now()
  }

  /** `turn` has something to send: it runs once this task is over and the turns asked before it ran, as the pace allows. */
  request(turn: PacedTurn): void {
    if (!this.#queue.includes(turn)) this.#queue.push(turn)
    if (this.#flushing !== null) return
    this.#flushing = true
    queueMicrotask(this.#flush)
  }

  /** Forgets `turn`'s request (its sender has nothing left to send). */
  withdraw(turn: PacedTurn): void {
    this.#queue = this.#queue.filter((queued) => queued !== turn)
    // A queued microtask runs and finds nothing to do.
    if (this.#queue.length > 0 || this.#flushing === null || this.#flushing === true) return
    this.#clock.cancel(this.#flushing)
    this.#flushing = null
  }

  /** The relay refused a message past its rate: the pace starts again from an empty bucket. */
  slowDown(): void {
    this.#tokens = Math.min(this.#tokens, 0)
  }

  readonly #flush = (): void => {
    // A turn asking again is served by this loop, as the tokens allow.
    this.#flushing = true
    const rate = this.#clock.updatesPerSecond
    const burst = 2 * rate
    const now = this.#clock.now()
    // A clock stepped back (NTP, a resumed machine) refills nothing, and drains nothing either.
    this.#tokens = Math.min(burst, this.#tokens + (Math.max(0, now - this.#tokensAt) * rate) / 1000)
    this.#tokensAt = now
    // A turn needs a token at least, or a full bucket under a pace whose burst is less than one.
    const least = Math.min(1, burst)
    let need = least
    for (let turn = this.#queue[0]; turn !== undefined && this.#tokens >= need; turn = this.#queue[0]) {
      this.#queue.shift()
      let taken = true
      turn((messages) => {
        // A turn of more messages than the burst goes once the bucket is full, and the next waits for what it spent.
        need = Math.min(messages, burst)
        taken = this.#tokens >= need
        if (taken) {
          this.#tokens -= messages
          need = least
        }
        return taken
      })
      // Not taken: the turn keeps its place at the head until the pace has its messages.
      if (!taken) this.#queue.unshift(turn)
    }
    this.#flushing = this.#queue.length === 0 ? null : this.#clock.schedule(this.#flush, Math.ceil(((need - this.#tokens) * 1000) / rate))
  }
}
