/**
 * Limits, each set low on a relay in this process: update rate, room bytes, rooms loaded, idle
 * rooms, unauthenticated bytes, the authentication deadline, message size; and store failures:
 * failed loads leave no document and no timer behind, failed writes are retried.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import { connectRelay, syncStatusTracker } from '@tidemark/yjs'
import { openPglite, type Relay, type RelayOptions, startRelay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { startTestRelay } from './support/testRelays.ts'
import { failable } from './support/failableSql.ts'
import { authFrame, awarenessFrame, messageFrame, updateFrame } from './support/hocuspocusFrames.ts'
import { ManualTimers } from '@tidemark/engine/testing'
import { dashboardToken, deviceToken, groupEntry, metric, openRoom, type RoomClient, rawSocket, relaySocket, replicaLog, SECRET, waitFor, waitUntil } from './support/roomClients.ts'

const relays: Relay[] = []
const sockets: ReturnType<typeof relaySocket>[] = []
const clients: RoomClient[] = []

const relayWith = (options: Partial<RelayOptions> = {}): Promise<Relay> => startTestRelay(relays, options)

function open(relay: Relay, room: string, token: string): RoomClient & { readonly socket: ReturnType<typeof relaySocket> } {
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const client = openRoom(socket, room, token)
  clients.push(client)
  return Object.assign(client, { socket })
}

function closeClients(): void {
  for (const client of clients.splice(0)) client.destroy()
  for (const socket of sockets.splice(0)) socket.destroy()
}



/**
 * An update of `count` garbage-collected structs of one clock each, for a client id of its own:
 * two bytes a struct, nothing inserted, so every check passes, and no Yjs encoder writes it
 * (it merges neighbouring ones).
 */
function collectedStructs(client: number, count: number): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, 1)
  encoding.writeVarUint(encoder, count)
  encoding.writeVarUint(encoder, client)
  encoding.writeVarUint(encoder, 0)
  for (let i = 0; i < count; i++) {
    encoding.writeUint8(encoder, 0)
    encoding.writeVarUint(encoder, 1)
  }
  encoding.writeVarUint(encoder, 0)
  return encoding.toUint8Array(encoder)
}

afterEach(async () => {
  closeClients()
  await Promise.all(relays.splice(0).map((relay) => relay.close()))
})

afterAll(() => removeDataDirs())

