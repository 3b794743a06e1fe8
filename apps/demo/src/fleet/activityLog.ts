/** How an activity entry reads at a glance. */
export type ActivityTone = 'info' | 'good' | 'warn' | 'bad'

/** One line of the fleet's activity feed: what the operator or the simulation did, and what came of it. */
export interface ActivityEntry {
  readonly id: number
  readonly at: number
  readonly tone: ActivityTone
  readonly text: string
}

/** The newest `capacity` entries, newest first; `entries()` keeps its identity until something is added. */
export class ActivityLog {
  readonly #capacity: number
  #entries: readonly ActivityEntry[] = []
  #nextId = 1

  constructor(capacity = 60) {
    this.#capacity = capacity
  }

  add(at: number, tone: ActivityTone, text: string): void {
    this.#entries = [{ id: this.#nextId++, at, tone, text }, ...this.#entries].slice(0, this.#capacity)
  }

  entries(): readonly ActivityEntry[] {
    return this.#entries
  }
}
