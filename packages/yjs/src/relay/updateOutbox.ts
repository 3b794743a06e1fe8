/**
 * The updates a relay room sends once its connection is answered: the ones made in one task go
 * as one message, and past the room's pace (a token bucket of `updatesPerSecond`, after a burst
 * of twice as many) the ones made meanwhile are merged into the next. The relay refuses a room
 * connection past its rate (by default 100 messages a second), which every message counts against.
 */
import * as Y from 'yjs'

/** What an outbox needs from its room's relay client. */
export interface OutboxClock {
  schedule(run: () => void, ms: number): unknown
  cancel(handle: unknown): void
  /** The clock update messages are paced by, in ms. */
  now(): number
  /** Update messages a room sends per second, past a burst of twice as many (`updatesPerSecond`). */
  readonly updatesPerSecond: number
  /** Largest message a room sends (`connectRelay`'s `maxMessageBytes`). */
  readonly maxMessageBytes: number
}

/**
 * A room's outbox: `push` an update, and `send` receives merged ones at the pace, with how many
 * local transactions each carries; a `send` that returns false stops the outbox until the next push.
 *
 * @example
 * const outbox = new UpdateOutbox(link, (update, local) => room.sendUpdate(update, local))
 * doc.on('update', (update, origin, _doc, tr) => outbox.push(update, tr.local))
 */
export class UpdateOutbox {
  readonly #clock: OutboxClock
  readonly #send: (update: Uint8Array, local: number) => boolean
  #waiting: { readonly update: Uint8Array; readonly local: boolean }[] = []
  /** A send is queued: a microtask (true), or a timer while the pace holds it back. */
  #flushing: unknown = null
  /** Messages that may go now, and when that was counted. */
  #tokens: number
  #tokensAt: number

  constructor(clock: OutboxClock, send: (update: Uint8Array, local: number) => boolean) {
    this.#clock = clock
    this.#send = send
    this.#tokens = 2 * clock.updatesPerSecond
    this.#tokensAt = clock.now()
  }

  /** Queues an update; it goes once this task is over, as the pace allows. */
  push(update: Uint8Array, local: boolean): void {
    this.#waiting.push({ update, local })
    this.#flushSoon()
  }

  /** Forgets what waits (the next sync's step 2 carries it) and cancels the queued send. */
  drop(): void {
    this.#waiting = []
    if (this.#flushing === null) return
    if (this.#flushing !== true) this.#clock.cancel(this.#flushing)
    this.#flushing = null
  }

  /** The relay refused a message past its rate: the pace starts again from an empty burst. */
  slowDown(): void {
    this.#tokens = 0
  }

  #flushSoon(): void {
    if (this.#flushing !== null) return
    this.#flushing = true
    queueMicrotask(this.#flush)
  }

  readonly #flush = (): void => {
    this.#flushing = null
    const waiting = this.#waiting
    if (waiting.length === 0) return
    const { updatesPerSecond: rate, maxMessageBytes } = this.#clock
    const now = this.#clock.now()
    // A clock stepped back (NTP, a resumed machine) refills nothing, and drains nothing either.
    this.#tokens = Math.min(2 * rate, this.#tokens + (Math.max(0, now - this.#tokensAt) * rate) / 1000)
    this.#tokensAt = now
    if (this.#tokens < 1) {
      this.#flushing = this.#clock.schedule(this.#flush, Math.ceil(((1 - this.#tokens) * 1000) / rate))
      return
    }
    this.#tokens--
    // Merged in order, at most half the message limit of updates at once (a merge is never larger than its parts).
    let n = 0
    let bytes = 0
    while (n < waiting.length && (n === 0 || bytes + (waiting[n]?.update.byteLength ?? 0) <= maxMessageBytes / 2)) bytes += waiting[n++]?.update.byteLength ?? 0
    const sent = waiting.splice(0, n)
    const local = sent.filter((entry) => entry.local).length
    if (!this.#send(n === 1 ? (sent[0]?.update as Uint8Array) : Y.mergeUpdates(sent.map((entry) => entry.update)), local)) return
    if (waiting.length > 0) this.#flushSoon()
  }
}
