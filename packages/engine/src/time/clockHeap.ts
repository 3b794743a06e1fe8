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

  /**
   * Holds `clock` under `key`: added, or moved up or down from where it was. Small, so that the
   * optimizer inlines it where the key is computed: `#move` takes a position only, and a key
   * handed to a call it does not inline would be boxed, a heap number per change.
   */
  set(clock: SourceClock, key: number): void {
    const held = (this.#at[clock.slot] ?? 0) - 1
    if (held < 0) {
      this.#clocks.push(clock)
      this.#keys.push(key)
      this.#move(this.#clocks.length - 1)
      return
    }
    const old = this.#keys[held] as number
    this.#keys[held] = key
    if (key < old || key > old) this.#move(held)
  }

  /** Lets go of `clock`, if held. */
  delete(clock: SourceClock): void {
    const held = (this.#at[clock.slot] ?? 0) - 1
    if (held < 0) return
    this.#at[clock.slot] = 0
    const moved = this.#clocks.pop() as SourceClock
    const key = this.#keys.pop() as number
    if (held === this.#clocks.length) return
    this.#clocks[held] = moved
    this.#keys[held] = key
    this.#move(held)
  }

  /**
   * Adds to `into` every clock held under the lowest key (the top and those tied with it), in no
   * particular order. Visits those and their children only: below a higher key, none can tie.
   */
  topTies(into: SourceClock[]): void {
    const n = this.#clocks.length
    if (n === 0) return
    const lowest = this.#keys[0] as number
    const pending = [0]
    for (let i = pending.pop(); i !== undefined; i = pending.pop()) {
      if (!(this.#keys[i] === lowest)) continue
      into.push(this.#clocks[i] as SourceClock)
      for (let child = 4 * i + 1; child <= 4 * i + 4 && child < n; child++) pending.push(child)
    }
  }

  /** Holds exactly `clocks` under `keys` (same order), in one pass. */
  build(clocks: readonly SourceClock[], keys: readonly number[]): void {
    for (const clock of this.#clocks) this.#at[clock.slot] = 0
    this.#clocks.length = 0
    this.#keys.length = 0
    for (let i = 0; i < clocks.length; i++) {
      const clock = clocks[i] as SourceClock
      this.#clocks[i] = clock
      this.#keys[i] = keys[i] as number
      this.#at[clock.slot] = i + 1
    }
    for (let i = (clocks.length - 2) >> 2; i >= 0; i--) this.#move(i, i)
  }

  /**
   * Moves the clock at `i` to where it belongs, up (no higher than `top`) or down: each clock it
   * passes moves one level the other way, and it is written once where they stop, with its
   * position in `#at`. A clock goes above another with a lower key, or an equal one and known first.
   * Four children per clock (those of `i` from `4i + 1`): half the levels of a binary heap, so a
   * clock whose key jumps from the lowest to the highest, as a source heard again does, passes
   * half as many clocks, and the four it compares at each level lie side by side.
   */
  #move(i: number, top = 0): void {
    const clocks = this.#clocks
    const keys = this.#keys
    const n = clocks.length
    const clock = clocks[i] as SourceClock
    const key = keys[i] as number
    const slot = clock.slot
    while (i > top) {
      const parent = (i - 1) >> 2
      const above = clocks[parent] as SourceClock
      const aboveKey = keys[parent] as number
      if (!(key < aboveKey || (key === aboveKey && slot < above.slot))) break
      clocks[i] = above
      keys[i] = aboveKey
      this.#at[above.slot] = i + 1
      i = parent
    }
    for (;;) {
      const first = 4 * i + 1
      if (first >= n) break
      let child = first
      let below = clocks[first] as SourceClock
      let belowKey = keys[first] as number
      const end = Math.min(first + 4, n)
      for (let next = first + 1; next < end; next++) {
        const nextKey = keys[next] as number
        if (nextKey < belowKey || (nextKey === belowKey && (clocks[next] as SourceClock).slot < below.slot)) {
          child = next
          below = clocks[next] as SourceClock
          belowKey = nextKey
        }
      }
      if (!(belowKey < key || (belowKey === key && below.slot < slot))) break
      clocks[i] = below
      keys[i] = belowKey
      this.#at[below.slot] = i + 1
      i = child
    }
    clocks[i] = clock
    keys[i] = key
    this.#at[slot] = i + 1
  }
}
