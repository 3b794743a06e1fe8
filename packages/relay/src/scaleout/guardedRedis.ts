/**
 * Scale-out: several relays serve the same rooms, exchanging updates and awareness through Redis
 * (@hocuspocus/extension-redis). Wrapped so that Redis trouble never ends the process: the
 * extension's publishes reject while Redis is down, and Hocuspocus does not await them.
 *
 * Its `onStoreDocument` lock (Redlock) is left out: the room store needs no lock, as every relay
 * writes only the updates its own clients sent and compaction is guarded by snapshot versions.
 */
import { Redis } from '@hocuspocus/extension-redis'
import type {
  afterLoadDocumentPayload,
  afterUnloadDocumentPayload,
  beforeBroadcastStatelessPayload,
  beforeUnloadDocumentPayload,
  Extension,
  onAwarenessUpdatePayload,
  onChangePayload,
  onConfigurePayload,
} from '@hocuspocus/server'
import IORedis from 'ioredis'
import type { RelayMetrics } from '../metrics/relayMetrics.ts'
import { OpenRefused, Refusal } from '../protocol/refusal.ts'
import { describeError, type RelayLog } from '../relayLog.ts'

/** Redis channel prefix: channels are `tidemark:<room>`. */
const PREFIX = 'tidemark'

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
  readonly #metrics: RelayMetrics
  readonly #log: RelayLog
  #down = false

  constructor(url: string, metrics: RelayMetrics, log: RelayLog) {
    this.#metrics = metrics
    this.#log = log
    this.#redis = new Redis({
      prefix: PREFIX,
      identifier: `tidemark-relay-${process.pid}-${Math.random().toString(36).slice(2)}`,
      createClient: () => {
        // Fail commands after a few reconnection attempts instead of queueing them for long.
        const client = new IORedis(url, { maxRetriesPerRequest: 3, connectTimeout: 5000 })
        client.on('error', (error: Error) => this.#trouble(error))
        client.on('ready', () => {
          if (this.#down) this.#log('warn', 'Redis is reachable again')
          this.#down = false
        })
        return client
      },
    })
  }

  async onConfigure(payload: onConfigurePayload): Promise<void> {
    await this.#redis.onConfigure(payload)
  }

  /** Subscribes the room's channel; a room that cannot be shared through Redis is not served. */
  async afterLoadDocument(payload: afterLoadDocumentPayload): Promise<void> {
    try {
      await this.#redis.afterLoadDocument(payload)
    } catch (error) {
      this.#trouble(error)
      payload.document.destroy()
      throw new OpenRefused(new Refusal('redis-unavailable', 'the room could not be shared with the other relays'))
    }
  }

  async onChange(payload: onChangePayload): Promise<void> {
    await this.#guard(() => this.#redis.onChange(payload))
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

  async afterUnloadDocument(payload: afterUnloadDocumentPayload): Promise<void> {
    await this.#guard(() => this.#redis.afterUnloadDocument(payload))
  }

  async onDestroy(): Promise<void> {
    await this.#guard(() => this.#redis.onDestroy())
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
