/**
 * The members of @hocuspocus/extension-redis's `Redis` that the relay's wrapper uses: private in
 * its types, stable in the 3.4 line the relay pins, and checked when the relay starts.
 */
import type { Redis } from '@hocuspocus/extension-redis'
import type { Document } from '@hocuspocus/server'
import type { PresenceWire } from './sharedPresence.ts'

/** The extension's members this wrapper publishes through (private in its types, stable in 3.4). */
export interface RedisWire {
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
export function wireOf(redis: Redis): RedisWire {
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
