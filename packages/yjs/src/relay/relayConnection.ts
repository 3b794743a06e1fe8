/**
 * A client of a Tidemark relay: one WebSocket per relay URL carrying many documents (rooms),
 * each authenticated with a token, synced, acknowledged (relayProtocol.ts, relayRoom.ts).
 *
 * Why not `@hocuspocus/provider`: it weighs 8.1 kB gzip on its own, reconnects every client
 * after a server restart on one schedule, and gives no hold on refusals; this client keeps the
 * protocol and adds full-jitter reconnects, refusals that stick (and temporary denials that do
 * not), and `pendingLocalUpdates` that drop as the relay acknowledges.
 *
 * Hocuspocus keeps some state per (socket, room) that shapes the rules below: a room refused
 * at authentication stays refused on that socket, and a room whose Close is in flight must not
 * authenticate again before the server's own Close answers it.
 */
import { assertKnownOptions } from '@tidemark/engine/adapter'
import * as decoding from 'lib0/decoding'
import type * as Y from 'yjs'
import { jitterWindow } from '../transport/reconnectJitter.ts'
import {
  type ConnectRelayOptions,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_MAX_PENDING_ROOMS,
  DEFAULT_SILENCE_MS,
  DEFAULT_TOKEN_TIMEOUT_MS,
  DEFAULT_UPDATES_PER_SECOND,
  type RelaySocket,
  type RelayToken,
} from './connectRelayOptions.ts'
import type { JoinOptions, Relay, RelayRoomHandle } from './relayApi.ts'
import { AUTH_PERMISSION_DENIED, MESSAGE_AUTH, MESSAGE_CLOSE, type RelayMessage, readRelayMessage } from './relayProtocol.ts'
import { OpeningBound } from './openingBound.ts'
import { RelayRoom } from './relayRoom.ts'
import type { RoomLink, SocketState } from './roomLink.ts'
import { refusalOf } from './roomRefusals.ts'
import { SocketLiveness } from './socketLiveness.ts'

/** Close codes of a socket that ended without the relay refusing anything: normal, going away (a restart), none given, dropped. */
const PLAIN_CLOSES = [1000, 1001, 1005, 1006]

/**
 * The `Relay` behind `connectRelay`: owns the one socket, reconnects it with jitter (moving
 * down the list of relays after a connection the relay never answered), reads the token once
 * for all idle rooms, and routes each message to its room.
 *
 * @example
 * const relay = new RelayConnection({ url: 'ws://127.0.0.1:8787', token: 'dev' })
 * relay.join(doc, 'fleet-a/d07')
 */
export class RelayConnection implements Relay {
  readonly #urls: readonly string[]
  #urlIndex = 0
  readonly #token: RelayToken
  readonly #tokenTimeoutMs: number
  /** How many rooms may be opening at once (`maxPendingRooms`, halved on a 4413 close). */
  readonly #bound: OpeningBound
  readonly #now: () => number
  /** Rooms that may be opening at once with the token last read (its length counts against the relay's budget). */
  #pendingCap: number
  /** Rooms whose Auth went out on this socket and that the relay has not opened yet (not in sync). */
  #opening = 0
  readonly #WebSocket: new (url: string) => RelaySocket
  readonly #onError: (error: Error) => void
  readonly #baseMs: number
  readonly #capMs: number
  readonly #random: () => number
  readonly #schedule: (run: () => void, ms: number) => unknown
  readonly #cancel: (handle: unknown) => void
  readonly #rooms = new Map<string, RelayRoom>()
  readonly #link: RoomLink
  readonly #liveness: SocketLiveness
  /** Rooms whose Close is in flight on this socket: they authenticate again once the server's Close answers. */
  readonly #closing = new Set<string>()
  /** Rooms denied on this socket: Hocuspocus ignores a second Auth for them until the socket closes. */
  readonly #denied = new Set<string>()
  #socket: RelaySocket | null = null
  #state: SocketState = 'closed'
  #attempt = 0
  #timer: unknown = null
  /** The new socket for rooms denied for a temporary reason (one for all of them), while it waits for its delay. */
  #retryTimer: unknown = null
  /** The socket the token is being read for: a read is for one socket and is given up when it closes or times out. */
  #tokenFor: RelaySocket | null = null
  /** Bounds the token read under way (`tokenTimeoutMs`). */
  #tokenTimer: unknown = null
  #restartNow = false
  #paused = false
  #destroyed = false

