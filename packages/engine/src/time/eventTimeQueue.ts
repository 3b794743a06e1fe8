/**
 * A binary min-heap of items by an event time, for "everything whose end is at
 * or below the frontier" without scanning live windows. Entries may go stale
 * (a session grew, a window left); the consumer checks each popped entry.
 */
export class EventTimeQueue<T> {
  #at: number[] = []
  #items: T[] = []

  get size(): number {
    return this.#at.length
  }

  push(at: number, item: T): void {
    const at_ = this.#at
    const items = this.#items
    let i = at_.length
    at_.push(at)
    items.push(item)
    while (i > 0) {
      const parent = (i - 1) >> 1
      const pa = at_[parent] as number
      if (pa <= at) break
      at_[i] = pa
      items[i] = items[parent] as T
      i = parent
    }
    at_[i] = at
    items[i] = item
  }

  /** Time of the earliest entry, or +Infinity when empty. */
  peekAt(): number {
    return this.#at.length === 0 ? Number.POSITIVE_INFINITY : (this.#at[0] as number)
  }

  /** The earliest entry's item (call only when `size > 0`); it stays queued. */
  peek(): T {
    return this.#items[0] as T
  }

  /** Whether an entry is due at `t`: the queue is not empty and its earliest time is at most `t` (+Infinity included). */
  dueBy(t: number): boolean {
    return this.#at.length > 0 && (this.#at[0] as number) <= t
  }

  /** Removes and returns the earliest entry's item (call only when `size > 0`). */
  pop(): T {
    const at_ = this.#at
    const items = this.#items
    const top = items[0] as T
    const lastAt = at_.pop() as number
    const lastItem = items.pop() as T
    const n = at_.length
    if (n > 0) {
      let i = 0
      for (;;) {
        let child = 2 * i + 1
        if (child >= n) break
        const right = child + 1
        if (right < n && (at_[right] as number) < (at_[child] as number)) child = right
        if ((at_[child] as number) >= lastAt) break
        at_[i] = at_[child] as number
        items[i] = items[child] as T
        i = child
      }
      at_[i] = lastAt
      items[i] = lastItem
    }
    return top
  }

  /** Keeps only the entries for which `keep` holds, as a new heap. */
  retain(keep: (item: T, at: number) => boolean): void {
    const at = this.#at
    const items = this.#items
    this.#at = []
    this.#items = []
    for (let i = 0; i < at.length; i++) if (keep(items[i] as T, at[i] as number)) this.push(at[i] as number, items[i] as T)
  }

  clear(): void {
    this.#at = []
    this.#items = []
  }
}
