/**
 * The rooms each token subject holds open on this relay, bounded per subject, so that one token
 * whose room pattern admits names nobody wrote (`fleet-a/*`) cannot load every room the relay may
 * load and starve the other fleets.
 *
 * A subject holds a room from the moment one of its connections is admitted to it (before the
 * room loads: the load is what costs) until the last of its connections there closes or fails
 * to open. A room counts once per subject however many of its connections hold it: a dashboard
 * in two tabs, or a client back on a new socket before the relay saw its old one close, holds
 * the same rooms and is not refused for them.
 */

/**
 * Per-subject room holds of one relay.
 *
 * @example
 * const rooms = new SubjectRooms(2)
 * rooms.take('ops', 'fleet-a/d1', gateA) // true
 * rooms.take('ops', 'fleet-a/d1', gateB) // true: the same room again
 * rooms.take('ops', 'fleet-a/d2', gateC) // true
 * rooms.take('ops', 'fleet-a/d3', gateD) // false: 'ops' holds 2 rooms
 * rooms.release(gateC)
 * rooms.take('ops', 'fleet-a/d3', gateD) // true
 */
export class SubjectRooms {
  readonly #max: number
  /** By subject: its rooms, each with the holders (room connections) that hold it. */
  readonly #bySubject = new Map<string, Map<string, Set<object>>>()
  /** By holder: what it holds. */
  readonly #held = new Map<object, { readonly subject: string; readonly room: string }>()

  /** `max`: rooms one subject may hold at once (`maxRoomsPerSubject`). */
  constructor(max: number) {
    this.#max = max
  }

  /** Rooms one subject may hold at once. */
  get max(): number {
    return this.#max
  }

  /**
   * Makes `holder` hold `room` for `subject`. False, holding nothing, when the subject does not
   * hold `room` yet and already holds `max` rooms. A holder holds one room; taking again with a
   * holder that holds one is a programming error.
   *
   * @example
   * if (!rooms.take(grant.subject, documentName, gate)) throw new OpenRefused(new Refusal('subject-room-limit'))
   */
  take(subject: string, room: string, holder: object): boolean {
    if (this.#held.has(holder)) throw new Error(`SubjectRooms.take: this holder already holds ${this.#held.get(holder)?.room}`)
    let rooms = this.#bySubject.get(subject)
    const holders = rooms?.get(room)
    if (holders === undefined && (rooms?.size ?? 0) >= this.#max) return false
    if (rooms === undefined) {
      rooms = new Map()
      this.#bySubject.set(subject, rooms)
    }
    if (holders === undefined) rooms.set(room, new Set([holder]))
    else holders.add(holder)
    this.#held.set(holder, { subject, room })
    return true
  }

  /**
   * Lets go of what `holder` holds (its connection closed, or its room failed to open). The
   * subject's room is free once no holder of the subject holds it. Releasing twice, or a holder
   * that holds nothing, does nothing.
   *
   * @example
   * rooms.release(gate)
   */
  release(holder: object): void {
    const held = this.#held.get(holder)
    if (held === undefined) return
    this.#held.delete(holder)
    const rooms = this.#bySubject.get(held.subject) as Map<string, Set<object>>
    const holders = rooms.get(held.room) as Set<object>
    holders.delete(holder)
    if (holders.size > 0) return
    rooms.delete(held.room)
    if (rooms.size === 0) this.#bySubject.delete(held.subject)
  }

  /**
   * Rooms `subject` holds now.
   *
   * @example
   * rooms.heldBy('ops') // 2
   */
  heldBy(subject: string): number {
    return this.#bySubject.get(subject)?.size ?? 0
  }

  /**
   * Rooms held by the subject that holds the most (0 when none holds any): how close the
   * largest holder is to `max` (`tidemark_relay_subject_rooms_most`).
   *
   * @example
   * rooms.most // 2
   */
  get most(): number {
    let most = 0
    for (const rooms of this.#bySubject.values()) most = Math.max(most, rooms.size)
    return most
  }
}
