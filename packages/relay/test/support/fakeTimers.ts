/**
 * Timers on a clock that moves only when the test says: give a relay `now: () => timers.now`
 * and `timers`, and its deadlines (token expiry, idle rooms, the store's write window, sockets'
 * authentication deadline) run only when the test advances the clock.
 */
import type { RelayTimers } from '../../src/index.ts'

/** Timers on a clock that moves only when the test says. */
export class FakeTimers implements RelayTimers {
  now: number
  #next = 1
  readonly #due = new Map<number, { readonly at: number; readonly run: () => void }>()

  constructor(start: number) {
    this.now = start
  }

  setTimeout(run: () => void, ms: number): unknown {
    const id = this.#next++
    this.#due.set(id, { at: this.now + ms, run })
    return id
  }

  clearTimeout(handle: unknown): void {
    this.#due.delete(handle as number)
  }

  /** Moves the clock by `ms`, running what falls due on the way, in order. */
  advance(ms: number): void {
    const end = this.now + ms
    for (;;) {
      let first: [number, { at: number; run: () => void }] | undefined
      for (const entry of this.#due) if (entry[1].at <= end && (first === undefined || entry[1].at < first[1].at)) first = entry
      if (first === undefined) break
      this.#due.delete(first[0])
      this.now = Math.max(this.now, first[1].at)
      first[1].run()
    }
    this.now = end
  }

  get pending(): number {
    return this.#due.size
  }
}
