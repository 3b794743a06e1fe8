/**
 * How large each loaded room is, for the per-room byte limit: an estimate (bytes loaded plus
 * every update applied since) that is cheap to keep, measured exactly before it refuses.
 */
import * as Y from 'yjs'

/**
 * Room sizes of one relay.
 *
 * @example
 * const sizes = new RoomSizes(16 << 20)
 * sizes.set('fleet-a/d07', 40_000)
 * sizes.admits('fleet-a/d07', document, update.byteLength) // true while under 16 MiB
 */
export class RoomSizes {
  readonly #max: number
  readonly #bytes = new Map<string, number>()
  /** The estimate right after the last exact measure. */
  readonly #measured = new Map<string, number>()

  constructor(maxRoomBytes: number) {
    this.#max = maxRoomBytes
  }

  /** Sets a room's size (after a load or a compaction). */
  set(room: string, bytes: number): void {
    this.#bytes.set(room, bytes)
  }

  /** Adds an applied update to a room's estimate. */
  add(room: string, bytes: number): void {
    this.#bytes.set(room, (this.#bytes.get(room) ?? 0) + bytes)
  }

  /** The room's estimated size. */
  get(room: string): number {
    return this.#bytes.get(room) ?? 0
  }

  /** True when the room has a size (it is loaded). */
  has(room: string): boolean {
    return this.#bytes.has(room)
  }

  /** Rooms with a size (the rooms loaded). */
  get rooms(): number {
    return this.#bytes.size
  }

  /** Forgets an unloaded room. */
  forget(room: string): void {
    this.#bytes.delete(room)
    this.#measured.delete(room)
  }

  /**
   * True when `extra` more bytes keep the room within its limit. The estimate counts superseded
   * entries until they are compacted away, so past the limit the document is encoded and
   * measured, at most once per 5% of the limit it grows by.
   */
  admits(room: string, document: Y.Doc, extra: number): boolean {
    const estimate = this.get(room)
    if (estimate + extra <= this.#max) return true
    const measured = this.#measured.get(room)
    if (measured !== undefined && estimate - measured < this.#max * 0.05) return false
    const exact = Y.encodeStateAsUpdate(document).byteLength
    this.#bytes.set(room, exact)
    this.#measured.set(room, exact)
    return exact + extra <= this.#max
  }
}
