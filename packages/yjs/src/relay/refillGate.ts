import { foldStatusInto } from '../binding/engineSyncStatus.ts'
import { type CellGroup, type ClockEntry, groupCellEntries, type MergeReport, type ReplicaPort, type SyncStatus, type TickTimers } from '@tidemark/engine'

/**
 * How long `followRooms` holds a refill by default: how long a fresh engine waits for the rooms
 * it follows, on its `timers`, counted from the moment the relay's directory listed them (from
 * the first room to sync, when none had by then: opening with nothing held would spare
 * nothing). A refill normally takes well under a second; 10 s covers a room the relay could not
 * open at once (the client joins it again after a jittered delay of up to 5 s) and a busy relay
 * loading its rooms from its store. Waiting
 * longer would not spare anything: the rooms that did sync hold state up to the fleet's present,
 * so a room that lands later changes the same final windows whenever it lands, while the
 * dashboard showed nothing in the meantime.
 */
export const REFILL_BOUND_MS = 10_000

/**
 * Where a follower's refill stands (`RoomFollower.refill()`): `waiting` (nothing merged yet),
 * `merged` (every room it follows synced, and their state went to the engine together),
 * `timedOut` (the bound ran out: the rooms that synced went to the engine together, the
 * `missing` ones merge when they land).
 */
export interface RefillReport {
  readonly state: 'waiting' | 'merged' | 'timedOut'
  /** Rooms followed (when the gate opened; now, while waiting). */
  readonly rooms: number
  /** Of those, the rooms that had synced or been refused. */
  readonly synced: number
  /** The rooms that had not synced when the bound ran out. */
  readonly missing: readonly string[]
  /** From the directory's listing to the gate opening, in ms of `now`; null while waiting or when nothing was listed. */
  readonly tookMs: number | null
}

/** What a `RefillGate` reads and arms. */
export interface RefillGateOptions {
  /** For `tookMs` only (not an engine clock that may stand still while rooms are out of sync). */
  readonly now: () => number
  /** The bound runs on these alone: a host clock that jumps neither keeps the gate shut nor opens it early. */
  readonly timers: TickTimers
  /** Default `REFILL_BOUND_MS`. */
  readonly boundMs?: number
}

const HELD: MergeReport = { applied: 0, stale: 0, expired: 0, finalityViolations: 0, conflicts: 0 }

/**
 * Keeps a fresh dashboard engine from judging windows on part of the fleet. A merge is judged
 * against the frontiers as they stood before it, and moves them after: merged one room at a
 * time, the first rooms to land would move the watermark (and the proof frontier, which counts
 * only the sources the engine knows: all of them finished, it is Infinity) alone, their windows
 * would fire and turn final, and the other rooms' cells would then count as finality violations.
 *
 * So the documents are bound to `port` rather than to the engine's own replica port (their sync
 * status still folds into the engine's, `foldStatusInto`): every merge is held (nothing reaches
 * the engine) until the relay's directory listed the rooms and every one of them synced once
 * (or was refused), then everything held goes to the engine in one merge, judged against an engine that knows no source yet, and from then on merges pass
 * straight through (a room listed later, a device joining later, updates). If some room has not
 * synced within `boundMs` of the listing, the gate opens anyway with what it holds (`timedOut`,
 * naming the missing rooms); if no room had synced by then (the relay restarting under the
 * refill), it holds nothing, and the bound runs again from the first room to sync, so the rooms
 * that land after it still go in together. An empty directory opens it at once. Every other
 * member of the port is the engine's own.
 *
 * `followRooms` puts one in front of its engine unless told not to (`refill: false`).
 *
 * @example
 * const gate = new RefillGate(engine.replica, { now: Date.now, timers: { setTimeout, clearTimeout } })
 * gate.listen(() => roomsFollowed, () => directorySynced) // each room bound to gate.port
 * gate.report() // { state: 'waiting', rooms: 12, synced: 7, missing: [], tookMs: null }
 */
export class RefillGate {
  readonly port: ReplicaPort
  readonly #target: ReplicaPort
  readonly #now: () => number
  readonly #timers: TickTimers
  readonly #boundMs: number
  #rooms: () => ReadonlyMap<string, SyncStatus> = () => new Map()
  #groups: CellGroup[] = []
  #clocks: ClockEntry[] = []
  /** Rooms that synced once (or were refused). */
  readonly #synced = new Set<string>()
  #state: RefillReport['state'] = 'waiting'
  #roomCount = 0
  #missing: readonly string[] = []
  #listedAt: number | null = null
  #tookMs: number | null = null
  #timer: unknown = null
  #listed: () => boolean = () => false
  /** The bound ran out before any room synced: it runs again from the first one that does. */
  #rerun = false

