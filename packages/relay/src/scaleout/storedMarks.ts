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
import type { Document } from '@hocuspocus/server'
import type { Doc } from 'yjs'
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
 * const marks = new StoredMarks(wire, { identifier, database: await sharedDatabaseName(sql) }, relayed, publishInOrder, guard, (why) => log('warn', why))
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
  readonly #refused: (why: string) => void
  #writes = 0

  /**
   * `own`: this relay's identifier and the database its store writes to. `publish` sends a message
   * in order with the relay's changes; `guard` runs a Redis command, counting and logging its failure;
   * `refused` is told why a message on the marks' channel is not a mark.
   */
  constructor(
    wire: MarksWire,
    own: { readonly identifier: string; readonly database: string },
    relayed: RelayedUpdates,
    publish: (channel: string, message: Buffer) => void,
    guard: (work: () => Promise<unknown>) => void,
    refused: (why: string) => void,
  ) {
    this.#wire = wire
    this.#identifier = own.identifier
    this.#database = own.database
    this.#relayed = relayed
    this.#publish = publish
    this.#guard = guard
    this.#refused = refused
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
    // Its own marks come back too.
    if (sender === this.#identifier) return
    const mark = data[1 + length] === NO_ROOM ? markOf(data.toString('utf8', 2 + length)) : 'no empty room name before it'
    if (typeof mark === 'string') {
      this.#refused(`a store write mark from '${sender}' was refused: ${mark}`)
      return
    }
    // Stored, if at all, in another database than this relay's: what it sent is written here.
    if (mark.d !== this.#database) {
      this.#relayed.storesElsewhere(sender)
      return
    }
    if (mark.t === 'begin') this.#relayed.begun(sender, mark.k)
    else this.#relayed.stored(sender, mark.k)
  }
}

/** The mark `text` holds, or why it holds none. */
function markOf(text: string): Mark | string {
  let mark: unknown
  try {
    mark = JSON.parse(text)
  } catch {
    return 'not JSON'
  }
  if (typeof mark !== 'object' || mark === null) return 'not an object'
  const { t, k, d } = mark as Record<string, unknown>
  if (t !== 'begin' && t !== 'stored') return `t must be 'begin' or 'stored'`
  if (typeof k !== 'number' || !Number.isSafeInteger(k)) return 'k must be a safe integer'
  if (typeof d !== 'string') return 'd must be a database name'
  return { t, k, d }
}

/** Of the extension's framing, what `MarkedChanges` uses: its framing, and the origin under which it applies the other relays' messages. */
type ChangesWire = Pick<MarksWire, 'encodeMessage'> & { readonly redisTransactionOrigin: string }

/**
 * The changes that store write marks cover. Sent: once this relay's store writes are marked
 * (`hold`), its changes go out framed with its identifier and `CHANGE_SUFFIX`. Received: each
 * update another relay's marked change makes here is held in `relayed` until that relay says it
 * stored it.
 *
 * @example
 * const changes = new MarkedChanges(identifier, wire)
 * changes.hold(relayed)
 * changes.watch(document)
 * changes.applying(changeSender(message), () => wire.handleIncomingMessage(channel, message))
 */
export class MarkedChanges {
  readonly #wire: ChangesWire
  /** This relay's identifier marked as a change's, framed as the extension frames it (length first). */
  readonly #prefix: Buffer
  #relayed: RelayedUpdates | null = null
  /** While another relay's change is applied: that relay. */
  #applyingOf: string | null = null
  /** Documents whose updates `#heldIfRelayed` sees. */
  readonly #watched = new WeakSet<Doc>()

  constructor(identifier: string, wire: ChangesWire) {
    this.#wire = wire
    const marked = Buffer.from(identifier + CHANGE_SUFFIX)
    this.#prefix = Buffer.concat([Buffer.of(marked.byteLength), marked])
  }

  /** From now on, this relay's changes go out marked and the others' are held in `relayed`. */
  hold(relayed: RelayedUpdates): void {
    this.#relayed = relayed
  }

  /** A change made here, framed for Redis: marked once `hold` was called. */
  framed(message: Uint8Array): Buffer {
    return this.#relayed === null ? this.#wire.encodeMessage(message) : Buffer.concat([this.#prefix, message])
  }

  /** Follows a loaded room's updates, to hold those that other relays' changes make. */
  watch(document: Document): void {
    if (this.#relayed === null || this.#watched.has(document)) return
    this.#watched.add(document)
    document.on('update', this.#heldIfRelayed)
  }

  /**
   * Runs `apply`, which applies a message `sender` published as a change (null: not a change)
   * before its first await: the update it makes is seen (`#heldIfRelayed`) meanwhile.
   */
  applying(sender: string | null, apply: () => void): void {
    this.#applyingOf = sender
    try {
      apply()
    } finally {
      this.#applyingOf = null
    }
  }

  /** An update another relay's change made here: held until that relay says it stored it. */
  readonly #heldIfRelayed = (update: Uint8Array, origin: unknown, document: Doc): void => {
    // Only rooms' documents are watched.
    if (this.#applyingOf !== null && origin === this.#wire.redisTransactionOrigin) this.#relayed?.hold((document as Document).name, update, this.#applyingOf)
  }
}
