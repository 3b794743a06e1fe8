/**
 * Rooms per token subject (`maxRoomsPerSubject`): a token whose pattern admits names nobody
 * wrote holds at most its share of the rooms a relay may load, the other fleets' rooms still
 * open; a room counts once for its subject however many sockets hold it; a closed socket or a
 * failed load lets its rooms go at once; the bound is configured and checked like the others.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { ManualTimers } from '@tidemark/engine/testing'
import { connectRelay, syncStatusTracker } from '@tidemark/yjs'
import { DEFAULT_LIMITS, openPglite, type Relay, type RelayOptions, RelayConfigError, relayOptionsFromEnv, resolveRelayOptions, roomsPerSubjectFor, startRelay } from '../src/index.ts'
import type { Hocuspocus } from '@hocuspocus/server'
import { RoomAdmission } from '../src/gate/roomAdmission.ts'
import { IdleRooms } from '../src/rooms/idleRooms.ts'
import { SubjectRooms } from '../src/rooms/subjectRooms.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { startTestRelay } from './support/testRelays.ts'
import { failable } from './support/failableSql.ts'
import { deviceToken, metric, openRoom, type RoomClient, relaySocket, SECRET, SECRET_TEXT, signToken, waitFor, waitUntil } from './support/roomClients.ts'

const relays: Relay[] = []
const sockets: ReturnType<typeof relaySocket>[] = []
const clients: RoomClient[] = []

const relayWith = (options: Partial<RelayOptions> = {}): Promise<Relay> => startTestRelay(relays, options)

function socketOf(relay: Relay): ReturnType<typeof relaySocket> {
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  return socket
}

/** Opens each of `rooms` on `socket` with `token`. */
function openAll(socket: ReturnType<typeof relaySocket>, rooms: readonly string[], token: string): RoomClient[] {
  return rooms.map((room) => {
    const client = openRoom(socket, room, token)
    clients.push(client)
    return client
  })
}

/** Every client synced or denied; returns the denials in order. */
async function outcomes(opened: readonly RoomClient[], what: string): Promise<string[]> {
  await waitFor(() => opened.every((client) => client.synced() || client.denied.length > 0), what)
  return opened.flatMap((client) => client.denied)
}

/** A dashboard token of subject `sub` for every room of `fleet`: names nobody wrote included. */
function patternToken(sub: string, fleet: string): Promise<string> {
  return signToken({ sub, role: 'dashboard', rooms: [`${fleet}/*`] })
}

const names = (fleet: string, count: number, from = 0): string[] => Array.from({ length: count }, (_, i) => `${fleet}/x${from + i}`)

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy()
  for (const socket of sockets.splice(0)) socket.destroy()
  await Promise.all(relays.splice(0).map((relay) => relay.close()))
})

afterAll(() => removeDataDirs())

