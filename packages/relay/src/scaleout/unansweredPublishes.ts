/**
 * What the relay has published to Redis that Redis has not answered yet, and the bound on it.
 *
 * A Redis that stops answering without closing its connections (paused, its host cut off
 * without a reset) fails no command: the client writes every publish to the connection and
 * keeps it until the answer comes, so a relay whose rooms keep changing would keep every
 * update, presence and exchange of every shared room in memory for as long as Redis is silent.
 * So a publish Redis has not answered within `REDIS_ANSWER_MS`, or unanswered publishes over
 * `maxBytes`, cut the relay off from Redis: from then on, publishes are dropped (counted), not
 * queued, until Redis has answered everything sent before, when the relay repairs its rooms
 * with the state-vector exchange, as after a reconnection.
 */
import type { RelayMetrics } from '../metrics/relayMetrics.ts'
import type { RelayTimers } from '../relayOptions.ts'

/**
 * How long a publish may wait for Redis's answer (ms) before the relay counts itself cut off
 * from Redis. A Redis that answers takes well under a millisecond; the bound is seen between one
 * and two times this after the publish (the watch follows the oldest unanswered one).
 */
export const REDIS_ANSWER_MS = 5_000

/** What `UnansweredPublishes` reports to the relay's Redis wrapper. */
export interface UnansweredPublishesEvents {
  /** Redis stopped answering: `why` says how long or how much. */
  readonly cutOff: (why: string) => void
  /** Redis answered everything sent before it was counted as cut off. */
  readonly answered: () => void
}

/**
 * Tracks the publishes sent to Redis until they are answered, and drops publishes while Redis
 * does not answer.
 *
 * @example
 * const unanswered = new UnansweredPublishes({ timers, maxBytes: 64 << 20, metrics, events })
 * const sent = unanswered.send(message.byteLength, 1, () => client.publish(channel, message))
 * if (sent === null) return // dropped: Redis does not answer, the exchange repairs it later
 */
export class UnansweredPublishes {
  readonly #timers: RelayTimers
  readonly #answerMs: number
  readonly #maxBytes: number
  readonly #metrics: RelayMetrics
  readonly #events: UnansweredPublishesEvents
  /** Per publish sent and not answered, in the order sent: its bytes. */
  readonly #pending = new Map<number, number>()
  #bytes = 0
  #next = 0
  /** The watch on the oldest unanswered publish (its number), when armed. */
  #watch: { readonly timer: unknown; readonly publish: number } | null = null
  #cutOff = false
  /** Since the relay was counted as cut off, Redis answered a publish. */
  #answeredSince = false

  constructor(options: { readonly timers: RelayTimers; readonly answerMs?: number; readonly maxBytes: number; readonly metrics: RelayMetrics; readonly events: UnansweredPublishesEvents }) {
    this.#timers = options.timers
    this.#answerMs = options.answerMs ?? REDIS_ANSWER_MS
    this.#maxBytes = options.maxBytes
    this.#metrics = options.metrics
    this.#events = options.events
  }

  /** Bytes of publishes sent to Redis and not answered yet. */
  get bytes(): number {
    return this.#bytes
  }

  /** Redis has not answered for too long, or too much: publishes are dropped. */
  get cutOff(): boolean {
    return this.#cutOff
  }

  /**
   * Sends a publish (`messages` messages of `bytes` in all, one command or a pipeline), unless
   * the relay is cut off from Redis or this one would take the unanswered bytes past the bound:
   * then drops it and returns null.
   */
  send<T>(bytes: number, messages: number, publish: () => Promise<T>): Promise<T> | null {
    if (!this.#cutOff && this.#pending.size > 0 && this.#bytes + bytes > this.#maxBytes) {
      this.#cut(`${this.#bytes + bytes} bytes of publishes would wait for its answers (more than ${this.#maxBytes})`)
    }
    if (this.#cutOff) {
      this.#metrics.redisPublishesDropped += messages
      return null
    }
    const id = this.#next++
    this.#pending.set(id, bytes)
    this.#bytes += bytes
    this.#arm()
    const sent = publish()
    sent.then(
      () => this.#settled(id, true),
      () => this.#settled(id, false),
    )
    return sent
  }

  /**
   * The publishing connection is ready again (a reconnection: the relay repairs its rooms then):
   * publishes are sent again, what is still unanswered watched anew.
   */
  reconnected(): void {
    this.#cutOff = false
    this.#answeredSince = false
    this.#disarm()
    this.#arm()
  }

  /** Stops watching (the relay is closing). */
  stop(): void {
    this.#disarm()
  }

  #settled(id: number, answered: boolean): void {
    const bytes = this.#pending.get(id)
    if (bytes === undefined) return
    this.#pending.delete(id)
    this.#bytes -= bytes
    if (this.#watch?.publish === id) {
      this.#disarm()
      this.#arm()
    }
    if (!this.#cutOff) return
    if (answered) this.#answeredSince = true
    // Everything sent before it stopped answering is answered: Redis caught up.
    if (this.#pending.size === 0 && this.#answeredSince) {
      this.#cutOff = false
      this.#answeredSince = false
      this.#events.answered()
    }
  }

  /** Watches the oldest unanswered publish, unless a watch is armed or the relay is cut off. */
  #arm(): void {
    if (this.#watch !== null || this.#cutOff) return
    const oldest = this.#pending.keys().next()
    if (oldest.done === true) return
    const publish = oldest.value
    const timer = this.#timers.setTimeout(() => {
      this.#watch = null
      if (this.#pending.has(publish)) this.#cut(`it has not answered a publish for ${this.#answerMs} ms (${this.#bytes} bytes of publishes unanswered)`)
      else this.#arm()
    }, this.#answerMs)
    this.#watch = { timer, publish }
  }

  #disarm(): void {
    if (this.#watch === null) return
    this.#timers.clearTimeout(this.#watch.timer)
    this.#watch = null
  }

  #cut(why: string): void {
    this.#cutOff = true
    this.#answeredSince = false
    this.#disarm()
    this.#events.cutOff(why)
  }
}
