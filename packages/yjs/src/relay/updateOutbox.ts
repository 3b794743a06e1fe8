/**
 * The updates a relay room sends once its connection is answered: the ones made in one task go
 * as one message, and past the room's pace (`RoomPace`, which its presence draws from too) the
 * ones made meanwhile are merged into the next.
 */
import * as Y from 'yjs'
import type { PacedTurn, RoomPace } from './roomPace.ts'

/**
 * A room's outbox: `push` an update, and `send` receives merged ones at the pace, with how many
 * local transactions each carries and the pace's `take`, which it calls with the messages the
 * update goes as before it sends them. What a `send` does not take stays (a room that refused
 * itself for the update's size drops it).
 *
 * @example
 * const outbox = new UpdateOutbox(pace, link.maxMessageBytes, (update, local, take) => room.sendUpdate(update, local, take))
 * doc.on('update', (update, origin, _doc, tr) => outbox.push(update, tr.local))
 */
export class UpdateOutbox {
  readonly #pace: RoomPace
  readonly #maxMessageBytes: number
  readonly #send: (update: Uint8Array, local: number, take: (messages: number) => boolean) => unknown
  #waiting: { readonly update: Uint8Array; readonly local: boolean }[] = []

  constructor(pace: RoomPace, maxMessageBytes: number, send: (update: Uint8Array, local: number, take: (messages: number) => boolean) => unknown) {
    this.#pace = pace
    this.#maxMessageBytes = maxMessageBytes
    this.#send = send
  }

  /** Queues an update; it goes once this task is over, as the pace allows. */
  push(update: Uint8Array, local: boolean): void {
    this.#waiting.push({ update, local })
    this.#pace.request(this.#turn)
  }

  /** Forgets what waits (the next sync's step 2 carries it) and its turn. */
  drop(): void {
    this.#waiting = []
    this.#pace.withdraw(this.#turn)
  }

  readonly #turn: PacedTurn = (take) => {
    const waiting = this.#waiting
    // Merged in order, at most half the message limit of updates at once (a merge is never larger than its parts).
    let n = 0
    let bytes = 0
    while (n < waiting.length && (n === 0 || bytes + (waiting[n]?.update.byteLength ?? 0) <= this.#maxMessageBytes / 2)) bytes += waiting[n++]?.update.byteLength ?? 0
    if (n === 0) return
    const merged = waiting.slice(0, n)
    const local = merged.filter((entry) => entry.local).length
    let taken = false
    this.#send(n === 1 ? (merged[0]?.update as Uint8Array) : Y.mergeUpdates(merged.map((entry) => entry.update)), local, (messages) => (taken = take(messages)))
    // Not taken: the room refused itself for its size (and dropped what waits), or the pace calls again once it has the messages.
    if (!taken) return
    waiting.splice(0, n)
    if (waiting.length > 0) this.#pace.request(this.#turn)
  }
}
