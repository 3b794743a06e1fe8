/** What a listed clock carries: the look it was last listed in. */
export interface ListedClock {
  changedIn: number
}

/**
 * The source clocks that changed since the frontiers last took their changes in, each listed
 * once: how the frontiers follow the few clocks a batch changed without visiting the others.
 * A clock is listed while its `changedIn` equals `look`; taking the changes in starts a new look,
 * so no clock needs to be visited to be unlisted. Nothing is listed while the frontiers pass over
 * every source instead (`listing` false): then a change costs its caller one test.
 *
 * @example
 * const changes = new ClockChanges<SourceClock>()
 * changes.listing = true
 * changes.note(clock)
 * changes.note(clock)
 * changes.size // 1
 */
export class ClockChanges<Clock extends ListedClock> {
  /** True while the frontiers follow the changed clocks; false while they pass over every one. */
  listing = false
  /** Starts at 0, bumped by `clear`: a clock whose `changedIn` is not this one changed before (or never). */
  look = 0
  /** How many clocks are listed (the first `size` of `clocks`). */
  size = 0
  /** The listed clocks; entries past `size` are left over from earlier looks. */
  readonly clocks: Clock[] = []

  /** Lists `clock`, unless it is listed already or nothing is listed. */
  note(clock: Clock): void {
    if (!this.listing || clock.changedIn === this.look) return
    clock.changedIn = this.look
    this.clocks[this.size++] = clock
  }

  /** Unlists every clock (their changes taken in, or a pass over every clock due). */
  clear(): void {
    this.look++
    this.size = 0
  }
}
