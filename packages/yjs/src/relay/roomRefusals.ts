/**
 * What the relay's refusals mean to a room: which denials are temporary (the room joins again
 * later) and which docs can no longer sync (an update of theirs was refused).
 */
import type * as Y from 'yjs'

/** The relay's reason for a token past its `exp`, at authentication or when it closes an open room at `exp`. */
export const TOKEN_EXPIRED = 'tidemark:token-expired'

/** The relay's refusal of a room connection that sent more messages than its rate allows: over once the room joins again. */
export const RATE_LIMITED = 'rate-limited'

/**
 * The relay's reasons for a room it cannot open *now* (`OpenRefusalKind` of the relay): its store
 * or Redis failed while loading the room, or it holds as many rooms as it may. Not the client's
 * fault and over once the relay recovers: the room joins again after a jittered delay. Every other
 * denial (no, bad or expired static token, bad claims, bad room, room not allowed, a reason that
 * is not the relay's) sticks.
 */
const TEMPORARY_DENIALS = ['tidemark:store-unavailable', 'tidemark:redis-unavailable', 'tidemark:too-many-rooms']

/**
 * Whether a PermissionDenied reason is one of the relay's temporary ones (`tidemark:<kind>` or `tidemark:<kind> <detail>`).
 *
 * @example
 * temporaryDenial('tidemark:too-many-rooms 2 rooms are loaded') // true
 */
export function temporaryDenial(reason: string): boolean {
  return TEMPORARY_DENIALS.some((kind) => reason === kind || reason.startsWith(`${kind} `))
}

/** Docs whose update a relay refused: their clocks have a gap no relay will fill, so they cannot sync again. */
export const refusedDocs = new WeakMap<Y.Doc, string>()

/**
 * Why `doc` can no longer sync through a relay (an update of it was refused), or undefined.
 *
 * @example
 * refusalOf(doc) // 'tidemark:refused foreign-source s9'
 */
export function refusalOf(doc: Y.Doc): string | undefined {
  return refusedDocs.get(doc)
}
