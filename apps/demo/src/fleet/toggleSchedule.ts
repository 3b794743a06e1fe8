import type { Toggle } from './connectivityPlan.ts'

/** Plays a connectivity plan: hands out the toggles that are due, in order, once each. */
export class ToggleSchedule {
  readonly name: string
  readonly #toggles: readonly Toggle[]
  #next = 0

  /** `toggles` must be sorted by `at`. */
  constructor(name: string, toggles: readonly Toggle[]) {
    this.name = name
    this.#toggles = toggles
  }

  /** Processing time of the last toggle (or -Infinity for an empty plan). */
  get endsAt(): number {
    return this.#toggles.at(-1)?.at ?? Number.NEGATIVE_INFINITY
  }

  get done(): boolean {
    return this.#next >= this.#toggles.length
  }

  /** Toggles with `at <= now` not handed out before. */
  due(now: number): Toggle[] {
    const start = this.#next
    while (this.#next < this.#toggles.length && (this.#toggles[this.#next] as Toggle).at <= now) this.#next++
    return this.#toggles.slice(start, this.#next)
  }
}
