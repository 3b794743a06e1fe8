/**
 * Whether the relay's socket still carries anything. A connection can die without a close: a
 * laptop asleep, a NAT that forgot the mapping, a network path lost while the socket was idle.
 * The browser keeps such a socket open until the OS gives up on it (minutes, sometimes never), the
 * relay's pings are answered by the browser itself and never reach the page, and the client
 * would stay `connected`, its updates unacknowledged, the room's updates not arriving.
 *
 * So the client listens for silence. Every half of `silenceMs` a check asks whether anything came
 * since the last one. Once nothing did, it makes sure the relay owes the socket an answer: it
 * probes with a sync step 1 of a room in sync, which every Hocuspocus server answers at once; with
 * no room in sync, a room opening has asked already (its Auth, then its step 1, which the relay
 * answers once it has loaded the room). Nothing again by the next check, and the socket is taken
 * for dead: a relay that accepts the socket and answers none of its rooms is left as a dead path
 * is. A socket is thus dropped after between `silenceMs` and 1.5 × `silenceMs` of silence, and
 * only after a question had at least half of `silenceMs` to be answered, however late a throttled
 * timer (a background tab) runs the checks. A room that sent nothing yet (its token still being
 * read) has asked nothing: a silent socket with no room that asked is not judged. A socket with
 * traffic costs one flag per message and one timer per half period; a quiet one, one probe per
 * half period.
 */

/** A room of the socket, as the liveness check asks it (a `RelayRoom`). */
export interface LivenessRoom {
  /** Opening: its Auth or its step 1 went out on this socket, and the relay owes it an answer. */
  readonly asking: boolean
  /** In sync: sends a step 1, which the relay answers at once; false (nothing sent) otherwise. */
  probe(): boolean
}

/** What the liveness check needs from its relay client. */
export interface LivenessLink {
  schedule(run: () => void, ms: number): unknown
  cancel(handle: unknown): void
  /** The rooms of the socket. */
  rooms(): Iterable<LivenessRoom>
  /** The socket stayed silent through a whole check after a question to the relay. */
  silent(): void
}

/**
 * The liveness check of one relay client's socket: `start` when a socket opens, `heard` on
 * every message it brings, `stop` when it closes.
 *
 * @example
 * const liveness = new SocketLiveness(30_000, { schedule, cancel, rooms: () => rooms.values(), silent: () => reconnect() })
 * socket.addEventListener('open', () => liveness.start())
 * socket.addEventListener('message', () => liveness.heard())
 */
export class SocketLiveness {
  readonly #halfMs: number
  readonly #link: LivenessLink
  #timer: unknown = null
  /** Something came since the last check. */
  #heard = false
  /** The relay owed the socket an answer at the last check (a probe, a room's Auth or step 1), and nothing came since. */
  #asked = false

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
    this.#asked = false
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
      this.#asked = false
    } else if (this.#asked) {
      // A question had a whole half period, and not a byte came back.
      this.#link.silent()
      return
    } else {
      this.#asked = this.#ask()
    }
    this.#timer = this.#link.schedule(this.#check, this.#halfMs)
  }

  /**
   * Makes sure the relay owes the socket an answer: a probe of a room in sync (answered at once,
   * so preferred), else the Auth or step 1 of a room opening. False when no room has asked
   * anything (their token still being read, or none joined): nothing is concluded then.
   */
  #ask(): boolean {
    const rooms = [...this.#link.rooms()]
    return rooms.some((room) => room.probe()) || rooms.some((room) => room.asking)
  }
}
