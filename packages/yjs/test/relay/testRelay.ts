/**
 * A real Hocuspocus 3.4 server configured like the Tidemark relay (its contract, not its code):
 * the `Hocuspocus` class on our own http.Server and `ws` server on 127.0.0.1, a free port;
 * JWT (HS256, jose) checked in onAuthenticate with `tidemark:` reasons; `dashboard` tokens get a
 * read-only connection and every update of theirs refused; refusals in beforeHandleMessage
 * (a stateless `{"tidemark":"refused",...}`, then the room's connection closed with
 * `tidemark:refused <reason>`). It records every message clients send, straight off the socket.
 * Rooms it cannot open are refused as the relay does: a full relay denies the room at
 * authentication (`tidemark:too-many-rooms ...`), a store or Redis failure while loading it sends
 * Authenticated and then PermissionDenied (`tidemark:store-unavailable ...`), both from Hocuspocus'
 * own handling of a hook that throws. A message sent in parts (Part, type 100) is put together and
 * applied once its last part came, and acknowledged once, as the relay does.
 */
import { EventEmitter } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { type beforeHandleMessagePayload, type Connection, Hocuspocus, type onAuthenticatePayload, OutgoingMessage } from '@hocuspocus/server'
import { errors, jwtVerify, SignJWT } from 'jose'
import * as decoding from 'lib0/decoding'
import { WebSocketServer } from 'ws'
import { afterEach, beforeEach, expect, vi } from 'vitest'
import * as Y from 'yjs'

const SECRET = new TextEncoder().encode('tidemark relay tests: a secret of 32+ bytes')

/** The claims of a test token (the relay's contract). */
export interface TestClaims {
  readonly sub: string
  readonly role: 'device' | 'dashboard'
  readonly rooms: readonly string[]
}

/**
 * Signs a token; `expiresInS` may be negative (an expired token).
 *
 * @example
 * const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
 */
export async function signToken(claims: TestClaims, expiresInS = 3600, secret = SECRET): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  return new SignJWT({ role: claims.role, rooms: [...claims.rooms] })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(claims.sub)
    .setIssuedAt(now)
    .setExpirationTime(now + expiresInS)
    .sign(secret)
}

/** One message a client sent, read off its socket. */
export interface WireMessage {
  /** Which socket (1, 2, ... in connection order). */
  readonly socket: number
  readonly room: string
  readonly type: number
  /** Sync messages: 0 step 1, 1 step 2, 2 update. */
  readonly step: number | null
  /** Auth messages: the token. */
  readonly token: string | null
  /** The message's length on the wire. */
  readonly bytes: number
}

interface Context {
  readonly role: 'device' | 'dashboard'
  readonly token: string
}

export interface TestRelay {
  readonly url: string
  /** Every message clients sent since the relay started (across restarts). */
  readonly received: WireMessage[]
  /** Tokens that passed onAuthenticate, per room, in order. */
  readonly authenticated: Map<string, string[]>
  /** Emits `message` (a WireMessage), `auth` (room) and `socket-closed`. */
  readonly events: EventEmitter
  /** Refuses an update to `room` with a reason, or lets it through (null). */
  refuse: (room: string) => string | null
  /** Denies opening `room` at authentication with a reason (as a full relay: `tidemark:too-many-rooms 2 rooms are loaded`), or lets it through (null). */
  denyOpen: (room: string) => string | null
  /** Fails loading `room` with a reason (as the relay whose store or Redis failed: `tidemark:store-unavailable the room could not be loaded`), or loads it (null). */
  failLoad: (room: string) => string | null
  /** Holds a room's updates (and so their acknowledgement) until the promise resolves. */
  hold: (room: string) => Promise<void> | null
  /** Writes `rooms` into the directory room as the relay would: room name → [firstSeenMs]. */
  list(directory: string, rooms: readonly string[]): Promise<void>
  /** Removes `rooms` from the directory room, as the relay does when it forgets them. */
  unlist(directory: string, rooms: readonly string[]): Promise<void>
  /** A room's current server-side content, as an update. */
  content(room: string): Promise<Uint8Array>
  /** Closes every connection of `room` (not a refusal: as when the relay unloads it); sockets stay open. */
  closeRoom(room: string): void
  /** Sends `data` as it is to every open socket (what a broken or hostile server could send). */
  sendRaw(data: string | Uint8Array): void
  /** WebSocket connections open now. */
  sockets(): number
  /** Cuts every open socket (a network drop); the relay keeps listening. */
  dropSockets(): void
  /** Stops reading every open socket, which stays open (a path lost without a close): nothing the clients send gets an answer. */
  freezeSockets(): void
  /** Closes every open socket with `code` and `reason`, as the relay closes one for what it was sent (4413 `tidemark:unauthenticated-limit`, ...). */
  closeSockets(code: number, reason: string): void
  /** Drops every socket and stops listening; `start` listens again on the same port. */
  stop(): Promise<void>
  start(): Promise<void>
}

