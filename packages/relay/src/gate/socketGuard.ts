/**
 * Per WebSocket, before Hocuspocus sees a frame: frames must be readable, a socket must
 * authenticate a room within a deadline, and the bytes it sends for rooms it has not opened
 * (which Hocuspocus queues without bound until the room's authentication and load finish, or
 * forever when they fail) are capped. Hocuspocus also allocates state for each room name a
 * socket names (its hook payload and message queue, about half a kilobyte, kept until the socket
 * closes), so each room name pending counts `PENDING_ROOM_COST` bytes besides its frames, and
 * at most `MAX_PENDING_ROOMS` are pending at once. A room's first frame need not be its Auth:
 * a Hocuspocus provider sends what it queued while offline as soon as the socket opens, at times
 * before its token; Hocuspocus queues those frames until the room opens.
 *
 * What the relay sends a socket is bounded too. `ws.send` queues without limit once the peer's
 * TCP window is full, so a peer that reads slower than its rooms change would hold ever more of
 * the relay's memory. Past half of `maxQueuedBytes` queued, the guard stops reading the socket
 * until the queue drains; past `maxQueuedBytes` the socket is cut. Stopping reading is not enough
 * for what the peer asks for: the joins it sent in one burst are all read before anything is queued,
 * and each is answered with what the peer lacks of its room, the room's whole state at a first
 * join. So a join's answer is queued only while the queue has room for it under half of
 * `maxQueuedBytes` (or is empty), in the order the joins came, and the rest wait until the queue
 * drains: a peer that reads is never cut for what it asked for. That holds while an answer is
 * weighed at no less than its size (`joinAnswer.ts`): the guard admits it on its weight.
 * And a peer is alive while it answers pings or reads what was queued for it: a ping waits behind
 * that queue, so on a slow link under a large backlog the pong comes late, and Hocuspocus, which
 * counts pongs only, would close the rooms of a peer still reading its way through them.
 */
import type WebSocket from 'ws'
import type { RelayMetrics } from '../metrics/relayMetrics.ts'
import { MESSAGE, readFrame } from '../protocol/relayFrame.ts'
import type { SocketCutKind, SocketRefusalKind } from '../protocol/refusal.ts'
import type { RelayLog } from '../relayLog.ts'
import type { RelayTimers } from '../relayOptions.ts'

/**
 * The guard's limits.
 *
 * @example
 * const limits: SocketGuardLimits = { maxUnauthenticatedBytes: 1 << 20, authTimeoutMs: 10_000 }
 */
export interface SocketGuardLimits {
  readonly maxUnauthenticatedBytes: number
  readonly authTimeoutMs: number
  /**
   * Hocuspocus' ping interval (its `timeout`): a socket that answers no ping for this long is cut,
   * with what the relay buffered for it. Hocuspocus itself only closes its room connections, and
   * leaves the socket, and every byte queued on it, open for as long as the peer's TCP stays up.
   */
  readonly pingTimeoutMs?: number
  /**
   * Bytes queued for the socket (what the relay sent and the peer has not taken yet, ws
   * `bufferedAmount`) past which it is cut as `slow-reader`, and whose half stops the guard
   * reading the socket until the queue drains. Unbounded without it.
   */
  readonly maxQueuedBytes?: number
}

/**
 * The socket under the WebSocket (a `net.Socket`): the bytes it received (frames not yet read
 * included), the bytes it took to write and those still waiting in it, and its `drain` event
 * (and whether one is due).
 * `_handle.writeQueueSize` is Node's count of the bytes of the write under way that the kernel
 * has not taken yet: a write (a room's whole state at a join) completes only once all of it is
 * taken, so on a slow link it is the one number that moves while the peer reads it.
 */
export interface SocketTransport {
  readonly bytesRead: number
  readonly bytesWritten: number
  readonly writableLength: number
  readonly _handle?: { readonly writeQueueSize?: number } | null
  /** True while a `drain` event is due: a write found the stream's buffer full, and it has not emptied since. */
  readonly writableNeedDrain?: boolean
  on(event: 'drain', listener: () => void): unknown
}

const CLOSE_CODES: Record<SocketRefusalKind | 'malformed-message', number> = {
  'auth-timeout': 4408,
  'unauthenticated-limit': 4413,
  'too-large': 1009,
  'malformed-message': 4400,
  shutdown: 1001,
}

/**
 * Bytes each room name a socket has not opened counts against `maxUnauthenticatedBytes` besides
 * its frames: what Hocuspocus allocates for a name it has not seen on the socket.
 */
export const PENDING_ROOM_COST = 512

/** Room names one socket may have pending (named, not open) at once. */
export const MAX_PENDING_ROOMS = 2048

