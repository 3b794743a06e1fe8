/**
 * Whether the relay's socket still carries anything. A connection can die without a close: a
 * laptop asleep, a NAT that forgot the mapping, a network path lost while the socket was idle.
 * The browser keeps such a socket open until the OS gives up on it (minutes, sometimes never), the
 * relay's pings are answered by the browser itself and never reach the page, and the client
 * would stay `connected`, its updates unacknowledged, the room's updates not arriving.
 *
 * So the client listens for silence. Every half of `silenceMs` a check asks whether anything came
 * since the last one. Once nothing did, it probes: a sync step 1 of a room in sync, which every
 * Hocuspocus server answers. Nothing again by the next check, and the socket is taken for dead.
 * A socket is thus dropped after between `silenceMs` and 1.5 × `silenceMs` of silence, and only
 * after a probe had at least half of `silenceMs` to be answered, however late a throttled timer
 * (a background tab) runs the checks. A socket with traffic costs one flag per message and one
 * timer per half period; a quiet one, one probe per half period.
 */

/** What the liveness check needs from its relay client. */
export interface LivenessLink {
  schedule(run: () => void, ms: number): unknown
  cancel(handle: unknown): void
  /** Sends a message the relay must answer; false when nothing can be asked now (no room in sync). */
  probe(): boolean
  /** The socket stayed silent through a whole check after a probe. */
  silent(): void
}

/**
 * The liveness check of one relay client's socket: `start` when a socket opens, `heard` on
 * every message it brings, `stop` when it closes.
 *
 * @example
 * const liveness = new SocketLiveness(30_000, { schedule, cancel, probe: () => sendStep1(), silent: () => reconnect() })
 * socket.addEventListener('open', () => liveness.start())
 * socket.addEventListener('message', () => liveness.heard())
 */
export class SocketLiveness {
  readonly #halfMs: number
  readonly #link: LivenessLink
  #timer: unknown = null
  /** Something came since the last check. */
  #heard = false
  /** A probe went out at the last check, and nothing came since. */
  #probed = false

  /** `silenceMs`: Infinity turns the check off. */
  constructor(silenceMs: number, link: LivenessLink) {
    this.#halfMs = silenceMs / 2
    this.#link = link
  }

  /** A socket opened: silence is counted from now. */
  start(): void {
    this.stop()
    if (this.#halfMs === Number.POSITIVE_INFINITY) return
    this.#heard = false
    this.#probed = false
    this.#timer = this.#link.schedule(this.#check, this.#halfMs)
  }

  /** The socket brought a message. */
  heard(): void {
    this.#heard = true
  }

  /** The socket closed (or was dropped): nothing more to check. */
  stop(): void {
    if (this.#timer === null) return
    this.#link.cancel(this.#timer)
    this.#timer = null
  }

  readonly #check = (): void => {
    this.#timer = null
    if (this.#heard) {
      this.#heard = false
      this.#probed = false
    } else if (this.#probed) {
      // A probe had a whole half period, and not a byte came back.
      this.#link.silent()
      return
    } else {
      // Without a room to ask, nothing is concluded: rooms still opening wait for their relay.
      this.#probed = this.#link.probe()
    }
    this.#timer = this.#link.schedule(this.#check, this.#halfMs)
  }
}