describe('limits', () => {
  it('an update rate past the bucket is refused with rate-limited', async () => {
    const relay = await relayWith({ limits: { updatesPerSecond: 1, updateBurst: 20 } })
    const device = open(relay, 'fleet-r/d1', await deviceToken('fleet-r', 'd1'))
    await waitFor(() => device.synced(), 'synced')
    for (let i = 0; i < 100; i++) replicaLog(device.doc, 'd1').push([groupEntry('d1-temp', i * 60_000)])
    await waitFor(() => device.closed.length > 0, 'the refusal')
    expect(device.closed).toEqual(['tidemark:refused rate-limited'])
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="rate-limited"}')).toBe(1)
    expect(await metric(relay.httpUrl, 'tidemark_relay_updates_in_total')).toBeLessThan(20)
  })

  it('updates past the bytes of a room are refused with room-too-large', async () => {
    const relay = await relayWith({ limits: { maxRoomBytes: 4096 } })
    const device = open(relay, 'fleet-b/d1', await deviceToken('fleet-b', 'd1'))
    await waitFor(() => device.synced(), 'synced')
    for (let i = 0; i < 100 && device.closed.length === 0; i++) {
      replicaLog(device.doc, 'd1').push([groupEntry('d1-temp', i * 60_000)])
      await waitFor(() => !device.provider.hasUnsyncedChanges || device.closed.length > 0, `update ${i} acknowledged`)
    }
    expect(device.closed).toEqual(['tidemark:refused room-too-large'])
    const dashboard = open(relay, 'fleet-b/d1', await dashboardToken('fleet-b'))
    await waitFor(() => dashboard.synced(), 'dashboard synced')
    const entries = replicaLog(dashboard.doc, 'd1').length
    expect(entries).toBeGreaterThan(10)
    expect(entries).toBeLessThan(100)
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="room-too-large"}')).toBe(1)
  })

  it('past the rooms loaded, an idle room is unloaded to make room; with none idle, opening is refused', async () => {
    const relay = await relayWith({ limits: { maxRooms: 2, idleRoomMs: 600_000 } })
    const a = open(relay, 'fleet-m/a', await deviceToken('fleet-m', 'a'))
    const b = open(relay, 'fleet-m/b', await deviceToken('fleet-m', 'b'))
    await waitFor(() => a.synced() && b.synced(), 'two rooms open')
    const c = open(relay, 'fleet-m/c', await deviceToken('fleet-m', 'c'))
    await waitFor(() => c.denied.length > 0, 'the third room refused')
    expect(c.denied).toEqual(['tidemark:too-many-rooms 2 rooms are loaded'])
    a.destroy()
    sockets[0]?.destroy()
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_connections')) === 2, "the relay saw a's socket close")
    const d = open(relay, 'fleet-m/d', await deviceToken('fleet-m', 'd'))
    await waitFor(() => d.synced() || d.denied.length > 0, 'the fourth room')
    expect(d.denied).toEqual([])
    expect(await metric(relay.httpUrl, 'tidemark_relay_rooms_loaded')).toBe(2)
  })

  it('a room nobody is connected to is stored and unloaded after the idle time', async () => {
    // On a fake clock: the idle time passes when the test says.
    const clock = new ManualTimers(Date.now())
    const relay = await relayWith({ limits: { idleRoomMs: 30_000 }, now: () => clock.now, timers: clock })
    const device = open(relay, 'fleet-i/d1', await deviceToken('fleet-i', 'd1'))
    await waitFor(() => device.synced(), 'synced')
    replicaLog(device.doc, 'd1').push([groupEntry('d1-temp', 0)])
    await waitFor(() => !device.provider.hasUnsyncedChanges, 'acknowledged')
    closeClients()
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_connections')) === 0, 'the socket closed')
    // The device room and the fleet's directory (which the relay opened to list it) stay loaded for a while…
    clock.advance(29_999)
    expect(await metric(relay.httpUrl, 'tidemark_relay_rooms_loaded')).toBe(2)
    // …then are unloaded.
    clock.advance(1)
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_rooms_loaded')) === 0, 'both rooms unloaded')
    const dashboard = open(relay, 'fleet-i/d1', await dashboardToken('fleet-i'))
    await waitFor(() => replicaLog(dashboard.doc, 'd1').length === 1, 'the room loaded again from the store')
  })

  it('a socket sending too much before authenticating is closed with unauthenticated-limit', async () => {
    const relay = await relayWith({ limits: { maxUnauthenticatedBytes: 64 << 10 } })
    const { ws, closed } = await rawSocket(relay)
    // A refused room stays pending: Hocuspocus queues its later frames until the socket closes.
    ws.send(authFrame('fleet-u/d1', 'not-a-token'))
    const frame = updateFrame('fleet-u/d1', new Uint8Array(1024))
    for (let i = 0; i < 256 && ws.readyState === WebSocket.OPEN; i++) ws.send(frame)
    expect(await closed).toEqual({ code: 4413, reason: 'tidemark:unauthenticated-limit' })
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="unauthenticated-limit"}')).toBe(1)
  })

  it('a socket has at most 2,048 room names pending, whatever its budget: the name past them closes it with unauthenticated-limit', async () => {
    // A budget no name count reaches (2,049 names of 512 bytes each are about 1 MiB): only the count bounds them.
    const relay = await relayWith({ limits: { maxUnauthenticatedBytes: 64 << 20 } })
    const queryAwareness = 3
    // 2,047 names and the Auth of a room: 2,048 pending, and the room opens on the socket.
    const full = await rawSocket(relay)
    const answered: string[] = []
    full.ws.on('message', (data: Buffer) => answered.push(decoding.readVarString(decoding.createDecoder(new Uint8Array(data)))))
    for (let i = 0; i < 2_047; i++) full.ws.send(messageFrame(`fleet-q/n${i}`, queryAwareness))
    full.ws.send(authFrame('fleet-q/d1', await dashboardToken('fleet-q')))
    await waitFor(() => answered.includes('fleet-q/d1'), 'the 2,048th name opened')
    // 2,048 names and one more.
    const past = await rawSocket(relay)
    for (let i = 0; i < 2_049 && past.ws.readyState === WebSocket.OPEN; i++) past.ws.send(messageFrame(`fleet-q/n${i}`, queryAwareness))
    expect(await past.closed).toEqual({ code: 4413, reason: 'tidemark:unauthenticated-limit' })
    expect(full.ws.readyState).toBe(WebSocket.OPEN)
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="unauthenticated-limit"}')).toBe(1)
    full.ws.close()
  })

  it('a dashboard joining more rooms than the unauthenticated budget covers at once opens them in waves (maxPendingRooms) and is never closed', async () => {
    // 64 KiB: about 85 room names pending with this token (each name 512 bytes, its Auth about 250); the dashboard follows 300 rooms.
    const relay = await relayWith({ limits: { maxUnauthenticatedBytes: 64 << 10 } })
    const token = await dashboardToken('fleet-w')
    const rooms = Array.from({ length: 300 }, (_, i) => `fleet-w/d${i}`)
    const join = (maxPendingRooms: number) => {
      const errors: Error[] = []
      // Reconnects never run: a closed socket stays closed, and the test sees it.
      const jitter = { setTimeout: () => 0, clearTimeout: () => undefined }
      const relayClient = connectRelay({ url: relay.url, token, WebSocket, maxPendingRooms, jitter, onError: (error) => errors.push(error) })
      const docs = rooms.map((room) => {
        const doc = new Y.Doc()
        relayClient.join(doc, room)
        return doc
      })
      const connected = () => docs.filter((doc) => syncStatusTracker(doc).status().state === 'connected').length
      return { relayClient, errors, connected }
    }
    const refusals = () => metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="unauthenticated-limit"}')
    // All at once: the relay closes the socket past its budget.
    const unpaced = join(rooms.length)
    await waitUntil(async () => (await refusals()) === 1, 'the unpaced socket closed for its budget')
    unpaced.relayClient.destroy()
    // 32 opening at most: every room opens, and is in sync, on the one socket.
    const paced = join(32)
    await waitFor(() => paced.connected() === rooms.length, 'every room connected')
    expect(await refusals()).toBe(1)
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_connections')) === 1, 'one socket left: the paced one')
    expect(paced.errors).toEqual([])
    paced.relayClient.destroy()
  })

  it('a socket that authenticates nothing in time is closed with auth-timeout', async () => {
    const clock = new ManualTimers(Date.now())
    const relay = await relayWith({ limits: { authTimeoutMs: 10_000 }, now: () => clock.now, timers: clock })
    const { ws, closed } = await rawSocket(relay)
    // The relay armed the deadline when it accepted the socket, before the client saw it open.
    clock.advance(9_999)
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="auth-timeout"}')).toBe(0)
    expect(ws.readyState).toBe(WebSocket.OPEN)
    clock.advance(1)
    // The relay stopped reading the socket; it cuts it after its grace period.
    clock.advance(1_000)
    expect(await closed).toEqual({ code: 4408, reason: 'tidemark:auth-timeout' })
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="auth-timeout"}')).toBe(1)
  })

  it('a time limit longer than a timer can hold is refused at start, not armed as 1 ms', async () => {
    // Node arms a timer of more than 2^31 - 1 ms for 1 ms instead: every socket would be cut at
    // once (authTimeoutMs), every room unloaded at once (idleRoomMs).
    for (const [group, name] of [
      ['limits', 'authTimeoutMs'],
      ['limits', 'idleRoomMs'],
      ['persistence', 'writeWindowMs'],
      ['persistence', 'storeDebounceMs'],
      ['persistence', 'storeMaxDebounceMs'],
    ] as const) {
      await expect(startRelay({ port: 0, store: { dataDir: freshDataDir() }, auth: { secret: SECRET }, [group]: { [name]: 2 ** 31 } })).rejects.toThrow(
        `startRelay: ${group}.${name} must be an integer in 1..2147483647 (ms), got 2147483648`,
      )
    }
    // Byte and count limits have no such bound.
    const relay = await relayWith({ limits: { maxRoomBytes: 2 ** 40 } })
    expect((await fetch(`${relay.httpUrl}/healthz`)).status).toBe(200)
  })

  it('garbage-collected structs of new client ids count against the room\'s bytes: they insert nothing, yet each grows its state', async () => {
    const relay = await relayWith({ limits: { maxRoomBytes: 4096 } })
    const device = open(relay, 'fleet-g/d1', await deviceToken('fleet-g', 'd1'))
    await waitFor(() => device.synced(), 'synced')
    // One struct each, for a client id of its own: about 10 bytes of the state vector per update.
    for (let client = 1_000; client < 2_000; client++) (device.socket.webSocket as unknown as WebSocket).send(updateFrame('fleet-g/d1', collectedStructs(client, 1)))
    await waitFor(() => device.closed.length > 0, 'the refusal')
    expect(device.closed).toEqual(['tidemark:refused room-too-large'])
  })

  it('update bytes past a sender\'s burst in a room are refused as rate-limited; joining again gives no new burst; the budget refills with time', async () => {
    const KIB = 1 << 10
    const clock = { now: Date.now() }
    const relay = await relayWith({ limits: { maxRoomBytes: 64 * KIB, updateBytesPerSecond: 8 * KIB }, now: () => clock.now })
    const dashboard = open(relay, 'fleet-b/d1', await dashboardToken('fleet-b'))
    const first = open(relay, 'fleet-b/d1', await deviceToken('fleet-b', 'd1'))
    await waitFor(() => dashboard.synced() && first.synced(), 'synced')
    /** Sends `structs` collected structs of client `client` on `socket`, and waits until the dashboard has them. */
    const sent = async (socket: ReturnType<typeof relaySocket>, client: number): Promise<void> => {
      ;(socket.webSocket as unknown as WebSocket).send(updateFrame('fleet-b/d1', collectedStructs(client, 10_000)))
      await waitFor(() => Y.getState(dashboard.doc.store, client) === 10_000, `client ${client}'s structs at the dashboard`)
    }
    // Three updates of 20 KB fit the 64 KiB burst; a fourth is refused, and never applied.
    for (const client of [101, 102, 103]) await sent(first.socket, client)
    ;(first.socket.webSocket as unknown as WebSocket).send(updateFrame('fleet-b/d1', collectedStructs(104, 10_000)))
    await waitFor(() => first.closed.length > 0, 'the refusal')
    expect(first.closed).toEqual(['tidemark:refused rate-limited'])
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="rate-limited"}')).toBe(1)
    // The same device on a new connection, 1 s on (8 KiB more): its budget is the one it left.
    clock.now += 1_000
    const second = open(relay, 'fleet-b/d1', await deviceToken('fleet-b', 'd1'))
    await waitFor(() => second.synced(), 'the second connection synced')
    ;(second.socket.webSocket as unknown as WebSocket).send(updateFrame('fleet-b/d1', collectedStructs(105, 10_000)))
    await waitFor(() => second.closed.length > 0, 'the second refusal')
    expect(second.closed).toEqual(['tidemark:refused rate-limited'])
    expect([104, 105].map((client) => Y.getState(dashboard.doc.store, client))).toEqual([0, 0])
    // 10 s on, the burst is back.
    clock.now += 10_000
    const third = open(relay, 'fleet-b/d1', await deviceToken('fleet-b', 'd1'))
    await waitFor(() => third.synced(), 'the third connection synced')
    await sent(third.socket, 106)
    expect(third.closed).toEqual([])
  })

  it("presence bytes have a budget per sender and room of their own: past it, a presence is dropped unread, and the sender's connection and updates go on", async () => {
    const KIB = 1 << 10
    const clock = { now: Date.now() }
    const relay = await relayWith({ limits: { maxRoomBytes: 100 * KIB, updateBytesPerSecond: 8 * KIB }, now: () => clock.now })
    const watcher = open(relay, 'fleet-v/d1', await dashboardToken('fleet-v'))
    const device = open(relay, 'fleet-v/d1', await deviceToken('fleet-v', 'd1'))
    await waitFor(() => watcher.synced() && device.synced(), 'synced')
    const shows = (client: RoomClient, id: number, n: number) => client.provider.awareness?.getStates().get(id)?.n === n
    const socket = device.socket.webSocket as unknown as WebSocket
    /** Sets client 4242's presence at clock `n` to a state of `pad` bytes and more, on the device's socket. */
    const present = (n: number, pad: number): void => {
      const update = encoding.createEncoder()
      encoding.writeVarUint(update, 1)
      encoding.writeVarUint(update, 4242)
      encoding.writeVarUint(update, n)
      encoding.writeVarString(update, JSON.stringify({ n, pad: 'x'.repeat(pad) }))
      socket.send(awarenessFrame('fleet-v/d1', encoding.toUint8Array(update)))
    }
    const dropped = () => metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')
    // The device's provider sends each presence it receives back, charged too: the first state, its
    // echo and the second (90 KB) fit the 100 KiB burst; the second's echo and a third are dropped.
    for (const n of [1, 2]) {
      present(n, 30_000)
      // Its own provider has it, so its echo went on the socket before the next state.
      await waitFor(() => shows(watcher, 4242, n) && shows(device, 4242, n), `presence ${n} shown`)
    }
    const before = await dropped()
    present(3, 30_000)
    await waitUntil(async () => (await dropped()) >= before + 1, 'the third presence dropped')
    // Its updates have their own budget: three of 20 KB pass.
    for (const client of [101, 102, 103]) {
      socket.send(updateFrame('fleet-v/d1', collectedStructs(client, 10_000)))
      await waitFor(() => Y.getState(watcher.doc.store, client) === 10_000, `client ${client}'s structs at the watcher`)
    }
    expect(shows(watcher, 4242, 3)).toBe(false)
    expect([device.closed, watcher.closed]).toEqual([[], []])
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="rate-limited"}')).toBe(0)
    // A second on, 8 KiB more: a small state is shown.
    clock.now += 1_000
    present(4, 10)
    await waitFor(() => shows(watcher, 4242, 4), 'presence 4 shown')
  })

  it('a message past the size limit closes its socket (1009) and is counted as too-large', async () => {
    const relay = await relayWith({ limits: { maxMessageBytes: 64 << 10 } })
    const { ws, closed } = await rawSocket(relay)
    ws.send(updateFrame('fleet-s/d1', new Uint8Array(100 << 10)))
    expect((await closed).code).toBe(1009)
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="too-large"}')).toBe(1)
  })
})

