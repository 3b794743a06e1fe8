/**
 * The changes (and store write marks) a relay publishes to Redis, sent in batches. Each write to
 * the Redis socket is a system call that also runs the receiving side of the network stack, and
 * costs far more than the bytes it carries: at a fleet's thousand updates a second, a write per
 * event-loop turn (about 600 a second, one or two changes each) took several percent of a core.
 * So a publish goes at the end of the turn that queued it when the last write went at least the
 * spacing ago; one queued sooner waits until then, and everything that waited goes in one write,
 * in the order queued. A relay publishing less often than once per spacing is never delayed and
 * arms no timer; one publishing more often writes at most once per spacing, each change at most
 * the spacing late.
 */
import { GLOBAL_TIMERS, type RelayTimers } from '../relayOptions.ts'

/** Least time between two writes of queued changes to Redis while they keep coming (ms). */
export const PUBLISH_SPACING_MS = 5

/** One queued publish: its channel and its message. */
export type QueuedPublish = readonly [channel: string, message: Buffer]

/**
 * A batching queue of publishes.
 *
 * @example
 * const queue = new PublishQueue((batch) => sendPipeline(batch))
 * queue.push('room-channel', message) // sent at the end of this turn, or 5 ms after the last write
 * queue.stop() // at close: what is queued is sent now
 */
export class PublishQueue {
  readonly #send: (batch: readonly QueuedPublish[]) => void
  readonly #timers: RelayTimers
  readonly #now: () => number
  readonly #spacingMs: number
  #queued: QueuedPublish[] = []
  /** A write is due at the end of this turn. */
  #immediate = false
  /** Armed while publishes wait for the spacing to end: it writes them. */
  #timer: unknown = null
  /** When the last write went. */
  #last = Number.NEGATIVE_INFINITY
  #stopped = false

  /**
   * `send` writes one batch (a pipeline). The spacing runs on `timers` and `now` (default the
   * global timers and `performance.now`: what the relay publishes must flow in real time,
   * whatever clock its deadlines run on).
   */
  constructor(send: (batch: readonly QueuedPublish[]) => void, options: { readonly timers?: RelayTimers; readonly now?: () => number; readonly spacingMs?: number } = {}) {
    this.#send = send
    this.#timers = options.timers ?? GLOBAL_TIMERS
    this.#now = options.now ?? (() => performance.now())
    this.#spacingMs = options.spacingMs ?? PUBLISH_SPACING_MS
  }

  /** Publishes queued and not written yet. */
  get size(): number {
    return this.#queued.length
  }

  /** Queues `message` for `channel`: written with the next batch. */
  push(channel: string, message: Buffer): void {
    this.#queued.push([channel, message])
    if (this.#timer !== null || this.#immediate) return
    this.#immediate = true
    setImmediate(() => {
      this.#immediate = false
      if (this.#queued.length === 0 || this.#timer !== null) return
      const wait = this.#last + this.#spacingMs - this.#now()
      if (wait <= 0 || this.#stopped) this.#write()
      else {
        this.#timer = this.#timers.setTimeout(() => {
          this.#timer = null
          this.#write()
        }, wait)
      }
    })
  }

  /** Writes what is queued now and stops spacing (the relay is closing): a later publish is written at the end of its turn. */
  stop(): void {
    this.#stopped = true
    if (this.#timer !== null) this.#timers.clearTimeout(this.#timer)
    this.#timer = null
    this.#write()
  }

  #write(): void {
    const batch = this.#queued
    if (batch.length === 0) return
    this.#queued = []
    this.#last = this.#now()
    this.#send(batch)
  }
}
