/**
 * A dashboard's side of the relay topology: every device writes its own room, and the relay
 * lists the rooms of a fleet in a directory room (`<fleet>/_directory`: a Y.Map `rooms`, room
 * name → [firstSeenMs], written by the relay only). The follower opens the directory and, for
 * every room listed now or later, a doc bound read-only to the engine and joined on the same
 * socket. All of those docs report into the engine's one sync status (engineSyncStatus.ts).
 */
import type { ReplicaPort, SyncStatus, TickTimers } from '@tidemark/engine'
import { assertKnownOptions, GLOBAL_TICK_TIMERS } from '@tidemark/engine/adapter'
import * as Y from 'yjs'
import { bindDoc } from '../binding/bindDoc.ts'
import type { BindDocOptions } from '../binding/bindDocOptions.ts'
import type { DocBinding } from '../binding/docReplication.ts'
import { engineSyncStatus } from '../binding/engineSyncStatus.ts'
import { syncStatusTracker } from '../transport/syncStatusTracker.ts'
import { RefillGate, type RefillReport } from './refillGate.ts'
import type { Relay, RelayRoomHandle } from './relayApi.ts'

/**
 * The name of the relay's directory map in a directory room's doc: room name → [firstSeenMs].
 *
 * @example
 * const listed = directoryDoc.getMap(DIRECTORY_ROOMS) // Y.Map of a doc joined to 'fleet-a/_directory'
 * listed.get('fleet-a/d07') // [1764650000000]: first seen then
 */
export const DIRECTORY_ROOMS = 'rooms'

/**
 * Options of `followRooms`: `directory` is required.
 *
 * @example
 * followRooms(engine, relay, { directory: 'fleet-a/_directory', bind: { onError: (e) => console.warn(e.message) } })
 */
export interface FollowRoomsOptions {
  /** The directory room, e.g. `fleet-a/_directory`. */
  readonly directory: string
  /** Options of every room's binding (`readOnly` is always true). */
  readonly bind?: Omit<BindDocOptions, 'readOnly'>
  /** How the engine refills (see `followRooms`); `false`: every room's state merges as it lands. */
  readonly refill?: false | RefillOptions
}

/**
 * The `refill` option of `followRooms`: every member optional.
 *
 * @example
 * followRooms(engine, relay, { directory: 'fleet-a/_directory', refill: { boundMs: 20_000 } })
 */
export interface RefillOptions {
  /** The longest wait for a listed room to sync, in ms from the listing (default `REFILL_BOUND_MS`, 10 s). */
  readonly boundMs?: number
  /** What measures `tookMs` in the report (default `Date.now`). */
  readonly now?: () => number
  /** What runs the bound (default the global timers): a wall clock that jumps does not move it. */
  readonly timers?: TickTimers
}

/**
 * A running follower: `rooms()` lists the rooms followed with their own sync status, `destroy`
 * leaves every room and unbinds every doc (the engine keeps what it merged).
 *
 * @example
 * const follower: RoomFollower = followRooms(engine, relay, { directory: 'fleet-a/_directory' })
 * for (const [room, status] of follower.rooms()) if (status.refusal !== null) console.warn(room, status.refusal)
 */
export interface RoomFollower {
  /** Every room followed, with its doc's sync status (the directory itself is not listed). */
  rooms(): ReadonlyMap<string, SyncStatus>
  /** Where the engine's refill stands; null with `refill: false`. */
  refill(): RefillReport | null
  /** Leaves the directory and every room, unbinds their docs. */
  destroy(): void
}

interface Followed {
  readonly doc: Y.Doc
  readonly binding: DocBinding
  readonly handle: RelayRoomHandle
  /** Stops telling the refill of this room's status. */
  readonly unwatch: () => void
}

/**
 * Follows a fleet through its relay directory: each room listed (now and later) gets a `Y.Doc`
 * bound read-only to `engine` and joined on `relay`; a room that leaves the directory is left.
 * `engine.syncStatus()` folds the directory's and every room's status: `connected` once all of
 * them are in sync, `refusal` the first refusal (the directory's, then the rooms' in the order
 * they were listed); `rooms()` has each room's own. Closing the engine destroys the follower.
 *
 * The engine refills in one merge: nothing reaches it until every room the directory listed
 * synced once (or was refused), at most `refill.boundMs` after the listing, then all of it goes
 * in together, and later updates pass straight through. Merged room by room, the first rooms
 * would move a fresh engine's frontiers alone and fire windows that the other rooms then change
 * (finality violations). `refill()` says where it stands.
 *
 * @example
 * const relay = connectRelay({ url: 'wss://relay.example.com', token: dashboardToken })
 * const engine = createEngine({ windows: tumbling(60_000) })
 * const follower = followRooms(engine, relay, { directory: 'fleet-a/_directory' })
 * // later: follower.destroy(), relay.destroy()
 */
