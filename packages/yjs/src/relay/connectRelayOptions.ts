import { assertKnownOptions } from '@tidemark/engine/adapter'
import { checkJitterOptions, type ReconnectJitterOptions } from '../transport/reconnectJitter.ts'

/** Default `tokenTimeoutMs`: the relay's own deadline for a socket's first authentication (its `authTimeoutMs`). */
export const DEFAULT_TOKEN_TIMEOUT_MS = 10_000

/**
 * Default `maxPendingRooms`: 256 rooms named and not opened cost about 200 kB of the relay's
 * unauthenticated budget (1 MiB by default) with a 256-byte token, and stay far from its 2,048 names.
 */
export const DEFAULT_MAX_PENDING_ROOMS = 256

/** Default `maxMessageBytes`: the relay's default `TIDEMARK_MAX_MESSAGE_BYTES` (1 MiB). */
export const DEFAULT_MAX_MESSAGE_BYTES = 1 << 20

/** Default `updatesPerSecond`: half the relay's default rate per room connection (100), which every message of the room after its Auth (but its Close) counts against. */
export const DEFAULT_UPDATES_PER_SECOND = 50

/** Default `silenceMs`: as long as the relay's own wait for a pong before it drops a client (Hocuspocus' `timeout`). */
export const DEFAULT_SILENCE_MS = 30_000

/**
 * The part of a WebSocket the relay client uses: the browser's `WebSocket` and the `ws`
 * package's both fit.
 *
 * @example
 * const socket: RelaySocket = new WebSocket('ws://127.0.0.1:8787')
 */
export interface RelaySocket {
  /** Set to `'arraybuffer'` before the socket opens. */
  binaryType: string
  /** Sends one binary message. */
  send(data: Uint8Array<ArrayBuffer>): void
  /** Closes the socket. */
  close(code?: number, reason?: string): void
  /** Listens to `open`, `message` (binary `data`), `close` and `error`. */
  addEventListener(type: 'open' | 'message' | 'close' | 'error', listener: (event: unknown) => void): void
}

/**
 * A token, or a function returning one (sync or async): called again for every connection, so
 * it can return a fresh token when the last one expired.
 *
 * @example
 * const token: RelayToken = async () => (await (await fetch('/dev/token?role=device&room=fleet-a/d07')).json()).token
 */
export type RelayToken = string | (() => string | Promise<string>)

/**
 * Options of `connectRelay`: `url` and `token` are required.
 *
 * @example
 * connectRelay({ url: 'wss://relay.example.com', token: () => session.token(), jitter: { baseMs: 500, capMs: 10_000 } })
 */
export interface ConnectRelayOptions {
  /**
   * The relay, e.g. `wss://relay.example.com` or `ws://127.0.0.1:8787`; or several relays that
   * share their rooms (a scale-out group), in order of preference: the client stays on a relay
   * while it answers, a connection that fails before the relay said anything moves the next
   * attempt to the next URL of the list (after the last, the first again), and `connect()` after
   * `disconnect()` starts from the first.
   */
  readonly url: string | readonly string[]
  /** The JWT the relay checks for every room (a function is read again on every connection). */
  readonly token: RelayToken
  /**
   * Longest wait for a token function's promise, in ms (default 10,000: the relay's own deadline
   * for a socket's first authentication). A read that takes longer is given up, reported through
   * `onError`, and a jittered reconnect reads again; a read whose socket closed first is given up
   * too, and the next socket reads again. Timed on `jitter.setTimeout`.
   */
  readonly tokenTimeoutMs?: number
  /**
   * How long the socket may bring nothing before it is taken for dead, in ms (default 30,000;
   * `Infinity` turns the check off). A connection can die without a close (a laptop asleep, a NAT
   * that forgot it, a lost network path), and the browser keeps such a socket open for minutes
   * or more. Once half of this passed with nothing from the relay, the client asks it (a sync
   * step 1 of a room in sync, which the relay answers); with nothing by the next half, the
   * socket is closed, reported through `onError`, and a jittered reconnect syncs every room again.
   * With no room in sync, a room opening has asked already (its token, then its sync step 1), and
   * its unanswered question counts the same: a relay that accepts the socket but never opens its
   * rooms is left too. A socket on which no room has sent anything yet (the token function still
   * reading) is not judged. Timed on `jitter.setTimeout`.
   */
  readonly silenceMs?: number
  /**
   * Rooms that may be opening at once on the socket: their Auth sent, not in sync yet (default
   * 256). The relay counts every room a socket named and has not opened against its
   * unauthenticated budget (by default 1 MiB, 512 bytes per room name besides its messages, at
   * most 2,048 names) and closes a socket past it; so a dashboard joining thousands of rooms
   * opens them in waves: more once at most half this many are still opening. The client opens
   * no more than `512 KiB / (600 + token length)` at once whatever this says, and halves this
   * bound each time the relay closes a socket for its budget (4413); a socket opened 10 minutes
   * or more after that doubles it again, up to this. Lower it for a relay with a smaller budget.
   */
  readonly maxPendingRooms?: number
  /**
   * Largest message a room sends, in bytes (default 1 MiB, the relay's default
   * `TIDEMARK_MAX_MESSAGE_BYTES`). The relay closes the whole socket on a larger one before it can
   * tell which room sent it; so a step 2 or update that would be larger goes in parts within it,
   * which the relay applies together once the last came; presences larger together go in groups
   * within it, and one larger on its own is not sent (the client's own is withdrawn from the room
   * until it is smaller; reported through `onError`, and the room syncs on). Set it to the
   * relay's limit. (A socket the relay closed for a message's size refuses the room that sent the
   * largest message on it, as `tidemark:too-large`.)
   */
  readonly maxMessageBytes?: number
  /**
   * Messages a room sends per second, after a burst of twice as many (default 50): its updates and
   * its presence draw from this one pace, taking turns when both wait, and a message in parts
   * takes one for each part. The relay counts every message of a room connection after its Auth
   * (but its Close) against its `TIDEMARK_UPDATES_PER_SECOND` (100 by default, past a burst of
   * `TIDEMARK_UPDATE_BURST`, 1000) and refuses the connection past it: set this no higher. The
   * step 1 and step 2 a room starts each connection with go at once, outside the pace, from the
   * relay's burst. Updates made in one task go as one message, and past the pace the ones made
   * meanwhile are merged into the next; presence changes likewise, each state as it is when it goes.
   */
  readonly updatesPerSecond?: number
  /**
   * Reconnect jitter: attempt `n` since a room last got in sync waits a uniform random
   * time in `[0, min(capMs, baseMs · 2^n))`; `initialMs` spreads the first connect. The same
   * spread applies to a room the relay closed (not refused) before it joins again.
   */
  readonly jitter?: ReconnectJitterOptions
  /** A WebSocket class where there is no global one (Node 20: the `ws` package). */
  readonly WebSocket?: new (url: string) => RelaySocket
  /**
   * Receives what the client could not use or works around: an undecodable message, a token
   * function that threw, a room the relay could not open now and that joins again, a presence the
   * relay did not show as its room shows as many as it allows (once per connection of the room;
   * the room syncs on) (default `console.error`).
   */
  readonly onError?: (error: Error) => void
}

