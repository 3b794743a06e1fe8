/**
 * The relay's limits, met by the client: a room's updates go at its pace (one message per task,
 * merged past a burst), so a device writing faster than the relay's rate is not refused; a rate
 * refusal is temporary; a step 2 or update larger than the relay takes goes in parts within its
 * limit; a presence larger than it is withdrawn, never sent, and its room syncs on; the relay
 * closing the socket for a message's size refuses the room that sent the largest message, and the
 * other rooms carry on.
 */
import type { StreamEvent } from '@tidemark/engine'
import { seededRandom } from '@tidemark/seeded-random'
import { describe, expect, it } from 'vitest'
import { Awareness, applyAwarenessUpdate, encodeAwarenessUpdate } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { bindDoc } from '../../src/binding/bindDoc.ts'
import { refusalOf } from '../../src/relay/roomRefusals.ts'
import { counted, device, FakeTimers, fleetEngine, readings, relayClient, statusOf, T0, until, untilStatus } from './harness.ts'
import { signToken, testRelayPerTest } from './testRelay.ts'

// Hocuspocus logs every connection it closes for a thrown hook (a refusal); those are expected.
const testRelay = testRelayPerTest(/^closing connection|^\[(onAuthenticate|beforeHandleMessage)\]$/)

/** Update messages (sync step "update") the relay received for `room`. */
const updatesTo = (room: string): number => testRelay().received.filter((m) => m.room === room && m.type === 0 && m.step === 2).length

/** Waits until the relay received what `check` wants. */
function untilReceived(what: string, check: () => boolean): Promise<void> {
  return until(what, check, (notify) => {
    testRelay().events.on('message', notify)
    return () => testRelay().events.off('message', notify)
  })
}

/** What the relay holds for `room`, as a fresh engine counts it (key `temp`, or every key). */
async function countedAtRelay(room: string, keys: 'temp' | 'all keys' = 'temp'): Promise<number> {
  const engine = fleetEngine('reader')
  const doc = new Y.Doc()
  bindDoc(engine, doc)
  Y.applyUpdate(doc, await testRelay().content(room))
  return keys === 'temp' ? counted(engine) : engine.results().reduce((sum, result) => sum + result.count, 0)
}

/** One reading of each of `keys` keys: one group entry as wide as that. */
function wide(source: string, keys: number): StreamEvent[] {
  return Array.from({ length: keys }, (_, i) => ({ id: `${source}-w${i}`, source, seq: i + 1, ts: T0 + 1_000, key: `k${i}`, value: i }))
}

const yieldTask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * A device's doc joined to `fleet-a/<replica>` with an awareness whose note is `note`, through a
 * client whose `maxMessageBytes` is 4,096, and a dashboard's awareness watching the room: `shown`
 * is the device's note as the dashboard sees it.
 */
async function presenceRoom(replica: string, note: string) {
  const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
  const { relay, errors } = relayClient(testRelay().url, token, { maxMessageBytes: 4_096 })
  const watcher = relayClient(testRelay().url, await signToken({ sub: 'ops', role: 'dashboard', rooms: ['fleet-a/*'] }))
  const engine = fleetEngine(replica)
  const doc = new Y.Doc()
  bindDoc(engine, doc)
  const awareness = new Awareness(doc)
  awareness.setLocalState({ note })
  relay.join(doc, `fleet-a/${replica}`, { awareness })
  const seen = new Awareness(new Y.Doc())
  watcher.relay.join(seen.doc, `fleet-a/${replica}`, { awareness: seen })
  const shown = () => (seen.getStates().get(doc.clientID) as { note: string } | undefined)?.note
  const untilSeen = (what: string, check: () => boolean) =>
    until(what, check, (notify) => {
      seen.on('change', notify)
      return () => seen.off('change', notify)
    })
  const destroy = () => {
    awareness.destroy()
    seen.destroy()
    watcher.relay.destroy()
  }
  return { relay, token, errors, engine, doc, awareness, seen, shown, untilSeen, destroy }
}

