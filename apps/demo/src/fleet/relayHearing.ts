import type { SyncStatus } from '@tidemark/engine'
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
 *   down is not awaited.
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
  /** When each room last brought something new while in sync (its device was heard), host clock. */
  readonly #heardAt = new Map<string, number>()
  /** The link is down: the rooms whose devices were live when it went. */
  #gap: Set<string> | null = null
  /** The link is back: the live devices' rooms not heard again yet, and until when they are awaited. */
  #awaited: { readonly rooms: Set<string>; readonly until: number } | null = null

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
        this.#awaited?.rooms.delete(room)
      } else if (!inSync) {
        deaf = true
        if (seen?.inSync === true) lost = true
      } else if (seen?.inSync === true && status.lastSync !== null && status.lastSync !== seen.lastSync) {
        // In sync at both readings, and lastSync moved: a peer update, its device's (a sync exchange moves it too, on the way in).
        this.#heardAt.set(room, status.lastSync)
        this.#awaited?.rooms.delete(room)
      }
    }
    if (lost && this.#gap === null) {
      const live = new Set(this.#awaited?.rooms)
      for (const [room, at] of this.#heardAt) if (now - at <= this.#liveMs) live.add(room)
      this.#gap = live
      this.#awaited = null
    }
    if (deaf) return false
    if (this.#gap !== null) {
      this.#awaited = { rooms: this.#gap, until: now + this.#boundMs }
      this.#gap = null
    }
    return this.awaiting() === null
  }

  /** The live devices' rooms not heard again since the dashboard's link came back, and until when they are awaited; null when none. */
  awaiting(): AwaitedRooms | null {
    const awaited = this.#awaited
    if (awaited === null) return null
    if (awaited.rooms.size === 0 || this.#now() >= awaited.until) {
      this.#awaited = null
      return null
    }
    return { rooms: [...awaited.rooms], until: awaited.until }
  }
}
