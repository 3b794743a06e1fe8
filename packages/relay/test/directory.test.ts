/**
 * The fleet directory: devices write their own rooms; a dashboard follows `<fleet>/_directory`
 * and opens every room it lists, read-only, over one socket. Devices never see each other.
 */
import { afterAll, expect, it } from 'vitest'
import type * as Y from 'yjs'
import { type Relay, startRelay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { dashboardToken, deviceToken, groupEntry, openRoom, type RoomClient, relaySocket, replicaLog, SECRET, signToken, waitFor } from './support/roomClients.ts'

let relay: Relay | undefined
const sockets: ReturnType<typeof relaySocket>[] = []

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await relay?.close()
  removeDataDirs()
})

it('a dashboard follows the directory and reads every device room over one socket', async () => {
  relay = await startRelay({ port: 0, store: { dataDir: freshDataDir() }, auth: { secret: SECRET }, log: () => undefined })
  const devices: RoomClient[] = []
  for (let i = 0; i < 5; i++) {
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const device = openRoom(socket, `fleet-z/d${i}`, await deviceToken('fleet-z', `d${i}`))
    await waitFor(() => device.synced(), `d${i} synced`)
    replicaLog(device.doc, `d${i}`).push([groupEntry(`d${i}-temp`, i * 60_000)])
    devices.push(device)
  }
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const token = await dashboardToken('fleet-z')
  const directory = openRoom(socket, 'fleet-z/_directory', token)
  const rooms = (): string[] => [...directory.doc.getMap('rooms').keys()].sort()
  await waitFor(() => rooms().length === 5, 'the directory lists five rooms')
  expect(rooms()).toEqual(['fleet-z/d0', 'fleet-z/d1', 'fleet-z/d2', 'fleet-z/d3', 'fleet-z/d4'])
  const views = new Map<string, Y.Doc>()
  for (const room of rooms()) views.set(room, openRoom(socket, room, token).doc)
  await waitFor(() => [...views].every(([room, doc]) => replicaLog(doc, room.slice('fleet-z/'.length)).length === 1), 'every room read')
  // A device's room holds its own replica only.
  for (const device of devices) expect([...device.doc.share.keys()]).toHaveLength(1)
  // The directory is the relay's: a dashboard writing it is refused.
  directory.doc.getMap('rooms').set('fleet-z/fake', [0])
  await waitFor(() => directory.closed.length > 0, 'the refusal')
  expect(directory.closed).toEqual(['tidemark:refused read-only'])
})

it("lists a device room, as [firstSeenMs] on the relay's clock, once it is written; a room only opened is not listed; a device's connection to the directory is read-only too", async () => {
  const firstSeen = Date.now()
  const own = await startRelay({ port: 0, store: { dataDir: freshDataDir() }, auth: { secret: SECRET }, log: () => undefined, now: () => firstSeen })
  try {
    const socket = relaySocket(own.url)
    sockets.push(socket)
    const writer = openRoom(socket, 'fleet-y/d1', await deviceToken('fleet-y', 'd1'))
    const idle = openRoom(socket, 'fleet-y/d2', await deviceToken('fleet-y', 'd2'))
    await waitFor(() => writer.synced() && idle.synced(), 'both devices synced')
    replicaLog(writer.doc, 'd1').push([groupEntry('d1-temp', 0)])
    // A device whose token admits the whole fleet, the directory with it.
    const deviceSocket = relaySocket(own.url)
    sockets.push(deviceSocket)
    const fleetToken = await signToken({ sub: 'd3', role: 'device', rooms: ['fleet-y/*'], replicas: ['d3'], sources: ['d3-temp'] })
    const directory = openRoom(deviceSocket, 'fleet-y/_directory', fleetToken)
    await waitFor(() => directory.doc.getMap('rooms').has('fleet-y/d1'), 'the written room listed')
    // The idle room was opened before the write: had it been listed, it would be there by now.
    expect(directory.doc.getMap('rooms').toJSON()).toEqual({ 'fleet-y/d1': [firstSeen] })
    directory.doc.getMap('rooms').set('fleet-y/fake', [0])
    await waitFor(() => directory.closed.length > 0, 'the refusal')
    expect(directory.closed).toEqual(['tidemark:refused read-only'])
    for (const client of [writer, idle, directory]) client.destroy()
  } finally {
    await own.close()
  }
})
