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
 * The slowest a message in parts may come, in bytes per second (64 kbit/s): one that took longer
 * than `stallMs` plus its size at this rate since its first part is overdue.
 */
export const MIN_PART_BYTES_PER_SECOND = 8 << 10

/** One message being received in parts. */
interface Assembly<Handle> {
  readonly handle: Handle
  /** Who sent it (a token's subject): bytes are also counted per sender. */
  readonly group: string
  /** When the last part is due at the slowest rate a link may have, ms. */
  readonly dueAt: number
  bytes: number
  /** When it last moved: a part of it came, or its socket received bytes. */
  at: number
  /** What its socket had received at `at`, bytes. */
  read: number
}

/**
 * The messages being received in parts across the relay's room connections, by their owner (a
 * connection), least recently moved first, and their bytes, in all and per sender. Bytes in parts
 * are capped; past the cap, messages that stalled or are overdue are let go to make room for
 * parts that keep coming.
 *
 * A message is stalled when nothing came for it for `stallMs`: no part, and no byte on its
 * socket (a part on a slow link arrives long after the one before, its bytes coming all along).
 * It is overdue once `stallMs` plus its size at `MIN_PART_BYTES_PER_SECOND` passed since its
 * first part: a client that keeps a message alive with a trickle cannot hold it for good.
 *
 * @example
 * const assembling = new AssemblingMessages<object, string>(30_000)
 * const slow = {}
 * assembling.added(slow, 'slow', 'device-7', 120, 60, 1_000, 500) // 60 of 120 bytes at 1 s; its socket had read 500
 * // At 31 s, nothing more on its socket: to fit 50 more bytes under a cap of 100, it is let go.
 * assembling.stalled(50, 100, 31_000, null, () => 500) // [['slow', slow]]
 * assembling.release(slow)
 * assembling.bytes // 0
 */
export class AssemblingMessages<Owner, Handle> {
  readonly #stallMs: number
  readonly #entries = new Map<Owner, Assembly<Handle>>()
  readonly #groups = new Map<string, number>()
  #bytes = 0

  constructor(stallMs: number) {
    this.#stallMs = stallMs
  }

  /** Bytes received of messages not whole yet, across owners. */
  get bytes(): number {
    return this.#bytes
  }

  /** Bytes received of `group`'s messages not whole yet. */
  bytesOf(group: string): number {
    return this.#groups.get(group) ?? 0
  }

  /**
   * `owner` (known to the caller as `handle`) received `bytes` more of its message of `total`
   * bytes, sent by `group`, at `now`, when its socket had received `read` bytes.
   */
  added(owner: Owner, handle: Handle, group: string, total: number, bytes: number, now: number, read: number): void {
    let entry = this.#entries.get(owner)
    if (entry === undefined) entry = { handle, group, dueAt: now + this.#stallMs + (total * 1000) / MIN_PART_BYTES_PER_SECOND, bytes: 0, at: now, read }
    // Taken out and put back: the map stays in the order of each message's latest move.
    else this.#entries.delete(owner)
    entry.bytes += bytes
    entry.at = now
    entry.read = read
    this.#entries.set(owner, entry)
    this.#bytes += bytes
    this.#groups.set(group, this.bytesOf(group) + bytes)
  }

  /** `owner`'s message is whole or let go: its bytes are no longer held. */
  release(owner: Owner): void {
    const entry = this.#entries.get(owner)
    if (entry === undefined) return
    this.#entries.delete(owner)
    this.#bytes -= entry.bytes
    const left = this.bytesOf(entry.group) - entry.bytes
    if (left > 0) this.#groups.set(entry.group, left)
    else this.#groups.delete(entry.group)
  }

  /**
   * The messages to let go so that `bytes` more fit under `cap` at `now` (their handles and
   * owners): stalled or overdue ones, least recently moved first, never `keep`'s. `readOf` gives
   * what an owner's socket has received by now. Null when letting all of those go would still
   * not make room: then none is.
   */
  stalled(bytes: number, cap: number, now: number, keep: Owner | null, readOf: (owner: Owner) => number): [Handle, Owner][] | null {
    let over = this.#bytes + bytes - cap
    if (over <= 0) return []
    const chosen: [Handle, Owner][] = []
    const moved: Owner[] = []
    for (const [owner, entry] of this.#entries) {
      if (owner === keep) continue
      const read = readOf(owner)
      if (read !== entry.read) {
        // Bytes came on its socket since: it moves (a part on its way).
        entry.read = read
        entry.at = now
        moved.push(owner)
      }
      if (now - entry.at < this.#stallMs && now < entry.dueAt) continue
      chosen.push([entry.handle, owner])
      over -= entry.bytes
      if (over <= 0) break
    }
    for (const owner of moved) {
      const entry = this.#entries.get(owner) as Assembly<Handle>
      this.#entries.delete(owner)
      this.#entries.set(owner, entry)
    }
    return over <= 0 ? chosen : null
  }
}
