/**
 * Updates that came through Redis from another relay, held until that relay says it stored them.
 *
 * A relay stores what its own clients send. What it receives from other relays is stored by
 * them, except when one dies inside its write window: then its clients, moving here, do not
 * send again what this relay already holds, and only this relay can store it. Writing every
 * relayed update here too would double the store's work (every relay of a group would write
 * every update). Instead each relay announces through Redis, in order with the changes it
 * publishes, when a write of its store begins (`begin k`) and when that write succeeded
 * (`stored k`). A relayed change that arrived here before `begin k` was queued for that write
 * or an earlier one, so `stored k` means it is stored and it is dropped. A change no `stored`
 * covers within `holdMs` (its relay died, its store fails, an older relay that announces
 * nothing, a message lost while the subscriber reconnected) is written here.
 *
 * Only changes matter here: the answers of the state-vector exchange carry what the answering
 * relay holds, not only what it stored, and are written at once (they are rare).
 */
import type { RelayMetrics } from '../metrics/relayMetrics.ts'
import { MAX_TIMER_MS, type RelayTimers } from '../relayOptions.ts'

/** How long a relayed change waits, at least, for its relay to say it stored it (ms). */
export const RELAYED_HOLD_MS = 5_000

/** Bytes of relayed changes held, past which the oldest are written at once. */
export const MAX_RELAYED_HELD_BYTES = 16 << 20

/**
 * How long a relay holds relayed changes, given its store's write window: long enough for a
 * relay of the same configuration to write and say so, several windows over (at most the longest
 * timer: one longer would fire at once, and the hold's timer would spin).
 *
 * @example
 * relayedHoldMs(500) // 5000
 * relayedHoldMs(60_000) // 240000
 */
export function relayedHoldMs(writeWindowMs: number): number {
  return Math.min(Math.max(RELAYED_HOLD_MS, 4 * writeWindowMs), MAX_TIMER_MS)
}

/** Relays whose last `begin` is remembered; past this many, the one that began a write longest ago is forgotten. */
const REMEMBERED_RELAYS = 1024

/** Where relayed changes go when no relay said it stored them. */
export interface RelayedSink {
  append(room: string, update: Uint8Array): void
}

interface Held {
  readonly room: string
  readonly update: Uint8Array
  readonly at: number
  /** The first `begin` of its relay seen after it arrived: every `stored` from that one on covers it. */
  begin: number | undefined
}

/** What this relay holds of another relay's changes, oldest first. */
interface FromRelay {
  readonly held: Held[]
  /** Index in `held` of the first item still held. */
  head: number
  /** Index in `held` of the first item no `begin` has followed yet. */
  unbegun: number
}

/**
 * The held changes of every other relay.
 *
 * @example
 * const relayed = new RelayedUpdates(store, { holdMs: relayedHoldMs(500), now: Date.now, timers: GLOBAL_TIMERS, metrics })
 * relayed.hold('fleet-a/d07', update, 'tidemark-relay-41-x1')
 * relayed.begun('tidemark-relay-41-x1', 8)
 * relayed.stored('tidemark-relay-41-x1', 8) // the update is dropped: relay 41 stored it
 */
export class RelayedUpdates {
  readonly #sink: RelayedSink
  readonly #holdMs: number
  readonly #maxBytes: number
  readonly #now: () => number
  readonly #timers: RelayTimers
  readonly #metrics: RelayMetrics
  readonly #relays = new Map<string, FromRelay>()
  /** Per room, how many of its changes are held (rooms with none are not listed). */
  readonly #heldPerRoom = new Map<string, number>()
  /** Per relay, the last write it began, oldest first: a `begin` seen again is not a new write. */
  readonly #begun = new Map<string, number>()
  /** Every update `hold` took, so the persistence knows not to store it now. */
  readonly #taken = new WeakSet<Uint8Array>()
  #bytes = 0
  #timer: unknown
  #closed = false

  /** `sink`: the store, which writes what no relay said it stored. */
  constructor(sink: RelayedSink, options: { readonly holdMs: number; readonly now: () => number; readonly timers: RelayTimers; readonly metrics: RelayMetrics; readonly maxBytes?: number }) {
    this.#sink = sink
    this.#holdMs = options.holdMs
    this.#maxBytes = options.maxBytes ?? MAX_RELAYED_HELD_BYTES
    this.#now = options.now
    this.#timers = options.timers
    this.#metrics = options.metrics
  }

  /** Bytes of relayed changes held. */
  get bytes(): number {
    return this.#bytes
  }

