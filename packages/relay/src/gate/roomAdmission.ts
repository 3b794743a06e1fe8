/**
 * Whether a room connection may open, as far as the relay's rooms go: its token's subject holds
 * at most `maxRoomsPerSubject` rooms open on this relay (`SubjectRooms`), and the relay loads at
 * most `maxRooms` (one more unloads the longest-idle room, or is refused).
 *
 * The subject's bound is checked first: a subject at its bound is refused without unloading
 * anyone's idle room for it. What a connection holds is let go when it closes (`closed`), and
 * when its room fails to open after it was admitted (its load failed, or Hocuspocus did not go
 * on to create it): no connection, and so no close, comes of those. A room with an established
 * connection is not idle (`IdleRooms`).
 */
import type { Hocuspocus } from '@hocuspocus/server'
import { Refusal } from '../protocol/refusal.ts'
import type { IdleRooms } from '../rooms/idleRooms.ts'
import { SubjectRooms } from '../rooms/subjectRooms.ts'
import type { RelayContext } from './connectionGate.ts'

/**
 * Admission of room connections against the relay's room limits.
 *
 * @example
 * const admission = new RoomAdmission({ maxRooms: 10_000, maxRoomsPerSubject: 2_500 }, idle)
 * admission.attach(hocuspocus)
 * const refusal = await admission.admit(grant.subject, documentName, gate)
 * if (refusal !== null) throw new OpenRefused(refusal)
 */
export class RoomAdmission {
  readonly #maxRooms: number
  readonly #idle: IdleRooms
  readonly #subjects: SubjectRooms
  /** Holders whose room Hocuspocus went on to create (or load) after their admission. */
  readonly #creating = new WeakSet<object>()
  #instance: Hocuspocus | undefined

  constructor(limits: { readonly maxRooms: number; readonly maxRoomsPerSubject: number }, idle: IdleRooms) {
    this.#maxRooms = limits.maxRooms
    this.#idle = idle
    this.#subjects = new SubjectRooms(limits.maxRoomsPerSubject)
  }

  /**
   * The Hocuspocus instance whose rooms these are. Its `createDocument` (which a connection
   * calls once authenticated, to load its room or join the room's load) is wrapped to follow each
   * admitted connection's open: one whose room fails to load lets its hold go, as no connection,
   * and so no close, will ever come of it.
   *
   * @example
   * admission.attach(hocuspocus)
   */
  attach(instance: Hocuspocus): void {
    this.#instance = instance
    const createDocument = instance.createDocument.bind(instance)
    instance.createDocument = async (...args: Parameters<Hocuspocus['createDocument']>) => {
      const holder = (args[4] as RelayContext | undefined)?.tidemark?.gate
      if (holder !== undefined) this.#creating.add(holder)
      try {
        return await createDocument(...args)
      } catch (error) {
        if (holder !== undefined) this.#subjects.release(holder)
        throw error
      }
    }
  }

  /** Rooms held open by the subject that holds the most. */
  get mostHeldBySubject(): number {
    return this.#subjects.most
  }

  /**
   * Admits `holder` (a room connection being opened) of `subject` to `room`, or says why not:
   * `subject-room-limit` when the subject holds `maxRoomsPerSubject` other rooms, `too-many-rooms`
   * when the room is not loaded and the relay has as many loaded as it may, none of them idle.
   * Once admitted, the holder holds the room for its subject until `closed(holder)`, or until its
   * room fails to load. Hocuspocus creates the room in the microtasks after `onAuthenticate`
   * resolves; a holder whose room it has not gone on to create by the next macrotask (a later
   * hook refused it) lets its hold go then.
   *
   * @example
   * const refusal = await admission.admit('ops', 'fleet-a/d07', gate)
   */
  async admit(subject: string, room: string, holder: object): Promise<Refusal | null> {
    const instance = this.#instance
    if (instance === undefined) throw new Error('RoomAdmission: attach a Hocuspocus instance before admitting connections')
    if (!this.#subjects.take(subject, room, holder)) {
      return new Refusal('subject-room-limit', `${this.#subjects.max} rooms are open for subject ${subject}`)
    }
    if (!instance.documents.has(room) && !instance.loadingDocuments.has(room)) {
      if (instance.documents.size + instance.loadingDocuments.size >= this.#maxRooms && !(await this.#idle.evictOne())) {
        this.#subjects.release(holder)
        return new Refusal('too-many-rooms', `${this.#maxRooms} rooms are loaded`)
      }
    }
    setImmediate(() => {
      if (!this.#creating.has(holder)) this.#subjects.release(holder)
    })
    return null
  }

  /**
   * A connection to `room` is established: the room is in use, not idle.
   *
   * @example
   * admission.opened('fleet-a/d07')
   */
  opened(room: string): void {
    this.#idle.touch(room)
  }

  /**
   * `holder`'s connection closed: its subject no longer holds the room through it. Safe to call
   * more than once.
   *
   * @example
   * admission.closed(gate)
   */
  closed(holder: object): void {
    this.#subjects.release(holder)
  }
}