/**
 * Throws a TypeError naming the first bad option of `connectRelay`, so a wrong URL or token
 * fails at the call rather than as a client that reconnects forever.
 *
 * @example
 * checkConnectRelayOptions({ url: 'http://relay', token: 't' }) // TypeError: connectRelay: url must be a ws:// or wss:// URL, ...
 */
export function checkConnectRelayOptions(options: ConnectRelayOptions): void {
  const fail = (message: string): never => {
    throw new TypeError(`connectRelay: ${message}`)
  }
  if (typeof options !== 'object' || options === null) fail('needs options { url, token }')
  assertKnownOptions('connectRelay', options, ['url', 'token', 'tokenTimeoutMs', 'silenceMs', 'maxPendingRooms', 'maxMessageBytes', 'updatesPerSecond', 'jitter', 'WebSocket', 'onError'])
  const { url, token, tokenTimeoutMs, silenceMs, maxPendingRooms, maxMessageBytes, updatesPerSecond, jitter, WebSocket = globalThis.WebSocket, onError } = options
  if (Array.isArray(url)) {
    if (url.length === 0) fail('url must be a ws:// or wss:// URL, or a non-empty list of them')
    url.forEach((entry: unknown, i: number) => {
      if (typeof entry !== 'string' || !/^wss?:\/\/./.test(entry)) fail(`url[${i}] must be a ws:// or wss:// URL, got ${entry}`)
    })
  } else if (typeof url !== 'string' || !/^wss?:\/\/./.test(url)) {
    fail(`url must be a ws:// or wss:// URL, or a non-empty list of them, got ${url}`)
  }
  if (typeof token !== 'string' && typeof token !== 'function') fail(`token must be a string or a function, got ${typeof token}`)
  if (tokenTimeoutMs !== undefined && !(typeof tokenTimeoutMs === 'number' && Number.isFinite(tokenTimeoutMs) && tokenTimeoutMs > 0)) {
    fail(`tokenTimeoutMs must be a positive number of ms, got ${tokenTimeoutMs}`)
  }
  if (silenceMs !== undefined && !(typeof silenceMs === 'number' && silenceMs >= 1000)) {
    fail(`silenceMs must be a number of ms of at least 1000, or Infinity, got ${silenceMs}`)
  }
  if (maxPendingRooms !== undefined && !(Number.isSafeInteger(maxPendingRooms) && maxPendingRooms >= 1)) {
    fail(`maxPendingRooms must be an integer >= 1, got ${maxPendingRooms}`)
  }
  if (maxMessageBytes !== undefined && !(Number.isSafeInteger(maxMessageBytes) && maxMessageBytes >= 1024)) {
    fail(`maxMessageBytes must be an integer >= 1024, got ${maxMessageBytes}`)
  }
  if (updatesPerSecond !== undefined && !(typeof updatesPerSecond === 'number' && Number.isFinite(updatesPerSecond) && updatesPerSecond > 0)) {
    fail(`updatesPerSecond must be a positive number, got ${updatesPerSecond}`)
  }
  // No global one: Node 20.
  if (typeof WebSocket !== 'function') fail('WebSocket must be a class (Node 20: the ws package)')
  if (jitter !== undefined) checkJitterOptions(jitter, 'connectRelay: jitter')
  if (onError !== undefined && typeof onError !== 'function') fail('onError must be a function')
}
