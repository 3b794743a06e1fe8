/**
 * What a relay room needs from the relay client that owns its socket (relayConnection.ts gives
 * it): the socket's state and sends, the rate and clock of its pace, its rejoin delays, and
 * where it reports what it opened, was denied or works around.
 */
import type { PaceClock } from './roomPace.ts'

/** Where the relay socket is: a room can only talk while it is `open`. */
export type SocketState = 'connecting' | 'open' | 'closed'

/** What a room needs from the relay that owns the socket. */
export interface RoomLink extends PaceClock {
  /** Largest message a room sends (`connectRelay`'s `maxMessageBytes`). */
  readonly maxMessageBytes: number
  socketState(): SocketState
  /** Sends on the open socket (dropped otherwise: a room only sends while open). */
  send(bytes: Uint8Array<ArrayBuffer>): void
  /** Jittered delay of rejoin attempt `attempt` (0-based). */
  delay(attempt: number): number
  /** A room may authenticate again (its rejoin delay ended). */
  ready(): void
  /** A room that sent its Auth is open on the relay (in sync), or no longer opening (denied, its socket closed, it left). */
  settled(): void
  /**
   * The server denied `room`'s authentication: that name cannot authenticate again on this
   * socket. With `retryAttempt` the denial was temporary: the room waits (not idle) for a new
   * socket, which the relay client opens after the jittered delay of that attempt (one socket
   * for every room waiting so).
   */
  denied(room: string, retryAttempt?: number): void
  /** The token is a function, read again for every join: an expired one can be replaced. */
  renewable(): boolean
  /** Reports what the client works around (the `onError` of `connectRelay`). */
  fail(message: string): void
  /** A room got in sync: the relay serves this socket. */
  synced(): void
}
