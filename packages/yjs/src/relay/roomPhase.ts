/**
 * Where a relay room is on the current socket (relayRoom.ts moves it along), in this order:
 * waiting, live on the socket, ended.
 */

/** Waiting for the socket; authenticates once it is open. */
export const IDLE = 0
/** Closed by the relay without a refusal, waiting for its rejoin delay (its own timer); or denied for a while, waiting for a new socket (no timer). */
export const DELAYED = 1
/** Its token sent. */
export const AUTHENTICATING = 2
/** Authenticated, our step 1 sent. */
export const SYNCING = 3
/** The relay's step 2 arrived: in sync. */
export const SYNCED = 4
export const REFUSED = 5
export const DESTROYED = 6

/**
 * Sent its Auth, and the relay has not opened it yet: its Auth, then its step 1, waits for the
 * relay's answer.
 *
 * @example
 * if (opening(phase)) return true // the relay owes this room an answer
 */
export const opening = (phase: number): boolean => phase === AUTHENTICATING || phase === SYNCING