describe('relay client: the relay limits', () => {
  it("sends a room's updates at its pace: a task's updates as one message, and past the burst the ones made meanwhile merged into the next", async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    const timers = new FakeTimers()
    let clock = 0
    const jitter = { random: seededRandom(3), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout, now: () => clock }
    const { relay, errors } = relayClient(testRelay().url, token, { updatesPerSecond: 10, jitter })
    const { engine, doc } = device(relay, 'fleet-a/d01', 'd01')
    await untilStatus(doc, 'in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    const before = updatesTo('fleet-a/d01')

    // 300 ingests in one task: 300 transactions, one message.
    for (let seq = 1; seq <= 300; seq++) engine.ingest(readings('d01', 1, seq))
    await untilStatus(doc, 'the loop acknowledged', (s) => s.pendingLocalUpdates === 0)
    expect(updatesTo('fleet-a/d01') - before).toBe(1)

    // 60 ingests in 60 tasks: the burst (20, one spent) goes at once; the other 41 wait for the pace, then go as one.
    for (let i = 0; i < 60; i++) {
      engine.ingest(readings('d01', 1, 301 + i))
      await yieldTask()
    }
    await untilReceived('the burst', () => updatesTo('fleet-a/d01') - before === 20)
    await untilStatus(doc, 'the burst acknowledged', (s) => s.pendingLocalUpdates === 41)
    expect(timers.delays()).toEqual([100])
    clock += 100
    timers.runAll()
    await untilStatus(doc, 'everything acknowledged', (s) => s.pendingLocalUpdates === 0)
    expect(updatesTo('fleet-a/d01') - before).toBe(21)
    expect(await countedAtRelay('fleet-a/d01')).toBe(360)
    // The clock steps back a minute (NTP, a resumed machine): the pace waits its usual 100 ms, not a minute more.
    clock -= 60_000
    engine.ingest(readings('d01', 1, 361))
    await yieldTask()
    expect(timers.delays()).toEqual([100])
    clock += 100
    timers.runAll()
    await untilStatus(doc, 'sent after the step back', (s) => s.pendingLocalUpdates === 0)
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('joins again after a rate refusal, and the doc keeps syncing', async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    const timers = new FakeTimers()
    const { relay, errors } = relayClient(testRelay().url, token, { jitter: { random: seededRandom(4), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    const { engine, doc } = device(relay, 'fleet-a/d01', 'd01')
    await untilStatus(doc, 'in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    let refusals = 1
    testRelay().refuse = () => (refusals-- > 0 ? 'rate-limited' : null)
    engine.ingest(readings('d01', 3))
    await untilStatus(doc, 'closed by the relay', (s) => s.state !== 'connected')
    expect(statusOf(doc)).toMatchObject({ refusal: null, pendingLocalUpdates: 1 })
    expect(errors.map((e) => e.message)).toEqual([`relay ${testRelay().url}: fleet-a/d01: the relay refused a message past its rate (rate-limited), joining again`])
    timers.runAll()
    await untilStatus(doc, 'in sync again', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    expect(refusalOf(doc)).toBeUndefined()
    expect(await countedAtRelay('fleet-a/d01')).toBe(3)
    relay.destroy()
  })

  it('after a rate refusal, starts the room\'s pace from an empty bucket: its next update waits for a token', async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    const timers = new FakeTimers()
    let clock = 0
    const { relay, errors } = relayClient(testRelay().url, token, { updatesPerSecond: 10, jitter: { random: seededRandom(6), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout, now: () => clock } })
    const { engine, doc } = device(relay, 'fleet-a/d01', 'd01')
    await untilStatus(doc, 'in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    let refusals = 1
    testRelay().refuse = () => (refusals-- > 0 ? 'rate-limited' : null)
    engine.ingest(readings('d01', 1))
    await untilStatus(doc, 'closed by the relay', (s) => s.state !== 'connected')
    timers.runAll()
    await untilStatus(doc, 'in sync again', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    const before = updatesTo('fleet-a/d01')
    // 19 of the burst of 20 were left before the refusal: with them the update would go at once.
    engine.ingest(readings('d01', 1, 2))
    await yieldTask()
    expect([timers.delays(), statusOf(doc).pendingLocalUpdates, updatesTo('fleet-a/d01') - before]).toEqual([[100], 1, 0])
    clock += 100
    timers.runAll()
    await untilStatus(doc, 'the update acknowledged', (s) => s.pendingLocalUpdates === 0)
    expect(updatesTo('fleet-a/d01') - before).toBe(1)
    expect(errors).toHaveLength(1)
    relay.destroy()
  })

  it('opens no more rooms at once than a long token leaves room for in the relay\'s unauthenticated budget', async () => {
    // A 26.8 kB token: 512 KiB / (600 + 26.8 kB) = 19 rooms opening at once, whatever maxPendingRooms says.
    const token = await signToken({ sub: 'x'.repeat(20_000), role: 'device', rooms: ['fleet-a/*'] })
    const cap = Math.floor((1 << 19) / (600 + token.length))
    expect(cap).toBe(19)
    const { relay, errors } = relayClient(testRelay().url, token)
    const docs = Array.from({ length: 40 }, (_, i) => device(relay, `fleet-a/d${String(i).padStart(2, '0')}`, `d${i}`).doc)
    for (const doc of docs) await untilStatus(doc, 'in sync', (s) => s.state === 'connected')
    const wire = testRelay().received
    const auths = wire.flatMap((m, i) => (m.token !== null ? [i] : []))
    const stepOnesBefore = (at: number): number => wire.slice(0, at).filter((m) => m.type === 0 && m.step === 0).length
    expect(auths).toHaveLength(40)
    // The first wave: 19 tokens before any room was authenticated; the next once at most half of them were still opening.
    expect(stepOnesBefore(auths[cap - 1] as number)).toBe(0)
    expect(stepOnesBefore(auths[cap] as number)).toBeGreaterThanOrEqual(cap / 2)
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('reports a socket the relay closed for its unauthenticated budget (4413), and opens half as many rooms at once on the next sockets, twice as many again on one opened 10 minutes later', async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    const timers = new FakeTimers()
    let now = 1_000_000
    const { relay, errors } = relayClient(testRelay().url, token, { maxPendingRooms: 8, jitter: { random: seededRandom(6), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout, now: () => now } })
    const docs = Array.from({ length: 12 }, (_, i) => device(relay, `fleet-a/d${String(i).padStart(2, '0')}`, `d${i}`).doc)
    for (const doc of docs) await untilStatus(doc, 'in sync', (s) => s.state === 'connected')
    testRelay().closeSockets(4413, 'tidemark:unauthenticated-limit')
    await untilStatus(docs[0] as Y.Doc, 'offline', (s) => s.state !== 'connected')
    expect(errors.map((e) => e.message)).toEqual([`relay ${testRelay().url}: the relay closed the socket: 4413 tidemark:unauthenticated-limit`])
    timers.runAll()
    for (const doc of docs) await untilStatus(doc, 'in sync again', (s) => s.state === 'connected')
    const second = testRelay().received.filter((m) => m.socket === 2)
    const firstStepOne = second.findIndex((m) => m.type === 0 && m.step === 0)
    expect(second.slice(0, firstStepOne).filter((m) => m.token !== null)).toHaveLength(4)
    // Authentications sent on socket `n` before its first sync step: the first wave.
    const firstWave = (n: number): number => {
      const sent = testRelay().received.filter((m) => m.socket === n)
      return sent.slice(0, sent.findIndex((m) => m.type === 0 && m.step === 0)).filter((m) => m.token !== null).length
    }
    const reconnect = async (n: number): Promise<void> => {
      testRelay().closeSockets(1001, 'going away')
      await untilStatus(docs[0] as Y.Doc, `offline before socket ${n}`, (s) => s.state !== 'connected')
      timers.runAll()
      for (const doc of docs) await untilStatus(doc, `in sync on socket ${n}`, (s) => s.state === 'connected')
    }
    // Every room reached sync on it, and the bound stays halved on the next socket: grown back at
    // once, the next wave would be the one the relay closed the socket for.
    now += 9 * 60_000
    await reconnect(3)
    expect(firstWave(3)).toBe(4)
    // Ten minutes after the close, a new socket opens twice as many at once again.
    now += 60_000
    await reconnect(4)
    expect(firstWave(4)).toBe(8)
    relay.destroy()
  })

  it('sends a step 2 or update over maxMessageBytes in parts, each within it, acknowledged once as one message', async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    const { relay, errors } = relayClient(testRelay().url, token, { maxMessageBytes: 4_096 })
    const live = device(relay, 'fleet-a/d02', 'd02')
    await untilStatus(live.doc, 'd02 in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    // One group entry of 400 keys: one update of about 20 kB.
    live.engine.ingest(wide('d02', 400))
    await untilStatus(live.doc, 'd02 acknowledged', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    const parts = (room: string) => testRelay().received.filter((m) => m.room === room && m.type === 100)
    expect(parts('fleet-a/d02').length).toBeGreaterThanOrEqual(4)
    expect(Math.max(...parts('fleet-a/d02').map((m) => m.bytes))).toBeLessThanOrEqual(4_096)
    expect(await countedAtRelay('fleet-a/d02', 'all keys')).toBe(400)

    // A doc whose state is over the limit when it joins: its step 2 goes in parts.
    const engine = fleetEngine('d03')
    const doc = new Y.Doc()
    bindDoc(engine, doc)
    engine.ingest(wide('d03', 400))
    relay.join(doc, 'fleet-a/d03')
    await untilStatus(doc, 'd03 in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    expect(parts('fleet-a/d03').length).toBeGreaterThanOrEqual(4)
    expect(Math.max(...parts('fleet-a/d03').map((m) => m.bytes))).toBeLessThanOrEqual(4_096)
    expect(await countedAtRelay('fleet-a/d03', 'all keys')).toBe(400)
    expect(testRelay().sockets()).toBe(1)
    expect(errors).toEqual([])
    relay.destroy()
  })

  it("withdraws a presence over maxMessageBytes without sending it, and keeps the room: its doc syncs on, and a smaller presence shows again", async () => {
    const { relay, token, errors, engine, doc, awareness, shown, untilSeen, destroy } = await presenceRoom('d02', 'small')
    await untilSeen('the small presence shown', () => shown() === 'small')

    awareness.setLocalState({ note: 'x'.repeat(8_000) })
    await untilSeen('the large presence withdrawn', () => shown() === undefined)
    expect(errors.map((e) => e.message.replace(/\d{4,} bytes/, 'N bytes'))).toEqual([
      `relay ${testRelay().url}: fleet-a/d02: the presence of client ${doc.clientID} is N bytes, over maxMessageBytes (4096): not sent, withdrawn from the room until it is smaller`,
    ])
    // The awareness renews its state every 15 s (sets it again): not sent, not withdrawn again (the
    // relay no longer shows it), not reported again. The readings sent after it are a barrier.
    const socket = testRelay().received.find((m) => m.room === 'fleet-a/d02' && m.token === token)?.socket
    const presences = () => testRelay().received.filter((m) => m.socket === socket && m.room === 'fleet-a/d02' && m.type === 1).length
    const withdrawals = presences()
    // The small presence, and its withdrawal.
    expect(withdrawals).toBeGreaterThanOrEqual(2)
    awareness.setLocalState(awareness.getLocalState())
    // Not one message over the limit, and the room stays: its readings reach the relay.
    expect(Math.max(...testRelay().received.filter((m) => m.room === 'fleet-a/d02').map((m) => m.bytes))).toBeLessThanOrEqual(4_096)
    engine.ingest(readings('d02', 3))
    await untilStatus(doc, 'd02 acknowledged', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    expect(statusOf(doc).refusal).toBeNull()
    expect(await countedAtRelay('fleet-a/d02')).toBe(3)
    expect(presences()).toBe(withdrawals)
    expect(errors).toHaveLength(1)

    awareness.setLocalState({ note: 'small again' })
    await untilSeen('the smaller presence shown again', () => shown() === 'small again')
    expect(errors).toHaveLength(1)
    expect(testRelay().sockets()).toBe(2)
    relay.destroy()
    destroy()
  })

  it('sends presences over the limit together in groups within it', async () => {
    const { relay, errors, awareness, seen, shown, untilSeen, destroy } = await presenceRoom('d03', 'y'.repeat(1_500))
    await untilSeen('the presence shown', () => shown()?.length === 1_500)
    const before = testRelay().received.filter((m) => m.room === 'fleet-a/d03' && m.type === 1).length
    // Peers of another transport, relayed through this room: four presences of 1.5 kB.
    const peers = Array.from({ length: 4 }, (_, i) => {
      const peer = new Awareness(new Y.Doc())
      peer.setLocalState({ note: `${i}`.repeat(1_500) })
      return peer
    })
    const relayed = new Awareness(new Y.Doc())
    for (const peer of peers) applyAwarenessUpdate(relayed, encodeAwarenessUpdate(peer, [peer.clientID]), 'peer')
    // One update of all four, as a transport hands them over: over the limit together.
    applyAwarenessUpdate(awareness, encodeAwarenessUpdate(relayed, peers.map((peer) => peer.clientID)), 'other transport')
    awareness.setLocalState({ note: 'z'.repeat(1_500) })
    await untilSeen('every presence shown', () => peers.every((peer) => seen.getStates().has(peer.clientID)) && shown()?.startsWith('z') === true)
    const sent = testRelay().received.filter((m) => m.room === 'fleet-a/d03' && m.type === 1).slice(before)
    expect(Math.max(...sent.map((m) => m.bytes))).toBeLessThanOrEqual(4_096)
    expect(sent.length).toBeGreaterThanOrEqual(2)
    expect(errors).toEqual([])
    for (const peer of [...peers, relayed]) peer.destroy()
    relay.destroy()
    destroy()
  })

  it('refuses the room that sent the largest message when the relay closes the socket for its size (1009); the others join again', async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    const timers = new FakeTimers()
    // The client allows more than this relay (1 MiB).
    const { relay, errors } = relayClient(testRelay().url, token, { maxMessageBytes: 8 << 20, jitter: { random: seededRandom(5), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    const small = device(relay, 'fleet-a/d01', 'd01')
    const large = device(relay, 'fleet-a/d02', 'd02')
    await untilStatus(large.doc, 'd02 in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    await untilStatus(small.doc, 'd01 in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    large.engine.ingest(wide('d02', 20_000))
    await untilStatus(large.doc, 'd02 refused', (s) => s.refusal !== null)
    expect(statusOf(large.doc).refusal).toMatch(/^tidemark:too-large \d+ bytes$/)
    expect(errors.map((e) => e.message.replace(/\d{6,} bytes/, 'N bytes'))).toEqual([
      `relay ${testRelay().url}: the relay closed the socket: 1009`,
      `relay ${testRelay().url}: fleet-a/d02: a message of N bytes is over the relay's limit (1009): refused (tidemark:too-large)`,
    ])
    timers.runAll()
    small.engine.ingest(readings('d01', 5))
    await untilStatus(small.doc, 'd01 in sync on a new socket', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    expect(await countedAtRelay('fleet-a/d01')).toBe(5)
    // Refused, it is not sent again: one socket closed for it.
    expect(statusOf(large.doc).state).toBe('offline')
    relay.destroy()
  })
})
