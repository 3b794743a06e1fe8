/**
 * Directory rooms and `maxRooms`. The relay loads `<fleet>/_directory` itself (a direct
 * connection) when a device room is written; the directory is then idle, so the next admission
 * makes room by unloading it, and the next write loads it (or another fleet's) again. README,
 * Configuration: `TIDEMARK_MAX_ROOMS` is "rooms loaded at once; one more unloads the longest-idle
 * room, or is refused (`too-many-rooms`)": a directory counts like any room, and a listing with no
 * room to load its directory is given up (logged) and tried again at the room's next write.
 */
import { afterAll, afterEach, expect, it } from 'vitest'
import type { Relay } from '../src/index.ts'
import { removeDataDirs } from './support/dataDirs.ts'
import { startTestRelay } from './support/testRelays.ts'
import { deviceToken, groupEntry, metric, openRoom, type RoomClient, relaySocket, replicaLog, waitFor, waitUntil } from './support/roomClients.ts'

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
