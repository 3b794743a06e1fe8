import type { WindowState } from './windowState.ts'

/**
 * The windows an operation collects for settling (touched, or due an early pane), in a list that
 * keeps its storage from one operation to the next. An array emptied with `length = 0` gives its
 * storage back, and the next batch grows it again step by step: with an hour sliding every
 * minute, about 250 windows per batch made 2.9 MB of garbage per 100k events. The storage stays
 * as large as the most windows one operation touched (bounded by `limits.maxWindows`).
 *
 * @example
 * const list = new WindowList()
 * list.add(w)
 * for (let i = 0; i < list.size; i++) settle(list.at(i))
 * list.clear()
 */
export class WindowList {
  readonly #items: (WindowState | undefined)[] = []
  #size = 0

  get size(): number {
    return this.#size
  }

  add(w: WindowState): void {
    this.#items[this.#size++] = w
  }

  /** The window at `i`, which must be below `size`. */
  at(i: number): WindowState {
    return this.#items[i] as WindowState
  }

  /** Empties the list; the windows it held are let go, its storage kept. */
  clear(): void {
    this.#items.fill(undefined, 0, this.#size)
    this.#size = 0
  }
}
