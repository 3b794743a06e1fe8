/**
 * What a relay room's doc made that the relay has not acknowledged, in local transactions: the
 * ones no message carried yet, and, per message sent and not acknowledged, the ones it carries.
 * The relay acknowledges a room's messages in the order they were sent (a SyncStatus each).
 */
export class Unacknowledged {
  #unsent: number
  readonly #inFlight: number[] = []

  /**
   * @example
   * const pending = new Unacknowledged(Y.getState(doc.store, doc.clientID) > 0 ? 1 : 0)
   * pending.made() // a local transaction
   * pending.sent(pending.unsent) // our step 2 carries them all
   * pending.acknowledged() // its SyncStatus
   */
  constructor(unsent: number) {
    this.#unsent = unsent
  }

  /** Local transactions no message carried yet. */
  get unsent(): number {
    return this.#unsent
  }

  /** Local transactions the relay has not acknowledged, sent or not. */
  get count(): number {
    let n = this.#unsent
    for (const carried of this.#inFlight) n += carried
    return n
  }

  /** A local transaction was made. */
  made(): void {
    this.#unsent++
  }

  /** A message went carrying `local` of the unsent transactions (0 for all but the last part of a cut update). */
  sent(local: number): void {
    this.#unsent -= local
    this.#inFlight.push(local)
  }

  /** The relay acknowledged the oldest message in flight. */
  acknowledged(): void {
    this.#inFlight.shift()
  }

  /** The connection ended: what was in flight is unsent again (the next sync carries it). */
  lost(): void {
    for (const carried of this.#inFlight.splice(0)) this.#unsent += carried
  }
}
