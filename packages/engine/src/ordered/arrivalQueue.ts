/** Events of one `push` call still waiting, and when that call happened (processing time). */
export interface Arrival {
  /** NaN while the clock has read nothing finite since the call (see `ArrivalQueue.heard`). */
  at: number
  remaining: number
}

/** Records a queue takes beyond twice those it kept at its last drop before it drops spent ones again. */
const SLACK = 1024

/**
 * Processing-time arrival of waiting events, one record per `push` call rather than per
 * event, so "oldest pending age" costs O(1) amortized while events leave in event-time order.
 *
 * Records whose events all left are dropped as records are opened, not only when the oldest is
 * asked for: a stream whose stats nobody reads, or whose oldest record keeps one event waiting
 * for good (stamped far ahead), would otherwise keep a record per `push` without bound. A drop
 * runs once the queue holds twice what the last one kept plus `SLACK`, so it costs O(1)
 * amortized per record and the queue holds at most about twice the records with waiting events
 * (each holds at least one of the stream's pending events).
 */
export class ArrivalQueue {
  #log: Arrival[] = []
  #head = 0
  /** Length of `#log` at which the next `open` drops the spent records. */
  #limit = SLACK
  /** Records opened while the clock read NaN or an infinity wait at the end of `#log` for a finite reading. */
  #unstamped = false

  /** A record for events arriving at processing time `at`; the caller counts them into `remaining`. */
  open(at: number): Arrival {
    this.heard(at)
    if (this.#log.length >= this.#limit) this.#dropSpent()
    const finite = Number.isFinite(at)
    const arrival: Arrival = { at: finite ? at : Number.NaN, remaining: 0 }
    if (!finite) this.#unstamped = true
    this.#log.push(arrival)
    return arrival
  }

  /**
   * A clock reading: records opened while the clock read NaN or an infinity count as arrived at
   * the first finite reading after them, as a source heard then counts as heard (docs/bad-input.md,
   * B17), so one bad reading cannot make the oldest age NaN for as long as its events wait.
   * They are the records opened since the last finite reading, at the end of the queue; each is
   * stamped once.
   *
   * @example
   * queue.open(Number.NaN)
   * queue.heard(1_000)
   * queue.oldest() // 1000
   */
  heard(now: number): void {
    if (!this.#unstamped || !Number.isFinite(now)) return
    const log = this.#log
    for (let i = log.length - 1; i >= 0 && Number.isNaN((log[i] as Arrival).at); i--) (log[i] as Arrival).at = now
    this.#unstamped = false
  }

  /** Records held: those with waiting events, and spent ones not dropped yet. */
  get size(): number {
    return this.#log.length - this.#head
  }

  /** Processing time of the oldest arrival that still has a waiting event (NaN: no finite reading since it), or null. */
  oldest(): number | null {
    const log = this.#log
    while (this.#head < log.length && (log[this.#head] as Arrival).remaining === 0) this.#head++
    const first = log[this.#head]
    return first === undefined ? null : first.at
  }

  /** Keeps the records with waiting events, in arrival order (the oldest stays first). */
  #dropSpent(): void {
    const kept: Arrival[] = []
    const log = this.#log
    for (let i = this.#head; i < log.length; i++) {
      const arrival = log[i] as Arrival
      if (arrival.remaining > 0) kept.push(arrival)
    }
    this.#log = kept
    this.#head = 0
    this.#limit = 2 * kept.length + SLACK
  }
}
