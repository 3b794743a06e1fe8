/**
 * Sentences of the README's `connectRelay` section that no other relay test pins: the defaults,
 * the first connect's spread, the reconnect window's cap and its reset once a room is in sync,
 * when the next wave of rooms starts, which socket closes are reported, what destroy() does, the
 * default onError, no socket for a client with no room to sync, how often the token function is
 * read, and a denial for the subject's room limit (refused, never retried, the doc not tainted).
 * Fake sockets where the relay's answers do not matter, the test relay where they do; fake
 * timers throughout.
 */
import { EventEmitter } from 'node:events'
import { seededRandom } from '@tidemark/seeded-random'
import { describe, expect, it, vi } from 'vitest'
import WebSocket from 'ws'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import { connectRelay } from '../../src/relay/connectRelay.ts'
import type { RelaySocket } from '../../src/relay/connectRelayOptions.ts'
import { AUTH_AUTHENTICATED, MESSAGE_AUTH, MESSAGE_PART, MESSAGE_SYNC, relayMessage, SYNC_STEP_1, SYNC_STEP_2, syncMessage, writeString } from '../../src/relay/relayProtocol.ts'
import { refusalOf } from '../../src/relay/roomRefusals.ts'
import { jitterWindow } from '../../src/transport/reconnectJitter.ts'
import { device, FakeTimers, relayClient, statusOf, until, untilStatus } from './harness.ts'
import { signToken, testRelayPerTest } from './testRelay.ts'

// Hocuspocus logs every denial at authentication; those are expected.
const testRelay = testRelayPerTest(/^\[onAuthenticate\]$/)

/** A socket that never reaches a relay: it records itself, and closes when the test says so. */
class FakeSocket implements RelaySocket {
  static made: FakeSocket[] = []
  binaryType = ''
  readonly url: string
  readonly #listeners = new Map<string, ((event: unknown) => void)[]>()
  constructor(url: string) {
    this.url = url
    FakeSocket.made.push(this)
  }
  /** The rooms whose Auth went out on this socket, in order. */
  readonly auths: string[] = []
  /** Every message sent on this socket: its room, type and length. */
  readonly sent: { room: string; type: number; bytes: number }[] = []
  send(data: Uint8Array): void {
    const decoder = decoding.createDecoder(data)
    const room = decoding.readVarString(decoder)
    const type = decoding.readVarUint(decoder)
    this.sent.push({ room, type, bytes: data.byteLength })
    if (type === MESSAGE_AUTH) this.auths.push(room)
  }
  /** The codes this socket was closed with by the client. */
  readonly closedWith: (number | undefined)[] = []
  close(code?: number): void {
    this.closedWith.push(code)
  }
  addEventListener(type: string, listener: (event: unknown) => void): void {
    this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener])
  }
  #emit(type: string, event: unknown): void {
    for (const listener of this.#listeners.get(type) ?? []) listener(event)
  }
  /** The connection failed or dropped (no relay answered), or the relay closed it with `code`. */
  drop(code = 1006, reason = ''): void {
    this.#emit('close', { code, reason })
  }
  /** The relay accepted the socket. */
  open(): void {
    this.#emit('open', {})
  }
  /** The relay authenticated `room` and sent its step 2: the room is in sync. */
  sync(room: string): void {
    const authenticated = relayMessage(room, MESSAGE_AUTH, (encoder) => {
      encoding.writeVarUint(encoder, AUTH_AUTHENTICATED)
      writeString(encoder, 'read-write')
    })
    for (const message of [authenticated, syncMessage(room, SYNC_STEP_2, Y.encodeStateAsUpdate(new Y.Doc()))]) this.#emit('message', { data: message.buffer })
  }
  /** The relay's step 1 for `room` (an empty state vector): once in sync, the room answers it and sends updates as they are made. */
  askState(room: string): void {
    this.#emit('message', { data: syncMessage(room, SYNC_STEP_1, Y.encodeStateVector(new Y.Doc())).buffer })
  }
}

