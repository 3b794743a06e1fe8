/** Events of one `push` call still waiting, and when that call happened (processing time). */
export interface Arrival {
  readonly at: number
  remaining: number
}

/**
 * Processing-time arrival of waiting events, one record per `push` call rather than per
 * event, so "oldest pending age" costs O(1) amortized while events leave in event-time order.
 */
export class ArrivalQueue {
  #log: Arrival[] = []
  #head = 0

  /** A record for events arriving now; the caller counts them into `remaining`. */
  open(at: number): Arrival {
    const arrival: Arrival = { at, remaining: 0 }
    this.#log.push(arrival)
    return arrival
  }

  /** Processing time of the oldest arrival that still has a waiting event, or null. */
  oldest(): number | null {
    const log = this.#log
    while (this.#head < log.length && (log[this.#head] as Arrival).remaining === 0) this.#head++
    if (this.#head > 1024 && this.#head * 2 > log.length) {
      this.#log = log.slice(this.#head)
      this.#head = 0
    }
    const first = this.#log[this.#head]
    return first === undefined ? null : first.at
  }
}