  /**
   * The changes of `room` held now, oldest first per relay: accepted here and not stored yet,
   * so a load of the room applies them (it may have unloaded and loaded again meanwhile).
   */
  held(room: string): Uint8Array[] {
    if (!this.#heldPerRoom.has(room)) return []
    const updates: Uint8Array[] = []
    for (const from of this.#relays.values()) {
      for (let i = from.head; i < from.held.length; i++) {
        const item = from.held[i] as Held
        if (item.room === room) updates.push(item.update)
      }
    }
    return updates
  }

  /** True when `update` (the very array) was taken by `hold`: it is not to be stored now. */
  took(update: Uint8Array): boolean {
    return this.#taken.has(update)
  }

  /**
   * Holds `update`, a change of `room` that relay `relay` published, as it is applied (before any
   * later message of that relay is read). Once closing, it is written at once.
   */
  hold(room: string, update: Uint8Array, relay: string): void {
    this.#taken.add(update)
    if (this.#closed) {
      this.#write(room, update)
      return
    }
    let from = this.#relays.get(relay)
    if (from === undefined) {
      from = { held: [], head: 0, unbegun: 0 }
      this.#relays.set(relay, from)
    }
    from.held.push({ room, update, at: this.#now(), begin: undefined })
    this.#bytes += update.byteLength
    this.#heldPerRoom.set(room, (this.#heldPerRoom.get(room) ?? 0) + 1)
    if (this.#bytes > this.#maxBytes) this.#writeOldest()
    if (this.#timer === undefined) this.#arm()
  }

  /** Relay `relay` began write `k` of its store: what it published before is in that write or an earlier one. */
  begun(relay: string, k: number): void {
    // Seen before: the relay's Redis client resent what Redis had not answered when its connection
    // dropped (Redis may have run it already). What came since was queued for a later write.
    const last = this.#begun.get(relay)
    if (last !== undefined && k <= last) return
    this.#begun.delete(relay)
    this.#begun.set(relay, k)
    if (this.#begun.size > REMEMBERED_RELAYS) this.#begun.delete(this.#begun.keys().next().value as string)
    const from = this.#relays.get(relay)
    if (from === undefined) return
    for (let i = Math.max(from.unbegun, from.head); i < from.held.length; i++) (from.held[i] as Held).begin = k
    from.unbegun = from.held.length
  }

  /** Relay `relay`'s write `k` succeeded: what arrived before its `begin k` is stored, and dropped here. */
  stored(relay: string, k: number): void {
    const from = this.#relays.get(relay)
    if (from === undefined) return
    let head = from.head
    while (head < from.unbegun) {
      const item = from.held[head] as Held
      if ((item.begin as number) > k) break
      this.#letGo(item)
      this.#metrics.relayedConfirmed++
      head++
    }
    from.head = head
    this.#compact(relay, from)
  }

  /** Relay `relay` stores in another database than this relay: what it sent is written here now. */
  storesElsewhere(relay: string): void {
    const from = this.#relays.get(relay)
    if (from === undefined) return
    while (from.head < from.held.length) this.#writeHeld(from.held[from.head++] as Held)
    this.#compact(relay, from)
  }

  /** Closing: everything held is written now, and whatever comes later at once. */
  releaseAll(): void {
    this.#closed = true
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer)
    this.#timer = undefined
    for (const [relay, from] of this.#relays) {
      for (let i = from.head; i < from.held.length; i++) this.#writeHeld(from.held[i] as Held)
      from.head = from.held.length
      this.#compact(relay, from)
    }
  }

  #write(room: string, update: Uint8Array): void {
    this.#metrics.relayedWritten++
    this.#sink.append(room, update)
  }

  #writeHeld(item: Held): void {
    this.#letGo(item)
    this.#write(item.room, item.update)
  }

  /** `item` is held no more (its relay stored it, or it is written here). */
  #letGo(item: Held): void {
    this.#bytes -= item.update.byteLength
    const count = (this.#heldPerRoom.get(item.room) ?? 1) - 1
    if (count === 0) this.#heldPerRoom.delete(item.room)
    else this.#heldPerRoom.set(item.room, count)
  }

  /** Past the byte bound: the oldest held changes are written until under it. */
  #writeOldest(): void {
    while (this.#bytes > this.#maxBytes) {
      let oldest: [string, FromRelay] | undefined
      for (const entry of this.#relays) {
        const [, from] = entry
        if (from.head < from.held.length && (oldest === undefined || (from.held[from.head] as Held).at < (oldest[1].held[oldest[1].head] as Held).at)) oldest = entry
      }
      if (oldest === undefined) return
      const [relay, from] = oldest
      this.#writeHeld(from.held[from.head++] as Held)
      this.#compact(relay, from)
    }
  }

  /** Writes what waited `holdMs`, then arms the timer for the next. */
  #expire(): void {
    this.#timer = undefined
    const due = this.#now() - this.#holdMs
    for (const [relay, from] of this.#relays) {
      while (from.head < from.held.length && (from.held[from.head] as Held).at <= due) this.#writeHeld(from.held[from.head++] as Held)
      this.#compact(relay, from)
    }
    this.#arm()
  }

  #arm(): void {
    let oldest = Infinity
    for (const from of this.#relays.values()) if (from.head < from.held.length) oldest = Math.min(oldest, (from.held[from.head] as Held).at)
    if (oldest === Infinity || this.#closed) return
    this.#timer = this.#timers.setTimeout(() => this.#expire(), Math.max(0, oldest + this.#holdMs - this.#now()))
  }

  /** Drops what left the front of a relay's list (each item is moved once), and the relay once it holds nothing. */
  #compact(relay: string, from: FromRelay): void {
    if (from.head === from.held.length) {
      this.#relays.delete(relay)
      return
    }
    if (from.head < 1024 || from.head * 2 < from.held.length) return
    from.held.splice(0, from.head)
    from.unbegun = Math.max(0, from.unbegun - from.head)
    from.head = 0
  }
}
