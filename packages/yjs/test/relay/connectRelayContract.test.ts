/**
 * Sentences of the README's `connectRelay` section that no other relay test pins: the first
 * connect's spread, the reconnect window's cap and its reset once a room is in sync, no socket
 * for a client with no room to sync, how often the token function is read, and a denial for the
 * subject's room limit (refused, never retried, the doc not tainted). Fake sockets where the
 * relay's answers do not matter, the test relay where they do; fake timers throughout.
 */
import { EventEmitter } from 'node:events'
import { seededRandom } from '@tidemark/seeded-random'
import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { connectRelay } from '../../src/relay/connectRelay.ts'
import type { RelaySocket } from '../../src/relay/connectRelayOptions.ts'
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
  send(): void {}
  close(): void {}
  addEventListener(type: string, listener: (event: unknown) => void): void {
    this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener])
  }
  /** The connection failed or dropped (no relay answered). */
  drop(): void {
    for (const listener of this.#listeners.get('close') ?? []) listener({ code: 1006, reason: '' })
  }
}

/** A client on fake sockets and fake timers, its errors collected. */
function fakeClient(jitter: { baseMs?: number; capMs?: number; initialMs?: number; random?: () => number } = {}) {
  FakeSocket.made = []
  const timers = new FakeTimers()
  const errors: Error[] = []
  const relay = connectRelay({
    url: 'ws://127.0.0.1:1',
    token: 't',
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
    const { relay, errors } = relayClient(testRelay().url, readToken, { maxPendingRooms: 2 })
    const docs = Array.from({ length: 6 }, (_, i) => {
      const doc = new Y.Doc()
      relay.join(doc, `fleet-a/d0${i + 1}`)
      return doc
    })
    await Promise.all(docs.map((doc, i) => untilStatus(doc, `room ${i + 1} in sync`, (s) => s.state === 'connected')))
    expect(testRelay().sockets()).toBe(1)
    // Six rooms, two at a time, each wave once at most one is still opening: more than one read on one socket.
    expect(reads).toBeGreaterThan(1)
    expect(reads).toBeLessThanOrEqual(6)
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
