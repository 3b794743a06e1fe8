/**
 * Copies of the other relays' updates, kept by a relay whose store is its own (a PGlite data
 * directory): each relay of a group stores every update of its rooms, so that one relay's loss
 * does not take what its clients sent with it. A copy is not the only one: the relay its client
 * sent it to stores it within its own write window. So copies wait ten write windows, against
 * one for a relay's own clients' updates (5 s at the default 500 ms), and are queued merged per
 * room, one row where there were several: at a device's pace of one reading a second, a fifth of
 * the rows, and of the store's work per row. A relay that dies loses at most that window of
 * copies, which the relays that accepted them hold in their stores.
 */
import * as Y from 'yjs'
import { describeError, type RelayLog } from '../relayLog.ts'
import { MAX_TIMER_MS, type RelayTimers } from '../relayOptions.ts'

/**
 * How long the first copy of a batch waits, given the store's write window: ten of them (at most
 * the longest timer).
 *
 * @example
 * copiesWindowMs(500) // 5000
 */
export function copiesWindowMs(writeWindowMs: number): number {
  return Math.min(10 * writeWindowMs, MAX_TIMER_MS)
}

/**
 * The copies waiting, per room, to be queued for the store merged.
 *
 * @example
 * const copies = new RelayedCopies((room, update) => store.append(room, update), copiesWindowMs(500), timers, log)
 * copies.add('fleet-a/d07', update) // queued with the room's other copies within 5 s
 */
export class RelayedCopies {
  readonly #queue: (room: string, update: Uint8Array) => void
  readonly #windowMs: number
  readonly #timers: RelayTimers
  readonly #log: RelayLog
  readonly #rooms = new Map<string, Uint8Array[]>()
  #bytes = 0
  #timer: unknown
  #stopped = false

  /** `queue`: where a room's merged copies go (the store's write queue); `windowMs`: how long the first copy waits. */
  constructor(queue: (room: string, update: Uint8Array) => void, windowMs: number, timers: RelayTimers, log: RelayLog) {
    this.#queue = queue
    this.#windowMs = windowMs
    this.#timers = timers
    this.#log = log
  }

  /** Bytes of the copies waiting. */
  get bytes(): number {
    return this.#bytes
  }

  /** True when copies of `room` wait. */
  has(room: string): boolean {
    return this.#rooms.has(room)
  }

  /** The copies of `room` waiting, oldest first. */
  of(room: string): readonly Uint8Array[] {
    return this.#rooms.get(room) ?? []
  }

  /** Keeps a copy of an update of `room` that another relay accepted; queued within the window. */
  add(room: string, update: Uint8Array): void {
    const list = this.#rooms.get(room)
    if (list === undefined) this.#rooms.set(room, [update])
    else list.push(update)
    this.#bytes += update.byteLength
    if (this.#timer === undefined && !this.#stopped) this.#timer = this.#timers.setTimeout(() => this.release(), this.#windowMs)
  }

  /** Queues every copy waiting now, merged per room. */
  release(): void {
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer)
    this.#timer = undefined
    const rooms = [...this.#rooms]
    this.#rooms.clear()
    this.#bytes = 0
    for (const [room, updates] of rooms) {
      if (updates.length === 1) {
        this.#queue(room, updates[0] as Uint8Array)
        continue
      }
      let merged: Uint8Array
      try {
        merged = Y.mergeUpdates(updates)
      } catch (error) {
        // Each was applied to the room before it was kept, so this is not expected; queued one by one, none is lost.
        this.#log('warn', `merging ${updates.length} copies of ${room} failed, queued one by one: ${describeError(error)}`)
        for (const update of updates) this.#queue(room, update)
        continue
      }
      this.#queue(room, merged)
    }
  }

  /** Arms no timer any more (the store is closing; what waits is released by its flush). */
  stop(): void {
    this.#stopped = true
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer)
    this.#timer = undefined
  }
}
