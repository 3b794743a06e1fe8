import { HearingTime } from './hearingTime.ts'

/**
 * The dashboard engine's processing-time clock: the platform's, except that it stands still
 * while the dashboard cannot hear the whole fleet (its relay link is down, or back and some
 * followed room has not synced yet, or a device live before it went down has not reconnected
 * yet within its reconnect bound: `RelayHearing`), and runs on from where it stopped once it can.
 *
 * The engine judges a source idle by processing time (`now() - lastSeen > idleTimeout`). A
 * dashboard whose own link is down hears no device, yet no device is silent: on the platform's
 * clock every one of them turned idle, and when the link came back the first room to sync moved
 * the watermark alone, past the whole outage, so windows fired without the others and turned
 * final before their rooms landed a moment later (finality violations). Idleness is only
 * evidence while the dashboard could have heard the device.
 *
 * @example
 * const clock = new HearingClock(Date.now)
 * const engine = createEngine({ ...options, now: clock.now })
 * clock.listen(() => links.hearsAll())
 */
export class HearingClock {
  readonly #real: () => number
  #hears: () => boolean = () => true
  readonly #time = new HearingTime()

  constructor(real: () => number) {
    this.#real = real
  }

  /** `hears`: whether the dashboard hears every followed room now; asked on every reading. */
  listen(hears: () => boolean): void {
    this.#hears = hears
  }

  /** The time now: the platform's minus the time it stood still (`HearingTime`). */
  now = (): number => {
    const real = this.#real()
    return this.#time.read(real, this.#hears())
  }
}
