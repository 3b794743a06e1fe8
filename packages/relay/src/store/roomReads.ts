/**
 * Reads of rooms that load, gathered: a room asked for while reads are under way waits for the
 * next one, which reads every room waiting (up to `ROOMS_PER_READ`) in one statement. A room
 * asked for alone is read at once. When a fleet reconnects to a restarted relay, a thousand
 * rooms load within seconds: read one statement each, they would queue behind the pool's few
 * connections until the wait for one timed out and the rooms were refused (PostgreSQL), or keep
 * PGlite's thread busy for 1.6 s where reads of 50 take 0.2 s.
 */
import type { SqlQueryable } from './sqlClient.ts'
import { readRoomsParts, type StoredPart } from './storedParts.ts'

/** Most rooms one read asks for: its answer (a room's snapshot and rows each) stays a few megabytes at most. */
export const ROOMS_PER_READ = 50

/** Reads under way at once: on PostgreSQL the pool's other connections stay free for writes. */
export const READS_AT_ONCE = 2

interface Waiter {
  readonly resolve: (parts: StoredPart[]) => void
  readonly reject: (error: unknown) => void
}

/**
 * Gathers the reads of loading rooms.
 *
 * @example
 * const reads = new RoomReads(sql, (work) => work())
 * const [a, b] = await Promise.all([reads.read('fleet-a/d07'), reads.read('fleet-a/d08')]) // two statements at most
 */
export class RoomReads {
  readonly #sql: SqlQueryable
  readonly #timed: <T>(work: () => Promise<T>) => Promise<T>
  /** Rooms waiting for a read, in the order they were asked for, each with the loads that wait. */
  readonly #waiting = new Map<string, Waiter[]>()
  #reads = 0

  /** `timed` wraps each read (the store's timing and failure count). */
  constructor(sql: SqlQueryable, timed: <T>(work: () => Promise<T>) => Promise<T>) {
    this.#sql = sql
    this.#timed = timed
  }

  /** Rooms waiting for a read to start. */
  get waiting(): number {
    return this.#waiting.size
  }

  /**
   * The room's stored parts (`readStoredParts`): read at once when fewer than `READS_AT_ONCE`
   * reads are under way, else in the next read. Rejects with the read's error, as do the other
   * rooms of that read.
   */
  read(room: string): Promise<StoredPart[]> {
    return new Promise((resolve, reject) => {
      const waiters = this.#waiting.get(room)
      if (waiters === undefined) this.#waiting.set(room, [{ resolve, reject }])
      else waiters.push({ resolve, reject })
      this.#start()
    })
  }

  #start(): void {
    while (this.#reads < READS_AT_ONCE && this.#waiting.size > 0) {
      const rooms = new Map<string, Waiter[]>()
      for (const [room, waiters] of this.#waiting) {
        rooms.set(room, waiters)
        this.#waiting.delete(room)
        if (rooms.size === ROOMS_PER_READ) break
      }
      this.#reads++
      void this.#read(rooms)
    }
  }

  async #read(rooms: ReadonlyMap<string, readonly Waiter[]>): Promise<void> {
    try {
      const parts = await this.#timed(() => readRoomsParts(this.#sql, [...rooms.keys()]))
      for (const [room, waiters] of rooms) {
        const stored = parts.get(room) ?? []
        // Each load its own list: a caller may keep or change it.
        for (const [i, waiter] of waiters.entries()) waiter.resolve(i === 0 ? stored : [...stored])
      }
    } catch (error) {
      for (const waiters of rooms.values()) for (const waiter of waiters) waiter.reject(error)
    } finally {
      this.#reads--
      this.#start()
    }
  }
}
