/**
 * A room's load waits for the other relays' answers to its state-vector exchange. A relay that
 * loads a room the other relays hold (its own store lacks what they took) would otherwise open
 * it with what its store has, answer its clients' joins from that, and then send each of them
 * what the other relays' answers bring as one update, unpaced (`SocketGuard.roomForAnswer` paces
 * answers to joins only): a client joining many such rooms at once would have its socket's queue
 * pass `maxQueuedBytes`, and be cut. Waited for, the answers are in the room before any connection
 * is, and each join is answered with the room and paced.
 *
 * Hocuspocus adds a room to its loaded documents only once its load hooks ended, and the Redis
 * extension drops a message for a room it does not find there: the messages of a loading room are
 * applied here, as the extension applies them.
 */
import { type Document, IncomingMessage, MessageReceiver, MessageType } from '@hocuspocus/server'
import * as decoding from 'lib0/decoding'
import type { RedisWire } from './redisWire.ts'

/**
 * A loading room: its document, the relays that sent their own state vector back (a sync reply)
 * and those that answered, how many hold it (null before the exchange's publish was answered).
 */
interface LoadingRoom {
  readonly document: Document
  readonly replied: Set<string>
  readonly answered: Set<string>
  holders: number | null
  readonly done: () => void
}

/**
 * The loading rooms of one relay, by channel.
 *
 * @example
 * const answers = new LoadAnswers(wire, identifier)
 * const answered = answers.loading(channel, document)
 * answers.holders(channel, (await wire.publishFirstSyncStep(room, document)) - 1)
 * await answered // or a deadline; then answers.loaded(channel)
 */
export class LoadAnswers {
  readonly #wire: RedisWire
  readonly #identifier: string
  readonly #rooms = new Map<string, LoadingRoom>()

  constructor(wire: RedisWire, identifier: string) {
    this.#wire = wire
    this.#identifier = identifier
  }

  /** Starts taking the messages of `channel`'s room, loading as `document`; resolves once every other relay holding it answered. */
  loading(channel: string, document: Document): Promise<void> {
    return new Promise((done) => {
      this.#rooms.get(channel)?.done()
      this.#rooms.set(channel, { document, replied: new Set(), answered: new Set(), holders: null, done })
    })
  }

  /** How many other relays hold the room (the exchange's publish reached them): it waits for as many answers. */
  holders(channel: string, relays: number): void {
    const room = this.#rooms.get(channel)
    if (room === undefined) return
    room.holders = relays
    if (room.answered.size >= relays) room.done()
  }

  /** The room's load ended: its messages go to the extension again. */
  loaded(channel: string): void {
    this.#rooms.get(channel)?.done()
    this.#rooms.delete(channel)
  }

  /**
   * Applies `message` (whole, identifier-prefixed) to its room if that room is loading; false
   * when it is not (the extension's to apply) or the message is this relay's own.
   */
  take(channel: string, message: Buffer): boolean {
    const room = this.#rooms.get(channel)
    if (room === undefined) return false
    const identifierBytes = message[0] as number
    const relay = message.subarray(1, 1 + identifierBytes).toString('utf-8')
    if (relay === this.#identifier) return false
    const wire = this.#wire
    const body = message.subarray(1 + identifierBytes)
    const header = decoding.createDecoder(body)
    decoding.readVarString(header)
    // A relay takes the exchange's state vector as a step 1: it publishes its own back as a sync
    // reply, then, at once, what this relay lacks as a sync step 2: its answer.
    const type = decoding.readVarUint(header)
    if (type === MessageType.SyncReply) room.replied.add(relay)
    else if (type === MessageType.Sync && room.replied.has(relay)) room.answered.add(relay)
    const incoming = new IncomingMessage(body)
    // The reply is written after the room's name, as the extension does.
    incoming.writeVarString(incoming.readVarString())
    new MessageReceiver(incoming, wire.redisTransactionOrigin).apply(room.document, undefined, (reply) => {
      void wire.pub.publish(wire.pubKey(room.document.name), wire.encodeMessage(reply))
    })
    if (room.holders !== null && room.answered.size >= room.holders) room.done()
    return true
  }
}
