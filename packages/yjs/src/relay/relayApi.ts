/**
 * What an application holds of a relay connection (`connectRelay`): the connection and the
 * rooms it joined. Implemented by `RelayConnection`.
 */
import type { Awareness } from 'y-protocols/awareness'
import type * as Y from 'yjs'

/**
 * Options of `relay.join`; all optional.
 *
 * @example
 * relay.join(doc, 'fleet-a/d07', { awareness: new Awareness(doc) })
 */
export interface JoinOptions {
  /** Presence in this room (y-protocols `Awareness` of the doc): exchanged with the relay, counted as `peers`. */
  readonly awareness?: Awareness
}

/**
 * One document joined to a relay room; `destroy` leaves the room (the doc keeps its content).
 *
 * @example
 * const handle: RelayRoomHandle = relay.join(doc, 'fleet-a/d07')
 * handle.destroy()
 */
export interface RelayRoomHandle {
  /** The room name on the relay. */
  readonly room: string
  /** The doc synced with it. */
  readonly doc: Y.Doc
  /** Leaves the room and stops reporting its status. */
  destroy(): void
}

/**
 * A connection to a relay: `join` documents to rooms on its one socket, `destroy` closes it.
 *
 * @example
 * const relay: Relay = connectRelay({ url: 'ws://127.0.0.1:8787', token })
 */
export interface Relay {
  /** The relay's URL: with several, the one the current socket uses (or the next one will). */
  readonly url: string
  /**
   * Syncs `doc` with `room`: authenticates it with the token, exchanges state, sends local
   * updates and reports into the doc's sync status (`connected` once the relay answered,
   * `pendingLocalUpdates` until it acknowledged, `refusal` when it refused). A refused room is
   * not retried; join it again with a fresh `Y.Doc` once the cause is fixed (a doc whose update
   * was refused cannot sync again: the join throws). A room the relay cannot open now (its store
   * or Redis failed, too many rooms) is not refused: reported through `onError`, it joins again
   * after a jittered delay.
   */
  join(doc: Y.Doc, room: string, options?: JoinOptions): RelayRoomHandle
  /**
   * Closes the socket and stays offline (the rooms stay joined, their updates pending) until
   * `connect()`: for an application that knows it is offline (the browser's `offline` event).
   */
  disconnect(): void
  /** Connects again at once after `disconnect()` (to the first relay of a list); does nothing otherwise. */
  connect(): void
  /** Leaves every room and closes the socket. */
  destroy(): void
}
