/** Events of one `push` call still waiting, and when that call happened (processing time). */
export interface Arrival {
  readonly at: number
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

  /** A record for events arriving now; the caller counts them into `remaining`. */
  open(at: number): Arrival {
    if (this.#log.length >= this.#limit) this.#dropSpent()
    const arrival: Arrival = { at, remaining: 0 }
    this.#log.push(arrival)
    return arrival
  }

  /** Records held: those with waiting events, and spent ones not dropped yet. */
  get size(): number {
    return this.#log.length - this.#head
  }

  /** Processing time of the oldest arrival that still has a waiting event, or null. */
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
