import type { WorkerClock } from '../src/page/platform.ts'

interface Timer {
  readonly id: number
  readonly context: string
  at: number
  readonly every: number | null
  readonly callback: () => void
}

/** Lets queued promise callbacks (and the fake locks' grants) run; no timer involved. */
export const settle = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * Time for several fake contexts (tabs, workers) moved by hand. Each context gets its own
 * timers (`clock(context)`); `freeze(context)` stops them while time passes, as a frozen tab's,
 * and thawing runs each overdue timer once, late. `run(ms)` moves time in small steps, running
 * due timers in time order and letting promise callbacks settle between steps.
 */
export class FakeTime {
  #now = 1_000_000
  #next = 1
  readonly #timers = new Map<number, Timer>()
  readonly #frozen = new Set<string>()

  get now(): number {
    return this.#now
  }

  clock(context: string): WorkerClock {
    return {
      now: () => this.#now,
      setTimeout: (callback, ms) => this.#add(context, callback, ms, null),
      setInterval: (callback, ms) => this.#add(context, callback, ms, Math.max(1, ms)),
      clearTimeout: (handle) => {
        this.#timers.delete(handle as number)
      },
      clearInterval: (handle) => {
        this.#timers.delete(handle as number)
      },
    }
  }

  freeze(context: string, frozen: boolean): void {
    if (frozen) {
      this.#frozen.add(context)
      return
    }
    this.#frozen.delete(context)
    for (const timer of [...this.#timers.values()]) {
      if (timer.context !== context || timer.at > this.#now) continue
      timer.at = this.#now
      this.#fire(timer)
    }
  }

  /** Drops every timer of `context` (it is gone). */
  end(context: string): void {
    for (const timer of [...this.#timers.values()]) if (timer.context === context) this.#timers.delete(timer.id)
  }

  async run(ms: number, step = 10): Promise<void> {
    const end = this.#now + ms
    while (this.#now < end) {
      this.#advance(Math.min(step, end - this.#now))
      await settle()
      await settle()
    }
  }

  #advance(ms: number): void {
    const end = this.#now + ms
    for (;;) {
      let due: Timer | undefined
      for (const timer of this.#timers.values()) {
        if (this.#frozen.has(timer.context) || timer.at > end) continue
        if (due === undefined || timer.at < due.at || (timer.at === due.at && timer.id < due.id)) due = timer
      }
      if (due === undefined) break
      this.#now = Math.max(this.#now, due.at)
      this.#fire(due)
    }
    this.#now = end
  }

  #fire(timer: Timer): void {
    if (timer.every === null) this.#timers.delete(timer.id)
    else timer.at += timer.every
    timer.callback()
  }

  #add(context: string, callback: () => void, ms: number, every: number | null): number {
    const id = this.#next++
    this.#timers.set(id, { id, context, at: this.#now + Math.max(0, ms), every, callback })
    return id
  }
}