/** How long a closing socket may take to say goodbye before it is cut. */
const CLOSE_GRACE_MS = 1000

/**
 * Guards one WebSocket. `install` must run before Hocuspocus attaches to the socket: the guard
 * filters the socket's `message` events, so a dropped frame never reaches Hocuspocus.
 *
 * @example
 * const guard = new SocketGuard(ws, limits, metrics, timers, log, request.socket)
 * guard.install()
 * hocuspocus.handleConnection(ws, request, { socket: guard })
 */
export class SocketGuard {
  readonly #ws: WebSocket
  readonly #limits: SocketGuardLimits
  readonly #metrics: RelayMetrics
  /** Rooms with an open Hocuspocus connection on this socket. */
  readonly #open = new Set<string>()
  /**
   * Rooms whose connection on this socket closed (refused, expired, left), until their next
   * Auth: what the client had in flight for them is dropped, uncharged (counted in
   * `tidemark_relay_closed_connection_messages_dropped_total`). Hocuspocus would queue it
   * and replay it into the room's next connection, where a message's later parts, their first
   * gone with the old one, would refuse it; the client sends again what the relay did not take.
   */
  readonly #ended = new Set<string>()
  /** Bytes sent for each room not open yet. */
  readonly #pendingByRoom = new Map<string, number>()
  /** Frames counted as pending: Hocuspocus replays these same objects once their room opens. */
  readonly #counted = new WeakSet<object>()
  #pending = 0
  #closing = false
  readonly #timers: RelayTimers
  readonly #pingTimers: RelayTimers
  readonly #log: RelayLog
  #deadline: unknown
  #grace: unknown
  #liveness: unknown
  #ponged = true
  /** Liveness checks in a row with no pong and nothing of a backlog read. */
  #quiet = 0
  /**
   * At the last liveness check: the bytes of the transport's completed writes, the bytes of the
   * write under way the kernel had not taken, and whether the relay had more queued for the peer.
   */
  #written = 0
  #untaken = 0
  #backlog = false
  /** Reading stopped until the queue drains. */
  #held = false
  /** Answers waiting for room in the queue, in the order they were asked for. */
  readonly #answers: { readonly weigh: () => number; readonly admit: () => void }[] = []
  /** Bytes of answers admitted that may not be queued yet: they are sent in the microtasks after their admission. */
  #admitted = 0
  #settling = false
  readonly #emit: WebSocket['emit']

  readonly #transport: SocketTransport | undefined

  /**
   * `timers`: where the authentication deadline and the closing grace period are armed (the
   * relay's); `log`: where a refused socket is logged (`info`); `transport`: the socket under the
   * WebSocket, which counts the bytes received and written; `pingTimers`: where the liveness
   * checks are armed (default `timers`). They must run on the clock Hocuspocus pings on (the
   * real one), as they answer its pings for a peer reading a backlog, and read pongs that come
   * in real time; the waiting answers to joins are weighed again on them too, once the answers
   * admitted before were sent.
   */
  constructor(ws: WebSocket, limits: SocketGuardLimits, metrics: RelayMetrics, timers: RelayTimers, log: RelayLog, transport?: SocketTransport, pingTimers: RelayTimers = timers) {
    this.#ws = ws
    this.#emit = ws.emit.bind(ws)
    this.#pingTimers = pingTimers
    this.#transport = transport
    this.#limits = limits
    this.#metrics = metrics
    this.#timers = timers
    this.#log = log
  }

