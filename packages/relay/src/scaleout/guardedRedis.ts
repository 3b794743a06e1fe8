/**
 * Scale-out: several relays serve the same rooms, exchanging updates and awareness through Redis
 * (@hocuspocus/extension-redis). Wrapped so that Redis trouble never ends the process: the
 * extension's publishes reject while Redis is down, and Hocuspocus does not await them. Nor does
 * it close a room: a room loaded while its channel cannot be subscribed is served by this relay
 * alone, and shared (subscribed, then the state-vector exchange below) once Redis is back.
 *
 * Its `onStoreDocument` lock (Redlock) is left out: the room store needs no lock, as every relay
 * appends the updates its rooms take as rows (a duplicate row changes nothing) and compaction is
 * guarded by snapshot versions.
 *
 * A change is sent to the other relays as itself. The extension announces each change with its
 * state vector instead (sync step 1), which costs four Redis messages and two round trips per
 * update, each with a state-vector diff of the room on both sides: under a fleet's steady
 * writes that exchange, not the updates, was most of a relay's work. The update is published as
 * a sync step 2 message, which the receiving relays apply under the extension's own origin, so
 * they neither answer nor publish it again. Pub/sub may lose a message (a subscriber that
 * reconnects), so the state-vector exchange still runs, once per room at most every
 * `REPAIR_MS` (or `options.repairMs`) while the room changes, whenever a relay loads the room,
 * and for every loaded room when a connection to Redis is back: what the relays' clients
 * changed while it was away (publishes that failed, messages never delivered) crosses then,
 * without waiting for the room's next change.
 */
import { Redis } from '@hocuspocus/extension-redis'
import type {
  Document,
  Hocuspocus,
  afterLoadDocumentPayload,
  afterUnloadDocumentPayload,
  beforeBroadcastStatelessPayload,
  beforeUnloadDocumentPayload,
  Extension,
  onAwarenessUpdatePayload,
  onChangePayload,
  onConfigurePayload,
} from '@hocuspocus/server'
import { OutgoingMessage } from '@hocuspocus/server'
import IORedis from 'ioredis'
import * as encoding from 'lib0/encoding'
import { messageYjsSyncStep2 } from 'y-protocols/sync'
import type { RelayMetrics } from '../metrics/relayMetrics.ts'
import { describeError, type RelayLog } from '../relayLog.ts'
import { GLOBAL_TIMERS, type RelayTimers } from '../relayOptions.ts'
import type { RoomPresence } from '../gate/roomPresence.ts'
import { ChunkAssembler, chunksOf } from './messageChunks.ts'
import { type PresenceWire, SharedPresence } from './sharedPresence.ts'

/** Redis channel prefix: channels are `tidemark:<room>`. */
const PREFIX = 'tidemark'

/** How often, at most, a changing room exchanges state vectors with the other relays (ms). */
export const REPAIR_MS = 10_000

/**
 * How long a room's load waits for its channel's subscription (ms). A Redis that stops answering
 * without closing its connections fails no command: the room opens unshared past this, and is
 * shared once the subscription is made.
 */
export const SHARE_WAIT_MS = 1_000

/**
 * How long the relay's close waits for Redis to take its last publishes (ms): a Redis that stops
 * answering without closing its connections would otherwise hold the shutdown.
 */
export const QUIT_WAIT_MS = 1_000

/** The extension's members this wrapper publishes through (private in its types, stable in 3.4). */
interface RedisWire {
  readonly pub: {
    readonly status: string
    publish(channel: string, message: Buffer): Promise<number>
    quit(): Promise<unknown>
    disconnect(reconnect?: boolean): void
    pipeline(): { publish(channel: string, message: Buffer): unknown; exec(): Promise<[Error | null, unknown][] | null> }
  }
  readonly sub: PresenceWire['sub'] & {
    readonly status: string
    unsubscribe(channel: string): Promise<unknown>
    off(event: 'messageBuffer', listener: (channel: Buffer, message: Buffer) => void): unknown
    disconnect(reconnect?: boolean): void
  }
  readonly redisTransactionOrigin: string
  pubKey(documentName: string): string
  subKey(documentName: string): string
  encodeMessage(message: Uint8Array): Buffer
  /** Publishes the room's state vector (sync step 1): the other relays answer with what it lacks, and ask for what they lack. */
  publishFirstSyncStep(documentName: string, document: Document): Promise<unknown>
  /** Asks the other relays for the room's presence. */
  requestAwarenessFromOtherInstances(documentName: string): Promise<unknown>
  /** Applies a message another relay published (the subscriber's `messageBuffer` listener). */
  handleIncomingMessage(channel: Buffer, message: Buffer): Promise<void>
}

