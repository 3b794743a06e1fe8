/**
 * Hearing time: a host clock's time less the time the dashboard did not hear the fleet. It
 * stands still from the first reading that does not hear and runs on, from where it stood, at
 * the first that does. `HearingClock` gives it to the engine as processing time; `RelayHearing`
 * measures the devices' liveness on it, as the engine judges their idleness on it.
 *
 * @example
 * const time = new HearingTime()
 * time.read(1_000, true) // 1000
 * time.read(2_000, false) // 2000: stands still from here
 * time.read(5_000, true) // 2000: runs on from where it stood
 * time.read(6_000, true) // 3000
 * time.at(5_500) // 2500
 */
export class HearingTime {
  /** Host time during which it stood still, before `#stoppedAt`. */
  #stoodStill = 0
  /** The host time of the reading it stopped at; null while it runs. */
  #stoppedAt: number | null = null

  /** A reading at host time `t` that hears or not: the hearing time then. */
  read(t: number, hears: boolean): number {
    if (!hears) this.#stoppedAt ??= t
    else if (this.#stoppedAt !== null) {
      this.#stoodStill += t - this.#stoppedAt
      this.#stoppedAt = null
    }
    return this.at(t)
  }

  /** Host time `t` (not before the last reading that heard) on the hearing time. */
  at(t: number): number {
    const stoppedAt = this.#stoppedAt
    return (stoppedAt !== null && t > stoppedAt ? stoppedAt : t) - this.#stoodStill
  }
}
