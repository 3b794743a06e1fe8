/**
 * Rooms the relay cannot open *now* (its store or Redis failed while loading them, or it holds
 * as many rooms as it may) are not refusals: the client reports each denial through onError and
 * joins those rooms again on one new socket after a jittered delay, until the relay opens them;
 * permanent denials still stick. followRooms' directory and rooms recover the same way.
 */
import { seededRandom } from '@tidemark/seeded-random'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { followRooms } from '../../src/relay/followRooms.ts'
import { counted, device, FakeTimers, fleetEngine, readings, relayClient, statusOf, until, untilEngine, untilStatus } from './harness.ts'
import { signToken, testRelayPerTest } from './testRelay.ts'

// Hocuspocus logs every hook that throws (a denial, a failed load); those are expected.
const testRelay = testRelayPerTest(/^\[(onAuthenticate|onLoadDocument)\]$/)

const STORE_DOWN = 'tidemark:store-unavailable the room could not be loaded'
const REDIS_DOWN = 'tidemark:redis-unavailable the room could not be shared with the other relays'
const FULL = 'tidemark:too-many-rooms 2 rooms are loaded'

const authsOf = (room: string): number => testRelay().received.filter((m) => m.room === room && m.token !== null).length

/** onError collecting its errors, and a wait for the next `n` of them. */
function errorLog(): { onError: (error: Error) => void; messages: string[]; untilCount: (n: number) => Promise<void> } {
  const messages: string[] = []
  const listeners = new Set<() => void>()
  return {
    messages,
    onError: (error) => {
      messages.push(error.message)
      for (const listener of listeners) listener()
    },
    untilCount: (n) =>
      until(
        `${n} errors`,
        () => messages.length >= n,
        (notify) => {
          listeners.add(notify)
          return () => listeners.delete(notify)
        },
      ),
  }
}

const untilTimer = (timers: FakeTimers, what: string): Promise<void> => until(what, () => timers.delays().length > 0, (notify) => timers.subscribe(notify))