/**
 * Starts a relay on 127.0.0.1 on a free port; stop it with `stop()`.
 *
 * @example
 * const relay = await startTestRelay()
 * try { ... } finally { await relay.stop() }
 */
export async function startTestRelay(): Promise<TestRelay> {
  // Rooms survive unloads and restarts here, as they do in the relay's store.
  const store = new Map<string, Uint8Array>()
  const received: WireMessage[] = []
  const authenticated = new Map<string, string[]>()
  const events = new EventEmitter()
  let socketCount = 0
  let port = 0
  let running: { server: http.Server; wss: WebSocketServer; hocuspocus: Hocuspocus } | null = null

  const relay: TestRelay = {
    url: '',
    received,
    authenticated,
    events,
    refuse: () => null,
    denyOpen: () => null,
    failLoad: () => null,
    hold: () => null,
    async list(directory, rooms) {
      const connection = await requireRunning().hocuspocus.openDirectConnection(directory)
      await connection.transact((doc) => {
        const map = doc.getMap('rooms')
        for (const room of rooms) if (!map.has(room)) map.set(room, [Date.now()])
      })
      await connection.disconnect()
    },
    async unlist(directory, rooms) {
      const connection = await requireRunning().hocuspocus.openDirectConnection(directory)
      await connection.transact((doc) => {
        for (const room of rooms) doc.getMap('rooms').delete(room)
      })
      await connection.disconnect()
    },
    async content(room) {
      const connection = await requireRunning().hocuspocus.openDirectConnection(room)
      let update: Uint8Array = new Uint8Array()
      await connection.transact((doc) => {
        update = Y.encodeStateAsUpdate(doc)
      })
      await connection.disconnect()
      return update
    },
    closeRoom: (room) => requireRunning().hocuspocus.closeConnections(room),
    sendRaw: (data) => {
      for (const ws of requireRunning().wss.clients) ws.send(data)
    },
    sockets: () => requireRunning().wss.clients.size,
    dropSockets: () => {
      for (const ws of requireRunning().wss.clients) ws.terminate()
    },
    freezeSockets: () => {
      // `ws` keeps the TCP socket it reads as `_socket`; paused, it reads nothing more and answers nothing.
      for (const ws of requireRunning().wss.clients) (ws as unknown as { _socket: { pause(): void } })._socket.pause()
    },
    closeSockets: (code, reason) => {
      for (const ws of requireRunning().wss.clients) ws.close(code, reason)
    },
    async stop() {
      if (running === null) return
      const { server, wss, hocuspocus } = running
      running = null
      for (const ws of wss.clients) ws.terminate()
      wss.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await hocuspocus.hooks('onDestroy', { instance: hocuspocus })
    },
    async start() {
      running = listen()
      const { server } = running
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
      port = (server.address() as AddressInfo).port
      ;(relay as { url: string }).url = `ws://127.0.0.1:${port}`
    },
  }

  function requireRunning(): NonNullable<typeof running> {
    if (running === null) throw new Error('the test relay is stopped')
    return running
  }

  function listen(): NonNullable<typeof running> {
    const hocuspocus = new Hocuspocus({
      name: 'tidemark-test-relay',
      quiet: true,
      async onAuthenticate({ token, documentName, connectionConfig }: onAuthenticatePayload): Promise<Context> {
        if (token === '') throw refusal('tidemark:no-token')
        let claims: Record<string, unknown>
        try {
          claims = (await jwtVerify(token, SECRET, { algorithms: ['HS256'] })).payload
        } catch (error) {
          throw refusal(error instanceof errors.JWTExpired ? 'tidemark:token-expired' : 'tidemark:bad-signature')
        }
        const rooms = Array.isArray(claims.rooms) ? (claims.rooms as string[]) : []
        const allowed = rooms.some((pattern) => pattern === documentName || (pattern.endsWith('/*') && documentName.startsWith(pattern.slice(0, -1))))
        if (!allowed) throw refusal(`tidemark:room-not-allowed ${documentName}`)
        const full = relay.denyOpen(documentName)
        if (full !== null) throw refusal(full)
        const role = claims.role === 'dashboard' ? 'dashboard' : 'device'
        connectionConfig.readOnly = role === 'dashboard'
        authenticated.set(documentName, [...(authenticated.get(documentName) ?? []), token])
        events.emit('auth', documentName)
        return { role, token }
      },
      async beforeHandleMessage({ update: data, connection, document, documentName, context }: beforeHandleMessagePayload) {
        const decoder = decoding.createDecoder(data)
        decoding.readVarString(decoder)
        const typeAt = decoder.pos
        const type = decoding.readVarUint(decoder)
        if (type === PART) {
          // Kept from Hocuspocus (QueryAwareness, which it ignores from a client); the whole applied here.
          data[typeAt] = 3
          const whole = assembled(connection, decoder)
          if (whole === null) return
          const message = decoding.createDecoder(whole)
          decoding.readVarString(message)
          decoding.readVarUint(message)
          decoding.readVarUint(message)
          Y.applyUpdate(document, decoding.readVarUint8Array(message), connection)
          connection.send(new OutgoingMessage(documentName).writeSyncStatus(true).toUint8Array())
          return
        }
        if (type !== 0 && type !== 4) return
        const step = decoding.readVarUint(decoder)
        if (step === 0) return
        const reason = (context as Context).role === 'dashboard' ? 'read-only' : relay.refuse(documentName)
        if (reason !== null) {
          connection.sendStateless(JSON.stringify({ tidemark: 'refused', room: documentName, reason }))
          throw refusal(`tidemark:refused ${reason}`)
        }
        await relay.hold(documentName)
      },
      async onLoadDocument({ document, documentName }) {
        const failed = relay.failLoad(documentName)
        if (failed !== null) throw refusal(failed)
        const saved = store.get(documentName)
        if (saved !== undefined) Y.applyUpdate(document, saved)
        return document
      },
      async onChange({ document, documentName }) {
        store.set(documentName, Y.encodeStateAsUpdate(document))
      },
    })
    const wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 })
    wss.on('connection', (ws, request) => {
      const socket = ++socketCount
      ws.on('error', () => {})
      ws.on('close', () => events.emit('socket-closed'))
      // Recorded before Hocuspocus sees it: what the client put on the wire.
      ws.on('message', (data: Buffer) => {
        const message = readWire(socket, new Uint8Array(data))
        received.push(message)
        events.emit('message', message)
      })
      hocuspocus.handleConnection(ws, request)
    })
    const server = http.createServer((_request, response) => response.writeHead(404).end())
    server.on('upgrade', (request, socket, head) => wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request)))
    return { server, wss, hocuspocus }
  }

  await relay.start()
  return relay
}

