/**
 * The directory room of each fleet, `<fleet>/_directory`: a Y.Map named `rooms`, room name →
 * `[firstSeenMs]`. The relay alone writes it (clients' connections to it are read-only),
 * through a server-side direct connection, when a device room is first written or is loaded
 * with content. Dashboards open it read-only and follow it to find the fleet's rooms.
 */
import type { Hocuspocus } from '@hocuspocus/server'
import { describeError, type RelayLog } from '../relayLog.ts'
import type { IdleRooms } from '../rooms/idleRooms.ts'
import { directoryRoom } from '../rooms/roomName.ts'

/**
 * Name of the directory's root map.
 *
 * @example
 * directoryDoc.getMap(DIRECTORY_MAP).keys() // every room of the fleet
 */
export const DIRECTORY_MAP = 'rooms'

/**
 * The transaction origin of the relay's own directory writes (stored like clients' updates).
 *
 * @example
 * if (transactionOrigin === DIRECTORY_ORIGIN) console.log('the relay listed a room')
 */
export const DIRECTORY_ORIGIN: object = Object.freeze({ tidemark: 'directory' })

/** Hocuspocus' DirectConnection class (its package exports only a narrower interface of it). */
type DirectConnection = Awaited<ReturnType<Hocuspocus['openDirectConnection']>>

/**
 * Lists device rooms in their fleet's directory.
 *
 * @example
 * const directory = new FleetDirectory(hocuspocus, Date.now, log)
 * directory.list('fleet-a/d07', 'fleet-a')
 */
export class FleetDirectory {
  readonly #instance: Hocuspocus
  readonly #now: () => number
  readonly #log: RelayLog
  /** Loaded rooms known to be listed (forgotten when they unload: at most the rooms loaded). */
  readonly #listed = new Set<string>()
  /** Rooms to list, by fleet. */
  readonly #queued = new Map<string, Set<string>>()
  readonly #running = new Map<string, Promise<void>>()
  /** The relay's room limit, which a directory the relay loads counts against like any room. */
  readonly #rooms: { readonly maxRooms: number; readonly idle: IdleRooms } | undefined
  #closed = false

  constructor(instance: Hocuspocus, now: () => number, log: RelayLog, rooms?: { readonly maxRooms: number; readonly idle: IdleRooms }) {
    this.#instance = instance
    this.#now = now
    this.#log = log
    this.#rooms = rooms
  }

  /**
   * Makes room for `name` if it is not loaded and the relay holds `maxRooms` rooms: unloads the
   * longest-idle room, or throws (the listing is given up, and tried again at the room's next write).
   */
  async #makeRoom(name: string): Promise<void> {
    const instance = this.#instance
    const rooms = this.#rooms
    if (rooms === undefined || instance.documents.has(name) || instance.loadingDocuments.has(name)) return
    if (instance.documents.size + instance.loadingDocuments.size < rooms.maxRooms) return
    if (!(await rooms.idle.evictOne())) throw new Error(`${rooms.maxRooms} rooms are loaded, none of them idle`)
  }

  /** Makes sure `room` is listed in its fleet's directory (in the background; failures are logged). */
  list(room: string, fleet: string): void {
    if (this.#listed.has(room) || this.#closed) return
    let queued = this.#queued.get(fleet)
    if (queued === undefined) {
      queued = new Set()
      this.#queued.set(fleet, queued)
    }
    queued.add(room)
    if (!this.#running.has(fleet)) {
      const run = this.#drain(fleet).finally(() => this.#running.delete(fleet))
      this.#running.set(fleet, run)
    }
  }

  /** The room unloaded: checked again at its next load or write. */
  forget(room: string): void {
    this.#listed.delete(room)
  }

  /** Rooms remembered as listed. */
  get listedRooms(): number {
    return this.#listed.size
  }

  /** Waits for the listings under way; lists nothing more. */
  async close(): Promise<void> {
    this.#closed = true
    await Promise.all(this.#running.values())
  }

  async #drain(fleet: string): Promise<void> {
    for (;;) {
      const queued = this.#queued.get(fleet)
      if (queued === undefined || queued.size === 0 || this.#closed) {
        this.#queued.delete(fleet)
        return
      }
      const rooms = [...queued]
      queued.clear()
      let connection: DirectConnection | undefined
      try {
        await this.#makeRoom(directoryRoom(fleet))
        connection = await this.#instance.openDirectConnection(directoryRoom(fleet), { tidemark: 'directory' })
        const document = connection.document
        if (document === null) continue
        const map = document.getMap<readonly [number]>(DIRECTORY_MAP)
        const missing = rooms.filter((room) => !map.has(room))
        if (missing.length > 0) {
          const seen = this.#now()
          await connection.transact((doc) => {
            doc.transact(() => {
              for (const room of missing) map.set(room, [seen])
            }, DIRECTORY_ORIGIN)
          })
        }
        // Only rooms still loaded: an unloaded one is forgotten, and must not come back here.
        for (const room of rooms) if (this.#instance.documents.has(room)) this.#listed.add(room)
      } catch (error) {
        this.#log('warn', `listing ${rooms.length} rooms in ${directoryRoom(fleet)} failed (listed again at their next write or load): ${describeError(error)}`)
      } finally {
        await connection?.disconnect().catch((error: unknown) => this.#log('warn', `closing ${directoryRoom(fleet)} failed: ${describeError(error)}`))
      }
    }
  }
}