  /** Starts guarding: filters `message` events and arms the authentication deadline. */
  install(): void {
    const ws = this.#ws
    const emit = this.#emit
    // Hocuspocus listens to `message` itself; filtering the event is the one way to keep a frame from it.
    ws.emit = ((event: string | symbol, ...args: unknown[]): boolean => {
      if (event === 'message' && !this.#admit(args[0])) return false
      return emit(event, ...args)
    }) as typeof ws.emit
    const max = this.#limits.maxQueuedBytes
    if (max !== undefined) {
      // Everything the relay sends a socket (Hocuspocus' answers, updates, presence) goes through `send`.
      const send = ws.send.bind(ws)
      ws.send = ((...args: Parameters<typeof ws.send>): void => {
        send(...args)
        if (ws.bufferedAmount > max / 2) this.#pressed(max)
      }) as typeof ws.send
    }
    // One listener for the socket's life: a hold that a liveness check ended leaves none behind.
    this.#transport?.on('drain', () => {
      if (this.#held && !this.#closing) this.#release()
      this.#admitAnswers()
    })
    this.#deadline = this.#timers.setTimeout(() => this.close('auth-timeout'), this.#limits.authTimeoutMs)
    ws.once('close', () => this.#dispose())
    if (this.#limits.pingTimeoutMs !== undefined) {
      ws.on('pong', () => {
        this.#ponged = true
      })
      this.#armLiveness(this.#limits.pingTimeoutMs / 2)
    }
  }

  /**
   * Every `ms` (half Hocuspocus' timeout): the socket is pinged, and it is alive if it answered a
   * ping since the last check, or took some of a backlog the relay had queued for it. Two checks
   * in a row with neither (the timeout) cut it. A backlog taken counts as a pong for Hocuspocus
   * too, as the pong waits behind it.
   */
  #armLiveness(ms: number): void {
    this.#liveness = this.#pingTimers.setTimeout(() => {
      this.#liveness = undefined
      if (this.#closing) return
      const ws = this.#ws
      const queued = ws.bufferedAmount
      const transport = this.#transport
      const written = transport === undefined ? 0 : transport.bytesWritten - transport.writableLength
      const untaken = transport?._handle?.writeQueueSize ?? 0
      // The kernel took bytes: a write completed (a new one starts only then), or more of the one
      // under way left Node's queue. Bytes taken while nothing waited prove nothing: a gone
      // peer's kernel takes them too, until its buffer is full.
      const read = this.#backlog && (written > this.#written || untaken < this.#untaken)
      this.#written = written
      this.#untaken = untaken
      this.#backlog = queued > 0
      if (read) this.#emit('pong', Buffer.alloc(0))
      this.#quiet = this.#ponged || read ? 0 : this.#quiet + 1
      this.#ponged = false
      if (this.#quiet >= 2) {
        this.#cut('unresponsive', `it answered no ping and read nothing for ${2 * ms} ms (${queued} bytes queued for it)`)
        return
      }
      if (this.#held && queued <= (this.#limits.maxQueuedBytes ?? 0) / 2) this.#release()
      this.#admitAnswers()
      try {
        ws.ping()
      } catch {
        ws.terminate()
        return
      }
      this.#armLiveness(ms)
    }, ms)
  }

  /** More than half of `max` is queued for the socket: past `max` it is cut, otherwise it is no longer read until the queue drains. */
  #pressed(max: number): void {
    if (this.#closing) return
    const queued = this.#ws.bufferedAmount
    if (queued > max) {
      this.#cut('slow-reader', `${queued} bytes queued for it, more than ${max}`)
      return
    }
    if (this.#held) return
    this.#held = true
    this.#ws.pause()
  }

  /**
   * Resolves once an answer of at most `weigh()` bytes (what a joining client lacks of a room, or
   * a connection's catch-up on what the other relays sent its room: `catchUp.ts`) may be queued
   * for the socket: at once without `maxQueuedBytes`, once the socket closes, or once
   * the answers asked for before it were admitted and the queue, with them, has room for it under
   * half of `maxQueuedBytes` (an empty queue always has). `weigh` is called each time the answer is
   * weighed against the queue, so what the room took while the answer waited counts. Send the
   * answer in the microtasks after it resolves: it is the answer weighed last, and the next one is
   * weighed against the queue only after that.
   *
   * @example
   * await guard.roomForAnswer(() => joinAnswerBytes(document, room, held, payload.byteLength) ?? sizes.get(room))
   * // Hocuspocus answers the step 1 now
   */
  roomForAnswer(weigh: () => number): Promise<void> {
    if (this.#limits.maxQueuedBytes === undefined || this.#closing) return Promise.resolve()
    return new Promise((admit) => {
      this.#answers.push({ weigh, admit })
      this.#admitAnswers()
    })
  }

  /**
   * True when `bytes` may be queued for the socket now, as an answer would be admitted: without
   * `maxQueuedBytes`, once the socket is closing, or while the queue, with them, stays within half
   * of `maxQueuedBytes` (an empty queue always has room, and so has one no drain is due for).
   * Answers waiting do not count: a small update that fits goes out before them.
   *
   * @example
   * if (guard.hasRoomFor(message.byteLength)) connection.send(message)
   * else await guard.roomForAnswer(() => catchUpBytes()) // then send the catch-up
   */
  hasRoomFor(bytes: number): boolean {
    return this.#limits.maxQueuedBytes === undefined || this.#closing || this.#fits(bytes)
  }

  /** True when `bytes` fit in the queue beside what is queued and admitted (or no drain is due to admit them later). */
  #fits(bytes: number): boolean {
    const queued = this.#ws.bufferedAmount + this.#admitted
    // Without a drain to come (what is queued sits under the stream's high-water mark), nothing would admit it later.
    const drains = this.#admitted > 0 || this.#transport?.writableNeedDrain === true
    return queued === 0 || queued + bytes <= (this.#limits.maxQueuedBytes ?? 0) / 2 || !drains
  }

  /** Admits the waiting answers that fit, in order (every one once the socket is closing). */
  #admitAnswers(): void {
    for (let next = this.#answers[0]; next !== undefined; next = this.#answers[0]) {
      // As the room stands now: no macrotask runs between this and the answer's sending.
      const bytes = next.weigh()
      if (!this.#closing && !this.#fits(bytes)) break
      this.#answers.shift()
      this.#admitted += bytes
      next.admit()
    }
    if (this.#settling || this.#admitted === 0) return
    this.#settling = true
    // By the next macrotask the admitted answers were sent, and count in `bufferedAmount`. On the
    // ping timers: the relay's may be a test's hand-run clock, and the answers must not wait for it.
    this.#pingTimers.setTimeout(() => {
      this.#settling = false
      this.#admitted = 0
      this.#admitAnswers()
    }, 0)
  }

  /** Reads the socket again. */
  #release(): void {
    this.#held = false
    this.#ws.resume()
  }

