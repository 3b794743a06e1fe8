/**
 * The directory room of each fleet, `<fleet>/_directory`: a Y.Map named `rooms`, room name →
 * `[firstSeenMs]`. The relay alone writes it (clients' connections to it are read-only),
 * through a server-side direct connection, when a device room is first written or is loaded
 * with content. Dashboards open it read-only and follow it to find the fleet's rooms.
 *
 * A listing given up (at `maxRooms` with no room idle, its directory could not be loaded) is
 * remembered and tried again when a room unloads, as that frees what the directory needs: a
 * device that writes once and goes quiet would otherwise stay out of its directory until its
 * next write, and a dashboard following the directory would never see it.
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

/** Rooms remembered for a retry of their listing when the relay sets no `maxRooms`. */
const MAX_UNLISTED = 10_000

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
  /**
   * Rooms whose listing was given up, by fleet, the fleet given up longest ago first: listed
   * again, a fleet at a time, when a room unloads. At most `#maxUnlisted` rooms in all.
   */
  readonly #unlisted = new Map<string, Set<string>>()
  #unlistedRooms = 0
  readonly #maxUnlisted: number
  /** A room unloaded while listings were under way: the next given-up fleet is tried once they end. */
  #retryDue = false
  /** The relay's room limit, which a directory the relay loads counts against like any room. */
  readonly #rooms: { readonly maxRooms: number; readonly idle: IdleRooms } | undefined
  #closed = false

  constructor(instance: Hocuspocus, now: () => number, log: RelayLog, rooms?: { readonly maxRooms: number; readonly idle: IdleRooms }) {
    this.#instance = instance
    this.#now = now
    this.#log = log
    this.#rooms = rooms
    this.#maxUnlisted = rooms?.maxRooms ?? MAX_UNLISTED
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

  /**
   * Whether `room` is known to be listed (until it unloads): most changes come from rooms
   * already listed, and this answers without parsing the name.
   *
   * @example
   * if (!directory.isListed(room)) directory.list(room, fleetOf(room))
   */
  isListed(room: string): boolean {
    return this.#listed.has(room)
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
      const run = this.#drain(fleet).finally(() => {
        this.#running.delete(fleet)
        if (this.#retryDue && this.#running.size === 0) this.#retryUnlisted()
      })
      this.#running.set(fleet, run)
    }
  }

  /**
   * The room unloaded: checked again at its next load or write. Its place lets a given-up
   * listing load its directory: the fleet given up longest ago is listed again. A room whose load
   * failed (`unloaded` false) frees no such place: were it a directory whose load failed (the
   * store down), trying its listing again at once would fail again, over and over.
   */
  forget(room: string, unloaded = true): void {
    this.#listed.delete(room)
    if (unloaded) this.#retryUnlisted()
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

  /**
   * Lists the rooms of the fleet given up longest ago, once no listing is under way (a listing's
   * own unloading of an idle room, to load its directory, must not hand that place to another).
   */
  #retryUnlisted(): void {
    if (this.#closed) return
    if (this.#running.size > 0) {
      this.#retryDue = true
      return
    }
    this.#retryDue = false
    const next = this.#unlisted.entries().next()
    if (next.done === true) return
    const [fleet, rooms] = next.value
    this.#unlisted.delete(fleet)
    this.#unlistedRooms -= rooms.size
    for (const room of rooms) this.list(room, fleet)
  }

  /** Remembers rooms whose listing failed, their fleet last in line; returns how many fit. */
  #giveUp(fleet: string, rooms: readonly string[]): number {
    let waiting = this.#unlisted.get(fleet)
    // Last in line: re-inserted behind the fleets given up before it.
    this.#unlisted.delete(fleet)
    waiting ??= new Set()
    let kept = 0
    for (const room of rooms) {
      if (waiting.has(room)) kept++
      else if (this.#unlistedRooms < this.#maxUnlisted) {
        waiting.add(room)
        this.#unlistedRooms++
        kept++
      }
    }
    if (waiting.size > 0) this.#unlisted.set(fleet, waiting)
    return kept
  }

  /** Rooms now listed (at a later write, say) no longer wait for a retry. */
  #listedAfterAll(fleet: string, rooms: readonly string[]): void {
    const waiting = this.#unlisted.get(fleet)
    if (waiting === undefined) return
    for (const room of rooms) if (waiting.delete(room)) this.#unlistedRooms--
    if (waiting.size === 0) this.#unlisted.delete(fleet)
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
        this.#listedAfterAll(fleet, rooms)
      } catch (error) {
        const kept = this.#giveUp(fleet, rooms)
        const again = kept === rooms.length ? 'listed again when a room unloads, or at their next write or load' : `${rooms.length - kept} of them listed again only at their next write or load, past ${this.#maxUnlisted} rooms waiting`
        this.#log('warn', `listing ${rooms.length} rooms in ${directoryRoom(fleet)} failed (${again}): ${describeError(error)}`)
      } finally {
        await connection?.disconnect().catch((error: unknown) => this.#log('warn', `closing ${directoryRoom(fleet)} failed: ${describeError(error)}`))
      }
    }
  }
}
