import type { SyncStatus } from '@tidemark/engine'
import { HearingTime } from './hearingTime.ts'
import { DEVICE_RECONNECT_BOUND_MS } from './relayReconnect.ts'

/** The rooms the dashboard still waits to hear again after its link came back, and until when (host clock). */
export interface AwaitedRooms {
  readonly rooms: readonly string[]
  readonly until: number
}

/** `RelayHearing`'s options. */
export interface RelayHearingOptions {
  /** A room heard from within this long before the link went down had a live device (the engine's idle timeout). */
  readonly liveMs: number
  /** The longest wait for a live device after the link came back (default `DEVICE_RECONNECT_BOUND_MS`, 7 s). */
  readonly boundMs?: number
}

/**
 * Whether the dashboard hears every device room on the relay, as `HearingClock` asks it: a
 * device's silence is evidence only while the dashboard could have heard it and the device could
 * have spoken.
 *
 * - While some followed room (not refused) is not in sync, it does not: the dashboard's own link
 *   is down, or back and that room has not synced yet (or a room just listed is opening).
 * - After its link went down and came back (rooms that were in sync went out of it), it still
 *   does not until each device that was live then (heard from within `liveMs` before) has been
 *   heard again (its room brought something new while in sync: its backlog), or `boundMs`
 *   passed. The dashboard loses the relay when the relay restarts, and so does every device:
 *   each comes back after its own jittered reconnect, up to `RELAY_RECONNECT.capMs` (5 s) after
 *   the relay answers again, plus its handshake. Until then its silence is the outage's, not its
 *   own. A device heard again ends its wait at once; one that is not back within the bound is
 *   silent, and turns idle as usual from there. A device already silent before the link went
 *   down is not awaited. A device still awaited when the link goes down again is awaited for
 *   what was left of its wait once it is back: `boundMs` of the link up in all, so a flapping
 *   link does not hold a device that never comes back for good.
 *
 * Read it often (every reading of the clock, and `dashboardHost` polls): what it learns of each
 * room comes from comparing one reading with the previous one.
 *
 * @example
 * const hearing = new RelayHearing(() => follower.rooms(), Date.now, { liveMs: 3_000 })
 * clock.listen(() => hearing.hears())
 */
export class RelayHearing {
  readonly #rooms: () => ReadonlyMap<string, SyncStatus>
  readonly #now: () => number
  readonly #liveMs: number
  readonly #boundMs: number
  /** Each room at the last reading: its `lastSync`, and whether it was in sync. */
  readonly #seen = new Map<string, { readonly lastSync: number | null; readonly inSync: boolean }>()
  /**
   * When each room last brought something new while in sync (its device was heard), on the
   * hearing time (`#time`): the engine judges idleness on the clock that stands still while
   * this says it does not hear, so liveness is measured on that clock too.
   */
  readonly #heardAt = new Map<string, number>()
  /** This reading's own hearing time, kept as the dashboard's clock keeps its: it stops at the first reading that does not hear, and runs on from the first that does. */
  readonly #time = new HearingTime()
  /**
   * The link is down: the rooms whose devices were live when it went, each with how long it is
   * awaited once the link is back (`boundMs`, or what was left of a wait the loss interrupted).
   */
  #gap: Map<string, number> | null = null
  /** The link is back: the live devices' rooms not heard again yet, each until when it is awaited (host clock). */
  #awaited: Map<string, number> | null = null

  constructor(rooms: () => ReadonlyMap<string, SyncStatus>, now: () => number, options: RelayHearingOptions) {
    this.#rooms = rooms
    this.#now = now
    this.#liveMs = options.liveMs
    this.#boundMs = options.boundMs ?? DEVICE_RECONNECT_BOUND_MS
  }

  /** Whether every followed room is in sync and no live device is still awaited after the link came back. */
  hears(): boolean {
    const now = this.#now()
    let deaf = false
    let lost = false
    for (const [room, status] of this.#rooms()) {
      const inSync = status.state === 'connected'
      const seen = this.#seen.get(room)
      this.#seen.set(room, { lastSync: status.lastSync, inSync })
      if (status.refusal !== null) {
        this.#awaited?.delete(room)
      } else if (!inSync) {
        deaf = true
        if (seen?.inSync === true) lost = true
      } else if (seen?.inSync === true && status.lastSync !== null && status.lastSync !== seen.lastSync) {
        // In sync at both readings, and lastSync moved: a peer update, its device's (a sync exchange moves it too, on the way in).
        this.#heardAt.set(room, this.#time.at(status.lastSync))
        this.#awaited?.delete(room)
      }
    }
    if (lost && this.#gap === null) {
      const live = new Map<string, number>()
      const heardNow = this.#time.at(now)
      for (const [room, at] of this.#heardAt) if (heardNow - at <= this.#liveMs) live.set(room, this.#boundMs)
      // A device still awaited keeps what is left of its wait: a flapping link does not start it over.
      for (const [room, until] of this.#awaited ?? []) if (until > now) live.set(room, until - now)
      this.#gap = live
      this.#awaited = null
    }
    if (!deaf && this.#gap !== null) {
      this.#awaited = new Map([...this.#gap].map(([room, left]) => [room, now + left]))
      this.#gap = null
    }
    const hears = !deaf && this.awaiting() === null
    this.#time.read(now, hears)
    return hears
  }

  /** The live devices' rooms not heard again since the dashboard's link came back, and until when the last of them is awaited; null when none. */
  awaiting(): AwaitedRooms | null {
    const awaited = this.#awaited
    if (awaited === null) return null
    const now = this.#now()
    for (const [room, until] of awaited) if (now >= until) awaited.delete(room)
    if (awaited.size === 0) {
      this.#awaited = null
      return null
    }
    return { rooms: [...awaited.keys()], until: Math.max(...awaited.values()) }
  }
}