describe('store failures', () => {
  it('failed loads close their connections with a reason and leave no document and no timer behind', async () => {
    const sql = failable(await openPglite(freshDataDir()))
    const relay = await relayWith({ store: { sql } })
    const timers = (): number => process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length
    const baseline = timers()
    sql.failing = true
    const token = await dashboardToken('fleet-f')
    const socket = relaySocket(relay.url)
    const attempts = Array.from({ length: 50 }, (_, i) => openRoom(socket, `fleet-f/d${i}`, token))
    await waitFor(() => attempts.every((client) => client.denied.length > 0), 'every load refused')
    expect(new Set(attempts.flatMap((client) => client.denied))).toEqual(new Set(['tidemark:store-unavailable the room could not be loaded']))
    for (const client of attempts) client.destroy()
    socket.destroy()
    expect(await metric(relay.httpUrl, 'tidemark_relay_room_load_failures_total')).toBe(50)
    expect(await metric(relay.httpUrl, 'tidemark_relay_rooms_loaded')).toBe(0)
    await waitFor(() => timers() <= baseline, `timers back to ${baseline} (now ${timers()})`)
    const health = await fetch(`${relay.httpUrl}/healthz`)
    expect(health.status).toBe(503)
    expect(await health.text()).toBe('store unavailable: the database is down\n')
    sql.failing = false
    expect((await fetch(`${relay.httpUrl}/healthz`)).status).toBe(200)
  })

  it('writes that fail are retried until the store is back; the room meanwhile keeps syncing', async () => {
    const sql = failable(await openPglite(freshDataDir()))
    // On a fake clock: the write window and the retry delay pass when the test says.
    const clock = new ManualTimers(Date.now())
    const relay = await relayWith({ store: { sql }, now: () => clock.now, timers: clock })
    const device = open(relay, 'fleet-w/d1', await deviceToken('fleet-w', 'd1'))
    const dashboard = open(relay, 'fleet-w/d1', await dashboardToken('fleet-w'))
    await waitFor(() => device.synced() && dashboard.synced(), 'synced')
    sql.failing = true
    for (let i = 0; i < 5; i++) replicaLog(device.doc, 'd1').push([groupEntry('d1-temp', i * 60_000)])
    await waitFor(() => replicaLog(dashboard.doc, 'd1').length === 5, 'the dashboard has the updates')
    expect(await metric(relay.httpUrl, 'tidemark_relay_store_failures_total{op="flush"}')).toBe(0)
    clock.advance(20)
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_store_failures_total{op="flush"}')) > 0, 'a failed write')
    expect(await metric(relay.httpUrl, 'tidemark_relay_updates_stored_total')).toBe(0)
    sql.failing = false
    // The first retry comes 250 ms after the failure.
    clock.advance(249)
    expect(await metric(relay.httpUrl, 'tidemark_relay_updates_stored_total')).toBe(0)
    clock.advance(1)
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_updates_stored_total')) >= 5, 'the updates stored after the store came back')
  })
})