  constructor(options: ConnectRelayOptions) {
    this.#urls = typeof options.url === 'string' ? [options.url] : [...options.url]
    this.#token = options.token
    this.#tokenTimeoutMs = options.tokenTimeoutMs ?? DEFAULT_TOKEN_TIMEOUT_MS
    this.#now = options.jitter?.now ?? Date.now
    this.#bound = new OpeningBound(options.maxPendingRooms ?? DEFAULT_MAX_PENDING_ROOMS, this.#now)
    this.#pendingCap = this.#bound.capFor('')
    this.#WebSocket = options.WebSocket ?? (globalThis.WebSocket as new (url: string) => RelaySocket)
    this.#onError = options.onError ?? ((error) => console.error(error))
    const jitter = options.jitter ?? {}
    this.#baseMs = jitter.baseMs ?? 500
    this.#capMs = jitter.capMs ?? 10_000
    this.#random = jitter.random ?? Math.random
    this.#schedule = jitter.setTimeout ?? ((run, ms) => setTimeout(run, ms))
    this.#cancel = jitter.clearTimeout ?? ((handle) => clearTimeout(handle as ReturnType<typeof setTimeout>))
    this.#link = this.#roomLink(options)
    const silenceMs = options.silenceMs ?? DEFAULT_SILENCE_MS
    this.#liveness = new SocketLiveness(silenceMs, {
      schedule: (run, ms) => this.#schedule(run, ms),
      cancel: (handle) => this.#cancel(handle),
      rooms: () => this.#rooms.values(),
      silent: () => {
        this.#fail(`the relay sent nothing for ${silenceMs / 2} ms after it was asked; reconnecting`)
        this.#drop()
      },
    })
    const initialMs = jitter.initialMs ?? 0
    if (initialMs > 0) {
      this.#state = 'connecting'
      this.#timer = this.#schedule(() => {
        this.#timer = null
        this.#connect()
      }, Math.floor(this.#random() * initialMs))
    } else {
      this.#connect()
    }
  }

  get url(): string {
    return this.#urls[this.#urlIndex] as string
  }

  join(doc: Y.Doc, room: string, options: JoinOptions = {}): RelayRoomHandle {
    const fail = (message: string): never => {
      throw new TypeError(`relay.join: ${message}`)
    }
    if (this.#destroyed) fail('the relay was destroyed')
    if (typeof doc?.transact !== 'function') fail('doc must be a Y.Doc')
    if (typeof room !== 'string' || room === '') fail(`room must be a non-empty string, got ${room}`)
    if (typeof options !== 'object' || options === null) fail('options must be an object')
    assertKnownOptions('relay.join', options, ['awareness'])
    if (options.awareness !== undefined && options.awareness?.doc !== doc) fail(`${room}: awareness must be of the doc`)
    if (this.#rooms.has(room)) fail(`${room} is already joined; destroy its handle first`)
    const refused = refusalOf(doc)
    if (refused !== undefined) fail(`${room}: the relay refused this doc (${refused}), join with a new Y.Doc`)
    const joined = new RelayRoom(doc, room, this.#link, options.awareness)
    this.#rooms.set(room, joined)
    // A socket closed for want of a room to sync (#closed) opens again for this one.
    if (this.#state === 'closed' && this.#timer === null && !this.#paused) this.#connect()
    this.#authenticateIdle()
    return { room, doc, destroy: () => this.#leave(joined) }
  }

  disconnect(): void {
    if (this.#paused || this.#destroyed) return
    this.#paused = true
    if (this.#timer !== null) this.#cancel(this.#timer)
    this.#timer = null
    this.#drop()
  }

  connect(): void {
    if (!this.#paused || this.#destroyed) return
    this.#paused = false
    // Back from an offline spell: the relay of choice first, whichever one the last attempts reached.
    this.#urlIndex = 0
    this.#connect()
  }

  destroy(): void {
    if (this.#destroyed) return
    this.#destroyed = true
    if (this.#timer !== null) this.#cancel(this.#timer)
    this.#timer = null
    this.#cancelRetry()
    this.#endTokenRead()
    this.#liveness.stop()
    const socket = this.#socket
    this.#socket = null
    // Closed first, so leaving rooms sends nothing: the socket's close ends them all on the server.
    this.#state = 'closed'
    for (const room of this.#rooms.values()) room.destroy()
    this.#rooms.clear()
    socket?.close(1000)
  }

  /** What every room of this connection reaches of it. */
  #roomLink(options: ConnectRelayOptions): RoomLink {
    return {
    socketState: () => this.#state,
    send: (bytes) => {
      if (this.#state === 'open') this.#socket?.send(bytes)
    },
    delay: (attempt) => this.#delay(attempt),
    schedule: (run, ms) => this.#schedule(run, ms),
    cancel: (handle) => this.#cancel(handle),
    ready: () => this.#authenticateIdle(),
    settled: () => {
      this.#opening--
      this.#authenticateIdle()
    },
    denied: (room, retryAttempt) => {
      this.#denied.add(room)
      if (retryAttempt !== undefined) this.#retryLater(retryAttempt)
    },
    renewable: () => typeof this.#token === 'function',
    fail: (message) => this.#fail(message),
    synced: () => {
      // The relay serves this socket: the next reconnect starts from the smallest spread again.
      this.#attempt = 0
    },
    maxMessageBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    updatesPerSecond: options.updatesPerSecond ?? DEFAULT_UPDATES_PER_SECOND,
    now: this.#now,
    }
  }

  /**
   * Opens a new socket after the jittered delay of `attempt` for the rooms denied for a temporary
   * reason: one for every room denied meanwhile, so a dashboard whose many rooms the relay could
   * not open does not reconnect once per room.
   */
  #retryLater(attempt: number): void {
    if (this.#retryTimer !== null || this.#state !== 'open') return
    this.#retryTimer = this.#schedule(() => {
      this.#retryTimer = null
      if (this.#state === 'open' && [...this.#rooms.values()].some((room) => room.waitingForSocket)) this.#restart()
    }, this.#delay(attempt))
  }

  #leave(room: RelayRoom): void {
    if (this.#rooms.get(room.name) !== room) return
    this.#rooms.delete(room.name)
    if (room.destroy()) this.#closing.add(room.name)
  }

  #connect(): void {
    if (this.#destroyed) return
    this.#state = 'connecting'
    let socket: RelaySocket
    try {
      socket = new this.#WebSocket(this.url)
    } catch (error) {
      this.#fail(`no socket (${error})`)
      this.#nextUrl()
      this.#closed()
      return
    }
    // Whether the relay said anything on this socket: one that closes before it did failed, and the next attempt tries the next URL.
    let heard = false
    socket.binaryType = 'arraybuffer'
    this.#socket = socket
    socket.addEventListener('open', () => {
      if (socket !== this.#socket) return
      this.#state = 'open'
      this.#liveness.start()
      this.#bound.regrow()
      this.#reportRooms()
      this.#authenticateIdle()
    })
    socket.addEventListener('message', (event) => {
      if (socket !== this.#socket) return
      heard = true
      this.#liveness.heard()
      this.#receive((event as MessageEvent).data)
    })
    socket.addEventListener('close', (event) => {
      if (socket !== this.#socket) return
      if (!heard) this.#nextUrl()
      const { code, reason } = event as { code?: number; reason?: string }
      if (code !== undefined && !PLAIN_CLOSES.includes(code)) this.#refusedSocket(code, reason ?? '')
      this.#closed()
    })
    // A failed connect or a broken socket: its close follows, and the sync status shows it.
    socket.addEventListener('error', () => {})
    this.#reportRooms()
  }

  /**
   * The relay closed the socket for what it was sent: reported, and what caused it is not sent
   * again. A message over its limit (1009; it cannot tell which room sent it) refuses the room
   * that sent the largest message on the socket; its unauthenticated budget exceeded (4413)
   * halves the rooms opening at once (doubled again on a socket opened 10 minutes later).
   */
  #refusedSocket(code: number, reason: string): void {
    this.#fail(`the relay closed the socket: ${code}${reason === '' ? '' : ` ${reason}`}`)
    if (code === 1009) {
      let largest: RelayRoom | null = null
      for (const room of this.#rooms.values()) if (room.largestSent > (largest?.largestSent ?? 0)) largest = room
      largest?.tooLarge(largest.largestSent, "over the relay's limit (1009)")
    } else if (code === 4413) {
      this.#bound.halve()
    }
  }

  /** After a failed connection: the next relay of the list, if there are several. */
  #nextUrl(): void {
    this.#urlIndex = (this.#urlIndex + 1) % this.#urls.length
  }

  #closed(): void {
    this.#socket = null
    this.#state = 'closed'
    this.#liveness.stop()
    // Every room authenticates on the next socket anyway, with a read of its own.
    this.#cancelRetry()
    this.#endTokenRead()
    this.#closing.clear()
    this.#denied.clear()
    for (const room of this.#rooms.values()) room.socketClosed()
    // No room left to sync (none joined, or every one refused): the relay would close a new socket
    // that opens no room (4408) and the client would open the next; the next join connects again.
    if (this.#destroyed || this.#paused || ![...this.#rooms.values()].some((room) => !room.ended)) return
    const delay = this.#restartNow ? 0 : this.#delay(this.#attempt++)
    this.#restartNow = false
    this.#timer = this.#schedule(() => {
      this.#timer = null
      this.#connect()
    }, delay)
  }

  #receive(data: unknown): void {
    let message: RelayMessage
    try {
      // binaryType 'arraybuffer': a text frame is no relay message.
      if (!(data instanceof ArrayBuffer)) throw new TypeError(typeof data)
      message = readRelayMessage(new Uint8Array(data))
    } catch (error) {
      this.#fail(`undecodable message ignored (${error})`)
      return
    }
    const { room, type, decoder } = message
    try {
      if (this.#closing.has(room)) {
        // A room whose Close is in flight: its Close (or a denial) frees the name.
        const denied = type === MESSAGE_AUTH && decoding.readVarUint(decoder) === AUTH_PERMISSION_DENIED
        if (type !== MESSAGE_CLOSE && !denied) return
        this.#closing.delete(room)
        if (denied) this.#denied.add(room)
        this.#authenticateIdle()
      } else {
        // A room left since gets nothing: the server's last words to it are moot.
        this.#rooms.get(room)?.receive(type, decoder)
      }
    } catch (error) {
      this.#fail(`${room}: malformed message of type ${type} ignored (${error})`)
    }
  }

  /**
   * Authenticates idle rooms with one read of the token, as many as `maxPendingRooms` allows
   * opening at once (their Auth sent, not in sync yet); the next wave starts once at most half
   * that many are opening. The read is for the current socket: given up when that socket closes
   * (the next socket reads again) or when it takes longer than `tokenTimeoutMs` (reported, and a
   * jittered reconnect reads again).
   */
  #authenticateIdle(): void {
    if (this.#state !== 'open' || this.#tokenFor !== null || this.#opening > this.#pendingCap / 2) return
    const idle = [...this.#rooms.values()].filter((room) => room.idle && !this.#closing.has(room.name))
    if (idle.some((room) => this.#denied.has(room.name))) {
      // Joined again after a denial: only a new socket lets it authenticate (the other rooms sync again on it).
      this.#restart()
      return
    }
    if (idle.length === 0) return
    const socket = this.#socket as RelaySocket
    this.#tokenFor = socket
    this.#readToken(socket).then(
      (token) => {
        if (this.#tokenFor !== socket) return // given up: its socket closed, or it timed out
        this.#endTokenRead()
        this.#pendingCap = this.#bound.capFor(token)
        // Rooms joined while the token was read get it too, up to the bound.
        for (const room of this.#rooms.values()) {
          if (this.#opening >= this.#pendingCap) return
          if (!room.idle || this.#closing.has(room.name) || this.#denied.has(room.name)) continue
          // Counted first: the room reports back (`settled`) once it is in sync or stops opening.
          this.#opening++
          room.authenticate(token)
        }
        // What is still idle: rooms denied on this socket (joined again while the token was read).
        this.#authenticateIdle()
      },
      (error: unknown) => {
        if (this.#tokenFor !== socket) {
          this.#fail(`the token function failed (${error}) after its read was given up`)
          return
        }
        this.#endTokenRead()
        // A jittered reconnect reads the token again.
        this.#fail(`the token function failed (${error}); reconnecting`)
        this.#drop()
      },
    )
  }

  /** Reads the token for `socket`; a promise that does not settle within `tokenTimeoutMs` is given up. */
  async #readToken(socket: RelaySocket): Promise<string> {
    let token = typeof this.#token === 'function' ? this.#token() : this.#token
    if (typeof token !== 'string') {
      // Only a read that waits can hang: a token function answering at once needs no timer.
      this.#tokenTimer = this.#schedule(() => {
        this.#tokenTimer = null
        if (this.#tokenFor !== socket) return
        this.#endTokenRead()
        this.#fail(`the token function did not answer within ${this.#tokenTimeoutMs} ms; reconnecting`)
        this.#drop()
      }, this.#tokenTimeoutMs)
      token = await token
    }
    if (typeof token !== 'string') throw new TypeError(`not a string: ${typeof token}`)
    return token
  }

  /** No token read is under way any more (done, given up, or its socket closed). */
  #endTokenRead(): void {
    this.#tokenFor = null
    if (this.#tokenTimer === null) return
    this.#cancel(this.#tokenTimer)
    this.#tokenTimer = null
  }

  #restart(): void {
    this.#restartNow = true
    this.#drop()
  }

  /** Closes the socket now, without waiting for its close event (which is then ignored). */
  #drop(): void {
    const socket = this.#socket
    this.#socket = null
    socket?.close(1000)
    this.#closed()
  }

  #cancelRetry(): void {
    if (this.#retryTimer === null) return
    this.#cancel(this.#retryTimer)
    this.#retryTimer = null
  }

  #fail(detail: string): void {
    this.#onError(new Error(`relay ${this.url}: ${detail}`))
  }

  #delay(attempt: number): number {
    return Math.floor(this.#random() * jitterWindow(attempt, this.#baseMs, this.#capMs))
  }

  #reportRooms(): void {
    for (const room of this.#rooms.values()) room.report()
  }
}
