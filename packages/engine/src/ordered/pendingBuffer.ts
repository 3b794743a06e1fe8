import type { Arrival } from './arrivalQueue.ts'
import { compareEventOrder, type PendingEvent } from './eventOrder.ts'

const MIN_CAPACITY = 64

/**
 * Events waiting for the watermark: a binary min-heap in the stream's total order
 * `(ts, source, seq, id)`. Unlike `EventTimeQueue` (keyed by time alone, equal times in no
 * particular order), ties are broken deterministically inside the heap, so popping yields the
 * final order and a flush never sorts or scans what is not ready: popping k ready events out of
 * n costs O(k log n) comparisons.
 *
 * Event times sit unboxed in a `Float64Array` so the common comparison is one number compare.
 * `comparisons` and `moves` count the work done, for stats and for tests that prove a flush
 * does not depend on the backlog. When a drained backlog leaves the storage mostly empty it is
 * shrunk (`compactions`), so a reconnect burst does not pin its peak memory.
 */
export class PendingBuffer {
  #ts = new Float64Array(MIN_CAPACITY)
  #events: PendingEvent[] = []
  #arrivals: Arrival[] = []
  comparisons = 0
  moves = 0
  compactions = 0

  get size(): number {
    return this.#events.length
  }

  /** Adds an event; counts it into its arrival record. */
  push(event: PendingEvent, arrival: Arrival): void {
    arrival.remaining++
    const n = this.#events.length
    if (n === this.#ts.length) this.#resize(this.#ts.length * 2)
    this.#events.push(event)
    this.#arrivals.push(arrival)
    this.#siftUp(n, event.ts, event, arrival)
  }

  /** Event time of the first event in order, or +Infinity when empty. */
  peekTs(): number {
    return this.#events.length === 0 ? Number.POSITIVE_INFINITY : (this.#ts[0] as number)
  }

  /** Removes and returns the first event in order (call only when `size > 0`). */
  pop(): PendingEvent {
    const tsOf = this.#ts
    const events = this.#events
    const arrivals = this.#arrivals
    const top = events[0] as PendingEvent
    ;(arrivals[0] as Arrival).remaining--
    const lastEvent = events.pop() as PendingEvent
    const lastArrival = arrivals.pop() as Arrival
    const n = events.length
    if (n > 0) {
      // Floyd's bottom-up pop: walk the hole down along the smaller child (one comparison per
      // level), then sift the last element up from there; it usually belongs near the bottom,
      // so this costs about half the comparisons of the textbook sift-down.
      const lastTs = tsOf[n] as number
      let i = 0
      for (;;) {
        let child = 2 * i + 1
        if (child >= n) break
        const right = child + 1
        if (right < n && this.#before(tsOf[right] as number, events[right] as PendingEvent, tsOf[child] as number, events[child] as PendingEvent)) {
          child = right
        }
        tsOf[i] = tsOf[child] as number
        events[i] = events[child] as PendingEvent
        arrivals[i] = arrivals[child] as Arrival
        this.moves++
        i = child
      }
      this.#siftUp(i, lastTs, lastEvent, lastArrival)
    }
    if (n * 4 < tsOf.length && tsOf.length > MIN_CAPACITY * 16) this.#compact()
    return top
  }

  /** Moves the hole at `i` up until `event` (time `t`) belongs there, and puts it there. */
  #siftUp(i: number, t: number, event: PendingEvent, arrival: Arrival): void {
    const tsOf = this.#ts
    const events = this.#events
    const arrivals = this.#arrivals
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!this.#before(t, event, tsOf[parent] as number, events[parent] as PendingEvent)) break
      tsOf[i] = tsOf[parent] as number
      events[i] = events[parent] as PendingEvent
      arrivals[i] = arrivals[parent] as Arrival
      this.moves++
      i = parent
    }
    tsOf[i] = t
    events[i] = event
    arrivals[i] = arrival
    this.moves++
  }

  #before(ta: number, a: PendingEvent, tb: number, b: PendingEvent): boolean {
    this.comparisons++
    if (ta !== tb) return ta < tb
    return compareEventOrder(a, b) < 0
  }

  #resize(capacity: number): void {
    const n = this.#events.length
    const next = new Float64Array(capacity)
    next.set(this.#ts.subarray(0, n))
    this.#ts = next
    this.moves += n
  }

  /** Halves the time storage; amortized against the pops that emptied it. */
  #compact(): void {
    this.#resize(Math.max(MIN_CAPACITY, this.#ts.length >> 1))
    // V8 trims an array's backing store on pop only lazily; a copy releases it now.
    this.#events = this.#events.slice()
    this.#arrivals = this.#arrivals.slice()
    this.moves += 2 * this.#events.length
    this.compactions++
  }
}
