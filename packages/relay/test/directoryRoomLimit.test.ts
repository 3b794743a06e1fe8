/**
 * Directory rooms and `maxRooms`. The relay loads `<fleet>/_directory` itself (a direct
 * connection) when a device room is written; the directory is then idle, so the next admission
 * makes room by unloading it, and the next write loads it (or another fleet's) again. README,
 * Configuration: `TIDEMARK_MAX_ROOMS` is "rooms loaded at once; one more unloads the longest-idle
 * room, or is refused (`too-many-rooms`)": a directory counts like any room, and a listing with no
 * room to load its directory is given up (logged) and tried again when a room unloads, or at the
 * room's next write.
 */
import { afterAll, afterEach, expect, it } from 'vitest'
import { openPglite, type Relay, type SqlClient } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { failable } from './support/failableSql.ts'
import { startTestRelay } from './support/testRelays.ts'
import { dashboardToken, deviceToken, groupEntry, metric, openRoom, type RoomClient, relaySocket, replicaLog, waitFor, waitUntil } from './support/roomClients.ts'

const relays: Relay[] = []
const sockets: ReturnType<typeof relaySocket>[] = []
const clients: RoomClient[] = []

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy()
  for (const socket of sockets.splice(0)) socket.destroy()
  await Promise.all(relays.splice(0).map((relay) => relay.close()))
})

afterAll(() => removeDataDirs())

it('never holds more than maxRooms rooms loaded, directories included, while devices of several fleets write (none of them idle)', async () => {
  const maxRooms = 2
  // Warnings: a listing the relay gave up on (at its room limit, say) is logged, not stored.
  const warnings: string[] = []
  const relay = await startTestRelay(relays, { limits: { maxRooms, idleRoomMs: 600_000 }, log: (level, line) => void (level === 'warn' && warnings.push(line)) })
  const loaded = () => metric(relay.httpUrl, 'tidemark_relay_rooms_loaded')
  const open: string[] = []
  const seen: number[] = []
  for (let k = 1; k <= 4; k++) {
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    // A device of its own (its own subject) in a fleet of its own.
    const device = openRoom(socket, `fleet-${k}/d${k}`, await deviceToken(`fleet-${k}`, `d${k}`))
    clients.push(device)
    await waitFor(() => device.synced() || device.denied.length > 0, `fleet-${k}/d${k} opened or refused`)
    if (device.denied.length > 0) {
      expect(device.denied[0]).toMatch(/^tidemark:too-many-rooms/)
      seen.push(await loaded())
      continue
    }
    open.push(`fleet-${k}/d${k}`)
    replicaLog(device.doc, `d${k}`).push([groupEntry(`d${k}-temp`, k * 60_000)])
    await waitFor(() => !device.provider.hasUnsyncedChanges, `fleet-${k}/d${k} acknowledged`)
    // The relay lists the room in its fleet's directory (one more row stored: the listing), or
    // logs that it could not.
    const listings = open.length - warnings.filter((line) => line.startsWith('listing ')).length
    await waitUntil(
      async () => warnings.some((line) => line.includes(`fleet-${k}/_directory`)) || (await metric(relay.httpUrl, 'tidemark_relay_updates_stored_total')) >= open.length + listings,
      `fleet-${k}/_directory listed, or its listing given up`,
    )
    seen.push(await loaded())
  }
  // Every device room opened has a live connection: none of them is idle.
  console.log(`device rooms open: ${open.length} (maxRooms ${maxRooms}); rooms loaded after each device: ${seen.join(', ')}`)
  expect(Math.max(...seen)).toBeLessThanOrEqual(maxRooms)
  expect(open.length).toBeLessThanOrEqual(maxRooms)
})

it('lists a room whose listing was given up at maxRooms once a room unloads, though the device wrote once and went quiet', async () => {
  const warnings: string[] = []
  // Two rooms at most; a room nobody is connected to unloads after a second.
  const relay = await startTestRelay(relays, { limits: { maxRooms: 2, idleRoomMs: 1_000 }, log: (level, line) => void (level === 'warn' && warnings.push(line)) })
  // fleet-a/d1 stays connected; its listing loads fleet-a/_directory, which the next room unloads.
  const first = relaySocket(relay.url)
  sockets.push(first)
  const d1 = openRoom(first, 'fleet-a/d1', await deviceToken('fleet-a', 'd1'))
  clients.push(d1)
  await waitFor(() => d1.synced(), 'fleet-a/d1 synced')
  replicaLog(d1.doc, 'd1').push([groupEntry('d1-temp', 60_000)])
  await waitFor(() => !d1.provider.hasUnsyncedChanges, 'fleet-a/d1 acknowledged')
  await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_updates_stored_total')) >= 2, 'fleet-a/d1 and its listing stored')

  // fleet-b/d2 writes once while both rooms are in use: its listing is given up.
  const second = relaySocket(relay.url)
  sockets.push(second)
  const d2 = openRoom(second, 'fleet-b/d2', await deviceToken('fleet-b', 'd2'))
  await waitFor(() => d2.synced() || d2.denied.length > 0, 'fleet-b/d2 opened')
  expect(d2.denied).toEqual([])
  replicaLog(d2.doc, 'd2').push([groupEntry('d2-temp', 60_000)])
  await waitFor(() => !d2.provider.hasUnsyncedChanges, 'fleet-b/d2 acknowledged')
  await waitFor(() => warnings.some((line) => line.includes('fleet-b/_directory')), 'the listing of fleet-b/d2 given up')
  // It goes quiet: it writes nothing more, and its room unloads (idle a second, or unloaded
  // earlier to make room for the dashboard below).
  d2.destroy()
  second.destroy()
  sockets.pop()

  // A dashboard following fleet-b's directory finds fleet-b/d2.
  const dashboardSocket = relaySocket(relay.url)
  sockets.push(dashboardSocket)
  const directory = openRoom(dashboardSocket, 'fleet-b/_directory', await dashboardToken('fleet-b'))
  clients.push(directory)
  const listed = () => directory.doc.getMap('rooms').has('fleet-b/d2')
  await waitFor(() => listed() || directory.denied.length > 0, 'fleet-b/d2 listed in fleet-b/_directory', 10_000)
  expect(directory.denied).toEqual([])
  expect(listed()).toBe(true)
})

