/**
 * A socket that dies without a close (the relay stops reading it, as a lost network path would):
 * the client asks a room in sync once half of `silenceMs` passed in silence, and drops the socket
 * when nothing came by the next check; a relay that answers keeps its socket. Real sockets, a
 * fake clock for the client's timers.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SYNC_STEP_1, SYNC_STEP_2 } from '../../src/relay/relayProtocol.ts'
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

  it('is not checked with silenceMs Infinity', async () => {
    const d = await quietDevice(Number.POSITIVE_INFINITY)
    expect(d.timers.delays()).toEqual([])
    d.relay.destroy()
  })
})
