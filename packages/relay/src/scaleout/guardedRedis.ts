/**
 * Scale-out: several relays serve the same rooms, exchanging updates and awareness through Redis
 * (@hocuspocus/extension-redis). Wrapped so that Redis trouble never ends the process nor closes
 * a room: publishes fail while Redis is down and are dropped while it does not answer
 * (`UnansweredPublishes`); a room loaded meanwhile is served by this relay alone, and shared
 * (subscribed, then the state-vector exchange below) once Redis is back.
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
 * and for every loaded room when Redis is back (connected again, or answering again): what the
 * relays' clients changed meanwhile (publishes failed or dropped, messages never delivered),
 * presence included, crosses then, without waiting for the room's next change.
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
import type { RelayedUpdates } from '../store/relayedUpdates.ts'
import type { RoomStore } from '../store/roomStore.ts'
import { ChunkAssembler, chunksOf } from './messageChunks.ts'
import { PublishQueue, type QueuedPublish } from './publishQueue.ts'
import { type RedisWire, wireOf } from './redisWire.ts'
import { RoomChannels } from './roomChannels.ts'
import { SharedPresence } from './sharedPresence.ts'
import { changeSender, MarkedChanges, StoredMarks } from './storedMarks.ts'
import { UnansweredPublishes } from './unansweredPublishes.ts'

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

/** Unanswered publishes past which Redis counts as not answering (`maxUnansweredBytes`; the relay gives 4 × `maxRoomBytes`). */
export const MAX_UNANSWERED_BYTES = 64 << 20

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
  /** Which loaded rooms are shared (their channel subscribed), and subscriptions left to end. */
  readonly #channels: RoomChannels
  /** Changes and store write marks, written to Redis in batches. */
  readonly #outgoing: PublishQueue
  /** The Hocuspocus instance (`onConfigure`), whose loaded rooms a reconnection repairs. */
  #instance: Hocuspocus | undefined
  /** A repair of every loaded room is queued for the end of this event-loop turn. */
  #repairAllQueued = false
  /** This relay's name among the relays (the extension's identifier, first in every message it publishes). */
  readonly #identifier = `tidemark-relay-${process.pid}-${Math.random().toString(36).slice(2)}`
  /** The presence holders shared with the other relays (`sharePresence`); null before. */
  #shared: SharedPresence | null = null
  /** The store write marks shared with the other relays (`storeMarks`); null before. */
  #marks: StoredMarks | null = null
  /** This relay's changes as the marks cover them, and the updates the others' make here. */
  readonly #changes: MarkedChanges
  /** Messages other relays sent in chunks, put back together. */
  readonly #chunks = new ChunkAssembler(this.#identifier)
  /** Publishes Redis has not answered; dropped while it does not answer. */
  readonly #unanswered: UnansweredPublishes

  /**
   * Repairs and the wait for Redis's answers are armed on `options.timers` (the relay's; default
   * the global ones). Unanswered publishes past `maxUnansweredBytes` (default
   * `MAX_UNANSWERED_BYTES`) count as Redis not answering. Changes are written at least
   * `publishSpacingMs` apart while they keep coming (default `PUBLISH_SPACING_MS`, in real time).
   */
  constructor(
    url: string,
    metrics: RelayMetrics,
    log: RelayLog,
    options: { readonly repairMs?: number; readonly timers?: RelayTimers; readonly maxUnansweredBytes?: number; readonly publishSpacingMs?: number } = {},
  ) {
    this.#repairMs = options.repairMs ?? REPAIR_MS
    this.#timers = options.timers ?? GLOBAL_TIMERS
    this.#metrics = metrics
    this.#log = log
    this.#outgoing = new PublishQueue((batch) => this.#sendPublishes(batch), options.publishSpacingMs === undefined ? {} : { spacingMs: options.publishSpacingMs })
    this.#unanswered = new UnansweredPublishes({
      timers: this.#timers,
      maxBytes: options.maxUnansweredBytes ?? MAX_UNANSWERED_BYTES,
      metrics,
      events: { cutOff: (why) => this.#trouble(new Error(`${why}; publishes are dropped until it answers`)), answered: () => this.#answeredAgain() },
    })
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
        // here, not left to reject with no one to handle it. While Redis does not answer, it is
        // dropped (all its chunks: a message never goes out in part).
        const publish = client.publish.bind(client) as (channel: string, message: Buffer) => Promise<number>
        client.publish = ((channel: string, message: Buffer) =>
          (this.#unanswered.send(message.byteLength, 1, () => Promise.all(chunksOf(message).map((chunk) => publish(channel, chunk)))) ?? Promise.resolve([0])).then(
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
          if (client === this.#wire.pub) this.#unanswered.reconnected()
          // A connection back after it was lost: publishes failed and messages were not
          // delivered meanwhile (the subscriber's channels are subscribed again by now). Or the
          // subscriber's first connection, with rooms loaded before it.
          const subscriber = client === this.#wire.sub
          if (connectedBefore || (subscriber && this.#channels.unshared > 0)) this.#repairAll()
          // Only once the subscriber is ready has it subscribed its channels again: ended before, one would come back.
          if (subscriber) {
            // Chunks were lost while it was away: the messages they began are dropped.
            this.#chunks.clear()
            this.#channels.endStale()
            this.#shared?.subscribe()
            this.#marks?.subscribe()
          }
          connectedBefore = true
        })
        return client
      },
    })
    this.#wire = wireOf(this.#redis)
    this.#changes = new MarkedChanges(this.#identifier, this.#wire)
    this.#channels = new RoomChannels(this.#wire, {
      rooms: () => this.#instance,
      cutOff: () => this.#unanswered.cutOff,
      shared: (room, document) => this.#exchange(room, document),
      trouble: (error) => this.#trouble(error),
    })
    // The extension's listener, behind the chunks' assembly.
    const wire = this.#wire
    wire.sub.off('messageBuffer', wire.handleIncomingMessage)
    wire.sub.on('messageBuffer', (channel, message) => {
      const whole = this.#chunks.take(channel, message)
      if (whole === null) return
      const changeOf = changeSender(whole)
      // Its own changes come back too; the extension skips only what bears its bare identifier.
      if (changeOf === this.#identifier) return
      this.#changes.applying(changeOf, () => {
        wire.handleIncomingMessage(channel, whole).catch((error: unknown) => this.#log('warn', `a message from Redis could not be applied: ${describeError(error)}`))
      })
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

  /**
   * Shares store write marks with the other relays: this relay tells them when `store` has
   * written its changes, and holds theirs in `relayed` until they say the same. Only for a store
   * the other relays may share (PostgreSQL), named `database` (`sharedDatabaseName`): a relay
   * on another database writes this relay's changes itself. Without it, this relay's changes are
   * not marked, and every relay writes them.
   */
  storeMarks(store: RoomStore, relayed: RelayedUpdates, database: string): void {
    this.#changes.hold(relayed)
    this.#marks = new StoredMarks(
      this.#wire,
      { identifier: this.#identifier, database },
      relayed,
      (channel, message) => this.#publish(channel, message),
      (work) => void this.#guard(work),
      (why) => this.#log('warn', why),
    )
    store.writeMarks = this.#marks
    this.#marks.subscribe()
  }

  /** Loaded rooms served by this relay alone, until Redis is back. */
  get unsharedRooms(): number {
    return this.#channels.unshared
  }

  /** Bytes of publishes sent to Redis that it has not answered yet. */
  get unansweredBytes(): number {
    return this.#unanswered.bytes
  }

  /** Unloaded rooms whose channel could not be unsubscribed: their subscriptions end when Redis is back. */
  get staleSubscriptions(): number {
    return this.#channels.stale
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
        if (this.#channels.isUnshared(name)) {
          void this.#channels.share(name, document)
          continue
        }
        this.#exchange(name, document)
      }
    })
  }

  /**
   * The exchange for a shared room: who holds which presence here, the state vector, the room's
   * presence (what Redis did not take meanwhile, on a reconnection), and the question for theirs.
   */
  #exchange(room: string, document: Document): void {
    const wire = this.#wire
    this.#shared?.announce(document, true)
    void this.#guard(() => wire.publishFirstSyncStep(room, document))
    if (document.awareness.getStates().size > 0) {
      const presence = new OutgoingMessage(room).createAwarenessUpdateMessage(document.awareness).toUint8Array()
      void this.#guard(() => wire.pub.publish(wire.pubKey(room), wire.encodeMessage(presence)))
    }
    void this.#guard(() => wire.requestAwarenessFromOtherInstances(room))
  }

  /**
   * Redis answered everything sent before it stopped answering (its connections stayed open): what
   * was dropped meanwhile is repaired as after a reconnection, and the subscriptions of rooms
   * unloaded meanwhile are ended.
   */
  #answeredAgain(): void {
    if (this.#down) this.#log('warn', 'Redis is reachable again')
    this.#down = false
    this.#channels.endStale()
    this.#repairAll()
  }

  /**
   * Subscribes the room's channel, then publishes its state vector and asks for its presence. A
   * room whose channel cannot be subscribed (Redis is away) is still opened, served by this relay
   * alone; it is shared when the connection to Redis is back.
   */
  async afterLoadDocument(payload: afterLoadDocumentPayload): Promise<void> {
    this.#channels.loaded(payload.documentName)
    this.#shared?.loaded(payload.document)
    this.#changes.watch(payload.document)
    // Not connected, or Redis does not answer: the load does not wait for Redis.
    if (this.#wire.pub.status !== 'ready' || this.#wire.sub.status !== 'ready' || this.#unanswered.cutOff) return
    let timer: unknown
    const deadline = new Promise<void>((resolve) => {
      timer = this.#timers.setTimeout(resolve, SHARE_WAIT_MS)
    })
    await Promise.race([this.#channels.share(payload.documentName, payload.document), deadline])
    this.#timers.clearTimeout(timer)
  }

  /** Publishes a change made here (by a client, the directory, a load) to the other relays. */
  async onChange(payload: onChangePayload): Promise<void> {
    if (payload.transactionOrigin === this.#wire.redisTransactionOrigin) return
    const message = new OutgoingMessage(payload.documentName).createSyncMessage()
    encoding.writeVarUint(message.encoder, messageYjsSyncStep2)
    encoding.writeVarUint8Array(message.encoder, payload.update)
    this.#scheduleRepair(payload)
    // Marked as a change only when this relay's store write marks cover it (its store may be the
    // others'): the others then hold it until they are told it is stored, and write it at once otherwise.
    const bytes = message.toUint8Array()
    this.#publish(this.#wire.pubKey(payload.documentName), this.#changes.framed(bytes))
  }

  /**
   * Queues a publish (`PublishQueue`). Each socket message is handled in a turn of its own, so
   * publishing at once would cost a write to Redis per update (the client's auto-pipelining
   * gathers only the commands of one tick); queued, the changes of many sockets go out in one
   * write, in order.
   */
  #publish(channel: string, message: Buffer): void {
    this.#outgoing.push(channel, message)
  }

  #sendPublishes(batch: readonly QueuedPublish[]): void {
    const bytes = batch.reduce((sum, [, message]) => sum + message.byteLength, 0)
    void this.#guard(async () => {
      const sent = this.#unanswered.send(bytes, batch.length, () => {
        const pipeline = this.#wire.pub.pipeline()
        for (const [channel, message] of batch) for (const chunk of chunksOf(message)) pipeline.publish(channel, chunk)
        return pipeline.exec()
      })
      for (const [error] of (await sent) ?? []) if (error !== null) throw error
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
    if (!this.#channels.unloaded(room)) return
    this.#shared?.unloaded(room)
    this.#chunks.forget(this.#wire.subKey(room))
  }

  /**
   * Sends what is queued and leaves Redis: `QUIT` lets Redis take the publishes before it, but
   * is waited for at most `QUIT_WAIT_MS` (a Redis that stopped answering never replies); then
   * both connections are closed. The extension's lock client is never used, so not quit.
   */
  async onDestroy(): Promise<void> {
    this.#outgoing.stop()
    this.#unanswered.stop()
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
