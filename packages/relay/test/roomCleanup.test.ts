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
import type { SqlClient } from '../src/store/sqlClient.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { groupEntry, replicaLog, waitFor } from './support/roomClients.ts'

const cleanups: (() => Promise<void>)[] = []

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  removeDataDirs()
})

const log = (): void => undefined
const ROOMS = 10

async function rooms(): Promise<{ store: RoomStore; sizes: RoomSizes; idle: IdleRooms; metrics: RelayMetrics; persistence: RoomPersistence; sql: SqlClient }> {
  const metrics = new RelayMetrics()
  const sql = await openPglite(freshDataDir())
  const store = await RoomStore.open(sql, { writeWindowMs: 20, compactAfterRows: 256, compactAfterBytes: 16 << 10 }, metrics, log)
  cleanups.push(() => store.close())
  const sizes = new RoomSizes(1 << 20)
  // Rooms unload as soon as nobody is connected.
  const idle = new IdleRooms(0, Date.now, { setTimeout: (run, ms) => setTimeout(run, ms), clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout) }, log)
  const persistence = new RoomPersistence({ store, sizes, idle, metrics, log })
  return { store, sizes, idle, metrics, persistence, sql }
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
  // No load waits for Redis: a room opens unshared whether or not the refused connection has
  // been reported yet, and the report comes all the same.
  for (let i = 0; i < 3; i++) connections.push(await hocuspocus.openDirectConnection(`fleet-r/d${i}`))
  await waitFor(() => metrics.redisErrors > 0, 'the refused connection counted')
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
    expect(directory.isListed(room)).toBe(true)
    listedAtMost = Math.max(listedAtMost, directory.listedRooms)
    expect(sizes.has(room)).toBe(true)
    await connection.disconnect()
    await waitFor(() => hocuspocus.documents.size === 0, `${room} and the directory unloaded`)
    expect(directory.listedRooms).toBe(0)
    expect(directory.isListed(room)).toBe(false)
  }
  expect(listedAtMost).toBe(1)
  expect(sizes.rooms).toBe(0)
  expect(store.rooms).toBe(0)
})

it('a room the store cannot read is refused as store-unavailable, counted, and leaves no store tail behind', async () => {
  const metrics = new RelayMetrics()
  const sql = await openPglite(freshDataDir())
  let reads = true
  // The store's connection fails every read (the database went away) while rooms load.
  const failing: SqlClient = { ...sql, query: (text, params) => (reads || !text.includes('tidemark_relay_snapshots') ? sql.query(text, params) : Promise.reject(new Error('connection lost'))) }
  const store = await RoomStore.open(failing, { writeWindowMs: 20, compactAfterRows: 256, compactAfterBytes: 16 << 10 }, metrics, log)
  cleanups.push(() => store.close())
  const sizes = new RoomSizes(1 << 20)
  const idle = new IdleRooms(0, Date.now, { setTimeout: (run, ms) => setTimeout(run, ms), clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout) }, log)
  const hocuspocus = new Hocuspocus({ quiet: true, extensions: [new RoomPersistence({ store, sizes, idle, metrics, log })] })
  reads = false
  for (let i = 0; i < 3; i++) await expect(hocuspocus.openDirectConnection(`fleet-r/d${i}`)).rejects.toBeInstanceOf(OpenRefused)
  reads = true
  expect(metrics.loadFailures).toBe(3)
  expect(metrics.render({ connections: 0, roomsLoaded: 0, mostRoomsHeldBySubject: 0, storedBytes: 0, pendingBytes: 0, heldUpdates: 0, assemblingBytes: 0, unsharedRooms: 0, redisUnansweredBytes: 0, relayedHeldBytes: 0 })).toContain('tidemark_relay_refusals_total{reason="store-unavailable"} 3')
  expect(hocuspocus.documents.size).toBe(0)
  expect(sizes.rooms).toBe(0)
  expect(store.rooms).toBe(0)
})

