/**
 * A Sync message sent in parts (the Part frame, `relayFrame.ts`), put together again for one
 * room connection. A client sends the parts of one message back to back; the relay checks the
 * whole once the last part came, exactly as if it had come in one WebSocket message: a message
 * over `maxMessageBytes` then syncs instead of closing the socket, and no one ever sees a piece
 * of it applied (a piece could show a dashboard a state the whole never had).
 */
import type { PartHeader } from '../protocol/relayFrame.ts'

/**
 * Why a message's first part (index 0) cannot start a message, or null.
 *
 * @example
 * firstPartProblem({ index: 0, count: 1, total: 10 }) // 'a message in 1 part: it would have been sent whole'
 */
export function firstPartProblem(header: PartHeader): string | null {
  if (header.count < 2) return `a message in ${header.count} part: it would have been sent whole`
  if (header.total < header.count) return `${header.count} parts for ${header.total} bytes`
  return null
}

/**
 * The parts of one message received so far, in order.
 *
 * @example
 * const parts = new MessageParts({ index: 0, count: 2, total: 5 })
 * parts.problem({ index: 0, count: 2, total: 5 }, new Uint8Array(3)) // null
 * parts.add(new Uint8Array(3))
 * parts.problem({ index: 1, count: 2, total: 6 }, new Uint8Array(3)) // 'part 1 says 2 parts of 6 bytes, the first said 2 of 5'
 * parts.add(new Uint8Array(2))
 * parts.complete // true
 * parts.whole().byteLength // 5
 */
export class MessageParts {
  readonly #header: PartHeader
  readonly #pieces: Uint8Array[] = []
  #bytes = 0

  /** `first`: the first part's header, checked with `firstPartProblem`. */
  constructor(first: PartHeader) {
    this.#header = first
  }

  /** Bytes received so far. */
  get bytes(): number {
    return this.#bytes
  }

  /** Whether every part came. */
  get complete(): boolean {
    return this.#pieces.length === this.#header.count
  }

  /** Why a part cannot be the next one, or null. */
  problem(header: PartHeader, bytes: Uint8Array): string | null {
    const expected = this.#header
    if (header.count !== expected.count || header.total !== expected.total) {
      return `part ${header.index} says ${header.count} parts of ${header.total} bytes, the first said ${expected.count} of ${expected.total}`
    }
    if (header.index !== this.#pieces.length) return `part ${header.index} came where part ${this.#pieces.length} was due`
    if (bytes.byteLength === 0) return `part ${header.index} is empty`
    if (this.#bytes + bytes.byteLength > expected.total) return `the parts are longer than the ${expected.total} bytes the first announced`
    if (header.index === expected.count - 1 && this.#bytes + bytes.byteLength !== expected.total) {
      return `the parts make ${this.#bytes + bytes.byteLength} bytes, the first announced ${expected.total}`
    }
    return null
  }

  /** Adds the next part's bytes (kept, not copied), once `problem` found none. */
  add(bytes: Uint8Array): void {
    this.#pieces.push(bytes)
    this.#bytes += bytes.byteLength
  }

  /** The whole message (call once `complete`). */
  whole(): Uint8Array {
    const whole = new Uint8Array(this.#bytes)
    let at = 0
    for (const piece of this.#pieces) {
      whole.set(piece, at)
      at += piece.byteLength
    }
    return whole
  }
}

/**
 * The messages being received in parts across the relay's room connections, by their owner
 * (a connection), least recently added to first, and their bytes together. Bytes in parts are
 * capped: past the cap, messages whose next part is long overdue are let go to make room for
 * parts that keep coming, so a client that starts messages and never finishes them holds the
 * relay's room for parts only as long as no one else needs it.
 *
 * @example
 * const assembling = new AssemblingMessages<object, string>()
 * const slow = {}
 * assembling.added(slow, 'slow', 60, 1_000) // its latest part at 1 s
 * // At 31 s, 50 more bytes under a cap of 100, stalled = no part for 30 s:
 * assembling.stalled(50, 100, 31_000 - 30_000, null) // [['slow', slow]]
 * assembling.release(slow)
 * assembling.bytes // 0
 */
export class AssemblingMessages<Owner, Handle> {
  readonly #entries = new Map<Owner, { bytes: number; at: number; readonly handle: Handle }>()
  #bytes = 0

  /** Bytes received of messages not whole yet, across owners. */
  get bytes(): number {
    return this.#bytes
  }

  /** `owner` (known to the caller as `handle`) received `bytes` more of its message at `now`. */
  added(owner: Owner, handle: Handle, bytes: number, now: number): void {
    const entry = this.#entries.get(owner)
    // Taken out and put back: the map stays in the order of each owner's latest part.
    this.#entries.delete(owner)
    this.#entries.set(owner, { bytes: (entry?.bytes ?? 0) + bytes, at: now, handle })
    this.#bytes += bytes
  }

  /** `owner`'s message is whole or let go: its bytes are no longer held. */
  release(owner: Owner): void {
    const entry = this.#entries.get(owner)
    if (entry === undefined) return
    this.#entries.delete(owner)
    this.#bytes -= entry.bytes
  }

  /**
   * The messages to let go so that `bytes` more fit under `cap` (their handles and owners, least
   * recently added to first): only those whose latest part came at or before `stalledSince`,
   * never `keep`'s. Null when letting all of those go would still not make room: then none is.
   */
  stalled(bytes: number, cap: number, stalledSince: number, keep: Owner | null): [Handle, Owner][] | null {
    let over = this.#bytes + bytes - cap
    if (over <= 0) return []
    const chosen: [Handle, Owner][] = []
    for (const [owner, entry] of this.#entries) {
      // In the order of their latest parts: every later one is more recent still.
      if (entry.at > stalledSince) break
      if (owner === keep) continue
      chosen.push([entry.handle, owner])
      over -= entry.bytes
      if (over <= 0) return chosen
    }
    return null
  }
}
