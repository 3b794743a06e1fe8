/**
 * A dashboard follows a fleet through the relay's directory room: rooms listed now and later
 * are bound read-only to its engine on one socket, nothing it does ever puts an update on the
 * wire, and its engine's sync status is one fold of all those rooms.
 */
import { boundedOutOfOrderness, createEngine, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { seededRandom } from '@tidemark/seeded-random'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import * as Y from 'yjs'
import { followRooms } from '../../src/relay/followRooms.ts'
import { MESSAGE_CLOSE } from '../../src/relay/relayProtocol.ts'
import { counted, device, FakeTimers, fleetEngine, readings, relayClient, statusOf, until, untilEngine, untilStatus } from './harness.ts'
import { signToken, startTestRelay, type TestRelay } from './testRelay.ts'

let server: TestRelay
beforeEach(async () => {
  server = await startTestRelay()
  // Hocuspocus logs each refused authentication; none other is expected.
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    if (String(args[0]) !== '[onAuthenticate]') throw new Error(`unexpected console.error: ${args.map(String).join(' ')}`)
  })
})
afterEach(async () => {
  await server.stop()
  vi.restoreAllMocks()
})

const DIRECTORY = 'fleet-a/_directory'

describe('followRooms', () => {
  it('follows the rooms of the directory, now and later, read-only and on one socket', async () => {
    const devices = relayClient(server.url, await signToken({ sub: 'devices', role: 'device', rooms: ['fleet-a/*'] }))
    const d01 = device(devices.relay, 'fleet-a/d01', 'd01')
    d01.engine.ingest(readings('d01', 3))
    await untilStatus(d01.doc, 'd01 stored', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    await server.list(DIRECTORY, ['fleet-a/d01'])

    const dashboardToken = await signToken({ sub: 'wall', role: 'dashboard', rooms: ['fleet-a/*'] })
    const dashboard = relayClient(server.url, dashboardToken)
    const engine = fleetEngine('wall')
    const follower = followRooms(engine, dashboard.relay, { directory: DIRECTORY })
    await untilEngine(engine, "d01's readings", () => counted(engine) === 3)
    await untilEngine(engine, 'in sync', () => engine.syncStatus().state === 'connected')

    // A device that appears later: listed by the relay, followed at once.
    const d02 = device(devices.relay, 'fleet-a/d02', 'd02')
    d02.engine.ingest(readings('d02', 2))
    await untilStatus(d02.doc, 'd02 stored', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    await server.list(DIRECTORY, ['fleet-a/d02'])
    await untilEngine(engine, "d02's readings", () => counted(engine) === 5)
    // And live updates of a followed room.
    d01.engine.ingest(readings('d01', 4, 4))
    await untilEngine(engine, "d01's live readings", () => counted(engine) === 9)
    await untilEngine(engine, 'all in sync', () => engine.syncStatus().state === 'connected')
    expect([...follower.rooms().keys()]).toEqual(['fleet-a/d01', 'fleet-a/d02'])
    expect(engine.syncStatus()).toMatchObject({ state: 'connected', pendingLocalUpdates: 0, refusal: null })

    // On the wire, the dashboard's socket carried tokens and sync step 1 only: never a step 2, never an update.
    const sent = server.received.filter((m) => m.socket === socketOf(dashboardToken))
    const kinds = new Set(sent.map((m) => `${m.type}/${m.step}`))
    expect([...kinds].sort()).toEqual(['0/0', '2/null'])
    expect(new Set(sent.map((m) => m.room))).toEqual(new Set([DIRECTORY, 'fleet-a/d01', 'fleet-a/d02']))
    expect(server.sockets()).toBe(2)

    follower.destroy()
    expect(follower.rooms().size).toBe(0)
    // The engine keeps what it merged.
    expect(counted(engine)).toBe(9)
    expect(dashboard.errors).toEqual([])
    expect(devices.errors).toEqual([])
    dashboard.relay.destroy()
    devices.relay.destroy()
  })

  it("folds every room into the engine's status: a refused room shows, the others keep it connected", async () => {
    await server.list(DIRECTORY, ['fleet-a/d01', 'fleet-b/d09'])
    const dashboard = relayClient(server.url, await signToken({ sub: 'wall', role: 'dashboard', rooms: ['fleet-a/*'] }))
    const engine = fleetEngine('wall')
    const follower = followRooms(engine, dashboard.relay, { directory: DIRECTORY })
    await untilEngine(engine, 'the refusal', () => engine.syncStatus().refusal !== null && engine.syncStatus().state === 'connected')
    expect(engine.syncStatus()).toMatchObject({ state: 'connected', refusal: 'tidemark:room-not-allowed fleet-b/d09' })
    expect(follower.rooms().get('fleet-b/d09')).toMatchObject({ state: 'offline', refusal: 'tidemark:room-not-allowed fleet-b/d09' })
    expect(follower.rooms().get('fleet-a/d01')).toMatchObject({ state: 'connected', refusal: null })

    // The relay goes away: every room and the directory offline, so is the engine.
    await server.stop()
    await untilEngine(engine, 'offline', () => engine.syncStatus().state === 'offline')
    follower.destroy()
    dashboard.relay.destroy()
  })

  it('refills a fresh engine in one merge once every listed room synced: no window fires on part of the fleet', async () => {
    const devices = relayClient(server.url, await signToken({ sub: 'devices', role: 'device', rooms: ['fleet-a/*'] }))
    // Two devices, three minutes of readings each.
    for (const name of ['d01', 'd02']) {
      const d = device(devices.relay, `fleet-a/${name}`, name)
      d.engine.ingest(readings(name, 180))
      await untilStatus(d.doc, `${name} stored`, (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    }
    await server.list(DIRECTORY, ['fleet-a/d01', 'fleet-a/d02'])
    const refill = async (options: { refill?: false }) => {
      const dashboard = relayClient(server.url, await signToken({ sub: 'wall', role: 'dashboard', rooms: ['fleet-a/*'] }))
      const engine = createEngine({ windows: tumbling(60_000), watermark: boundedOutOfOrderness(0), retention: Number.POSITIVE_INFINITY, replicaId: 'wall' }) as TidemarkEngine
      const follower = followRooms(engine, dashboard.relay, { directory: DIRECTORY, ...options })
      await untilEngine(engine, 'both rooms', () => counted(engine) === 360)
      const seen = { report: follower.refill(), stats: engine.stats() }
      follower.destroy()
      dashboard.relay.destroy()
      return seen
    }
    // Merged as each room lands, the first room's readings fire windows final that the second one's then change.
    const roomByRoom = await refill({ refill: false })
    expect(roomByRoom.report).toBeNull()
    expect(roomByRoom.stats.finalityViolations).toBeGreaterThan(0)
    const together = await refill({})
    expect(together.report).toMatchObject({ state: 'merged', rooms: 2, synced: 2, missing: [] })
    expect(together.stats).toMatchObject({ sources: 2, finalityViolations: 0, corrections: 0 })
    devices.relay.destroy()
  }, 20_000)

  it('leaves a room that leaves the directory: its Close goes out, rooms() no longer lists it, its later writes stay out', async () => {
    const devices = relayClient(server.url, await signToken({ sub: 'devices', role: 'device', rooms: ['fleet-a/*'] }))
    const d01 = device(devices.relay, 'fleet-a/d01', 'd01')
    const d02 = device(devices.relay, 'fleet-a/d02', 'd02')
    await server.list(DIRECTORY, ['fleet-a/d01', 'fleet-a/d02'])
    const dashboardToken = await signToken({ sub: 'wall', role: 'dashboard', rooms: ['fleet-a/*'] })
    const dashboard = relayClient(server.url, dashboardToken)
    const engine = fleetEngine('wall')
    const follower = followRooms(engine, dashboard.relay, { directory: DIRECTORY })
    await untilEngine(engine, 'both rooms in sync', () => follower.rooms().size === 2 && engine.syncStatus().state === 'connected')

    await server.unlist(DIRECTORY, ['fleet-a/d02'])
    const closed = () => server.received.some((m) => m.socket === socketOf(dashboardToken) && m.room === 'fleet-a/d02' && m.type === MESSAGE_CLOSE)
    await until('the Close of fleet-a/d02', closed, (notify) => {
      server.events.on('message', notify)
      return () => server.events.off('message', notify)
    })
    expect([...follower.rooms().keys()]).toEqual(['fleet-a/d01'])
    // Written after it left: d02's readings never reach the engine, d01's still do.
    d02.engine.ingest(readings('d02', 2))
    await untilStatus(d02.doc, 'd02 stored', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    d01.engine.ingest(readings('d01', 3))
    await untilEngine(engine, "d01's readings", () => counted(engine) === 3)
    expect(engine.results({ key: 'temp' }).every((result) => result.count === 3)).toBe(true)
    expect(dashboard.errors).toEqual([])
    follower.destroy()
    dashboard.relay.destroy()
    devices.relay.destroy()
  })

  it('gives up waiting for a room that has not synced after refill.boundMs on refill.timers, reports it with tookMs on refill.now, and merges it when it lands', async () => {
    const devices = relayClient(server.url, await signToken({ sub: 'devices', role: 'device', rooms: ['fleet-a/*'] }))
    const d01 = device(devices.relay, 'fleet-a/d01', 'd01')
    const d02 = device(devices.relay, 'fleet-a/d02', 'd02')
    d01.engine.ingest(readings('d01', 3))
    d02.engine.ingest(readings('d02', 2))
    for (const { doc } of [d01, d02]) await untilStatus(doc, 'stored', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    await server.list(DIRECTORY, ['fleet-a/d01', 'fleet-a/d02'])
    // The relay cannot open fleet-a/d02 for the dashboard now; its rejoin waits on the dashboard's timers.
    server.denyOpen = (room) => (room === 'fleet-a/d02' ? 'tidemark:too-many-rooms 2 rooms are loaded' : null)
    const relayTimers = new FakeTimers()
    const dashboard = relayClient(server.url, await signToken({ sub: 'wall', role: 'dashboard', rooms: ['fleet-a/*'] }), {
      jitter: { random: seededRandom(9), setTimeout: relayTimers.setTimeout, clearTimeout: relayTimers.clearTimeout },
    })
    const refillTimers = new FakeTimers()
    let clock = 50_000
    const engine = fleetEngine('wall')
    const follower = followRooms(engine, dashboard.relay, { directory: DIRECTORY, bind: { now: () => clock }, refill: { boundMs: 4_000, timers: refillTimers, now: () => clock } })
    await untilEngine(engine, 'd01 in sync', () => follower.rooms().get('fleet-a/d01')?.state === 'connected')
    await until('the rejoin of fleet-a/d02 scheduled', () => relayTimers.delays().length > 0, (notify) => relayTimers.subscribe(notify))
    // Held: nothing merged while d02 has not synced and the bound has not run out.
    expect(follower.refill()).toMatchObject({ state: 'waiting', rooms: 2, synced: 1 })
    expect(counted(engine)).toBe(0)
    // The rooms' sync status reaches the engine meanwhile: d01 and the directory connected, d02 still connecting.
    expect(engine.syncStatus()).toMatchObject({ state: 'connecting', refusal: null })
    // d01 and the directory synced on the binding's clock (`bind.now`), which the engine holds too.
    expect(follower.rooms().get('fleet-a/d01')).toMatchObject({ state: 'connected', lastSync: 50_000 })
    expect(follower.rooms().get('fleet-a/d02')?.lastSync).toBeNull()
    expect(engine.syncStatus().lastSync).toBe(50_000)
    expect(refillTimers.delays()).toEqual([4_000])
    clock += 1_234
    refillTimers.runAll()
    expect(follower.refill()).toEqual({ state: 'timedOut', rooms: 2, synced: 1, missing: ['fleet-a/d02'], tookMs: 1_234 })
    expect(counted(engine)).toBe(3)
    expect(follower.rooms().get('fleet-a/d02')).toMatchObject({ state: 'connecting', refusal: null })
    // The relay opens it at last: left behind by the refill, it merges when it lands.
    server.denyOpen = () => null
    relayTimers.runAll()
    await until('the new socket', () => relayTimers.delays().length > 0, (notify) => relayTimers.subscribe(notify))
    relayTimers.runAll()
    await untilEngine(engine, "d02's readings", () => counted(engine) === 5)
    expect(follower.refill()).toMatchObject({ state: 'timedOut', missing: ['fleet-a/d02'] })
    follower.destroy()
    dashboard.relay.destroy()
    devices.relay.destroy()
  })

  it('shows a directory the token may not read as the refusal, and closes with the engine', async () => {
    const dashboard = relayClient(server.url, await signToken({ sub: 'wall', role: 'dashboard', rooms: ['fleet-a/d01'] }))
    const engine = fleetEngine('wall')
    const follower = followRooms(engine, dashboard.relay, { directory: DIRECTORY })
    await untilEngine(engine, 'the refusal', () => engine.syncStatus().refusal !== null)
    expect(engine.syncStatus()).toMatchObject({ state: 'offline', refusal: `tidemark:room-not-allowed ${DIRECTORY}` })
    await engine.close()
    // Closing the engine destroyed the follower: the directory can be joined again.
    expect(follower.rooms().size).toBe(0)
    expect(statusOf(dashboard.relay.join(new Y.Doc(), DIRECTORY).doc).refusal).toBeNull()
    dashboard.relay.destroy()
  })
})

/** The socket on which `token` authenticated. */
function socketOf(token: string): number {
  const auth = server.received.find((m) => m.token === token)
  if (auth === undefined) throw new Error('that token never authenticated')
  return auth.socket
}