/** A room `fleet-a/d01` of a client with the default options (fake socket and clock), in sync and answered: its updates go as they are made. */
async function syncedRoom() {
  FakeSocket.made = []
  const timers = new FakeTimers()
  const jitter = { random: () => 0.5, setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout, now: () => 0 }
  const relay = connectRelay({ url: 'ws://127.0.0.1:1', token: 't', WebSocket: FakeSocket, onError: () => {}, silenceMs: Number.POSITIVE_INFINITY, jitter })
  const doc = new Y.Doc()
  relay.join(doc, 'fleet-a/d01')
  const socket = FakeSocket.made[0] as FakeSocket
  socket.open()
  await settle()
  socket.sync('fleet-a/d01')
  socket.askState('fleet-a/d01')
  return { relay, doc, socket, timers }
}

/** Lets the token read and the Auths that follow it run (promise callbacks only, no time passes). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** A client on fake sockets and fake timers, its errors collected. */
function fakeClient(jitter: { baseMs?: number; capMs?: number; initialMs?: number; random?: () => number } = {}) {
  FakeSocket.made = []
  const timers = new FakeTimers()
  const errors: Error[] = []
  const relay = connectRelay({
    url: 'ws://127.0.0.1:1',
    token: 't',
    maxPendingRooms: 4,
    WebSocket: FakeSocket,
    silenceMs: Number.POSITIVE_INFINITY,
    onError: (error) => errors.push(error),
    jitter: { setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout, ...jitter },
  })
  return { relay, timers, errors }
}

const untilTimer = (timers: FakeTimers, what: string): Promise<void> => until(what, () => timers.delays().length > 0, (notify) => timers.subscribe(notify))