describe('rooms per subject', () => {
  it("a token whose pattern admits names nobody wrote holds at most its subject's share: the other fleets' rooms still open", async () => {
    // Eight rooms loaded at most: two per subject by default.
    const relay = await relayWith({ limits: { maxRooms: 8, idleRoomMs: 600_000 } })
    const token = await patternToken('ops', 'fleet-a')
    // As many names nobody wrote as the relay may load, over two sockets.
    const first = openAll(socketOf(relay), names('fleet-a', 4), token)
    const second = openAll(socketOf(relay), names('fleet-a', 4, 4), token)
    const denied = await outcomes([...first, ...second], 'every room opened or refused')
    expect(denied).toEqual(Array.from({ length: 6 }, () => 'tidemark:subject-room-limit 2 rooms are open for subject ops'))
    expect([...first, ...second].filter((client) => client.synced())).toHaveLength(2)
    // Another fleet's device, and another fleet's dashboard, are not refused.
    const device = openAll(socketOf(relay), ['fleet-b/d1'], await deviceToken('fleet-b', 'd1'))
    const dashboard = openAll(socketOf(relay), ['fleet-c/_directory', 'fleet-c/d1'], await patternToken('ops-c', 'fleet-c'))
    expect(await outcomes([...device, ...dashboard], 'the other fleets opened')).toEqual([])
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="subject-room-limit"}')).toBe(6)
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="too-many-rooms"}')).toBe(0)
    expect(await metric(relay.httpUrl, 'tidemark_relay_rooms_loaded')).toBe(5)
    expect(await metric(relay.httpUrl, 'tidemark_relay_subject_rooms_most')).toBe(2)
  })

  it('a room counts once for its subject: a client back on a new socket while its old one is still open opens the same rooms', async () => {
    const relay = await relayWith({ limits: { maxRooms: 100, maxRoomsPerSubject: 3 } })
    const token = await patternToken('ops', 'fleet-a')
    const rooms = ['fleet-a/_directory', 'fleet-a/d1', 'fleet-a/d2']
    expect(await outcomes(openAll(socketOf(relay), rooms, token), 'the first socket')).toEqual([])
    // The old socket is still open (the relay has not seen it die): the same rooms open again.
    expect(await outcomes(openAll(socketOf(relay), rooms, token), 'the second socket')).toEqual([])
    expect(await metric(relay.httpUrl, 'tidemark_relay_subject_rooms_most')).toBe(3)
    // A fourth room is past the subject's share, on either socket.
    expect(await outcomes(openAll(socketOf(relay), ['fleet-a/d3'], token), 'a fourth room')).toEqual(['tidemark:subject-room-limit 3 rooms are open for subject ops'])
  })

  it("a socket closing lets its subject's rooms go at once, with no timer run", async () => {
    // On a fake clock that never moves: nothing waits for a timer (the rooms stay loaded, idle).
    const clock = new ManualTimers(Date.now())
    const relay = await relayWith({ limits: { maxRooms: 100, maxRoomsPerSubject: 2 }, now: () => clock.now, timers: clock })
    const token = await patternToken('ops', 'fleet-a')
    const first = socketOf(relay)
    expect(await outcomes(openAll(first, names('fleet-a', 2), token), 'two rooms')).toEqual([])
    expect(await outcomes(openAll(socketOf(relay), names('fleet-a', 1, 2), token), 'a third room')).toEqual(['tidemark:subject-room-limit 2 rooms are open for subject ops'])
    first.destroy()
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_subject_rooms_most')) === 0, 'the closed socket let its rooms go')
    expect(await outcomes(openAll(socketOf(relay), names('fleet-a', 2, 10), token), 'two other rooms')).toEqual([])
    expect(await metric(relay.httpUrl, 'tidemark_relay_rooms_loaded')).toBe(4)
  })

  it('a room whose load fails lets its hold go, while the socket that asked for it stays open', async () => {
    const sql = failable(await openPglite(freshDataDir()))
    const relay = await relayWith({ store: { sql }, limits: { maxRooms: 100, maxRoomsPerSubject: 2 } })
    const token = await patternToken('ops', 'fleet-a')
    sql.failing = true
    const refused = await outcomes(openAll(socketOf(relay), names('fleet-a', 2), token), 'the loads refused')
    expect(refused).toEqual(['tidemark:store-unavailable the room could not be loaded', 'tidemark:store-unavailable the room could not be loaded'])
    sql.failing = false
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_subject_rooms_most')) === 0, 'the failed loads let their rooms go')
    expect(await outcomes(openAll(socketOf(relay), names('fleet-a', 2, 2), token), 'two rooms once the store is back')).toEqual([])
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="subject-room-limit"}')).toBe(0)
  })

  it("a dashboard on connectRelay's defaults opens its share in waves without a refusal; one room past it is refused, not retried", async () => {
    // 1,200 rooms loaded at most: 300 per subject; the dashboard follows 300 rooms, then one more.
    const relay = await relayWith({ limits: { maxRooms: 1200 } })
    const token = await patternToken('ops', 'fleet-w')
    const errors: Error[] = []
    const client = connectRelay({ url: relay.url, token, WebSocket, onError: (error) => errors.push(error) })
    try {
      const docs = names('fleet-w', 300).map((room) => {
        const doc = new Y.Doc()
        client.join(doc, room)
        return doc
      })
      await waitFor(() => docs.every((doc) => syncStatusTracker(doc).status().state === 'connected'), 'every room connected')
      const extra = new Y.Doc()
      client.join(extra, 'fleet-w/x300')
      await waitFor(() => syncStatusTracker(extra).status().refusal !== null, 'the room past the share refused')
      expect(syncStatusTracker(extra).status().refusal).toBe('tidemark:subject-room-limit 300 rooms are open for subject ops')
      // Not a temporary denial: the socket is not restarted, the 300 rooms stay open on it.
      expect(docs.every((doc) => syncStatusTracker(doc).status().state === 'connected')).toBe(true)
      expect(await metric(relay.httpUrl, 'tidemark_relay_connections')).toBe(1)
      expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="subject-room-limit"}')).toBe(1)
      expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="unauthenticated-limit"}')).toBe(0)
    } finally {
      client.destroy()
    }
  })
})