  /** Cuts the socket at once (no close frame: it would wait behind what is queued), letting go what is queued for it. */
  #cut(kind: SocketCutKind, why: string): void {
    this.#closing = true
    this.#metrics.refused(kind)
    this.#log('info', `cut a socket (${kind}): ${why}`)
    this.#ws.terminate()
  }

  /** A room of this socket passed authentication: the deadline no longer applies. */
  authenticated(): void {
    if (this.#deadline !== undefined) this.#timers.clearTimeout(this.#deadline)
    this.#deadline = undefined
  }

  /** A room's connection is established: its frames go straight to it from now on. */
  opened(room: string): void {
    this.#open.add(room)
    this.#pending -= this.#pendingByRoom.get(room) ?? 0
    this.#pendingByRoom.delete(room)
  }

  /** A room's connection closed: frames for it are dropped until its next Auth, then count as unauthenticated again. */
  closed(room: string): void {
    this.#open.delete(room)
    this.#ended.add(room)
  }

  /** Bytes the socket has received, frames not yet read included (0 without a transport). */
  get bytesRead(): number {
    return this.#transport?.bytesRead ?? 0
  }

  /** Bytes held for rooms not open yet. */
  get pendingBytes(): number {
    return this.#pending
  }

  /** Closes the whole socket with `tidemark:<kind>`, stops reading it, and cuts it after a grace period. */
  close(kind: SocketRefusalKind | 'malformed-message'): void {
    if (this.#closing) return
    this.#closing = true
    if (kind !== 'shutdown') {
      this.#metrics.refused(kind)
      this.#log('info', `closed a socket: ${kind}`)
    }
    this.authenticated()
    const ws = this.#ws
    try {
      ws.close(CLOSE_CODES[kind], `tidemark:${kind}`)
      ws.pause()
    } catch {
      ws.terminate()
    }
    this.#grace = this.#timers.setTimeout(() => ws.terminate(), CLOSE_GRACE_MS)
  }

  #admit(data: unknown): boolean {
    if (this.#closing) return false
    if (!(data instanceof Uint8Array)) return false
    if (this.#counted.has(data)) {
      // A frame Hocuspocus queued, replayed now that its room opened.
      this.#counted.delete(data)
      return true
    }
    const frame = readFrame(data)
    if (!frame.ok) {
      this.close('malformed-message')
      return false
    }
    if (this.#open.has(frame.room)) return true
    if (this.#ended.has(frame.room)) {
      if (frame.type !== MESSAGE.auth) {
        this.#metrics.closedConnectionMessagesDropped++
        return false
      }
      this.#ended.delete(frame.room)
    }
    let charged = this.#pendingByRoom.get(frame.room)
    if (charged === undefined) {
      // A room name Hocuspocus has not seen on this socket (or forgot when its room closed):
      // it allocates state for it until the socket closes.
      if (this.#pendingByRoom.size >= MAX_PENDING_ROOMS) {
        this.close('unauthenticated-limit')
        return false
      }
      charged = PENDING_ROOM_COST
      this.#pending += PENDING_ROOM_COST
    }
    this.#pending += data.byteLength
    this.#pendingByRoom.set(frame.room, charged + data.byteLength)
    if (this.#pending > this.#limits.maxUnauthenticatedBytes) {
      this.close('unauthenticated-limit')
      return false
    }
    this.#counted.add(data)
    return true
  }

  #dispose(): void {
    this.authenticated()
    if (this.#grace !== undefined) this.#timers.clearTimeout(this.#grace)
    this.#grace = undefined
    if (this.#liveness !== undefined) this.#pingTimers.clearTimeout(this.#liveness)
    this.#liveness = undefined
    this.#closing = true
    this.#admitAnswers()
  }
}