describe('connectRelay: the README contract', () => {
  it('spreads the first connect over jitter.initialMs, on the injected clock; without it connects at once', () => {
    const spread = fakeClient({ initialMs: 2_000, random: () => 0.25 })
    expect([FakeSocket.made.length, spread.timers.delays()]).toEqual([0, [500]])
    spread.timers.runAll()
    expect(FakeSocket.made.length).toBe(1)
    spread.relay.destroy()

    const atOnce = fakeClient()
    expect([FakeSocket.made.length, atOnce.timers.delays()]).toEqual([1, []])
    atOnce.relay.destroy()
  })

  it('waits a uniform time in [0, min(capMs, baseMs · 2^n)) before reconnect attempt n', () => {
    const { relay, timers } = fakeClient({ baseMs: 100, capMs: 350, random: () => 0.999 })
    relay.join(new Y.Doc(), 'fleet-a/d01')
    const delays: number[] = []
    for (let attempt = 0; attempt < 5; attempt++) {
      FakeSocket.made.at(-1)?.drop()
      delays.push(...timers.delays())
      timers.runAll()
    }
    expect(delays).toEqual([99, 199, 349, 349, 349])
    expect(delays).toEqual([0, 1, 2, 3, 4].map((n) => Math.floor(0.999 * jitterWindow(n, 100, 350))))
    expect(FakeSocket.made.length).toBe(6)
    relay.destroy()
  })

  it('starts the next wave of rooms once at most half of maxPendingRooms are still opening', async () => {
    const { relay } = fakeClient()
    const docs = Array.from({ length: 8 }, (_, i) => relay.join(new Y.Doc(), `fleet-a/d0${i + 1}`).doc)
    const socket = FakeSocket.made[0] as FakeSocket
    socket.open()
    await settle()
    expect(socket.auths).toEqual(['fleet-a/d01', 'fleet-a/d02', 'fleet-a/d03', 'fleet-a/d04'])
    socket.sync('fleet-a/d01')
    await settle()
    // 3 of 4 still opening: more than half, no new wave.
    expect(socket.auths).toHaveLength(4)
    socket.sync('fleet-a/d02')
    await settle()
    // 2 of 4: the next wave fills the bound again.
    expect(socket.auths.slice(4)).toEqual(['fleet-a/d05', 'fleet-a/d06'])
    expect(docs.map((doc) => statusOf(doc).state)).toEqual(['connected', 'connected', ...docs.slice(2).map(() => 'connecting')])
    relay.destroy()
  })

  it('reports a close code other than a plain close with its code and reason, and a plain close not at all', () => {
    const { relay, timers, errors } = fakeClient({ random: () => 0 })
    relay.join(new Y.Doc(), 'fleet-a/d01')
    for (const code of [1000, 1001, 1005, 1006]) {
      FakeSocket.made.at(-1)?.drop(code)
      timers.runAll()
    }
    expect(errors).toEqual([])
    FakeSocket.made.at(-1)?.drop(4413, 'tidemark:unauthenticated-limit')
    expect(errors.map((error) => error.message)).toEqual(['relay ws://127.0.0.1:1: the relay closed the socket: 4413 tidemark:unauthenticated-limit'])
    relay.destroy()
  })

  it('has the defaults of the README\'s table: jitter 500 ms doubling to 10 s, tokenTimeoutMs 10 s, silenceMs 30 s (checked every 15 s), maxPendingRooms 256', async () => {
    FakeSocket.made = []
    const timers = new FakeTimers()
    const jitter = { random: () => 0.999, setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout }
    const reconnecting = connectRelay({ url: 'ws://127.0.0.1:1', token: 't', WebSocket: FakeSocket, onError: () => {}, jitter })
    reconnecting.join(new Y.Doc(), 'fleet-a/d01')
    const delays: number[] = []
    for (let attempt = 0; attempt < 7; attempt++) {
      FakeSocket.made.at(-1)?.drop()
      delays.push(...timers.delays())
      timers.runAll()
    }
    expect(delays).toEqual([499, 999, 1998, 3996, 7992, 9990, 9990])
    reconnecting.destroy()

    // A token read that never answers, on a socket that opened: the silence check and the read's bound wait.
    FakeSocket.made = []
    const waiting = connectRelay({ url: 'ws://127.0.0.1:1', token: () => new Promise<string>(() => {}), WebSocket: FakeSocket, onError: () => {}, jitter })
    waiting.join(new Y.Doc(), 'fleet-a/d01')
    FakeSocket.made[0]?.open()
    expect(timers.delays().sort((a, b) => a - b)).toEqual([10_000, 15_000])
    waiting.destroy()

    FakeSocket.made = []
    const many = connectRelay({ url: 'ws://127.0.0.1:1', token: 't', WebSocket: FakeSocket, onError: () => {}, jitter })
    for (let i = 0; i < 300; i++) many.join(new Y.Doc(), `fleet-a/d${i}`)
    FakeSocket.made[0]?.open()
    await settle()
    expect(FakeSocket.made[0]?.auths).toHaveLength(256)
    many.destroy()
  })

  it('has the defaults of the README\'s table: updatesPerSecond 50 (a burst of 100), maxMessageBytes 1 MiB', async () => {
    const { relay, doc, socket, timers } = await syncedRoom()
    const updates = () => socket.sent.filter((m) => m.type === MESSAGE_SYNC).length - 2 // less the room's step 1 and step 2
    // 150 updates in 150 tasks: the burst of 100 goes, the rest waits 1/50 s for a token.
    for (let i = 0; i < 150; i++) {
      doc.getMap('m').set('n', i)
      await settle()
    }
    expect([updates(), timers.delays()]).toEqual([100, [20]])
    relay.destroy()

    // An update just under 1 MiB goes whole; one over it goes in parts, each within 1 MiB.
    const large = await syncedRoom()
    large.doc.getMap('m').set('under', 'x'.repeat(1_040_000))
    await settle()
    large.doc.getMap('m').set('over', 'x'.repeat(1_100_000))
    await settle()
    // After its Auth, step 1 and step 2.
    const sent = large.socket.sent.slice(3).map((m) => [m.type, m.bytes <= 1 << 20] as const)
    expect(sent[0]).toEqual([MESSAGE_SYNC, true])
    expect(sent.slice(1).length).toBeGreaterThan(1)
    expect(sent.slice(1).every(([type, within]) => type === MESSAGE_PART && within)).toBe(true)
    large.relay.destroy()
  })

  it('destroy() leaves every room and closes the socket, and reconnects no more', () => {
    const { relay, timers } = fakeClient()
    const docs = [new Y.Doc(), new Y.Doc()]
    relay.join(docs[0] as Y.Doc, 'fleet-a/d01')
    relay.join(docs[1] as Y.Doc, 'fleet-a/d02')
    const socket = FakeSocket.made[0] as FakeSocket
    socket.open()
    expect(docs.map((doc) => statusOf(doc).state)).toEqual(['connecting', 'connecting'])
    relay.destroy()
    expect(socket.closedWith).toEqual([1000])
    // No provider carries the docs any more.
    expect(docs.map((doc) => statusOf(doc).state)).toEqual(['local', 'local'])
    socket.drop()
    expect([FakeSocket.made.length, timers.delays()]).toEqual([1, []])
  })

  it('reports through console.error without onError', () => {
    const logged: unknown[] = []
    const spy = vi.spyOn(console, 'error').mockImplementation((error: unknown) => logged.push(error))
    try {
      FakeSocket.made = []
      const relay = connectRelay({ url: 'ws://127.0.0.1:1', token: 't', WebSocket: FakeSocket, jitter: { random: () => 0, setTimeout: () => 0, clearTimeout: () => {} } })
      relay.join(new Y.Doc(), 'fleet-a/d01')
      FakeSocket.made[0]?.drop(4413, 'tidemark:unauthenticated-limit')
      relay.destroy()
    } finally {
      spy.mockRestore()
    }
    expect(logged.map((error) => (error as Error).message)).toEqual(['relay ws://127.0.0.1:1: the relay closed the socket: 4413 tidemark:unauthenticated-limit'])
  })

  it('opens no new socket while no room is joined, and connects again on the next join', () => {
    const { relay, timers } = fakeClient({ random: () => 0.5 })
    expect(FakeSocket.made.length).toBe(1)
    // The relay closes a socket that opens no room (4408, reported) or the network drops it.
    FakeSocket.made[0]?.drop()
    expect(timers.delays()).toEqual([])
    expect(FakeSocket.made.length).toBe(1)
    const doc = new Y.Doc()
    relay.join(doc, 'fleet-a/d01')
    expect(FakeSocket.made.length).toBe(2)
    expect(statusOf(doc).state).toBe('connecting')
    relay.destroy()
  })

  it('opens no new socket once every joined room was refused', async () => {
    const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
    const timers = new FakeTimers()
    // The client's socket, told when it closed.
    const closes = new EventEmitter()
    class WatchedSocket extends WebSocket {
      constructor(url: string) {
        super(url)
        this.addEventListener('close', () => closes.emit('close'))
      }
    }
    let closed = 0
    closes.on('close', () => closed++)
    const { relay, errors } = relayClient(testRelay().url, token, { WebSocket: WatchedSocket as never, jitter: { random: seededRandom(21), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    const doc = new Y.Doc()
    relay.join(doc, 'fleet-a/d02')
    await untilStatus(doc, 'the refusal', (s) => s.refusal !== null)
    await testRelay().stop()
    await until('the client saw its socket close', () => closed === 1, (notify) => {
      closes.on('close', notify)
      return () => closes.off('close', notify)
    })
    await testRelay().start()
    expect(timers.delays()).toEqual([])
    expect(testRelay().sockets()).toBe(0)
    expect(statusOf(doc)).toMatchObject({ state: 'offline', refusal: 'tidemark:room-not-allowed fleet-a/d02' })
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('starts the reconnect window from baseMs again once a room was in sync', async () => {
    const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
    const timers = new FakeTimers()
    const { relay, errors } = relayClient(testRelay().url, token, { jitter: { baseMs: 100, capMs: 10_000, random: () => 0.999, setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    const { doc } = device(relay, 'fleet-a/d01', 'd01')
    await untilStatus(doc, 'in sync', (s) => s.state === 'connected')
    await testRelay().stop()
    const seen: number[] = []
    // Three attempts fail while the relay is down: each window doubles.
    for (let attempt = 0; attempt < 3; attempt++) {
      await untilTimer(timers, `attempt ${attempt} scheduled`)
      seen.push(...timers.delays())
      timers.runAll()
    }
    await untilTimer(timers, 'attempt 3 scheduled')
    expect(seen).toEqual([99, 199, 399])
    await testRelay().start()
    timers.runAll()
    await untilStatus(doc, 'in sync again', (s) => s.state === 'connected')
    await testRelay().stop()
    await untilTimer(timers, 'the reconnect after the sync')
    expect(timers.delays()).toEqual([99])
    await testRelay().start()
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('reads the token function once per wave of rooms opening on a socket', async () => {
    const token = await signToken({ sub: 'fleet', role: 'dashboard', rooms: ['fleet-a/*'] })
    let reads = 0
    const readToken = (): string => {
      reads++
      return token
    }
    // Each room whose Auth went out, under the read of the token it carries (1 for the first read).
    const authedAt: { read: number; room: string }[] = []
    class AuthRecordingSocket extends WebSocket {
      override send(data: Uint8Array): void {
        const decoder = decoding.createDecoder(data)
        const room = decoding.readVarString(decoder)
        if (decoding.readVarUint(decoder) === MESSAGE_AUTH) authedAt.push({ read: reads, room })
        super.send(data)
      }
    }
    const { relay, errors } = relayClient(testRelay().url, readToken, { maxPendingRooms: 2, WebSocket: AuthRecordingSocket as never })
    const rooms = Array.from({ length: 6 }, (_, i) => `fleet-a/d0${i + 1}`)
    const docs = rooms.map((room) => {
      const doc = new Y.Doc()
      relay.join(doc, room)
      return doc
    })
    await Promise.all(docs.map((doc, i) => untilStatus(doc, `room ${i + 1} in sync`, (s) => s.state === 'connected')))
    expect(testRelay().sockets()).toBe(1)
    // Six rooms, two at a time, each wave once at most one is still opening: every read
    // authenticates a wave (the first one two rooms), never one read per room.
    const perRead = Array.from({ length: reads }, (_, i) => authedAt.filter((a) => a.read === i + 1).map((a) => a.room))
    expect(perRead[0]).toEqual(['fleet-a/d01', 'fleet-a/d02'])
    expect(perRead.every((wave) => wave.length >= 1)).toBe(true)
    expect(perRead.flat().sort()).toEqual(rooms)
    expect(reads).toBeGreaterThanOrEqual(3)
    expect(reads).toBeLessThanOrEqual(5)
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('refuses a room denied for the subject\'s room limit, never retries it, and leaves its doc free to join again', async () => {
    const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/*'] })
    const timers = new FakeTimers()
    const { relay, errors } = relayClient(testRelay().url, token, { jitter: { random: seededRandom(22), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    const LIMIT = 'tidemark:subject-room-limit d01 holds 1 room'
    testRelay().denyOpen = (room) => (room === 'fleet-a/d02' ? LIMIT : null)
    const kept = device(relay, 'fleet-a/d01', 'd01')
    const doc = new Y.Doc()
    const handle = relay.join(doc, 'fleet-a/d02')
    await untilStatus(doc, 'the refusal', (s) => s.refusal !== null)
    await untilStatus(kept.doc, 'd01 in sync', (s) => s.state === 'connected')
    expect(statusOf(doc)).toMatchObject({ state: 'offline', refusal: LIMIT })
    expect(timers.delays()).toEqual([])
    expect(refusalOf(doc)).toBeUndefined()
    // The relay's bound raised: the same doc joins again (on a new socket, where the name is not denied).
    testRelay().denyOpen = () => null
    handle.destroy()
    relay.join(doc, 'fleet-a/d02')
    await untilTimer(timers, 'the new socket')
    timers.runAll()
    await untilStatus(doc, 'd02 in sync', (s) => s.state === 'connected' && s.refusal === null)
    expect(testRelay().authenticated.get('fleet-a/d02')).toEqual([token])
    expect(errors).toEqual([])
    relay.destroy()
  })
})
