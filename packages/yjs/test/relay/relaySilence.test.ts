/**
 * A socket that dies without a close (the relay stops reading it, as a lost network path would):
 * the client asks a room in sync once half of `silenceMs` passed in silence, and drops the socket
 * when nothing came by the next check; a relay that answers keeps its socket. With no room in
 * sync, a room's unanswered Auth or step 1 is the question; a room that sent nothing yet asks
 * nothing. Real sockets, a fake clock for the client's timers.
 */
import type { AddressInfo } from 'node:net'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest'
import { WebSocketServer } from 'ws'
import { AUTH_AUTHENTICATED, MESSAGE_AUTH, MESSAGE_SYNC, relayMessage, SYNC_STEP_1, SYNC_STEP_2, writeString } from '../../src/relay/relayProtocol.ts'
import { device, FakeTimers, readings, relayClient, statusOf, until, untilStatus } from './harness.ts'
import { signToken, startTestRelay, type TestRelay, type WireMessage } from './testRelay.ts'

let server: TestRelay
beforeEach(async () => {
  server = await startTestRelay()
})
afterEach(async () => {
  await server.stop()
})

const SILENCE_MS = 30_000
const HALF = SILENCE_MS / 2
const SYNC = 0

/** A device on a relay client whose timers the test runs. */
async function quietDevice(silenceMs = SILENCE_MS) {
  const token = await signToken({ sub: 'd1', role: 'device', rooms: ['fleet-a/*'] })
  const timers = new FakeTimers()
  const { relay, errors } = relayClient(server.url, token, { silenceMs, jitter: { baseMs: 10, capMs: 10, setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
  const d = { relay, errors, timers, ...device(relay, 'fleet-a/d1', 'd1') }
  await untilStatus(d.doc, 'in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
  return d
}

/** Resolves once the relay has read a message of the client matching `match`. */
function untilReceived(what: string, match: (m: WireMessage) => boolean): Promise<void> {
  return until(what, () => server.received.some(match), (notify) => {
    server.events.on('message', notify)
    return () => server.events.off('message', notify)
  })
}

/**
 * A server that accepts WebSockets and reads them but answers nothing, or (`answerAuth`) only each
 * room's Auth, with Authenticated: a relay stuck before it opens a room. Records, per message, its
 * socket (1, 2, ...) and type, and which sockets closed. Closed when the test ends.
 */
async function unansweringRelay(answerAuth: boolean) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((resolve) => wss.once('listening', resolve))
  const received: { socket: number; type: number }[] = []
  const closed = new Set<number>()
  let sockets = 0
  const untilEvent = (what: string, check: () => boolean) =>
    until(what, check, (notify) => {
      wss.on('event', notify)
      return () => wss.off('event', notify)
    })
  wss.on('connection', (ws) => {
    const socket = ++sockets
    ws.on('close', () => {
      closed.add(socket)
      wss.emit('event')
    })
    ws.on('message', (data: Buffer) => {
      const decoder = decoding.createDecoder(new Uint8Array(data))
      const room = decoding.readVarString(decoder)
      const type = decoding.readVarUint(decoder)
      received.push({ socket, type })
      wss.emit('event')
      if (answerAuth && type === MESSAGE_AUTH) {
        ws.send(relayMessage(room, MESSAGE_AUTH, (encoder) => {
          encoding.writeVarUint(encoder, AUTH_AUTHENTICATED)
          writeString(encoder, 'read-write')
        }))
      }
    })
  })
  onTestFinished(() => {
    for (const ws of wss.clients) ws.terminate()
    return new Promise<void>((resolve) => wss.close(() => resolve()))
  })
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    /** Sockets accepted so far, closed or not. */
    sockets: () => sockets,
    /** Resolves once socket `socket` brought a message of `type`. */
    untilReceived: (socket: number, type: number) => untilEvent(`socket ${socket}: message of type ${type}`, () => received.some((m) => m.socket === socket && m.type === type)),
    /** Resolves once socket `socket` closed. */
    untilClosed: (socket: number) => untilEvent(`socket ${socket} closed`, () => closed.has(socket)),
  }
}

const probes = (): number => server.received.filter((m) => m.type === SYNC && m.step === SYNC_STEP_1).length
/** The client's step 2s: it sends one to answer each step 1 of the relay, so each shows the relay's answer to a probe reached it. */
const answers = (): number => server.received.filter((m) => m.type === SYNC && m.step === SYNC_STEP_2).length

describe('relay client: a silent socket', () => {
  it('is dropped after a probe goes unanswered, and the client reconnects and sends what waited', async () => {
    const d = await quietDevice()
    const stepsBefore = probes()
    server.freezeSockets()
    // Written on the dead socket: sent, never acknowledged.
    d.engine.ingest(readings('d1', 3))
    // The first check saw the sync exchange; the second finds silence and asks.
    d.timers.runUpTo(HALF)
    d.timers.runUpTo(HALF)
    expect(d.errors).toEqual([])
    expect(statusOf(d.doc).state).toBe('connected')
    expect(statusOf(d.doc).pendingLocalUpdates).toBe(1)
    // The third finds the probe unanswered: the socket is given up.
    d.timers.runUpTo(HALF)
    expect(d.errors.map((e) => e.message)).toEqual([expect.stringContaining(`the relay sent nothing for ${HALF} ms after it was asked; reconnecting`)])
    expect(statusOf(d.doc).state).not.toBe('connected')
    // The frozen socket read nothing: no probe reached the relay.
    expect(probes()).toBe(stepsBefore)
    d.timers.runAll()
    await untilStatus(d.doc, 'in sync on a new socket', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    d.relay.destroy()
  })

  it('is kept while the relay answers its probes', async () => {
    const d = await quietDevice()
    for (let round = 0; round < 4; round++) {
      const before = probes()
      const answered = answers()
      // A check that heard the last exchange, then one that asks.
      d.timers.runUpTo(HALF)
      d.timers.runUpTo(HALF)
      await untilReceived(`probe ${round}`, () => probes() === before + 1)
      // The relay answers with its step 1 and step 2; the client's answer to its step 1 shows it heard them.
      await untilReceived(`answer ${round}`, () => answers() === answered + 1)
    }
    expect(d.errors).toEqual([])
    expect(server.sockets()).toBe(1)
    expect(statusOf(d.doc).state).toBe('connected')
    d.relay.destroy()
  })

  it.each([
    ["the relay accepts the socket and never answers the room's Auth", false, MESSAGE_AUTH, 2],
    ["the relay answers the room's Auth and never its step 1", true, MESSAGE_SYNC, 3],
  ])('is dropped, with no room in sync, when %s: the client reconnects', async (_, answerAuth, question, checks) => {
    const mute = await unansweringRelay(answerAuth)
    const token = await signToken({ sub: 'd1', role: 'device', rooms: ['fleet-a/*'] })
    const timers = new FakeTimers()
    const { relay, errors } = relayClient(mute.url, token, { silenceMs: SILENCE_MS, jitter: { baseMs: 10, capMs: 10, setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    const { doc } = device(relay, 'fleet-a/d1', 'd1')
    await mute.untilReceived(1, question)
    // The checks up to the one that finds the question unanswered (after the Authenticated, one more: it heard that).
    for (let check = 1; check < checks; check++) timers.runUpTo(HALF)
    expect(errors).toEqual([])
    expect(statusOf(doc).state).toBe('connecting')
    timers.runUpTo(HALF)
    expect(errors.map((e) => e.message)).toEqual([expect.stringContaining(`the relay sent nothing for ${HALF} ms after it was asked; reconnecting`)])
    await mute.untilClosed(1)
    expect(mute.sockets()).toBe(1)
    // The reconnect: a new socket, and the room asks again on it.
    timers.runAll()
    await mute.untilReceived(2, MESSAGE_AUTH)
    relay.destroy()
  })

  it('is not judged while its only room waits for its token: the room has asked nothing', async () => {
    const token = await signToken({ sub: 'd1', role: 'device', rooms: ['fleet-a/*'] })
    let giveToken = (_token: string): void => {}
    const timers = new FakeTimers()
    const { relay, errors } = relayClient(server.url, () => new Promise<string>((resolve) => (giveToken = resolve)), {
      silenceMs: SILENCE_MS,
      tokenTimeoutMs: 10 * SILENCE_MS,
      jitter: { baseMs: 10, capMs: 10, setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout },
    })
    const { doc } = device(relay, 'fleet-a/d1', 'd1')
    // The socket is open and the token read under way: its bound is set.
    await until('the token read', () => timers.delays().includes(10 * SILENCE_MS), (notify) => timers.subscribe(notify))
    // Three times `silenceMs` of silence on the socket: nothing asked, nothing concluded.
    for (let check = 0; check < 6; check++) timers.runUpTo(HALF)
    expect(errors).toEqual([])
    expect(server.received).toEqual([])
    // The token comes: the room opens on the same socket.
    giveToken(token)
    await untilStatus(doc, 'in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    expect(errors).toEqual([])
    expect(new Set(server.received.map((m) => m.socket))).toEqual(new Set([1]))
    relay.destroy()
  })

  it('is not checked with silenceMs Infinity', async () => {
    const d = await quietDevice(Number.POSITIVE_INFINITY)
    expect(d.timers.delays()).toEqual([])
    d.relay.destroy()
  })
})
