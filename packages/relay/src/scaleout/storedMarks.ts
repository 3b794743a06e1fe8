/**
 * Store write marks, shared between the relays of a group through Redis: each relay says when a
 * write of its store begins and when it succeeded, so the others drop the copies of its changes
 * they hold (`RelayedUpdates`) instead of writing them too.
 *
 * A relay on a store the others may share (PostgreSQL; a PGlite data directory is its relay's
 * alone) publishes its changes under its identifier followed by `CHANGE_SUFFIX`, and nothing
 * else under it: what arrives so marked was queued for its store before it was published. A
 * `begin` goes out in order with the changes, on the same connection (a subscriber receives one
 * publisher's messages in the order they were published, whatever their channel), so a change
 * received before a `begin k` was queued before write `k` began. `stored k` follows once the
 * write succeeded. Each mark names the relay's database: a relay on another one writes what that
 * relay sent it itself. Messages travel on one channel for every relay, framed as the extension frames
 * its own (the relay's identifier first), then an empty room name, which the extension's own
 * handler reads and ignores, then JSON.
 */
import type { RelayedUpdates } from '../store/relayedUpdates.ts'
import type { StoreWriteMarks } from '../store/roomStore.ts'

/** The channel of store write marks, for every relay. */
export const STORED_CHANNEL = 'tidemark-stored'

/** Follows a relay's identifier on the changes it publishes. */
export const CHANGE_SUFFIX = '+'

/** The empty room name (a varint 0) the extension's handler reads before it ignores the message. */
const NO_ROOM = 0

/**
 * The relay that published `message` (framed by the extension: identifier length, identifier)
 * as a change, or null when it is another kind of message.
 *
 * @example
 * changeSender(Buffer.from('\u0002a+…')) // 'a'
 */
export function changeSender(message: Buffer): string | null {
  const length = message[0] ?? 0
  if (length < 2 || message[length] !== CHANGE_SUFFIX.charCodeAt(0)) return null
  return message.toString('utf8', 1, length)
}

/**
 * True when a message framed with `identifier` is this relay's own (`own`), a change or not:
 * Redis sends a relay its own publishes too.
 *
 * @example
 * isOwnMessage('relay-a+', 'relay-a') // true
 */
export function isOwnMessage(identifier: string, own: string): boolean {
  return identifier === own || (identifier.length === own.length + CHANGE_SUFFIX.length && identifier.startsWith(own) && identifier.endsWith(CHANGE_SUFFIX))
}

/** Of the extension's Redis client and framing, what the marks use. */
export interface MarksWire {
  readonly sub: {
    subscribe(channel: string): Promise<unknown>
    on(event: 'messageBuffer', listener: (channel: Buffer, message: Buffer) => void): unknown
  }
  /** Prefixes this relay's identifier. */
  encodeMessage(message: Uint8Array): Buffer
}

type Mark = { readonly t: 'begin' | 'stored'; readonly k: number; readonly d: string }

/**
 * This relay's side of the marks: announces its store's writes (set as the store's
 * `writeMarks`), and passes the other relays' to `relayed`.
 *
 * @example
 * const marks = new StoredMarks(wire, { identifier, database: await sharedDatabaseName(sql) }, relayed, (channel, message) => publishInOrder(channel, message), guard)
 * store.writeMarks = marks
 * marks.subscribe()
 */
export class StoredMarks implements StoreWriteMarks {
  readonly #wire: MarksWire
  readonly #identifier: string
  /** The database this relay's store writes to (`sharedDatabaseName`). */
  readonly #database: string
  readonly #relayed: RelayedUpdates
  readonly #publish: (channel: string, message: Buffer) => void
  readonly #guard: (work: () => Promise<unknown>) => void
  #writes = 0

  /**
   * `own`: this relay's identifier and the database its store writes to. `publish` sends a message
   * in order with the relay's changes; `guard` runs a Redis command, counting and logging its failure.
   */
  constructor(wire: MarksWire, own: { readonly identifier: string; readonly database: string }, relayed: RelayedUpdates, publish: (channel: string, message: Buffer) => void, guard: (work: () => Promise<unknown>) => void) {
    this.#wire = wire
    this.#identifier = own.identifier
    this.#database = own.database
    this.#relayed = relayed
    this.#publish = publish
    this.#guard = guard
    wire.sub.on('messageBuffer', (channel, message) => {
      if (channel.toString() === STORED_CHANNEL) this.#receive(message)
    })
  }

  /** Subscribes the channel (again: a subscription that failed is not renewed by the client). */
  subscribe(): void {
    this.#guard(() => this.#wire.sub.subscribe(STORED_CHANNEL))
  }

  begin(): number {
    const k = ++this.#writes
    this.#send({ t: 'begin', k, d: this.#database })
    return k
  }

  stored(mark: number): void {
    this.#send({ t: 'stored', k: mark, d: this.#database })
  }

  #send(mark: Mark): void {
    this.#publish(STORED_CHANNEL, this.#wire.encodeMessage(Buffer.concat([Buffer.of(NO_ROOM), Buffer.from(JSON.stringify(mark))])))
  }

  #receive(data: Buffer): void {
    const length = data[0] ?? 0
    const sender = data.toString('utf8', 1, 1 + length)
    if (sender === this.#identifier || data[1 + length] !== NO_ROOM) return
    let mark: unknown
    try {
      mark = JSON.parse(data.toString('utf8', 2 + length))
    } catch {
      return
    }
    if (typeof mark !== 'object' || mark === null) return
    const { t, k, d } = mark as Record<string, unknown>
    if (typeof k !== 'number' || !Number.isSafeInteger(k)) return
    // Stored, if at all, in another database than this relay's: what it sent is written here.
    if (d !== this.#database) {
      this.#relayed.storesElsewhere(sender)
      return
    }
    if (t === 'begin') this.#relayed.begun(sender, k)
    else if (t === 'stored') this.#relayed.stored(sender, k)
  }
}
