/**
 * What the relay keeps per room is dropped when the room goes: after an unload (room size,
 * store tail, directory listing, the rooms waiting for Redis) and after a load the store refused
 * (Hocuspocus runs no unload then). Hocuspocus, the persistence and the directory in this
 * process, on PGlite.
 */
import { createServer } from 'node:net'
import { Hocuspocus } from '@hocuspocus/server'
import { afterAll, expect, it } from 'vitest'
import * as Y from 'yjs'
import { FleetDirectory } from '../src/directory/fleetDirectory.ts'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import { OpenRefused } from '../src/protocol/refusal.ts'
import { IdleRooms } from '../src/rooms/idleRooms.ts'
import { RoomSizes } from '../src/rooms/roomSizes.ts'
import { GuardedRedis } from '../src/scaleout/guardedRedis.ts'
import { openPglite } from '../src/store/pgliteClient.ts'
import { RoomPersistence } from '../src/store/roomPersistence.ts'
import { RoomStore } from '../src/store/roomStore.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { groupEntry, replicaLog, waitFor } from './support/roomClients.ts'

const cleanups: (() => Promise<void>)[] = []

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  removeDataDirs()
})

const log = (): void => undefined
const ROOMS = 10

async function rooms(): Promise<{ store: RoomStore; sizes: RoomSizes; idle: IdleRooms; metrics: RelayMetrics; persistence: RoomPersistence }> {
  const metrics = new RelayMetrics()
  const store = await RoomStore.open(await openPglite(freshDataDir()), { writeWindowMs: 20, compactAfterRows: 256, compactAfterBytes: 16 << 10 }, metrics, log)
  cleanups.push(() => store.close())
  const sizes = new RoomSizes(1 << 20)
  // Rooms unload as soon as nobody is connected.
  const idle = new IdleRooms(0, Date.now, { setTimeout: (run, ms) => setTimeout(run, ms), clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout) }, log)
  const persistence = new RoomPersistence({ store, sizes, idle, metrics, log })
  return { store, sizes, idle, metrics, persistence }
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

it('a relay whose Redis cannot be reached opens rooms all the same, served by it alone', async () => {
  const { sizes, metrics, persistence } = await rooms()
  const redis = new GuardedRedis(`redis://127.0.0.1:${await closedPort()}`, metrics, log)
  cleanups.push(() => redis.onDestroy())
  const hocuspocus = new Hocuspocus({ quiet: true, extensions: [persistence, redis] })
  const connections = []
  // The first load waits for ioredis' retries to fail; the next ones know Redis is away.
  for (let i = 0; i < 3; i++) connections.push(await hocuspocus.openDirectConnection(`fleet-r/d${i}`))
  expect(metrics.redisErrors).toBeGreaterThan(0)
  expect(hocuspocus.documents.size).toBe(3)
  expect(redis.unsharedRooms).toBe(3)
  expect(sizes.rooms).toBe(3)
  for (const connection of connections) await connection.disconnect()
  await waitFor(() => hocuspocus.documents.size === 0, 'the rooms unloaded')
  expect(redis.unsharedRooms).toBe(0)
  expect(sizes.rooms).toBe(0)
})

it('an unloaded room is forgotten by the sizes, the store and its fleet directory', async () => {
  const { store, sizes, idle, persistence } = await rooms()
  const hocuspocus = new Hocuspocus({ quiet: true, extensions: [persistence] })
  idle.attach(hocuspocus)
  const directory = new FleetDirectory(hocuspocus, Date.now, log)
  persistence.attachDirectory(directory)
  cleanups.push(() => directory.close())
  let listedAtMost = 0
  for (let i = 0; i < ROOMS; i++) {
    const room = `fleet-r/d${i}`
    // Stored content: the room is listed in the directory when it loads, and when written.
    const doc = new Y.Doc()
    replicaLog(doc, `d${i}`).push([groupEntry(`d${i}-temp`, 0)])
    store.append(room, Y.encodeStateAsUpdate(doc))
    await store.flush()
    const connection = await hocuspocus.openDirectConnection(room)
    directory.list(room, 'fleet-r')
    await waitFor(() => directory.listedRooms === 1, `${room} listed`)
    listedAtMost = Math.max(listedAtMost, directory.listedRooms)
    expect(sizes.has(room)).toBe(true)
    await connection.disconnect()
    await waitFor(() => hocuspocus.documents.size === 0, `${room} and the directory unloaded`)
    expect(directory.listedRooms).toBe(0)
  }
  expect(listedAtMost).toBe(1)
  expect(sizes.rooms).toBe(0)
  expect(store.rooms).toBe(0)
})

it('a room whose stored data does not apply is refused, and leaves no store tail behind', async () => {
  const { store, sizes, metrics, persistence } = await rooms()
  const hocuspocus = new Hocuspocus({ quiet: true, extensions: [persistence] })
  for (let i = 0; i < 3; i++) {
    const room = `fleet-r/broken${i}`
    // Not a Yjs update: applying it throws.
    store.append(room, new Uint8Array([255, 255, 255, 255, 255, 255, 255, 255, 255, 255]))
    await store.flush()
    store.forget(room)
    await expect(hocuspocus.openDirectConnection(room)).rejects.toBeInstanceOf(OpenRefused)
  }
  expect(metrics.loadFailures).toBe(3)
  expect(hocuspocus.documents.size).toBe(0)
  expect(sizes.rooms).toBe(0)
  expect(store.rooms).toBe(0)
})