/** Tidemark's Part message (the relay's contract): varUint index, count, total, varUint8Array bytes. */
const PART = 100

/** Per connection, the parts of the message it is sending in parts. */
const partsOf = new WeakMap<Connection, Uint8Array[]>()

/** Adds a Part (its fields left in `decoder`) to its connection's message: the whole message once its last part came, else null. */
function assembled(connection: Connection, decoder: decoding.Decoder): Uint8Array | null {
  const index = decoding.readVarUint(decoder)
  const count = decoding.readVarUint(decoder)
  const total = decoding.readVarUint(decoder)
  const bytes = decoding.readVarUint8Array(decoder)
  const parts = index === 0 ? [] : partsOf.get(connection)
  if (parts === undefined || parts.length !== index) throw new Error(`part ${index} out of order`)
  parts.push(bytes.slice())
  partsOf.set(connection, parts)
  if (parts.length < count) return null
  partsOf.delete(connection)
  const whole = new Uint8Array(total)
  let at = 0
  for (const part of parts) {
    whole.set(part, at)
    at += part.byteLength
  }
  if (at !== total) throw new Error(`parts of ${at} bytes, announced ${total}`)
  return whole
}

function readWire(socket: number, bytes: Uint8Array): WireMessage {
  const decoder = decoding.createDecoder(bytes)
  const room = decoding.readVarString(decoder)
  const type = decoding.readVarUint(decoder)
  let step: number | null = null
  let token: string | null = null
  if (type === 0 || type === 4) step = decoding.readVarUint(decoder)
  if (type === 2 && decoding.readVarUint(decoder) === 0) token = decoding.readVarString(decoder)
  return { socket, room, type, step, token, bytes: bytes.byteLength }
}

/** What Hocuspocus reads from a hook's error: `reason` goes to the client (PermissionDenied, Close). */
function refusal(reason: string): Error & { reason: string } {
  return Object.assign(new Error(reason), { reason })
}

/**
 * A test relay started before each test of the file and stopped after it. Hocuspocus logs every
 * hook that throws (a refusal, a failed load) with `console.error`: the logs whose first argument
 * matches `expected` are the test's own; any other fails the test.
 *
 * @example
 * const relay = testRelayPerTest(/^\[onAuthenticate\]$/)
 * it('refuses', async () => { const url = relay().url })
 */
export function testRelayPerTest(expected: RegExp): () => TestRelay {
  let server: TestRelay | null = null
  let logged: unknown[][] = []
  beforeEach(async () => {
    server = await startTestRelay()
    logged = []
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => logged.push(args))
  })
  afterEach(async () => {
    await server?.stop()
    vi.restoreAllMocks()
    expect(logged.filter((args) => !expected.test(String(args[0])))).toEqual([])
  })
  return () => {
    if (server === null) throw new Error('the test relay runs only inside a test')
    return server
  }
}