  constructor(target: ReplicaPort, options: RefillGateOptions) {
    this.#target = target
    this.#now = options.now
    this.#timers = options.timers
    this.#boundMs = options.boundMs ?? REFILL_BOUND_MS
    this.port = {
      replicaId: target.replicaId,
      configuration: target.configuration,
      onLocalWrite: (listener) => target.onLocalWrite(listener),
      mergeRemote: (cells, clocks) => (this.#state === 'waiting' ? this.#hold(groupCellEntries(cells), clocks) : target.mergeRemote(cells, clocks)),
      mergeRemoteGroups: (groups, clocks) => (this.#state === 'waiting' ? this.#hold(groups, clocks) : target.mergeRemoteGroups(groups, clocks)),
      exportState: (options) => target.exportState(options),
      exportDurableState: (deliver, options) => target.exportDurableState(deliver, options),
      reportAnomaly: (reason, detail) => target.reportAnomaly(reason, detail),
      reportError: (error) => target.reportError(error),
      onClose: (listener) => target.onClose(listener),
      setSyncStatus: (status, docBytes) => target.setSyncStatus(status, docBytes),
    }
    foldStatusInto(this.port, target)
  }

  /**
   * `rooms`: the rooms followed with their sync status (`RoomFollower.rooms`); `listed`: whether
   * the directory synced, so that no room means an empty directory rather than one not read yet.
   * Call `check()` whenever either changes.
   */
  listen(rooms: () => ReadonlyMap<string, SyncStatus>, listed: () => boolean): void {
    this.#rooms = rooms
    this.#listed = listed
    this.check()
  }

  /** Opens the gate if every room listed synced once, or the bound ran out; called on every status change and by its timer. */
  check(): void {
    this.#decide(false)
  }

  #decide(ranOut: boolean): void {
    if (this.#state !== 'waiting') return
    const rooms = this.#rooms()
    const now = this.#now()
    for (const [room, status] of rooms) if (status.state === 'connected' || status.lastSync !== null || status.refusal !== null) this.#synced.add(room)
    if (rooms.size === 0) {
      // The directory synced and lists no room (or none any more): nothing to wait for; devices that start later join as they land.
      if (this.#listed() || this.#listedAt !== null) this.#open('merged', rooms)
      return
    }
    this.#listedAt ??= now
    if ([...rooms.keys()].every((room) => this.#synced.has(room))) {
      this.#open('merged', rooms)
      return
    }
    // Something held, or a room that synced empty (a refused one holds nothing).
    const landed = this.#groups.length > 0 || this.#clocks.length > 0 || [...rooms.values()].some((status) => status.state === 'connected' || status.lastSync !== null)
    if (ranOut) {
      if (landed) {
        this.#open('timedOut', rooms)
        return
      }
      this.#rerun = true
    }
    // Armed once the rooms are listed; when it ran out with nothing landed, again once a room lands.
    if (this.#timer === null && (!this.#rerun || landed)) {
      this.#timer = this.#timers.setTimeout(() => {
        this.#timer = null
        this.#decide(true)
      }, this.#boundMs)
    }
  }

  report(): RefillReport {
    if (this.#state === 'waiting') {
      const rooms = this.#rooms()
      return { state: 'waiting', rooms: rooms.size, synced: [...rooms.keys()].filter((room) => this.#synced.has(room)).length, missing: [], tookMs: null }
    }
    return { state: this.#state, rooms: this.#roomCount, synced: this.#roomCount - this.#missing.length, missing: this.#missing, tookMs: this.#tookMs }
  }

  /** Stops the timer and drops what is held (the links are leaving). */
  destroy(): void {
    if (this.#timer !== null) this.#timers.clearTimeout(this.#timer)
    this.#timer = null
    this.#groups = []
    this.#clocks = []
  }

  #hold(groups: readonly CellGroup[], clocks: readonly ClockEntry[]): MergeReport {
    // Pushed one by one: spreading a large room's groups could exceed the argument limit.
    for (const group of groups) this.#groups.push(group)
    for (const clock of clocks) this.#clocks.push(clock)
    return HELD
  }

  #open(state: 'merged' | 'timedOut', rooms: ReadonlyMap<string, SyncStatus>): void {
    this.#state = state
    this.#roomCount = rooms.size
    this.#missing = [...rooms.keys()].filter((room) => !this.#synced.has(room))
    this.#tookMs = this.#listedAt === null ? null : Math.max(0, this.#now() - this.#listedAt)
    if (this.#timer !== null) this.#timers.clearTimeout(this.#timer)
    this.#timer = null
    const groups = this.#groups
    const clocks = this.#clocks
    this.#groups = []
    this.#clocks = []
    // One operation: judged against an engine that knows no source yet, so no window fires before all of it is in.
    if (groups.length > 0 || clocks.length > 0) this.#target.mergeRemoteGroups(groups, clocks)
  }
}
