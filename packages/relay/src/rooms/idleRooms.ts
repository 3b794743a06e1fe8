/**
 * Rooms nobody is connected to stay loaded for `idleMs` (a device reconnecting soon finds its
 * room in memory), then are stored and unloaded. When the relay holds its maximum of rooms, the
 * longest-idle room is unloaded early to make room for a new one.
 */
import type { Hocuspocus } from '@hocuspocus/server'
import { describeError, type RelayLog } from '../relayLog.ts'
import type { RelayTimers } from '../relayOptions.ts'

/**
 * Idle-room bookkeeping of one relay; `holds` is asked by the persistence extension's
 * `beforeUnloadDocument`.
 *
 * @example
 * const idle = new IdleRooms(30_000, Date.now, timers, log)
 * idle.attach(hocuspocus)
 */
export class IdleRooms {
  readonly #idleMs: number
  readonly #now: () => number
  readonly #log: RelayLog
  readonly #since = new Map<string, number>()
  readonly #timers: RelayTimers
  /** By room: its unload timer. */
  readonly #unloads = new Map<string, unknown>()
  readonly #evicting = new Set<string>()
  #instance: Hocuspocus | undefined
  #closing = false

  constructor(idleMs: number, now: () => number, timers: RelayTimers, log: RelayLog) {
    this.#idleMs = idleMs
    this.#now = now
    this.#timers = timers
    this.#log = log
  }

  /** The Hocuspocus instance whose rooms these are. */
  attach(instance: Hocuspocus): void {
    this.#instance = instance
  }

  /** A connection opened the room: it is not idle. */
  touch(room: string): void {
    this.#since.delete(room)
    this.#clearTimer(room)
  }

  /**
   * True when the room must stay loaded for now; a timer then tries to unload it once its idle
   * time is up. False while closing or evicting.
   */
  holds(room: string): boolean {
    if (this.#closing || this.#evicting.has(room)) return false
    const now = this.#now()
    let since = this.#since.get(room)
    if (since === undefined) {
      since = now
      this.#since.set(room, since)
    }
    const left = since + this.#idleMs - now
    if (left <= 0) return false
    this.#schedule(room, left)
    return true
  }

  /** Unloading failed (the store did not answer): try again after another idle period. */
  retryLater(room: string): void {
    this.#since.set(room, this.#now())
    this.#schedule(room, this.#idleMs)
  }

  /** The room was unloaded. */
  forget(room: string): void {
    this.#since.delete(room)
    this.#clearTimer(room)
  }

  /** Unloads the longest-idle room; true when one was unloaded. */
  async evictOne(): Promise<boolean> {
    const instance = this.#instance
    if (instance === undefined) return false
    const idle = [...instance.documents.values()]
      .filter((document) => document.getConnectionsCount() === 0 && !this.#evicting.has(document.name))
      .sort((a, b) => (this.#since.get(a.name) ?? Number.POSITIVE_INFINITY) - (this.#since.get(b.name) ?? Number.POSITIVE_INFINITY))
    for (const document of idle.slice(0, 3)) {
      this.#evicting.add(document.name)
      this.#clearTimer(document.name)
      try {
        await instance.unloadDocument(document)
      } finally {
        this.#evicting.delete(document.name)
      }
      if (!instance.documents.has(document.name)) return true
    }
    return false
  }

  /** Stops every timer; rooms are no longer held. */
  close(): void {
    this.#closing = true
    for (const timer of this.#unloads.values()) this.#timers.clearTimeout(timer)
    this.#unloads.clear()
  }

  #schedule(room: string, ms: number): void {
    if (this.#unloads.has(room) || this.#closing) return
    this.#unloads.set(
      room,
      this.#timers.setTimeout(() => {
        this.#unloads.delete(room)
        const document = this.#instance?.documents.get(room)
        if (document === undefined || document.getConnectionsCount() > 0) return
        this.#instance?.unloadDocument(document).catch((error: unknown) => this.#log('warn', `unloading ${room} failed: ${describeError(error)}`))
      }, ms),
    )
  }

  #clearTimer(room: string): void {
    const timer = this.#unloads.get(room)
    if (timer !== undefined) this.#timers.clearTimeout(timer)
    this.#unloads.delete(room)
  }
}
