/**
 * The relay's state for one room connection (one room on one socket): what it may write, its
 * rate limit, the order in which its messages are checked, and the updates held until what they
 * depend on arrives.
 */
import type { AccessGrant } from '../auth/accessGrant.ts'
import type { StateNeed } from '../authorize/authorizeUpdate.ts'
import type { RoomKind } from '../rooms/roomName.ts'
import type { MessageParts } from './messageParts.ts'
import type { SocketGuard } from './socketGuard.ts'
import { TokenBucket } from './tokenBucket.ts'

/**
 * The hook context of a room connection: the socket's guard (set when the socket connects) and
 * the connection's gate (added by `onAuthenticate`).
 *
 * @example
 * const gate = (context as RelayContext).tidemark?.gate
 */
export interface RelayContext {
  readonly socket?: SocketGuard
  readonly tidemark?: { readonly gate: ConnectionGate }
}

/**
 * An update waiting for the updates it depends on, the sync step it came in, and the document
 * states it waits for (`met` of them known to be reached): it is checked again only once the
 * document has reached them all.
 *
 * @example
 * const held: HeldUpdate = { payload: update, step: SYNC_STEP.update, needs: verdict.needs, met: 0 }
 */
export interface HeldUpdate {
  readonly payload: Uint8Array
  readonly step: number
  needs: readonly StateNeed[]
  met: number
}

/**
 * Per room connection. Hocuspocus runs `beforeHandleMessage` for back-to-back messages of one
 * connection concurrently and applies each once its hook resolves; `turn` chains them, so a
 * message is checked only after the previous one was applied.
 *
 * @example
 * const gate = new ConnectionGate(grant, { kind: 'device', fleet: 'fleet-a' }, 'fleet-a/d07', { perSecond: 100, burst: 1000 }, Date.now)
 */
export class ConnectionGate {
  readonly grant: AccessGrant
  readonly room: RoomKind
  readonly roomName: string
  readonly bucket: TokenBucket
  readonly held: HeldUpdate[] = []
  heldBytes = 0
  /** The document's version (`AccessGate`) when the held updates were last looked at. */
  heldVersion = -1
  /** Client ids whose presence this connection holds in its room (`RoomPresence`). */
  readonly presence = new Set<number>()
  /** The message being received in parts, or null. */
  parts: MessageParts | null = null
  /** Refused, expired or closed: its messages still waiting for their turn are dropped (`tidemark_relay_closed_connection_messages_dropped_total`). */
  ended = false
  #chain: Promise<void> = Promise.resolve()

  /** Bytes its socket has received so far (a message in parts moves while they grow). */
  readonly received: () => number

  constructor(grant: AccessGrant, room: RoomKind, roomName: string, rate: { readonly perSecond: number; readonly burst: number }, now: () => number, received: () => number = () => 0) {
    this.grant = grant
    this.received = received
    this.room = room
    this.roomName = roomName
    this.bucket = new TokenBucket(rate.perSecond, rate.burst, now)
  }

  /**
   * Waits for the previous message's turn to end; returns the function that ends this one.
   * Call it once the message has been applied (a macrotask after the hook resolved).
   */
  async turn(): Promise<() => void> {
    const previous = this.#chain
    let end!: () => void
    this.#chain = new Promise<void>((resolve) => {
      end = resolve
    })
    await previous
    return end
  }

  /** Drops the held updates; returns how many there were. */
  dropHeld(): number {
    const n = this.held.length
    this.held.length = 0
    this.heldBytes = 0
    return n
  }
}
