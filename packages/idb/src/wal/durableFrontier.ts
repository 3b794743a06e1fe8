/**
 * The durable frontier of a write-ahead log: the highest lsn at or below which every
 * recorded operation is durable (its record committed, or a committed checkpoint covers
 * it). Work that must not run before an operation is durable (publishing its writes to
 * peers) waits here, in lsn order.
 *
 * Records commit in order in both built-in persistences, but a failed record (full quota)
 * stays a hole until a checkpoint covers it, and nothing behind a hole is released early.
 */
export class DurableFrontier<T> {
  /** Recorded lsns not yet durable, ascending, from `#head`. */
  #unsettled: number[] = []
  #head = 0
  /** Lsns that committed while an earlier one was still unsettled. */
  readonly #early = new Set<number>()
  /** Everything at or below this lsn is covered by a committed checkpoint. */
  #covered = 0
  #last = 0
  #waiting: { readonly lsn: number; readonly item: T }[] = []
  #waitingHead = 0
  readonly #release: (item: T) => void

  /**
   * `release` runs once per item, in the order items were held, when their lsn is durable.
   * `durableUpTo`: the log's last lsn when it was opened; everything it recovered is durable.
   */
  constructor(release: (item: T) => void, durableUpTo = 0) {
    this.#release = release
    this.#last = durableUpTo
    this.#covered = durableUpTo
  }

  /** Every recorded operation at or below this lsn is durable. */
  get lsn(): number {
    return this.#head < this.#unsettled.length ? (this.#unsettled[this.#head] as number) - 1 : this.#last
  }

  /** Items waiting for their operation to become durable. */
  get waiting(): number {
    return this.#waiting.length - this.#waitingHead
  }

  /** An operation was recorded under `lsn` (lsns grow with every call). */
  recorded(lsn: number): void {
    this.#unsettled.push(lsn)
    this.#last = lsn
  }

  /** The record `lsn` committed. */
  committed(lsn: number): void {
    if (lsn <= this.#covered) return
    if (this.#unsettled[this.#head] !== lsn) {
      this.#early.add(lsn)
      return
    }
    this.#head++
    while (this.#head < this.#unsettled.length && this.#early.delete(this.#unsettled[this.#head] as number)) this.#head++
    this.#settle()
  }

  /** A checkpoint holding every operation up to `upToLsn` committed. */
  checkpointed(upToLsn: number): void {
    if (upToLsn <= this.#covered) return
    this.#covered = upToLsn
    while (this.#head < this.#unsettled.length && (this.#unsettled[this.#head] as number) <= upToLsn) {
      this.#early.delete(this.#unsettled[this.#head] as number)
      this.#head++
    }
    for (const lsn of this.#early) if (lsn <= upToLsn) this.#early.delete(lsn)
    this.#settle()
  }

  /** Releases `item` once the operation recorded under `lsn` is durable (at once if it is already). */
  hold(lsn: number, item: T): void {
    if (this.waiting === 0 && lsn <= this.lsn) {
      this.#release(item)
      return
    }
    this.#waiting.push({ lsn, item })
  }

  #settle(): void {
    if (this.#head === this.#unsettled.length) {
      this.#unsettled = []
      this.#head = 0
    } else if (this.#head > 1024 && this.#head * 2 > this.#unsettled.length) {
      this.#unsettled = this.#unsettled.slice(this.#head)
      this.#head = 0
    }
    const durable = this.lsn
    while (this.#waitingHead < this.#waiting.length) {
      const next = this.#waiting[this.#waitingHead] as { readonly lsn: number; readonly item: T }
      if (next.lsn > durable) break
      this.#waiting[this.#waitingHead++] = undefined as never
      this.#release(next.item)
    }
    if (this.#waitingHead === this.#waiting.length) {
      this.#waiting = []
      this.#waitingHead = 0
    }
  }
}