it('a listing whose directory cannot be loaded (the store is down) is not retried over and over by its own failed load', async () => {
  const warnings: string[] = []
  const down = failable(await openPglite(freshDataDir()))
  // Failing after a turn of the event loop, as a store that stops answering does: a retry storm
  // without one would starve the event loop, and this test with it.
  const sql: SqlClient = {
    ...down,
    query: async (text, params) => {
      if (down.failing) await new Promise((resolve) => setImmediate(resolve))
      return down.query(text, params)
    },
    transaction: async (work) => {
      if (down.failing) await new Promise((resolve) => setImmediate(resolve))
      return down.transaction(work)
    },
  }
  const relay = await startTestRelay(relays, { store: { sql }, log: (level, line) => void (level === 'warn' && warnings.push(line)) })
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const d1 = openRoom(socket, 'fleet-s/d1', await deviceToken('fleet-s', 'd1'))
  clients.push(d1)
  await waitFor(() => d1.synced(), 'fleet-s/d1 synced')
  down.failing = true
  replicaLog(d1.doc, 'd1').push([groupEntry('d1-temp', 60_000)])
  const givenUp = () => warnings.filter((line) => line.includes('rooms in fleet-s/_directory failed')).length
  await waitFor(() => givenUp() > 0, 'the listing of fleet-s/d1 given up')
  // A few round trips to the relay: a listing retried at each failed load of its directory
  // would have failed hundreds of times by then.
  for (let i = 0; i < 5; i++) await metric(relay.httpUrl, 'tidemark_relay_room_load_failures_total')
  const failures = await metric(relay.httpUrl, 'tidemark_relay_room_load_failures_total')
  console.log(`the store down: ${givenUp()} listings given up, ${failures} loads failed`)
  expect(failures).toBeLessThanOrEqual(2)
  expect(givenUp()).toBeLessThanOrEqual(2)
  down.failing = false
})

it('a listing that fails while the store is down unloads at most one idle room, whatever listings and retries follow', async () => {
  const warnings: string[] = []
  const down = failable(await openPglite(freshDataDir()))
  const maxRooms = 6
  const relay = await startTestRelay(relays, { store: { sql: down }, limits: { maxRooms, idleRoomMs: 600_000 }, log: (level, line) => void (level === 'warn' && warnings.push(line)) })
  const loaded = () => metric(relay.httpUrl, 'tidemark_relay_rooms_loaded')
  const device = async (fleet: string, name: string): Promise<RoomClient> => {
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const client = openRoom(socket, `${fleet}/${name}`, await deviceToken(fleet, name))
    clients.push(client)
    await waitFor(() => client.synced(), `${fleet}/${name} synced`)
    return client
  }
  const write = (client: RoomClient, replica: string, start: number) => replicaLog(client.doc, replica).push([groupEntry(`${replica}-temp`, start)])
  // Three devices of fleet-i write (listed, their directory loaded) and go: four idle rooms.
  for (const name of ['i1', 'i2', 'i3']) {
    const client = await device('fleet-i', name)
    write(client, name, 60_000)
    await waitFor(() => !client.provider.hasUnsyncedChanges, `fleet-i/${name} acknowledged`)
  }
  await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_updates_stored_total')) >= 4, 'the rooms and their listings stored')
  for (const client of clients.splice(0)) client.destroy()
  // Two devices of two other fleets connect: the relay holds maxRooms rooms, four of them idle.
  const d1 = await device('fleet-a', 'd1')
  const d2 = await device('fleet-b', 'd2')
  await waitUntil(async () => (await loaded()) === maxRooms, `${maxRooms} rooms loaded`)
  down.failing = true
  const givenUp = () => warnings.filter((line) => line.startsWith('listing ')).length
  // Each writes, again and again: each write of a room not listed yet asks for a listing. The
  // first one unloads an idle room for its directory, whose load fails; that place stays free, so
  // neither the retry its unload arms nor any later listing unloads another.
  for (let round = 1; round <= 5; round++) {
    write(d2, 'd2', round * 60_000)
    await waitFor(() => givenUp() >= 2 * round - 1, `the listing of fleet-b/d2 given up (${round})`)
    write(d1, 'd1', round * 60_000)
    await waitFor(() => givenUp() >= 2 * round, `the listing of fleet-a/d1 given up (${round})`)
  }
  const left = await loaded()
  console.log(`the store down: ${givenUp()} listings given up, ${maxRooms - left} idle rooms unloaded for them, ${await metric(relay.httpUrl, 'tidemark_relay_room_load_failures_total')} loads failed`)
  expect(left).toBeGreaterThanOrEqual(maxRooms - 1)
  down.failing = false
})