describe('maxRoomsPerSubject', () => {
  it('defaults to a quarter of maxRooms, at least 1', () => {
    expect(DEFAULT_LIMITS.maxRoomsPerSubject).toBe(roomsPerSubjectFor(DEFAULT_LIMITS.maxRooms))
    expect(resolveRelayOptions({ auth: { secret: SECRET } }).limits.maxRoomsPerSubject).toBe(2500)
    expect(resolveRelayOptions({ auth: { secret: SECRET }, limits: { maxRooms: 2 } }).limits.maxRoomsPerSubject).toBe(1)
    expect(resolveRelayOptions({ auth: { secret: SECRET }, limits: { maxRooms: 400, maxRoomsPerSubject: 400 } }).limits.maxRoomsPerSubject).toBe(400)
  })

  it('is refused past maxRooms, or below 1, naming the option or the variable', async () => {
    expect(() => resolveRelayOptions({ auth: { secret: SECRET }, limits: { maxRooms: 100, maxRoomsPerSubject: 101 } })).toThrow(
      new RangeError('startRelay: limits.maxRoomsPerSubject must be at most limits.maxRooms (100), got 101'),
    )
    expect(() => resolveRelayOptions({ auth: { secret: SECRET }, limits: { maxRoomsPerSubject: 0 } })).toThrow(new RangeError('startRelay: limits.maxRoomsPerSubject must be an integer >= 1, got 0'))
    await expect(startRelay({ auth: { secret: SECRET }, port: 0, limits: { maxRoomsPerSubject: 20_000 } })).rejects.toThrow(/limits.maxRoomsPerSubject must be at most limits.maxRooms \(10000\), got 20000/)
    const env = { TIDEMARK_AUTH_SECRET: SECRET_TEXT }
    expect(relayOptionsFromEnv({ ...env, TIDEMARK_MAX_ROOMS_PER_SUBJECT: '64' }).limits).toEqual({ maxRoomsPerSubject: 64 })
    expect(() => relayOptionsFromEnv({ ...env, TIDEMARK_MAX_ROOMS: '10', TIDEMARK_MAX_ROOMS_PER_SUBJECT: '11' })).toThrow(
      new RelayConfigError('TIDEMARK_MAX_ROOMS_PER_SUBJECT', 'must be at most TIDEMARK_MAX_ROOMS (10), got 11'),
    )
  })
})

