import type { SourceClock } from './sourceClock.ts'

/**
 * Source clocks ordered by a number each (a min-heap), for frontiers that follow a few clocks per
 * batch among many: the clock with the lowest key on top, ties to the source known first (the
 * lower slot), as a scan of the sources in the order they were first seen keeps the first of
 * the lowest. A clock's key is set again whenever it changes, up or down; each clock is held at
 * most once, found by its slot.
 *
 * @example
 * const heap = new ClockHeap()
 * heap.set(d1, 60_000)
 * heap.set(d2, 55_000)
 * heap.top()?.name // 'd2'
 */
export class ClockHeap {
  readonly #clocks: SourceClock[] = []
  readonly #keys: number[] = []
  /** Per slot, where its clock sits in the heap plus one (0 or unset: not held). */
  readonly #at: number[] = []

  get size(): number {
    return this.#clocks.length
  }

  /** The clock with the lowest key (the first known among equal ones), or undefined when empty. */
  top(): SourceClock | undefined {
    return this.#clocks[0]
  }

  /** The lowest key, or `empty` when no clock is held. */
  topKey(empty: number): number {
    return this.#clocks.length === 0 ? empty : (this.#keys[0] as number)
  }

  has(clock: SourceClock): boolean {
    return (this.#at[clock.slot] ?? 0) > 0
  }

  /** Holds `clock` under `key`: added, or moved up or down from where it was. */
  set(clock: SourceClock, key: number): void {
    const held = (this.#at[clock.slot] ?? 0) - 1
    if (held < 0) {
      this.#clocks.push(clock)
      this.#keys.push(key)
      this.#up(this.#clocks.length - 1)
      return
    }
    const old = this.#keys[held] as number
    this.#keys[held] = key
    if (key < old) this.#up(held)
    else if (key > old) this.#down(held)
  }

  /** Lets go of `clock`, if held. */
  delete(clock: SourceClock): void {
    const held = (this.#at[clock.slot] ?? 0) - 1
    if (held < 0) return
    this.#at[clock.slot] = 0
    const last = this.#clocks.length - 1
    const moved = this.#clocks.pop() as SourceClock
    const key = this.#keys.pop() as number
    if (held === last) return
    this.#place(held, moved, key)
    this.#up(held)
    this.#down((this.#at[moved.slot] as number) - 1)
  }

  /** Holds exactly `clocks` under `keys` (same order), in one pass. */
  build(clocks: readonly SourceClock[], keys: readonly number[]): void {
    for (const clock of this.#clocks) this.#at[clock.slot] = 0
    this.#clocks.length = 0
    this.#keys.length = 0
    for (let i = 0; i < clocks.length; i++) this.#place(i, clocks[i] as SourceClock, keys[i] as number)
    for (let i = (clocks.length >> 1) - 1; i >= 0; i--) this.#down(i)
  }

  /** True when the clock at `i` goes above the one at `j`: a lower key, or an equal one and known first. */
  #before(i: number, j: number): boolean {
    const a = this.#keys[i] as number
    const b = this.#keys[j] as number
    return a < b || (a === b && (this.#clocks[i] as SourceClock).slot < (this.#clocks[j] as SourceClock).slot)
  }

  #place(i: number, clock: SourceClock, key: number): void {
    this.#clocks[i] = clock
    this.#keys[i] = key
    this.#at[clock.slot] = i + 1
  }

  #swap(i: number, j: number): void {
    const clock = this.#clocks[i] as SourceClock
    const key = this.#keys[i] as number
    this.#place(i, this.#clocks[j] as SourceClock, this.#keys[j] as number)
    this.#place(j, clock, key)
  }

  #up(i: number): void {
    this.#at[(this.#clocks[i] as SourceClock).slot] = i + 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!this.#before(i, parent)) return
      this.#swap(i, parent)
      i = parent
    }
  }

  #down(i: number): void {
    const n = this.#clocks.length
    for (;;) {
      const left = 2 * i + 1
      if (left >= n) return
      const right = left + 1
      const child = right < n && this.#before(right, left) ? right : left
      if (!this.#before(child, i)) return
      this.#swap(i, child)
      i = child
    }
  }
}
