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
 * parts.add({ index: 0, count: 2, total: 5 }, new Uint8Array(3)) // null
 * parts.add({ index: 1, count: 2, total: 5 }, new Uint8Array(2)) // null
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

  /** Adds the next part's bytes (kept, not copied); why it cannot be the next part, or null. */
  add(header: PartHeader, bytes: Uint8Array): string | null {
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
    this.#pieces.push(bytes)
    this.#bytes += bytes.byteLength
    return null
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
