/**
 * Refusals reach the sync status with the relay's own reason and stick: a room refused at
 * authentication or for an update is not retried (not even after a reconnect) until the
 * application joins it again, and a doc whose update was refused cannot be joined again. An
 * expired token from a token function is the exception: the room joins again with a new read.
 */
import { seededRandom } from '@tidemark/seeded-random'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { bindDoc } from '../../src/binding/bindDoc.ts'
import { MESSAGE_CLOSE, MESSAGE_STATELESS, relayMessage, writeString } from '../../src/relay/relayProtocol.ts'
import { device, FakeTimers, fleetEngine, readings, relayClient, statusOf, until, untilEngine, untilStatus } from './harness.ts'
import { signToken, testRelayPerTest } from './testRelay.ts'

// Hocuspocus logs every connection it closes for a thrown hook (a refusal); those are expected.
const testRelay = testRelayPerTest(/^closing connection|^\[(onAuthenticate|beforeHandleMessage)\]$/)

const authsOf = (room: string): number => testRelay().received.filter((m) => m.room === room && m.token !== null).length

describe('relay client: refusals', () => {
  it('shows an expired token as the refusal of the room and of the engine', async () => {
    const expired = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] }, -60)
    const { relay, errors } = relayClient(testRelay().url, expired)
    const { engine, doc } = device(relay, 'fleet-a/d01', 'd01')
    await untilStatus(doc, 'the refusal', (s) => s.refusal !== null)
    expect(statusOf(doc)).toMatchObject({ state: 'offline', refusal: 'tidemark:token-expired' })
    expect(engine.syncStatus()).toMatchObject({ state: 'offline', refusal: 'tidemark:token-expired', pendingLocalUpdates: 1 })
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('joins again with a fresh token when the token function gave one already expired, on a new socket', async () => {
    const expired = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/*'] }, -60)
    const fresh = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/*'] })
    let reads = 0
    const timers = new FakeTimers()
    const token = () => (++reads === 1 ? expired : fresh)
    const { relay, errors } = relayClient(testRelay().url, token, { jitter: { random: seededRandom(11), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    const { engine, doc } = device(relay, 'fleet-a/d01', 'd01')
    // Denied once: not a refusal, a jittered wait, then a new socket (Hocuspocus keeps a denied room denied on its socket).
    await until('the rejoin scheduled', () => timers.delays().length > 0, (notify) => timers.subscribe(notify))
    expect(statusOf(doc).refusal).toBeNull()
    expect(errors.map((error) => error.message)).toEqual([`relay ${testRelay().url}: fleet-a/d01: token expired, joining again`])
    timers.runAll()
    await until('the new socket scheduled', () => timers.delays().length > 0, (notify) => timers.subscribe(notify))
    timers.runAll()
    await untilStatus(doc, 'in sync with the fresh token', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    expect(engine.syncStatus()).toMatchObject({ state: 'connected', refusal: null })
    expect([reads, authsOf('fleet-a/d01')]).toEqual([2, 2])
    relay.destroy()
  })

  it('refuses one room of a socket at authentication, keeps the other, and does not retry it after a reconnect', async () => {
    const narrow = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
    const wide = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/*'] })
    let token = narrow
    const timers = new FakeTimers()
    const { relay, errors } = relayClient(testRelay().url, () => token, { jitter: { random: seededRandom(7), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    const allowed = device(relay, 'fleet-a/d01', 'd01')
    const docD02 = new Y.Doc()
    const handleD02 = relay.join(docD02, 'fleet-a/d02')
    await untilStatus(docD02, 'the refusal', (s) => s.refusal !== null)
    await untilStatus(allowed.doc, 'd01 in sync', (s) => s.state === 'connected')
    expect(statusOf(docD02)).toMatchObject({ state: 'offline', refusal: 'tidemark:room-not-allowed fleet-a/d02' })

    await testRelay().stop()
    await untilStatus(allowed.doc, 'offline', (s) => s.state === 'offline')
    await testRelay().start()
    timers.runAll()
    await untilStatus(allowed.doc, 'd01 in sync again', (s) => s.state === 'connected')
    // d01 authenticated on both sockets; d02 only once, on the first.
    expect(authsOf('fleet-a/d01')).toBe(2)
    expect(authsOf('fleet-a/d02')).toBe(1)
    expect(statusOf(docD02).refusal).toBe('tidemark:room-not-allowed fleet-a/d02')

    // Refused on the current socket too: d03.
    const docD03 = new Y.Doc()
    const handleD03 = relay.join(docD03, 'fleet-a/d03')
    await untilStatus(docD03, 'the refusal of d03', (s) => s.refusal !== null)
    expect(statusOf(docD03).refusal).toBe('tidemark:room-not-allowed fleet-a/d03')

    // The cause fixed, the application joins both again. Hocuspocus keeps a denied room denied
    // for the life of a socket, so the client opens a new socket at once, and every room syncs there.
    token = wide
    handleD02.destroy()
    handleD03.destroy()
    const [againD02, againD03] = [new Y.Doc(), new Y.Doc()]
    relay.join(againD02, 'fleet-a/d02')
    relay.join(againD03, 'fleet-a/d03')
    await until('the new socket scheduled', () => timers.delays().length > 0, (notify) => timers.subscribe(notify))
    expect(timers.delays()).toEqual([0])
    timers.runAll()
    for (const [doc, room] of [[againD02, 'd02'], [againD03, 'd03'], [allowed.doc, 'd01']] as const) {
      await untilStatus(doc, `${room} in sync on the new socket`, (s) => s.state === 'connected' && s.refusal === null)
    }
    // d02 (not denied on the second socket) authenticated there and again on the third.
    expect([authsOf('fleet-a/d01'), authsOf('fleet-a/d02'), authsOf('fleet-a/d03')]).toEqual([3, 3, 2])
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('shows a refused update with the relay reason, stops that room only, and never retries it', async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    const timers = new FakeTimers()
    const { relay, errors } = relayClient(testRelay().url, token, { jitter: { random: seededRandom(9), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    const other = device(relay, 'fleet-a/d01', 'd01')
    const engine = fleetEngine('d03')
    const doc = new Y.Doc()
    const binding = bindDoc(engine, doc)
    const handle = relay.join(doc, 'fleet-a/d03')
    await untilStatus(doc, 'd03 in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    await untilStatus(other.doc, 'd01 in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)

    testRelay().refuse = (room) => (room === 'fleet-a/d03' ? 'foreign-source s9' : null)
    engine.ingest(readings('s9', 2))
    await untilEngine(engine, 'the refusal', () => engine.syncStatus().refusal !== null)
    expect(engine.syncStatus()).toMatchObject({ state: 'offline', refusal: 'tidemark:refused foreign-source s9', pendingLocalUpdates: 1 })
    // The other room on the socket carries on.
    other.engine.ingest(readings('d01', 3))
    await untilStatus(other.doc, 'd01 acknowledged', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    // Later writes stay pending: no relay will take them.
    engine.ingest(readings('s9', 1, 3))
    expect(engine.syncStatus()).toMatchObject({ state: 'offline', pendingLocalUpdates: 2 })

    await testRelay().stop()
    await untilStatus(other.doc, 'offline', (s) => s.state === 'offline')
    await testRelay().start()
    timers.runAll()
    await untilStatus(other.doc, 'd01 in sync again', (s) => s.state === 'connected')
    expect(authsOf('fleet-a/d03')).toBe(1)
    expect(statusOf(doc).refusal).toBe('tidemark:refused foreign-source s9')

    // Its clocks have a gap the relay will never fill: that doc cannot join again, a fresh one can.
    handle.destroy()
    expect(() => relay.join(doc, 'fleet-a/d03')).toThrow('relay.join: fleet-a/d03: the relay refused this doc (tidemark:refused foreign-source s9), join with a new Y.Doc')
    testRelay().refuse = () => null
    binding.destroy()
    const fresh = new Y.Doc()
    bindDoc(engine, fresh)
    relay.join(fresh, 'fleet-a/d03')
    await untilEngine(engine, 'the fresh doc in sync', () => engine.syncStatus().state === 'connected' && engine.syncStatus().pendingLocalUpdates === 0)
    expect(engine.syncStatus().refusal).toBeNull()
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('ends a room on either of the relay\'s refusals alone: its stateless refusal, or a Close whose reason starts with tidemark:refused', async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    const timers = new FakeTimers()
    const { relay, errors } = relayClient(testRelay().url, token, { jitter: { random: seededRandom(12), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    const byStateless = device(relay, 'fleet-a/d01', 'd01')
    const byClose = device(relay, 'fleet-a/d02', 'd02')
    const kept = device(relay, 'fleet-a/d03', 'd03')
    for (const { doc } of [byStateless, byClose, kept]) await untilStatus(doc, 'in sync', (s) => s.state === 'connected')
    testRelay().sendRaw(relayMessage('fleet-a/d01', MESSAGE_STATELESS, (encoder) => writeString(encoder, JSON.stringify({ tidemark: 'refused', reason: 'foreign-source s9' }))))
    testRelay().sendRaw(relayMessage('fleet-a/d02', MESSAGE_CLOSE, (encoder) => writeString(encoder, 'tidemark:refused malformed-message unknown message type 100')))
    await untilStatus(byStateless.doc, 'the stateless refusal', (s) => s.refusal !== null)
    await untilStatus(byClose.doc, 'the Close refusal', (s) => s.refusal !== null)
    expect(statusOf(byStateless.doc)).toMatchObject({ state: 'offline', refusal: 'tidemark:refused foreign-source s9' })
    expect(statusOf(byClose.doc)).toMatchObject({ state: 'offline', refusal: 'tidemark:refused malformed-message unknown message type 100' })
    expect(statusOf(kept.doc)).toMatchObject({ state: 'connected', refusal: null })
    // Never retried: no rejoin scheduled.
    expect(timers.delays()).toEqual([])
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('shows a write on a read-only (dashboard) connection as refused', async () => {
    const token = await signToken({ sub: 'wall', role: 'dashboard', rooms: ['fleet-a/*'] })
    const { relay, errors } = relayClient(testRelay().url, token)
    // A writable binding on a dashboard connection: its meta entry is an update the relay refuses.
    const { engine } = device(relay, 'fleet-a/d01', 'wall')
    await untilEngine(engine, 'the refusal', () => engine.syncStatus().refusal !== null)
    expect(engine.syncStatus()).toMatchObject({ state: 'offline', refusal: 'tidemark:refused read-only' })
    expect(errors).toEqual([])
    relay.destroy()
  })
})