/**
 * The extension's members this wrapper publishes through, checked: another version of
 * @hocuspocus/extension-redis that renamed one fails at start with a clear error, not at the
 * first change with a TypeError that Hocuspocus would swallow.
 */
function wireOf(redis: Redis): RedisWire {
  const wire = redis as unknown as Partial<Record<keyof RedisWire, unknown>>
  const pub = wire.pub as Partial<RedisWire['pub']> | undefined
  const sub = wire.sub as Partial<RedisWire['sub']> | undefined
  const missing = [
    typeof pub?.publish === 'function' && typeof pub.pipeline === 'function' && typeof pub.quit === 'function' ? null : 'pub',
    typeof sub?.subscribe === 'function' && typeof sub.unsubscribe === 'function' && typeof sub.off === 'function' ? null : 'sub',
    typeof wire.redisTransactionOrigin === 'string' ? null : 'redisTransactionOrigin',
    typeof wire.pubKey === 'function' ? null : 'pubKey',
    typeof wire.subKey === 'function' ? null : 'subKey',
    typeof wire.encodeMessage === 'function' ? null : 'encodeMessage',
    typeof wire.publishFirstSyncStep === 'function' ? null : 'publishFirstSyncStep',
    typeof wire.requestAwarenessFromOtherInstances === 'function' ? null : 'requestAwarenessFromOtherInstances',
    typeof wire.handleIncomingMessage === 'function' ? null : 'handleIncomingMessage',
  ].filter((name) => name !== null)
  if (missing.length > 0) {
    throw new Error(`@hocuspocus/extension-redis lacks ${missing.join(', ')}: the relay's scale-out needs the 3.4 line it pins`)
  }
  return redis as unknown as RedisWire
}

/**
 * The Redis extension with every hook guarded.
 *
 * @example
 * const redis = new GuardedRedis('redis://127.0.0.1:6379', metrics, log)
 * new Hocuspocus({ extensions: [redis] })
 */
export class GuardedRedis implements Extension {
  readonly extensionName = 'TidemarkRedis'
  readonly priority = 1000
  readonly #redis: Redis
  readonly #wire: RedisWire
  /** Per loaded room that changed: the pending state-vector exchange. */
  readonly #repairs = new Map<string, unknown>()
  readonly #timers: RelayTimers
  readonly #repairMs: number
  readonly #metrics: RelayMetrics
  readonly #log: RelayLog
  #down = false
  /** Loaded rooms whose channel is not subscribed (loaded while Redis was away): served here alone. */
  readonly #unshared = new Set<string>()
  /** Unloaded rooms whose channel could not be unsubscribed (Redis was away). */
  readonly #stale = new Set<string>()
  /** Changes published during this event-loop turn, sent together when it ends. */
  #outgoing: [channel: string, message: Buffer][] = []
  /** The Hocuspocus instance (`onConfigure`), whose loaded rooms a reconnection repairs. */
  #instance: Hocuspocus | undefined
  /** A repair of every loaded room is queued for the end of this event-loop turn. */
  #repairAllQueued = false
  /** This relay's name among the relays (the extension's identifier, first in every message it publishes). */
  readonly #identifier = `tidemark-relay-${process.pid}-${Math.random().toString(36).slice(2)}`
  /** The presence holders shared with the other relays (`sharePresence`); null before. */
  #shared: SharedPresence | null = null
  /** Messages other relays sent in chunks, put back together. */
  readonly #chunks = new ChunkAssembler(this.#identifier)