describe('relay client: rooms the relay cannot open now', () => {
  it('joins rooms denied for store, Redis or room limits again on one new socket, reports each denial, and keeps permanent denials', async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/d01', 'fleet-a/d02', 'fleet-a/d03', 'fleet-a/d04'] })
    const timers = new FakeTimers()
    const log = errorLog()
    const { relay } = relayClient(testRelay().url, token, { onError: log.onError, jitter: { random: seededRandom(5), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    testRelay().failLoad = (room) => (room === 'fleet-a/d01' ? STORE_DOWN : room === 'fleet-a/d02' ? REDIS_DOWN : null)
    testRelay().denyOpen = (room) => (room === 'fleet-a/d03' ? FULL : null)
    const waiting = ['d01', 'd02', 'd03'].map((id) => device(relay, `fleet-a/${id}`, id))
    const d04 = device(relay, 'fleet-a/d04', 'd04')
    const rooms = [...waiting, d04]
    for (const [i, { engine }] of rooms.entries()) engine.ingest(readings(`d0${i + 1}`, 2))
    const forbidden = new Y.Doc()
    relay.join(forbidden, 'fleet-a/d05')
    await untilStatus(forbidden, 'the permanent refusal', (s) => s.refusal !== null)
    await log.untilCount(3)
    await untilStatus(d04.doc, 'd04 in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    expect(new Set(log.messages)).toEqual(
      new Set([`relay ${testRelay().url}: fleet-a/d01: not opened (${STORE_DOWN}), joining again`, `relay ${testRelay().url}: fleet-a/d02: not opened (${REDIS_DOWN}), joining again`, `relay ${testRelay().url}: fleet-a/d03: not opened (${FULL}), joining again`]),
    )
    // Not refused: waiting to join again, their writes pending. One socket for all three.
    for (const { doc, engine } of waiting) {
      expect(statusOf(doc)).toMatchObject({ state: 'connecting', refusal: null, pendingLocalUpdates: 2 })
      expect(engine.syncStatus().refusal).toBeNull()
    }
    expect(statusOf(forbidden)).toMatchObject({ state: 'offline', refusal: 'tidemark:room-not-allowed fleet-a/d05' })
    expect(timers.delays()).toHaveLength(1)
    expect(timers.delays()[0]).toBeLessThan(500)

    // Still down at the next attempt: denied and reported again, the next socket later.
    timers.runAll()
    await untilTimer(timers, 'the new socket')
    expect(timers.delays()).toEqual([0])
    timers.runAll()
    await log.untilCount(6)
    await untilStatus(d04.doc, 'd04 in sync on the second socket', (s) => s.state === 'connected')
    expect(timers.delays()).toHaveLength(1)
    expect(timers.delays()[0]).toBeLessThan(1000)

    // The relay recovered: every room opens on the next socket and its writes are acknowledged.
    testRelay().failLoad = () => null
    testRelay().denyOpen = () => null
    timers.runAll()
    await untilTimer(timers, 'the third socket')
    timers.runAll()
    for (const [i, { doc, engine }] of rooms.entries()) {
      await untilStatus(doc, `d0${i + 1} in sync`, (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
      expect(engine.syncStatus()).toMatchObject({ state: 'connected', refusal: null })
    }
    expect(statusOf(forbidden).refusal).toBe('tidemark:room-not-allowed fleet-a/d05')
    expect([authsOf('fleet-a/d01'), authsOf('fleet-a/d03'), authsOf('fleet-a/d04'), authsOf('fleet-a/d05')]).toEqual([3, 3, 3, 1])
    expect(log.messages).toHaveLength(6)
    // What each device wrote while its room was denied reached the relay.
    for (const id of ['d01', 'd02', 'd03', 'd04']) {
      const stored = new Y.Doc()
      Y.applyUpdate(stored, await testRelay().content(`fleet-a/${id}`))
      expect(stored.getArray(`tidemark:replica:${id}`).length).toBeGreaterThan(0)
    }
    relay.destroy()
  })

  it('waits longer after each denial of a room, and the shortest window again once it was in sync', async () => {
    const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
    const timers = new FakeTimers()
    const log = errorLog()
    // The top of each window: baseMs 100 gives 99, 199, 399, ... (the window of the room's attempt n less 1).
    const { relay } = relayClient(testRelay().url, token, { onError: log.onError, jitter: { baseMs: 100, random: () => 0.999, setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout } })
    testRelay().failLoad = () => STORE_DOWN
    const { doc } = device(relay, 'fleet-a/d01', 'd01')
    const waits: number[] = []
    for (let denial = 1; denial <= 3; denial++) {
      await log.untilCount(denial)
      await untilTimer(timers, `the wait after denial ${denial}`)
      waits.push(...timers.delays())
      timers.runAll()
      // Its new socket, at once.
      await untilTimer(timers, `the new socket after denial ${denial}`)
      expect(timers.delays()).toEqual([0])
      if (denial === 3) testRelay().failLoad = () => null
      timers.runAll()
    }
    expect(waits).toEqual([99, 199, 399])
    await untilStatus(doc, 'in sync', (s) => s.state === 'connected' && s.refusal === null)
    // The relay unloads the room (a Close, no refusal): it joins again after the shortest window.
    testRelay().closeRoom('fleet-a/d01')
    await untilTimer(timers, 'the rejoin')
    expect(timers.delays()).toEqual([99])
    relay.destroy()
  })

  it('follows a fleet again after a relay restart whose store was down for the directory and a room', async () => {
    const devices = relayClient(testRelay().url, await signToken({ sub: 'devices', role: 'device', rooms: ['fleet-a/*'] }))
    const d01 = device(devices.relay, 'fleet-a/d01', 'd01')
    const d02 = device(devices.relay, 'fleet-a/d02', 'd02')
    d01.engine.ingest(readings('d01', 3))
    d02.engine.ingest(readings('d02', 2))
    await untilStatus(d01.doc, 'd01 stored', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    await untilStatus(d02.doc, 'd02 stored', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    await testRelay().list('fleet-a/_directory', ['fleet-a/d01', 'fleet-a/d02'])
    devices.relay.destroy()

    const timers = new FakeTimers()
    const log = errorLog()
    const wall = relayClient(testRelay().url, await signToken({ sub: 'wall', role: 'dashboard', rooms: ['fleet-a/*'] }), {
      onError: log.onError,
      jitter: { random: seededRandom(3), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout },
    })
    const engine = fleetEngine('wall')
    const follower = followRooms(engine, wall.relay, { directory: 'fleet-a/_directory' })
    await untilEngine(engine, 'the fleet followed', () => counted(engine) === 5 && engine.syncStatus().state === 'connected')

    // The relay restarts while its database is down for the directory and d02.
    await testRelay().stop()
    await untilEngine(engine, 'offline', () => engine.syncStatus().state === 'offline')
    testRelay().failLoad = (room) => (room === 'fleet-a/_directory' || room === 'fleet-a/d02' ? STORE_DOWN : null)
    await testRelay().start()
    timers.runAll()
    await log.untilCount(2)
    expect(new Set(log.messages)).toEqual(new Set([`relay ${testRelay().url}: fleet-a/_directory: not opened (${STORE_DOWN}), joining again`, `relay ${testRelay().url}: fleet-a/d02: not opened (${STORE_DOWN}), joining again`]))
    await untilEngine(engine, 'd01 in sync again', () => follower.rooms().get('fleet-a/d01')?.state === 'connected')
    expect(follower.rooms().get('fleet-a/d02')).toMatchObject({ state: 'connecting', refusal: null })
    expect(engine.syncStatus()).toMatchObject({ state: 'connecting', refusal: null })

    // The database is back: the directory and d02 open on the next socket.
    testRelay().failLoad = () => null
    timers.runAll()
    await untilTimer(timers, 'the new socket')
    timers.runAll()
    await untilEngine(engine, 'every room in sync', () => engine.syncStatus().state === 'connected')
    expect([...follower.rooms().values()].map((status) => [status.state, status.refusal])).toEqual([
      ['connected', null],
      ['connected', null],
    ])
    // New devices listed later are still followed: the directory is live again.
    const late = relayClient(testRelay().url, await signToken({ sub: 'd03', role: 'device', rooms: ['fleet-a/d03'] }))
    const d03 = device(late.relay, 'fleet-a/d03', 'd03')
    d03.engine.ingest(readings('d03', 4))
    await untilStatus(d03.doc, 'd03 stored', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    await testRelay().list('fleet-a/_directory', ['fleet-a/d03'])
    await untilEngine(engine, "d03's readings", () => counted(engine) === 9)
    expect(log.messages).toHaveLength(2)
    late.relay.destroy()
    follower.destroy()
    wall.relay.destroy()
  })
})
