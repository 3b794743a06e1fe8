import type { LateEvent } from './engineApi.ts'

/**
 * The late lane: a bounded ring of events that windows refused. When full, the
 * oldest entry is dropped from the lane (never from the counts) and `trimmed` says how many.
 */
export class LateLane {
  readonly #capacity: number
  #ring: LateEvent[] = []
  #head = 0
  #snapshot: readonly LateEvent[] | null = null
  trimmed = 0
  total = 0

  constructor(capacity: number) {
    this.#capacity = Math.max(0, capacity)
  }

  push(entry: LateEvent): void {
    this.total++
    this.#snapshot = null
    if (this.#capacity === 0) {
      this.trimmed++
      return
    }
    if (this.#ring.length < this.#capacity) {
      this.#ring.push(entry)
      return
    }
    this.#ring[this.#head] = entry
    this.#head = (this.#head + 1) % this.#capacity
    this.trimmed++
  }

  get size(): number {
    return this.#ring.length
  }

  /** Refills the lane from a checkpoint. */
  restore(entries: readonly LateEvent[], trimmed: number, total: number): void {
    this.#ring = entries.slice(-Math.max(1, this.#capacity)).slice(0, this.#capacity)
    this.#head = 0
    this.#snapshot = null
    this.trimmed = trimmed
    this.total = total
  }

  /** Oldest first; the same array until the lane changes, so it is safe as a React snapshot. */
  list(): readonly LateEvent[] {
    if (this.#snapshot === null) {
      this.#snapshot = Object.freeze([...this.#ring.slice(this.#head), ...this.#ring.slice(0, this.#head)])
    }
    return this.#snapshot
  }
}
