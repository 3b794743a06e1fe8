/**
 * Timers on a clock that moves only when the test says: pass `timers` (its `setTimeout` and
 * `clearTimeout`) and `read` wherever code takes injected timers and a clock (the relay's
 * `timers` and `now`, `openEngine`'s `timers`), then `advance` time. What falls due runs in
 * deadline order, the clock standing at each deadline while it runs; nothing waits in real time,
 * and the global timers stay real (for libraries that complete their own work with them).
 *
 * @example
 * const clock = new ManualTimers(1_700_000_000_000)
 * const relay = await startRelay({ port: 0, auth, now: clock.read, timers: clock })
 * clock.advance(60_000) // a token that expired a minute from now has: its connection is closed
 * clock.pending // ms until each armed timer runs, soonest first
 */
export class ManualTimers {
  /** The clock: ms, as `Date.now()` gives them. */
  now: number
  #next = 1
  readonly #due = new Map<number, { readonly at: number; readonly run: () => void }>()

  constructor(start = 0) {
    this.now = start
  }

  /** The clock's time, as a function (an engine's or relay's `now` option). */
  readonly read = (): number => this.now

  /** Arms `run` to run when the clock reaches now + `ms` (a negative `ms` counts as 0); returns its handle. */
  setTimeout(run: () => void, ms: number): unknown {
    const id = this.#next++
    this.#due.set(id, { at: this.now + Math.max(0, ms), run })
    return id
  }

  /** Disarms the timer `setTimeout` returned `handle` for (nothing, when it ran or was disarmed). */
  clearTimeout(handle: unknown): void {
    this.#due.delete(handle as number)
  }

  /** Moves the clock by `ms`, running what falls due on the way: the earliest first, timers armed meanwhile included. */
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
