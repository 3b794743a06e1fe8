/**
 * Large messages cross Redis in chunks. Redis closes a subscriber's connection as soon as what it
 * has to send that subscriber passes `client-output-buffer-limit pubsub` (32 MB by default,
 * counted as allocated, so a single message of about 28 MiB does it): a relay whose rooms may
 * hold more than that (`maxRoomBytes`) would have every other relay's subscriber cut by one such
 * update, and again by the state-vector exchange that follows the reconnection, for good. Sent in
 * chunks of `CHUNK_BYTES`, each is written out to the subscribers as the next is read.
 *
 * A chunk is `0x00, identifier length, identifier, uint32 index, uint32 count, bytes`: the
 * zero where a whole message has its identifier's length (never 0) marks it. The chunks of one
 * message are published back to back on one connection, so they arrive in order, and the
 * receiving relay hands the whole message to the extension once its last chunk came.
 */
import { isOwnMessage } from './storedMarks.ts'

/** The largest message published whole; a larger one is sent in chunks of this size. */
export const CHUNK_BYTES = 1 << 20

/** `message` (identifier-prefixed, as the extension frames it) as the messages to publish for it: itself when small. */
export function chunksOf(message: Buffer, chunkBytes = CHUNK_BYTES): Buffer[] {
  if (message.byteLength <= chunkBytes) return [message]
  const prefix = message.subarray(0, 1 + (message[0] as number))
  const count = Math.ceil(message.byteLength / chunkBytes)
  const chunks: Buffer[] = []
  for (let index = 0; index < count; index++) {
    const header = Buffer.alloc(1 + prefix.byteLength + 8)
    prefix.copy(header, 1)
    header.writeUInt32BE(index, 1 + prefix.byteLength)
    header.writeUInt32BE(count, 5 + prefix.byteLength)
    chunks.push(Buffer.concat([header, message.subarray(index * chunkBytes, (index + 1) * chunkBytes)]))
  }
  return chunks
}

interface Assembling {
  readonly count: number
  readonly pieces: Buffer[]
}

/**
 * Puts chunked messages back together, per channel and publisher. A chunk out of turn (one was
 * lost: the subscriber reconnected) drops the message it belonged to; the state-vector exchange
 * brings what it carried.
 */
export class ChunkAssembler {
  readonly #own: string
  readonly #assembling = new Map<string, Assembling>()

  /** `own`: this relay's identifier, whose own messages (its changes too) are not put together. */
  constructor(own: string) {
    this.#own = own
  }

  /** The whole message `message` is or completes; null while chunks are missing, or for this relay's own chunks. */
  take(channel: Buffer, message: Buffer): Buffer | null {
    if (message.byteLength === 0 || message[0] !== 0) return message
    const idLength = message[1] ?? 0
    const at = 2 + idLength
    if (message.byteLength < at + 8) return null
    const identifier = message.toString('utf-8', 2, at)
    if (isOwnMessage(identifier, this.#own)) return null
    const key = `${channel.toString()}\n${identifier}`
    const index = message.readUInt32BE(at)
    const count = message.readUInt32BE(at + 4)
    const piece = message.subarray(at + 8)
    if (index === 0) this.#assembling.set(key, { count, pieces: [] })
    const assembling = this.#assembling.get(key)
    if (assembling === undefined) return null
    if (assembling.count !== count || assembling.pieces.length !== index) {
      this.#assembling.delete(key)
      return null
    }
    assembling.pieces.push(piece)
    if (assembling.pieces.length < count) return null
    this.#assembling.delete(key)
    return Buffer.concat(assembling.pieces)
  }

  /** Forgets every message under way (the subscriber reconnected: chunks were lost). */
  clear(): void {
    this.#assembling.clear()
  }

  /** Forgets the messages under way on `channel` (its room unloaded). */
  forget(channel: string): void {
    for (const key of this.#assembling.keys()) if (key.startsWith(`${channel}\n`)) this.#assembling.delete(key)
  }

  /** Bytes of messages under way. */
  get bytes(): number {
    let total = 0
    for (const { pieces } of this.#assembling.values()) for (const piece of pieces) total += piece.byteLength
    return total
  }
}