export function followRooms(engine: { readonly replica: ReplicaPort }, relay: Relay, options: FollowRoomsOptions): RoomFollower {
  const fail = (message: string): never => {
    throw new TypeError(`followRooms: ${message}`)
  }
  if (typeof engine?.replica !== 'object') fail('engine must be an engine (createEngine or openEngine)')
  if (typeof relay?.join !== 'function') fail('relay must come from connectRelay')
  if (typeof options !== 'object' || options === null) fail('needs options { directory }')
  assertKnownOptions('followRooms', options, ['directory', 'bind', 'refill'])
  const { directory, bind = {}, refill = {} } = options
  if (typeof directory !== 'string' || directory === '') fail(`directory must be a room name, got ${directory}`)
  if (typeof bind !== 'object' || bind === null || 'readOnly' in bind) fail('bind must be bindDoc options without readOnly')
  if (refill === false) return new DirectoryFollower(engine.replica, relay, directory, bind, null)
  if (typeof refill !== 'object' || refill === null) fail(`refill must be false or { boundMs?, now?, timers? }, got ${String(refill)}`)
  assertKnownOptions('followRooms refill', refill, ['boundMs', 'now', 'timers'])
  const { boundMs, now = Date.now, timers = GLOBAL_TICK_TIMERS } = refill
  if (boundMs !== undefined && !(typeof boundMs === 'number' && boundMs >= 0)) fail(`refill.boundMs must be a number of ms >= 0, got ${String(boundMs)}`)
  if (typeof now !== 'function') fail('refill.now must be a function returning ms')
  if (typeof timers?.setTimeout !== 'function' || typeof timers.clearTimeout !== 'function') fail('refill.timers must have setTimeout and clearTimeout')
  const gate = new RefillGate(engine.replica, { now, timers, ...(boundMs === undefined ? {} : { boundMs }) })
  return new DirectoryFollower(engine.replica, relay, directory, bind, gate)
}

class DirectoryFollower implements RoomFollower {
  readonly #engine: { readonly replica: ReplicaPort }
  readonly #relay: Relay
  readonly #bind: Omit<BindDocOptions, 'readOnly'>
  readonly #name: string
  readonly #directory = new Y.Doc()
  readonly #rooms: Y.Map<unknown>
  readonly #followed = new Map<string, Followed>()
  readonly #cleanups: (() => void)[] = []
  readonly #gate: RefillGate | null
  #destroyed = false

  constructor(engine: ReplicaPort, relay: Relay, directory: string, bind: Omit<BindDocOptions, 'readOnly'>, gate: RefillGate | null) {
    // The rooms' documents merge through the gate; their sync status still folds into the engine's (foldStatusInto).
    const port = gate?.port ?? engine
    this.#gate = gate
    this.#engine = { replica: port }
    this.#relay = relay
    this.#bind = bind
    this.#name = directory
    this.#rooms = this.#directory.getMap(DIRECTORY_ROOMS)
    // The directory's status first: a dashboard that may not read it shows that refusal.
    const share = engineSyncStatus(port).share(false)
    // On the rooms' clock (`bind.now`): the engine's status folds the directory's with theirs.
    const tracker = syncStatusTracker(this.#directory, bind.now === undefined ? {} : { now: bind.now })
    this.#cleanups.push(
      tracker.subscribe((status) => {
        share.report(status, 0)
        gate?.check()
      }),
    )
    this.#cleanups.push(() => share.leave())
    this.#cleanups.push(() => tracker.destroy())
    share.report(tracker.status(), 0)
    this.#rooms.observe(this.#onDirectory)
    this.#cleanups.push(() => this.#rooms.unobserve(this.#onDirectory))
    const handle = relay.join(this.#directory, directory)
    this.#cleanups.push(() => handle.destroy())
    this.#cleanups.push(port.onClose(() => this.destroy()))
    if (gate !== null) {
      this.#cleanups.push(() => gate.destroy())
      gate.listen(
        () => this.rooms(),
        () => tracker.status().state === 'connected',
      )
    }
  }

  refill(): RefillReport | null {
    if (this.#gate === null) return null
    this.#gate.check()
    return this.#gate.report()
  }

  rooms(): ReadonlyMap<string, SyncStatus> {
    const out = new Map<string, SyncStatus>()
    for (const [room, followed] of this.#followed) out.set(room, syncStatusTracker(followed.doc).status())
    return out
  }

  destroy(): void {
    if (this.#destroyed) return
    this.#destroyed = true
    for (const room of [...this.#followed.keys()]) this.#unfollow(room)
    for (const cleanup of this.#cleanups.splice(0).reverse()) cleanup()
    this.#directory.destroy()
  }

  readonly #onDirectory = (event: Y.YMapEvent<unknown>): void => {
    if (this.#destroyed) return
    for (const [room, change] of event.changes.keys) {
      if (change.action === 'delete') this.#unfollow(room)
      else if (change.action === 'add') this.#follow(room)
    }
    // The listing starts the refill's bound, and a room that left may have been the last one waited for.
    this.#gate?.check()
  }

  #follow(room: string): void {
    if (this.#followed.has(room) || room.length === 0 || room === this.#name) return
    const doc = new Y.Doc()
    const binding = bindDoc(this.#engine, doc, { ...this.#bind, readOnly: true })
    let handle: RelayRoomHandle
    try {
      handle = this.#relay.join(doc, room)
    } catch (error) {
      // The application joined this room on the same relay itself: its doc already carries the room.
      binding.destroy()
      const failure = new Error(`followRooms: ${room} not followed: ${error}`)
      this.#engine.replica.reportError(failure)
      ;(this.#bind.onError ?? console.error)(failure)
      return
    }
    // A room turns `connected` right after its sync step 2 was merged (held by the refill): the last one opens it.
    const unwatch = this.#gate === null ? () => {} : syncStatusTracker(doc).subscribe(() => this.#gate?.check())
    this.#followed.set(room, { doc, binding, handle, unwatch })
  }

  #unfollow(room: string): void {
    const followed = this.#followed.get(room)
    if (followed === undefined) return
    this.#followed.delete(room)
    followed.unwatch()
    followed.handle.destroy()
    followed.binding.destroy()
    syncStatusTracker(followed.doc).destroy()
    followed.doc.destroy()
  }
}