  /** Repairs are armed on `options.timers` (the relay's; default the global ones). */
  constructor(url: string, metrics: RelayMetrics, log: RelayLog, options: { readonly repairMs?: number; readonly timers?: RelayTimers } = {}) {
    this.#repairMs = options.repairMs ?? REPAIR_MS
    this.#timers = options.timers ?? GLOBAL_TIMERS
    this.#metrics = metrics
    this.#log = log
    this.#redis = new Redis({
      prefix: PREFIX,
      identifier: this.#identifier,
      createClient: () => {
        // Fail commands after a few reconnection attempts instead of queueing them for long.
        // Auto-pipelining writes the commands of one tick in one write: a publish per update
        // would otherwise be a system call each.
        const client = new IORedis(url, { maxRetriesPerRequest: 3, connectTimeout: 5000, enableAutoPipelining: true })
        client.on('error', (error: Error) => this.#trouble(error))
        // The extension publishes without awaiting in places (the answers to the other relays'
        // messages, the exchange when a room loads): a failed publish is counted and logged
        // here, not left to reject with no one to handle it.
        const publish = client.publish.bind(client) as (channel: string, message: Buffer) => Promise<number>
        client.publish = ((channel: string, message: Buffer) =>
          Promise.all(chunksOf(message).map((chunk) => publish(channel, chunk))).then(
            (counts) => counts.at(-1) ?? 0,
            (error: unknown) => {
              this.#trouble(error)
              return 0
            },
          )) as typeof client.publish
        let connectedBefore = false
        client.on('ready', () => {
          if (this.#down) this.#log('warn', 'Redis is reachable again')
          this.#down = false
          // A connection back after it was lost: publishes failed and messages were not
          // delivered meanwhile (the subscriber's channels are subscribed again by now). Or the
          // subscriber's first connection, with rooms loaded before it.
          const subscriber = client === this.#wire.sub
          if (connectedBefore || (subscriber && this.#unshared.size > 0)) this.#repairAll()
          // Only once the subscriber is ready has it subscribed its channels again: ended before, one would come back.
          if (subscriber) {
            // Chunks were lost while it was away: the messages they began are dropped.
            this.#chunks.clear()
            this.#endStaleSubscriptions()
            this.#shared?.subscribe()
          }
          connectedBefore = true
        })
        return client
      },
    })
    this.#wire = wireOf(this.#redis)
    // The extension's listener, behind the chunks' assembly.
    const wire = this.#wire
    wire.sub.off('messageBuffer', wire.handleIncomingMessage)
    wire.sub.on('messageBuffer', (channel, message) => {
      const whole = this.#chunks.take(channel, message)
      if (whole !== null) wire.handleIncomingMessage(channel, whole).catch((error: unknown) => this.#log('warn', `a message from Redis could not be applied: ${describeError(error)}`))
    })
  }

  /** Bytes of messages from other relays whose chunks have not all come yet. */
  get assemblingBytes(): number {
    return this.#chunks.bytes
  }

  async onConfigure(payload: onConfigurePayload): Promise<void> {
    this.#instance = payload.instance
    await this.#redis.onConfigure(payload)
  }

  /**
   * Shares with the other relays which writer holds which client id's presence in each room
   * (`presence`, the access gate's), so that each refuses another writer's first write under a
   * client id shown through another relay.
   */
  sharePresence(presence: RoomPresence): void {
    this.#shared = new SharedPresence(this.#wire, this.#identifier, presence, (work) => void this.#guard(work))
    this.#shared.subscribe()
  }

  /** Loaded rooms served by this relay alone, until Redis is back. */
  get unsharedRooms(): number {
    return this.#unshared.size
  }

  /** Unloaded rooms whose channel could not be unsubscribed: their subscriptions end when Redis is back. */
  get staleSubscriptions(): number {
    return this.#stale.size
  }

  /**
   * At the end of this event-loop turn: the state-vector exchange for every loaded room (for a
   * room not yet shared, its subscription first).
   */
  #repairAll(): void {
    if (this.#repairAllQueued) return
    this.#repairAllQueued = true
    setImmediate(() => {
      this.#repairAllQueued = false
      for (const [name, document] of this.#instance?.documents ?? []) {
        if (this.#unshared.has(name)) {
          void this.#share(name, document)
          continue
        }
        this.#shared?.announce(document, true)
        void this.#guard(() => this.#wire.publishFirstSyncStep(name, document))
      }
    })
  }

  /**
   * Subscribes the room's channel, then publishes its state vector and asks for its presence. A
   * room whose channel cannot be subscribed (Redis is away) is still opened, served by this relay
   * alone; it is shared when the connection to Redis is back.
   */
  async afterLoadDocument(payload: afterLoadDocumentPayload): Promise<void> {
    this.#unshared.add(payload.documentName)
    this.#shared?.loaded(payload.document)
    // Not connected: the load does not wait for the client's retries to fail again.
    if (this.#wire.pub.status !== 'ready' || this.#wire.sub.status !== 'ready') return
    let timer: unknown
    const deadline = new Promise<void>((resolve) => {
      timer = this.#timers.setTimeout(resolve, SHARE_WAIT_MS)
    })
    await Promise.race([this.#share(payload.documentName, payload.document), deadline])
    this.#timers.clearTimeout(timer)
  }

  /** Ends the subscriptions the subscriber renewed on reconnecting for rooms unloaded while Redis was away. */
  #endStaleSubscriptions(): void {
    for (const room of this.#stale) {
      if (this.#unshared.has(room) || this.#instance?.documents.has(room) === true) this.#stale.delete(room)
      else this.#unsubscribe(room)
    }
  }

  /** Shares a loaded room through Redis: it stays unshared when its channel cannot be subscribed. */
  async #share(room: string, document: Document): Promise<void> {
    const wire = this.#wire
    try {
      await wire.sub.subscribe(wire.subKey(room))
    } catch (error) {
      this.#trouble(error)
      return
    }
    if (!this.#unshared.delete(room)) {
      // Shared by another call, or unloaded meanwhile: then its unload came before this
      // subscription, which ends here unless the room is loaded again.
      const instance = this.#instance
      if (instance !== undefined && !instance.documents.has(room) && !instance.loadingDocuments.has(room)) {
        void this.#guard(() => wire.sub.unsubscribe(wire.subKey(room)))
      }
      return
    }
    // Who holds which presence, ahead of the presence itself.
    this.#shared?.announce(document, true)
    void this.#guard(() => wire.publishFirstSyncStep(room, document))
    void this.#guard(() => wire.requestAwarenessFromOtherInstances(room))
  }

  /** Publishes a change made here (by a client, the directory, a load) to the other relays. */
  async onChange(payload: onChangePayload): Promise<void> {
    if (payload.transactionOrigin === this.#wire.redisTransactionOrigin) return
    const message = new OutgoingMessage(payload.documentName).createSyncMessage()
    encoding.writeVarUint(message.encoder, messageYjsSyncStep2)
    encoding.writeVarUint8Array(message.encoder, payload.update)
    this.#scheduleRepair(payload)
    this.#publish(this.#wire.pubKey(payload.documentName), this.#wire.encodeMessage(message.toUint8Array()))
  }

  /**
   * Queues a publish for the end of this event-loop turn. Each socket message is handled in a
   * turn of its own, so publishing at once would cost a write to Redis per update (the client's
   * auto-pipelining gathers only the commands of one tick); at the end of the loop's I/O phase,
   * the changes of every socket read in that phase go out in one write, in order.
   */
  #publish(channel: string, message: Buffer): void {
    this.#outgoing.push([channel, message])
    if (this.#outgoing.length === 1) setImmediate(() => this.#sendPublishes())
  }

  #sendPublishes(): void {
    const batch = this.#outgoing
    if (batch.length === 0) return
    this.#outgoing = []
    void this.#guard(async () => {
      const pipeline = this.#wire.pub.pipeline()
      for (const [channel, message] of batch) for (const chunk of chunksOf(message)) pipeline.publish(channel, chunk)
      for (const [error] of (await pipeline.exec()) ?? []) if (error !== null) throw error
    })
  }

  /** The origin under which changes from the other relays are applied (they are not published again). */
  get remoteOrigin(): string {
    return this.#wire.redisTransactionOrigin
  }

  /** A state-vector exchange for the room within the repair period, unless one is pending. */
  #scheduleRepair(payload: onChangePayload): void {
    const room = payload.documentName
    if (this.#repairs.has(room)) return
    const timer = this.#timers.setTimeout(() => {
      this.#repairs.delete(room)
      void this.#guard(() => this.#redis.onChange(payload))
    }, this.#repairMs)
    this.#repairs.set(room, timer)
  }

  #cancelRepair(room: string): void {
    const timer = this.#repairs.get(room)
    if (timer === undefined) return
    this.#timers.clearTimeout(timer)
    this.#repairs.delete(room)
  }

  async onAwarenessUpdate(payload: onAwarenessUpdatePayload): Promise<void> {
    await this.#guard(() => this.#redis.onAwarenessUpdate(payload))
  }

  async beforeBroadcastStateless(payload: beforeBroadcastStatelessPayload): Promise<void> {
    await this.#guard(() => this.#redis.beforeBroadcastStateless(payload))
  }

  async beforeUnloadDocument(payload: beforeUnloadDocumentPayload): Promise<void> {
    await this.#guard(() => this.#redis.beforeUnloadDocument(payload))
  }

  /** Unsubscribes the room's channel, unless it is loaded again (a quick reconnection). */
  async afterUnloadDocument(payload: afterUnloadDocumentPayload): Promise<void> {
    const room = payload.documentName
    this.#cancelRepair(room)
    this.#unshared.delete(room)
    if (payload.instance.documents.has(room) || payload.instance.loadingDocuments.has(room)) return
    this.#shared?.unloaded(room)
    this.#chunks.forget(this.#wire.subKey(room))
    // Also a room that seems never subscribed: a subscription made after a failed attempt, or
    // renewed by the client, would otherwise outlive it (an unneeded unsubscribe is harmless).
    this.#unsubscribe(room)
  }

  /**
   * Ends the subscription of an unloaded room, without waiting: a command to an unreachable Redis
   * fails only after the client's retries. When it fails, the client subscribes the channel again
   * when it reconnects, so it is ended then.
   */
  #unsubscribe(room: string): void {
    const wire = this.#wire
    wire.sub.unsubscribe(wire.subKey(room)).then(
      () => this.#stale.delete(room),
      (error: unknown) => {
        this.#stale.add(room)
        this.#trouble(error)
      },
    )
  }

  /**
   * Sends what is queued and leaves Redis: `QUIT` lets Redis take the publishes before it, but
   * is waited for at most `QUIT_WAIT_MS` (a Redis that stopped answering never replies); then
   * both connections are closed. The extension's lock client is never used, so not quit.
   */
  async onDestroy(): Promise<void> {
    this.#sendPublishes()
    for (const room of [...this.#repairs.keys()]) this.#cancelRepair(room)
    let timer: unknown
    const deadline = new Promise<void>((resolve) => {
      timer = this.#timers.setTimeout(resolve, QUIT_WAIT_MS)
    })
    await Promise.race([this.#guard(() => this.#wire.pub.quit()), deadline])
    this.#timers.clearTimeout(timer)
    this.#wire.pub.disconnect(false)
    this.#wire.sub.disconnect(false)
  }

  async #guard(work: () => Promise<unknown>): Promise<void> {
    try {
      await work()
    } catch (error) {
      this.#trouble(error)
    }
  }

  #trouble(error: unknown): void {
    this.#metrics.redisErrors++
    if (!this.#down) this.#log('warn', `Redis: ${describeError(error)} (rooms keep working on this relay; other relays miss its updates until Redis is back)`)
    this.#down = true
  }
}