it('a stored row Yjs cannot use is set aside with its reason, and the room opens with the rest', async () => {
  const { store, metrics, persistence, sql } = await rooms()
  const hocuspocus = new Hocuspocus({ quiet: true, extensions: [persistence] })
  const room = 'fleet-r/damaged'
  const writer = new Y.Doc()
  writer.on('update', (update: Uint8Array) => store.append(room, update))
  writer.getMap('m').set('a', 1)
  // Not a Yjs update: applying it throws.
  store.append(room, new Uint8Array([255, 255, 255, 255, 255, 255, 255, 255, 255, 255]))
  // Reads as an empty update: its bytes would vanish at the next compaction.
  store.append(room, new Uint8Array(20))
  writer.getMap('m').set('b', 2)
  await store.flush()
  store.forget(room)
  const connection = await hocuspocus.openDirectConnection(room)
  expect(connection.document?.getMap('m').toJSON()).toEqual({ a: 1, b: 2 })
  expect(metrics.loadFailures).toBe(0)
  expect(metrics.partsSetAside).toBe(2)
  const { rows } = await sql.query<{ reason: string; size: number }>('select reason, octet_length(bytes) as size from tidemark_relay_set_aside where room = $1 order by seq', [room])
  expect(rows.map((row) => [row.size, row.reason.replace(/: .*/, '')])).toEqual([
    [10, 'Yjs cannot read it'],
    [20, '20 bytes that read as an empty update (not a Yjs v1 update)'],
  ])
  expect((await sql.query<{ n: number }>('select count(*)::int as n from tidemark_relay_updates where room = $1', [room])).rows).toEqual([{ n: 2 }])
  await connection.disconnect()
})

it('compaction garbage-collects a room that holds structs waiting for a lost update, keeps them, and sets aside what reads as empty', async () => {
  const { store, metrics, sql } = await rooms()
  const room = 'fleet-r/gap'
  // A client whose first update the store never got: its second waits for it (pending structs).
  const lost = new Y.Doc()
  let first: Uint8Array | null = null
  lost.on('update', (update: Uint8Array) => {
    if (first === null) first = update
    else store.append(room, update)
  })
  lost.getArray('a').insert(0, ['one'])
  lost.getArray('a').insert(1, ['two'])
  // Another client superseding one entry again and again, as a device's log does.
  const writer = new Y.Doc()
  writer.on('update', (update: Uint8Array) => store.append(room, update))
  const write = async (rounds: number): Promise<number> => {
    for (let i = 0; i < rounds; i++) writer.getMap('m').set('k', `value ${i} ${'x'.repeat(40)}`)
    await store.flush()
    return (await store.compact(room)) ?? Number.NaN
  }
  store.append(room, new Uint8Array(20))
  await store.flush()
  const early = await write(200)
  const later = await write(2_000)
  // Superseded values are collected: 2,000 more writes leave the snapshot about where it was.
  expect(later - early).toBeLessThan(200)
  const { rows } = await sql.query<{ bytes: Uint8Array }>('select bytes from tidemark_relay_snapshots where room = $1', [room])
  const restored = new Y.Doc()
  Y.applyUpdate(restored, rows[0]?.bytes as Uint8Array)
  expect(restored.getMap('m').get('k')).toBe(`value 1999 ${'x'.repeat(40)}`)
  // The waiting structs are kept: the lost update, when a client sends it again, completes them.
  expect(restored.getArray('a').toArray()).toEqual([])
  Y.applyUpdate(restored, first as unknown as Uint8Array)
  expect(restored.getArray('a').toArray()).toEqual(['one', 'two'])
  expect(metrics.partsSetAside).toBe(1)
  expect((await sql.query<{ size: number }>('select octet_length(bytes) as size from tidemark_relay_set_aside where room = $1', [room])).rows).toEqual([{ size: 20 }])
})
