/**
 * After a relay restart, clients come back spread over a jitter window that doubles per failed
 * attempt (seeded randomness, a fake clock for the reconnect timers, real sockets), re-read
 * their token, and carry what they wrote while the relay was down.
 */
import { seededRandom } from '@tidemark/seeded-random'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { jitterWindow } from '../../src/transport/reconnectJitter.ts'
import { counted, device, FakeTimers, fleetEngine, readings, relayClient, statusOf, until, untilEngine, untilStatus } from './harness.ts'
import { signToken, startTestRelay, type TestRelay, type WireMessage } from './testRelay.ts'
import { bindDoc } from '../../src/binding/bindDoc.ts'

let server: TestRelay
beforeEach(async () => {
  server = await startTestRelay()
})
afterEach(async () => {
  await server.stop()
})

const SEED = 20_240_611
const CLIENTS = 24
const BASE_MS = 1_000
const CAP_MS = 8_000

describe('relay client: reconnects', () => {
  it('spreads reconnects after a restart over a doubling window, then every device catches up', async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    // One fake clock per client, so each delay is known to be whose.
    const devices = Array.from({ length: CLIENTS }, (_, i) => {
      const timers = new FakeTimers()
      const { relay, errors } = relayClient(server.url, token, {
        jitter: { baseMs: BASE_MS, capMs: CAP_MS, random: seededRandom(SEED + i), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout },
      })
      return { relay, errors, timers, ...device(relay, `fleet-a/d${i}`, `d${i}`) }
    })
    const inSync = (d: (typeof devices)[number], what: string) => untilStatus(d.doc, what, (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    await Promise.all(devices.map((d) => inSync(d, 'in sync')))

    await server.stop()
    await Promise.all(devices.map((d) => untilStatus(d.doc, 'offline', (s) => s.state === 'offline')))
    // Written while the relay is down: pending until it acknowledges.
    for (const d of devices) d.engine.ingest(readings(d.engine.replicaId, 2))
    expect(devices.map((d) => statusOf(d.doc).pendingLocalUpdates)).toEqual(devices.map(() => 1))

    const delayOf = (d: (typeof devices)[number]): number => {
      const delays = d.timers.delays()
      expect(delays).toHaveLength(1)
      return delays[0] as number
    }
    const rounds: number[][] = [devices.map(delayOf)]
    // Two more failed rounds while the relay stays down: each client's window doubles.
    for (let round = 1; round <= 2; round++) {
      for (const d of devices) d.timers.runAll()
      await Promise.all(devices.map((d) => until(`round ${round} failed`, () => d.timers.delays().length === 1, (notify) => d.timers.subscribe(notify))))
      rounds.push(devices.map(delayOf))
    }
    rounds.forEach((delays, attempt) => {
      const window = jitterWindow(attempt, BASE_MS, CAP_MS)
      expect(Math.max(...delays)).toBeLessThan(window)
      // Spread, not lockstep: a distinct delay per client, their mean near the middle of the window
      // (the README quotes these seeded figures: 24 distinct values, means at 0.48–0.56).
      expect(new Set(delays).size).toBe(CLIENTS)
      const mean = delays.reduce((a, b) => a + b, 0) / delays.length
      expect(mean / window).toBeGreaterThanOrEqual(0.48)
      expect(mean / window).toBeLessThanOrEqual(0.56)
    })

    await server.start()
    // Half the window later, only the clients whose delay has passed are back.
    const half = jitterWindow(2, BASE_MS, CAP_MS) / 2
    const early = devices.filter((_, i) => (rounds[2]?.[i] as number) <= half)
    for (const d of devices) d.timers.runUpTo(half)
    await Promise.all(early.map((d) => inSync(d, 'an early client in sync')))
    expect(early.length).toBeGreaterThan(CLIENTS * 0.25)
    expect(early.length).toBeLessThan(CLIENTS * 0.75)
    expect(server.sockets()).toBe(early.length)
    expect(devices.filter((d) => statusOf(d.doc).state === 'connected')).toHaveLength(early.length)
    for (const d of devices) d.timers.runAll()
    await Promise.all(devices.map((d) => inSync(d, 'in sync again')))
    expect(server.sockets()).toBe(CLIENTS)

    // What each wrote while the relay was down reached it: a fresh reader gets all of it.
    const reader = fleetEngine('reader')
    const readerClient = relayClient(server.url, token)
    for (let i = 0; i < 4; i++) {
      const doc = new Y.Doc()
      bindDoc(reader, doc, { readOnly: true })
      readerClient.relay.join(doc, `fleet-a/d${i}`)
    }
    await untilEngine(reader, 'four devices read back', () => counted(reader) === 8)
    expect(devices.flatMap((d) => d.errors)).toEqual([])
    for (const d of devices) d.relay.destroy()
    readerClient.relay.destroy()
  })

  it('reads the token function again on every connection', async () => {
    const tokens = [
      await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] }),
      await signToken({ sub: 'd01-renewed', role: 'device', rooms: ['fleet-a/d01'] }),
    ]
    let reads = 0
    const timers = new FakeTimers()
    const { relay, errors } = relayClient(server.url, async () => tokens[Math.min(reads++, 1)] as string, {
      jitter: { random: seededRandom(SEED), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout },
    })
    const { doc } = device(relay, 'fleet-a/d01', 'd01')
    await untilStatus(doc, 'in sync', (s) => s.state === 'connected')
    expect(reads).toBe(1)
    await server.stop()
    await untilStatus(doc, 'offline', (s) => s.state === 'offline')
    await server.start()
    timers.runAll()
    await untilStatus(doc, 'in sync again', (s) => s.state === 'connected')
    expect(reads).toBe(2)
    expect(server.authenticated.get('fleet-a/d01')).toEqual(tokens)
    const auths = server.received.filter((m: WireMessage) => m.token !== null)
    expect(auths.map((m) => m.token)).toEqual(tokens)
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('joins a room again after a jittered delay when the relay closed it without a refusal', async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    const timers = new FakeTimers()
    const { relay, errors } = relayClient(server.url, token, { jitter: { baseMs: 400, random: seededRandom(SEED), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    const closed = device(relay, 'fleet-a/d01', 'd01')
    const other = device(relay, 'fleet-a/d02', 'd02')
    for (const d of [closed, other]) await untilStatus(d.doc, 'in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    server.closeRoom('fleet-a/d01')
    await until('the rejoin scheduled', () => timers.delays().length === 1, (notify) => timers.subscribe(notify))
    expect(timers.delays()[0]).toBeLessThan(400)
    expect(statusOf(closed.doc)).toMatchObject({ state: 'connecting', refusal: null })
    expect(statusOf(other.doc).state).toBe('connected')
    closed.engine.ingest(readings('d01', 2))
    timers.runAll()
    await untilStatus(closed.doc, 'in sync again', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    // Same socket: only the room authenticated again.
    expect(server.sockets()).toBe(1)
    expect(server.authenticated.get('fleet-a/d01')).toHaveLength(2)
    expect(server.authenticated.get('fleet-a/d02')).toHaveLength(1)
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('stays offline after disconnect() until connect(), then carries what was written meanwhile', async () => {
    const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
    const timers = new FakeTimers()
    const { relay, errors } = relayClient(server.url, token, { jitter: { random: seededRandom(SEED), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    const { engine, doc } = device(relay, 'fleet-a/d01', 'd01')
    await untilStatus(doc, 'in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    relay.disconnect()
    // At once, and no reconnect scheduled: offline is the application's word.
    expect(statusOf(doc).state).toBe('offline')
    engine.ingest(readings('d01', 3))
    expect(statusOf(doc)).toMatchObject({ state: 'offline', pendingLocalUpdates: 1 })
    await until('the server saw the socket go', () => server.sockets() === 0, (notify) => {
      server.events.on('socket-closed', notify)
      return () => server.events.off('socket-closed', notify)
    })
    expect(timers.delays()).toEqual([])
    relay.connect()
    await untilStatus(doc, 'in sync again', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    expect(server.authenticated.get('fleet-a/d01')).toHaveLength(2)
    // connect() while connected does nothing.
    relay.connect()
    expect(server.sockets()).toBe(1)
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('with a list of relays, moves to the next one after a failed connection and stays there', async () => {
    const other = await startTestRelay()
    try {
      const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
      const timers = new FakeTimers()
      const { relay, errors } = relayClient([server.url, other.url], token, { jitter: { random: seededRandom(SEED), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
      const { engine, doc } = device(relay, 'fleet-a/d01', 'd01')
      engine.ingest(readings('d01', 2))
      await untilStatus(doc, 'in sync on the first relay', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
      expect(relay.url).toBe(server.url)
      expect(other.sockets()).toBe(0)

      // The first relay goes away: its socket closes (the relay had answered on it), so the client tries it once more.
      await server.stop()
      await untilStatus(doc, 'offline', (s) => s.state === 'offline')
      engine.ingest(readings('d01', 3, 3))
      expect(relay.url).toBe(server.url)
      await until('a reconnect scheduled', () => timers.delays().length === 1, (notify) => timers.subscribe(notify))
      timers.runAll()
      // That attempt fails before any answer: the next one goes to the second relay.
      await until('the failed attempt moved on', () => relay.url === other.url && timers.delays().length === 1, (notify) => timers.subscribe(notify))
      timers.runAll()
      await untilStatus(doc, 'in sync on the second relay', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
      expect(other.sockets()).toBe(1)
      // Everything the device holds reached the second relay in its sync step: a reader there counts all five readings.
      const reader = fleetEngine('reader')
      const readerDoc = new Y.Doc()
      bindDoc(reader, readerDoc, { readOnly: true })
      const readerClient = relayClient(other.url, await signToken({ sub: 'dashboard', role: 'dashboard', rooms: ['fleet-a/*'] }))
      readerClient.relay.join(readerDoc, 'fleet-a/d01')
      await untilEngine(reader, 'the reader has every reading', () => counted(reader) === 5)

      // The first relay is back, but the client stays where it is answered: a dropped socket reconnects to the same relay.
      await server.start()
      other.dropSockets()
      await untilStatus(doc, 'offline', (s) => s.state === 'offline')
      await until('a reconnect scheduled', () => timers.delays().length === 1, (notify) => timers.subscribe(notify))
      timers.runAll()
      await untilStatus(doc, 'in sync again', (s) => s.state === 'connected')
      expect(relay.url).toBe(other.url)
      expect(server.sockets()).toBe(0)

      // Back from an offline spell, it starts from the first relay again.
      relay.disconnect()
      relay.connect()
      expect(relay.url).toBe(server.url)
      await untilStatus(doc, 'in sync on the first relay again', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
      expect(server.sockets()).toBe(1)
      expect(errors).toEqual([])
      relay.destroy()
      readerClient.relay.destroy()
    } finally {
      await other.stop()
    }
  })
})
