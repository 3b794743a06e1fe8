/** A window address (its end tells cumulating windows apart) with the event time at which it leaves live state. */
export interface Expiry {
  readonly at: number
  readonly window: string
  readonly key: string
  readonly start: number
  readonly end: number
}

/**
 * Final windows in the order they leave live state (a binary min-heap on `at`). The engine
 * drops a final window silently once the watermark passes `end + allowedLateness + retention`;
 * the mirror drops it at the same watermark, so both answer `results()` alike.
 */
export class ExpiryQueue {
  readonly #heap: Expiry[] = []

  get size(): number {
    return this.#heap.length
  }

  push(entry: Expiry): void {
    const heap = this.#heap
    heap.push(entry)
    let i = heap.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if ((heap[parent] as Expiry).at <= entry.at) break
      heap[i] = heap[parent] as Expiry
      i = parent
    }
    heap[i] = entry
  }

  /** Removes and returns every entry with `at <= watermark`, earliest first. */
  due(watermark: number): Expiry[] {
    const out: Expiry[] = []
    const heap = this.#heap
    while (heap.length > 0 && (heap[0] as Expiry).at <= watermark) {
      out.push(heap[0] as Expiry)
      const last = heap.pop() as Expiry
      if (heap.length === 0) break
      let i = 0
      for (;;) {
        const left = 2 * i + 1
        if (left >= heap.length) break
        const right = left + 1
        const child = right < heap.length && (heap[right] as Expiry).at < (heap[left] as Expiry).at ? right : left
        if ((heap[child] as Expiry).at >= last.at) break
        heap[i] = heap[child] as Expiry
        i = child
      }
      heap[i] = last
    }
    return out
  }

  clear(): void {
    this.#heap.length = 0
  }
}
