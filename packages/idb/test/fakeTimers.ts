import type { WriteRetryTimers } from '../src/index.ts'

/**
 * Timers on a clock that moves only when the test says (`openEngine`'s `timers` option), so a
 * test of the write retry neither waits in real time nor fakes the global timers that
 * fake-indexeddb completes its requests with.
 */
export class FakeTimers implements WriteRetryTimers {
  now = 0
  #next = 1
  readonly #due = new Map<number, { readonly at: number; readonly run: () => void }>()

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
      let first: [number, { readonly at: number; readonly run: () => void }] | undefined
      for (const entry of this.#due) if (entry[1].at <= end && (first === undefined || entry[1].at < first[1].at)) first = entry
      if (first === undefined) break
      this.#due.delete(first[0])
      this.now = Math.max(this.now, first[1].at)
      first[1].run()
    }
    this.now = end
  }

  /** How long until each armed timer runs, soonest first. */
  get pending(): number[] {
    return [...this.#due.values()].map((timer) => timer.at - this.now).sort((a, b) => a - b)
  }
}
