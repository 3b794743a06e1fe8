/**
 * Why the relay refused something, as the client sees it and as metrics count it.
 */

/**
 * Reasons an update (or a message on an open room connection) is refused. The client first gets
 * the stateless message `{"tidemark":"refused","room":…,"reason":…}`, then that room's
 * connection is closed with the reason `tidemark:refused <reason>`.
 *
 * @example
 * const reason: UpdateRefusalKind = 'foreign-source' // sent as 'foreign-source s-B'
 */
export type UpdateRefusalKind =
  | 'read-only'
  | 'foreign-replica'
  | 'foreign-meta'
  | 'foreign-source'
  | 'malformed-entry'
  | 'malformed-update'
  | 'malformed-message'
  | 'unknown-root'
  | 'nested-type'
  | 'missing-origin'
  | 'client-id-squatting'
  | 'too-large'
  | 'rate-limited'
  | 'room-too-large'

/**
 * Reasons a room is not opened: the client gets Hocuspocus' permission-denied message with the
 * reason `tidemark:<kind>[ <detail>]`.
 *
 * @example
 * const reason: OpenRefusalKind = 'token-expired' // 'tidemark:token-expired'
 */
export type OpenRefusalKind =
  | 'no-token'
  | 'bad-token'
  | 'bad-signature'
  | 'token-expired'
  | 'bad-claims'
  | 'bad-room'
  | 'room-not-allowed'
  | 'too-many-rooms'
  | 'subject-room-limit'
  | 'store-unavailable'

/**
 * Reasons a whole socket is closed (WebSocket close reason `tidemark:<kind>`).
 *
 * @example
 * const reason: SocketRefusalKind = 'auth-timeout'
 */
export type SocketRefusalKind = 'auth-timeout' | 'unauthenticated-limit' | 'too-large' | 'shutdown'

/**
 * Reasons a whole socket is cut, with no close frame (it would wait behind what is queued for
 * the peer): `slow-reader`, more queued for it than `maxQueuedBytes`; `unresponsive`, it answered
 * no ping and read nothing of what was queued for it within Hocuspocus' timeout.
 *
 * @example
 * const reason: SocketCutKind = 'slow-reader'
 */
export type SocketCutKind = 'slow-reader' | 'unresponsive'

/**
 * Every refusal kind; the `reason` label of `tidemark_relay_refusals_total`.
 *
 * @example
 * const kind: RefusalKind = 'rate-limited'
 */
export type RefusalKind = UpdateRefusalKind | OpenRefusalKind | SocketRefusalKind | SocketCutKind

/** Longest detail kept in a reason: details quote names a client chose. */
const MAX_DETAIL = 160

/**
 * A refusal: its kind (the metric label) and the text the client receives.
 *
 * @example
 * const refusal = new Refusal('foreign-replica', 'B')
 * refusal.text // 'foreign-replica B'
 */
export class Refusal {
  readonly kind: RefusalKind
  readonly text: string

  constructor(kind: RefusalKind, detail?: string) {
    this.kind = kind
    const clipped = detail === undefined || detail.length <= MAX_DETAIL ? detail : `${detail.slice(0, MAX_DETAIL)}…`
    this.text = clipped === undefined || clipped.length === 0 ? kind : `${kind} ${clipped}`
  }
}

/**
 * The error a Hocuspocus hook throws to refuse opening a room: Hocuspocus sends `reason` to the
 * client as permission denied. The message is empty on purpose: Hocuspocus logs hook errors that
 * have one, and a refusal is not a server error.
 *
 * @example
 * throw new OpenRefused(new Refusal('token-expired'))
 */
export class OpenRefused extends Error {
  readonly refusal: Refusal
  /** What the client receives: `tidemark:<kind>[ <detail>]`. */
  readonly reason: string

  constructor(refusal: Refusal) {
    super('')
    this.refusal = refusal
    this.reason = `tidemark:${refusal.text}`
  }
}

/**
 * The stateless payload sent before a refused room connection is closed.
 *
 * @example
 * refusedPayload('fleet-a/d07', new Refusal('read-only')) // '{"tidemark":"refused","room":"fleet-a/d07","reason":"read-only"}'
 */
export function refusedPayload(room: string, refusal: Refusal): string {
  return JSON.stringify({ tidemark: 'refused', room, reason: refusal.text })
}

/**
 * The stateless payload that tells a client its presence was dropped because its room shows as
 * many presences as it may (`room-presence-limit <cap>`). Not a refusal: the room's connection
 * stays open, its updates are taken, and a later presence is taken once others leave.
 *
 * @example
 * presenceDroppedPayload('fleet-a/d07', 512) // '{"tidemark":"presence-dropped","room":"fleet-a/d07","reason":"room-presence-limit 512"}'
 */
export function presenceDroppedPayload(room: string, cap: number): string {
  return JSON.stringify({ tidemark: 'presence-dropped', room, reason: `room-presence-limit ${cap}` })
}

/**
 * Clips a name a client chose for use in a refusal detail.
 *
 * @example
 * clipName('s-B') // 's-B'
 */
export function clipName(value: unknown): string {
  const text = typeof value === 'string' ? value : String(value)
  return text.length > 80 ? `${text.slice(0, 80)}…` : text
}