describe('SubjectRooms', () => {
  it('counts rooms, not holders, per subject; a release frees a room once its last holder lets go; releasing twice does nothing', () => {
    const rooms = new SubjectRooms(2)
    const [a, b, c, d, e] = [{}, {}, {}, {}, {}]
    expect(rooms.take('ops', 'f/1', a)).toBe(true)
    expect(rooms.take('ops', 'f/1', b)).toBe(true)
    expect(rooms.take('ops', 'f/2', c)).toBe(true)
    expect(rooms.take('ops', 'f/3', d)).toBe(false)
    expect(rooms.take('other', 'f/3', e)).toBe(true)
    expect(rooms.heldBy('ops')).toBe(2)
    rooms.release(a)
    expect(rooms.take('ops', 'f/3', d)).toBe(false)
    rooms.release(b)
    rooms.release(b)
    expect(rooms.heldBy('ops')).toBe(1)
    expect(rooms.take('ops', 'f/3', d)).toBe(true)
    expect(rooms.most).toBe(2)
    expect(() => rooms.take('ops', 'f/4', d)).toThrow('SubjectRooms.take: this holder already holds f/3')
    for (const holder of [c, d, e]) rooms.release(holder)
    expect(rooms.most).toBe(0)
  })
})

describe('RoomAdmission', () => {
  /** A Hocuspocus stand-in whose loads fail while `failing` is set. */
  function instance(): { hocuspocus: Hocuspocus; failing: boolean } {
    const stub = {
      failing: false,
      hocuspocus: {
        documents: new Map(),
        loadingDocuments: new Map(),
        createDocument: async () => {
          if (stub.failing) throw new Error('the load failed')
          return {}
        },
      } as unknown as Hocuspocus,
    }
    return stub
  }
  const admission = (stub: { hocuspocus: Hocuspocus }): RoomAdmission => {
    const clock = new ManualTimers(0)
    const idle = new IdleRooms(1000, clock.read, clock, () => undefined)
    const admitted = new RoomAdmission({ maxRooms: 10, maxRoomsPerSubject: 1 }, idle)
    admitted.attach(stub.hocuspocus)
    return admitted
  }
  const nextMacrotask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))
  const create = (stub: { hocuspocus: Hocuspocus }, room: string, gate: object) => stub.hocuspocus.createDocument(room, {}, 'socket', { readOnly: true, isAuthenticated: true }, { tidemark: { gate } })

  it('a holder whose room Hocuspocus does not go on to create lets its hold go at the next macrotask', async () => {
    const stub = instance()
    const rooms = admission(stub)
    expect(await rooms.admit('ops', 'f/1', {})).toBeNull()
    expect((await rooms.admit('ops', 'f/2', {}))?.text).toBe('subject-room-limit 1 rooms are open for subject ops')
    await nextMacrotask()
    expect(await rooms.admit('ops', 'f/2', {})).toBeNull()
  })

  it('a holder whose room loads keeps its hold until its connection closes; one whose load fails lets it go', async () => {
    const stub = instance()
    const rooms = admission(stub)
    const opened = {}
    expect(await rooms.admit('ops', 'f/1', opened)).toBeNull()
    await create(stub, 'f/1', opened)
    await nextMacrotask()
    expect(rooms.mostHeldBySubject).toBe(1)
    rooms.closed(opened)
    expect(rooms.mostHeldBySubject).toBe(0)
    const failed = {}
    stub.failing = true
    expect(await rooms.admit('ops', 'f/2', failed)).toBeNull()
    await expect(create(stub, 'f/2', failed)).rejects.toThrow('the load failed')
    expect(rooms.mostHeldBySubject).toBe(0)
  })

  it('refuses to admit before it is attached', async () => {
    const clock = new ManualTimers(0)
    const rooms = new RoomAdmission({ maxRooms: 10, maxRoomsPerSubject: 1 }, new IdleRooms(1000, clock.read, clock, () => undefined))
    await expect(rooms.admit('ops', 'f/1', {})).rejects.toThrow('RoomAdmission: attach a Hocuspocus instance before admitting connections')
  })
})
