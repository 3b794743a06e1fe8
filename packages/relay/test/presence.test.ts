/**
 * Presence (awareness) is held per client id: a connection sets a state only for a client id
 * whose Yjs writes are its own replica's, or, for one that wrote nothing, that it set first. A
 * forged presence is dropped (and counted), not refused: the forger's connection stays, and an
 * honest client is never closed for its own id.
 */
import * as encoding from 'lib0/encoding'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { type Relay, startRelay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { authFrame, presenceText, updateFrame } from './support/hocuspocusFrames.ts'
import { clockEntry, dashboardToken, deviceToken, groupEntry, metric, openRoom, type RoomClient, rawSocket, relaySocket, replicaLog, SECRET, waitFor, waitUntil } from './support/roomClients.ts'

const FLEET = 'fleet-p'
const ROOM = `${FLEET}/d1`
let relay: Relay
const sockets: { destroy(): void }[] = []
const clients: RoomClient[] = []

async function open(token: Promise<string>): Promise<{ client: RoomClient; socket: ReturnType<typeof relaySocket> }> {
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const client = openRoom(socket, ROOM, await token)
  clients.push(client)
  await waitFor(() => client.synced(), 'synced')
  return { client, socket }
}

/** A Hocuspocus awareness message for `room` setting `client`'s state at `clock`. */
function forgedPresence(room: string, client: number, clock: number, state: unknown): Uint8Array {
  const update = encoding.createEncoder()
  encoding.writeVarUint(update, 1)
  encoding.writeVarUint(update, client)
  encoding.writeVarUint(update, clock)
  encoding.writeVarString(update, JSON.stringify(state))
  const frame = encoding.createEncoder()
  encoding.writeVarString(frame, room)
  encoding.writeVarUint(frame, 1)
  encoding.writeVarUint8Array(frame, encoding.toUint8Array(update))
  return encoding.toUint8Array(frame)
}

const presenceOf = (observer: RoomClient, client: number): unknown => observer.provider.awareness?.getStates().get(client)

beforeAll(async () => {
  relay = await startRelay({ port: 0, store: { dataDir: freshDataDir() }, auth: { secret: SECRET }, persistence: { writeWindowMs: 20 }, log: () => undefined })
})

afterAll(async () => {
  for (const client of clients) client.destroy()
  for (const socket of sockets) socket.destroy()
  await relay?.close()
  removeDataDirs()
})

describe('presence', () => {
  it("is not set for a device's client id by another connection, nor for an id another connection set first", async () => {
    const device = (await open(deviceToken(FLEET, 'd1'))).client
    device.doc.transact(() => {
      device.doc.getMap('tidemark:meta').set('d1', [2, 'cfg'])
      replicaLog(device.doc, 'd1').push([groupEntry('d1-temp', 0, 1), clockEntry('d1-temp', 'd1', 1)])
    })
    device.provider.setAwarenessField('name', 'd1')
    const observer = (await open(dashboardToken(FLEET))).client
    observer.provider.setAwarenessField('name', 'observer')
    await waitFor(() => replicaLog(observer.doc, 'd1').length === 2, "the device's entry on the observer")
    const deviceId = device.doc.clientID
    const observerId = observer.doc.clientID
    await waitFor(() => (presenceOf(observer, deviceId) as { name?: string } | undefined)?.name === 'd1', "the device's presence")
    await waitFor(() => (presenceOf(device, observerId) as { name?: string } | undefined)?.name === 'observer', "the observer's presence")

    const before = await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')
    const { client: forger, socket } = await open(dashboardToken(FLEET))
    socket.send(forgedPresence(ROOM, deviceId, 1000, { name: 'forged' }))
    socket.send(forgedPresence(ROOM, observerId, 1000, { name: 'forged' }))
    // The forger's own presence, sent after: once it shows, the forged ones were handled.
    forger.provider.setAwarenessField('name', 'forger')
    await waitFor(() => (presenceOf(observer, forger.doc.clientID) as { name?: string } | undefined)?.name === 'forger', "the forger's own presence")
    await waitFor(() => (presenceOf(device, forger.doc.clientID) as { name?: string } | undefined)?.name === 'forger', "the forger's presence on the device")
    expect(presenceOf(observer, deviceId)).toEqual({ name: 'd1' })
    expect(presenceOf(device, observerId)).toEqual({ name: 'observer' })
    expect(await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')).toBe(before + 2)
    expect(forger.closed).toEqual([])
    expect(forger.stateless).toEqual([])
  })

  it("lets another's presence be removed one clock past the room's, never further; an id is free again once its holder left", async () => {
    const watcher = (await open(dashboardToken(FLEET))).client
    const { client: visitor, socket: visitorSocket } = await open(dashboardToken(FLEET))
    visitor.provider.setAwarenessField('name', 'visitor')
    const visitorId = visitor.doc.clientID
    const shown = (name: string) => () => (presenceOf(watcher, visitorId) as { name?: string } | undefined)?.name === name
    await waitFor(shown('visitor'), "the visitor's presence")
    const before = await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')
    const clock = visitor.provider.awareness?.meta.get(visitorId)?.clock as number

    // A removal far ahead would pin the id's clock: dropped. One clock on is what a peer's timeout sends: applied.
    const { client: other, socket } = await open(dashboardToken(FLEET))
    socket.send(forgedPresence(ROOM, visitorId, clock + 1000, null))
    other.provider.setAwarenessField('name', 'other')
    await waitFor(() => (presenceOf(watcher, other.doc.clientID) as { name?: string } | undefined)?.name === 'other', "the other's presence")
    expect(presenceOf(watcher, visitorId)).toEqual({ name: 'visitor' })
    expect(visitor.provider.awareness?.meta.get(visitorId)?.clock).toBe(clock)
    socket.send(forgedPresence(ROOM, visitorId, clock + 1, null))
    // It reached the visitor, whose y-protocols answers a removal of its own presence by showing it again, a clock on.
    await waitFor(() => (visitor.provider.awareness?.meta.get(visitorId)?.clock ?? 0) >= clock + 2, 'the visitor answered the removal')
    await waitFor(shown('visitor'), "the visitor's presence shown again")
    expect(await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')).toBe(before + 1)

    // The visitor leaves: the relay removes its presence and lets go of its id, which the next
    // connection to set it takes (a client back with a new provider for the same doc does so
    // once its awareness clock passes the room's).
    visitor.destroy()
    visitorSocket.destroy()
    await waitFor(() => presenceOf(watcher, visitorId) === undefined, "the visitor's presence gone with it")
    const now = watcher.provider.awareness?.meta.get(visitorId)?.clock as number
    socket.send(forgedPresence(ROOM, visitorId, now + 1, { name: 'back' }))
    await waitFor(shown('back'), 'the id set again')
    expect(await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')).toBe(before + 1)
  })

  it('refuses a presence nested deeper than 64 levels, which Hocuspocus could not encode again: the room keeps opening for others', async () => {
    const room = `${FLEET}/nested`
    const open64 = async (): Promise<RoomClient> => {
      const socket = relaySocket(relay.url)
      sockets.push(socket)
      const client = openRoom(socket, room, await dashboardToken(FLEET))
      clients.push(client)
      await waitFor(() => client.synced(), `${room} synced`)
      return client
    }
    const watcher = await open64()
    const attackerSocket = relaySocket(relay.url)
    sockets.push(attackerSocket)
    const attacker = openRoom(attackerSocket, room, await dashboardToken(FLEET))
    clients.push(attacker)
    await waitFor(() => attacker.synced(), 'the attacker synced')
    const id = 4242
    // 64 levels pass; the removal and 5,000 levels after it in one message are refused whole.
    const nested = (levels: number): string => `${'['.repeat(levels)}${']'.repeat(levels)}`
    attackerSocket.send(presenceText(room, [[id, 1, nested(64)]]))
    await waitFor(() => presenceOf(watcher, id) !== undefined, 'a presence nested 64 levels shown')
    attackerSocket.send(presenceText(room, [[id, 2, 'null'], [id, 3, nested(5_000)]]))
    await waitFor(() => attacker.closed.length > 0, 'the deep presence refused')
    expect(attacker.closed).toEqual(['tidemark:refused malformed-message a presence state nested deeper than 64 levels'])
    const later = await open64()
    expect(later.denied).toEqual([])
  })

  it('a connection sets the presence of at most 8 ids that wrote nothing: a ninth is dropped and counted, and the connection stays', async () => {
    const room = `${FLEET}/eight`
    const watcherSocket = relaySocket(relay.url)
    sockets.push(watcherSocket)
    const watcher = openRoom(watcherSocket, room, await dashboardToken(FLEET))
    clients.push(watcher)
    await waitFor(() => watcher.synced(), 'the watcher synced')
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const setter = openRoom(socket, room, await dashboardToken(FLEET))
    clients.push(setter)
    await waitFor(() => setter.synced(), 'the setter synced')
    const before = await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')
    for (let i = 0; i < 9; i++) socket.send(forgedPresence(room, 2_000_000 + i, 1, { n: i }))
    // Handled in order: once the ninth is shown or a presence was dropped, the ninth was handled.
    await waitUntil(
      async () => presenceOf(watcher, 2_000_008) !== undefined || (await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')) > before,
      'the ninth handled',
    )
    await waitFor(() => Array.from({ length: 8 }, (_, i) => 2_000_000 + i).every((id) => presenceOf(watcher, id) !== undefined), 'the first 8 shown')
    expect(await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')).toBe(before + 1)
    expect(presenceOf(watcher, 2_000_008)).toBeUndefined()
    expect(setter.closed).toEqual([])
  })

  it('an awareness update of 1,024 states is read; one of 1,025 is refused as malformed-message', async () => {
    const room = `${FLEET}/many`
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const sender = openRoom(socket, room, await dashboardToken(FLEET))
    clients.push(sender)
    await waitFor(() => sender.synced(), 'the sender synced')
    const states = (count: number): [number, number, string][] => Array.from({ length: count }, (_, i) => [3_000_000 + i, 1, '{}'])
    const before = await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')
    // Past the 8 ids one connection may set: dropped, which says the relay read it.
    socket.send(presenceText(room, states(1_024)))
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')) > before, 'the 1,024 states read')
    expect(sender.closed).toEqual([])
    socket.send(presenceText(room, states(1_025)))
    await waitFor(() => sender.closed.length > 0, 'the 1,025 states refused')
    expect(sender.closed).toEqual(['tidemark:refused malformed-message 1025 awareness states in one update'])
  })

  it('a room shows at most 512 presences: past that a new one is dropped and its sender told why, so a joining provider, which sends every presence back at once, is not refused', async () => {
    const room = `${FLEET}/crowd`
    const watcherSocket = relaySocket(relay.url)
    sockets.push(watcherSocket)
    const watcher = openRoom(watcherSocket, room, await dashboardToken(FLEET))
    clients.push(watcher)
    await waitFor(() => watcher.synced(), 'the watcher synced')
    const before = await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')
    // 130 connections of one dashboard token, each setting 8 made-up ids: 1,040 presences asked for.
    const token = await dashboardToken(FLEET)
    for (let c = 0; c < 130; c++) {
      const socket = relaySocket(relay.url)
      sockets.push(socket)
      const crowd = openRoom(socket, room, token)
      clients.push(crowd)
      await waitFor(() => crowd.synced(), `crowd ${c} synced`)
      for (let i = 0; i < 8; i++) socket.send(forgedPresence(room, 1_000_000 + c * 8 + i, 1, { crowd: c }))
    }
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')) - before >= 1_040 - 512, 'the presences past 512 dropped')
    await waitFor(() => (watcher.provider.awareness?.getStates().size ?? 0) >= 512, 'the shown presences on the watcher')
    expect(watcher.provider.awareness?.getStates().size).toBeLessThanOrEqual(513)
    // A provider that joins now echoes every presence it receives: under 1,024, it is not refused.
    const joinerSocket = relaySocket(relay.url)
    sockets.push(joinerSocket)
    const joiner = openRoom(joinerSocket, room, await dashboardToken(FLEET))
    clients.push(joiner)
    await waitFor(() => joiner.synced() && (joiner.provider.awareness?.getStates().size ?? 0) >= 512, 'the joiner synced, with the presences')
    // Its own presence, sent after its echo, is one too many: dropped, which says the relay read past the echo.
    const droppedBefore = await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')
    joiner.provider.setAwarenessField('name', 'joiner')
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')) > droppedBefore, "the joiner's own presence dropped")
    // It is told why, and its room stays open.
    await waitFor(() => joiner.stateless.length > 0, 'the joiner told its presence was dropped')
    expect(joiner.stateless).toEqual([JSON.stringify({ tidemark: 'presence-dropped', room, reason: 'room-presence-limit 512' })])
    expect(joiner.closed).toEqual([])
    expect(joiner.denied).toEqual([])
  })

  it("a writer's own client ids count against the room's 512 presences too: a device writing under 1,100 ids of its own cannot get joining providers refused", async () => {
    const room = `${FLEET}/d9`
    const watcherSocket = relaySocket(relay.url)
    sockets.push(watcherSocket)
    const watcher = openRoom(watcherSocket, room, await dashboardToken(FLEET))
    clients.push(watcher)
    await waitFor(() => watcher.synced(), 'the watcher synced')
    // One entry of d9's own log under each of 1,100 Yjs client ids: every one of them is the device's.
    const ids = Array.from({ length: 1_100 }, (_, i) => 10_000 + i)
    const updates = ids.map((id, i) => {
      const doc = new Y.Doc()
      doc.clientID = id
      replicaLog(doc, 'd9').push([groupEntry('d9-temp', i * 60_000, i % 256)])
      return Y.encodeStateAsUpdate(doc)
    })
    const { ws } = await rawSocket(relay)
    sockets.push({ destroy: () => ws.terminate() })
    const before = await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')
    ws.send(authFrame(room, await deviceToken(FLEET, 'd9')))
    ws.send(updateFrame(room, Y.mergeUpdates(updates)))
    // 1,000 new presences at once: past the room's 512, the message is dropped whole; the next 100 fit.
    ws.send(presenceText(room, ids.slice(0, 1_000).map((id) => [id, 1, '{"name":"d9"}'] as const)))
    ws.send(presenceText(room, ids.slice(1_000).map((id) => [id, 1, '{"name":"d9"}'] as const)))
    const devicePresences = (observer: RoomClient): number => [...(observer.provider.awareness?.getStates().keys() ?? [])].filter((id) => id >= 10_000 && id < 11_100).length
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')) > before, 'the 1,000 presences dropped')
    await waitFor(() => replicaLog(watcher.doc, 'd9').length === 1_100 && devicePresences(watcher) === 100, "the watcher holds every entry and the last 100 presences")
    // A provider that joins echoes every presence it receives: well under 1,024, it is not refused.
    const joinerSocket = relaySocket(relay.url)
    sockets.push(joinerSocket)
    const joiner = openRoom(joinerSocket, room, await dashboardToken(FLEET))
    clients.push(joiner)
    await waitFor(() => joiner.synced() && devicePresences(joiner) === 100, 'the joiner synced, with the presences')
    // Its own presence, sent after its echo, reaching the watcher says the relay read past the echo.
    joiner.provider.setAwarenessField('name', 'joiner')
    await waitFor(() => (presenceOf(watcher, joiner.doc.clientID) as { name?: string } | undefined)?.name === 'joiner', "the joiner's presence on the watcher")
    expect(joiner.closed).toEqual([])
    expect(joiner.denied).toEqual([])
    expect(devicePresences(watcher)).toBe(100)
  })
})
