/**
 * A room whose stored rows hold a damaged one, and races between a room's unload, its store writes
 * and its next load.
 * Hocuspocus, the persistence and the directory in this process, on PGlite.
 */
import { Hocuspocus } from '@hocuspocus/server'
import { afterAll, expect, it } from 'vitest'
import * as Y from 'yjs'
import { type RedisServer, startRedisServer } from '../scripts/redisServer.ts'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import { IdleRooms } from '../src/rooms/idleRooms.ts'
import { RoomSizes } from '../src/rooms/roomSizes.ts'
import { GuardedRedis } from '../src/scaleout/guardedRedis.ts'
import { openPglite } from '../src/store/pgliteClient.ts'
import { RoomPersistence } from '../src/store/roomPersistence.ts'
import { RoomStore } from '../src/store/roomStore.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { waitFor } from './support/roomClients.ts'

const cleanups: (() => Promise<void>)[] = []
let redis: RedisServer | undefined

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  await redis?.stop()
  removeDataDirs()
})

const log = (): void => undefined
const timers = { setTimeout: (run: () => void, ms: number) => setTimeout(run, ms), clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout) }

it('a stored row whose Yjs error names bytes PostgreSQL text cannot hold (a NUL) is set aside, and the room opens with the rest', async () => {
  const metrics = new RelayMetrics()
  const sql = await openPglite(freshDataDir())
  const store = await RoomStore.open(sql, { writeWindowMs: 20, compactAfterRows: 256, compactAfterBytes: 16 << 10 }, metrics, log)
  cleanups.push(() => store.close())
  const sizes = new RoomSizes(1 << 20)
  const idle = new IdleRooms(0, Date.now, timers, log)
  const logged: string[] = []
  const hocuspocus = new Hocuspocus({ quiet: true, extensions: [new RoomPersistence({ store, sizes, idle, metrics, log: (level, message) => logged.push(`${level}: ${message}`) })] })
  const room = 'fleet-s/damaged'
  const writer = new Y.Doc()
  writer.on('update', (update: Uint8Array) => store.append(room, update))
  writer.getMap('m').set('a', 1)
  // A damaged row: one struct whose JSON content is 'x\0y'. Yjs throws JSON.parse's error,
  // whose message quotes the text, NUL included.
  store.append(room, Uint8Array.from(Buffer.from('010107000201016d010378007900', 'hex')))
  writer.getMap('m').set('b', 2)
  await store.flush()
  store.forget(room)
  for (let attempt = 0; attempt < 2; attempt++) {
    const connection = await hocuspocus.openDirectConnection(room).catch((error: unknown) => {
      throw new Error(`load ${attempt + 1} refused; the relay logged:\n${logged.join('\n')}`, { cause: error })
    })
    expect(connection.document?.getMap('m').toJSON()).toEqual({ a: 1, b: 2 })
    await connection.disconnect()
    await waitFor(() => hocuspocus.documents.size === 0, 'the room unloaded')
  }
  expect(metrics.loadFailures).toBe(0)
  expect(metrics.partsSetAside).toBe(1)
  const { rows } = await sql.query<{ reason: string }>('select reason from tidemark_relay_set_aside where room = $1', [room])
  expect(rows.map((row) => row.reason.replace(/: .*/, ''))).toEqual(['Yjs cannot read it'])
})

it('a room loaded again while the updates it took through Redis during its unload are still queued serves them', async () => {
  redis = await startRedisServer()
  const room = 'fleet-s/d1'
  // Relay A: the room store, rooms unloaded as soon as nobody is connected. A write window of 2 s
  // (TIDEMARK_STORE_DEBOUNCE_MS) outlasts the unload's 1 s wait below; at the default 500 ms the
  // same happens to a reading that comes in the wait's last half.
  const metrics = new RelayMetrics()
  const store = await RoomStore.open(await openPglite(freshDataDir()), { writeWindowMs: 2000, compactAfterRows: 256, compactAfterBytes: 16 << 10 }, metrics, log)
  cleanups.push(() => store.close())
  const idle = new IdleRooms(0, Date.now, timers, log)
  const redisA = new GuardedRedis(redis.url, metrics, log)
  cleanups.push(() => redisA.onDestroy())
  const a = new Hocuspocus({ quiet: true, extensions: [new RoomPersistence({ store, sizes: new RoomSizes(1 << 20), idle, metrics, log }), redisA] })
  idle.attach(a)
  // Relay B, where the device writes.
  const redisB = new GuardedRedis(redis.url, new RelayMetrics(), log)
  const b = new Hocuspocus({ quiet: true, extensions: [redisB] })
  const onB = await b.openDirectConnection(room)
  await onB.transact((doc) => doc.getArray('readings').push(['before']))
  const onA = await a.openDirectConnection(room)
  const docA = a.documents.get(room) as Y.Doc
  await waitFor(() => docA.getArray('readings').length === 1, 'relay A has the room')

  // A's last connection leaves: A stores the room, then waits for the Redis extension's unload
  // delay (1 s), subscribed still. A reading B's device sends meanwhile reaches A.
  const leaving = onA.disconnect()
  await waitFor(() => store.unstoredBytes === 0 && !store.hasRows(room), "A stored and compacted the room's rows")
  await onB.transact((doc) => doc.getArray('readings').push(['during the unload']))
  await waitFor(() => docA.getArray('readings').length === 2, 'A took the reading through Redis')
  await leaving
  expect(a.documents.has(room)).toBe(false)
  // Relay B dies (it has stored nothing: no other relay holds the reading now).
  await redisB.onDestroy()
  b.closeConnections()

  // A dashboard opens the room on A again, within A's write window.
  const again = await a.openDirectConnection(room)
  const served = again.document?.getArray('readings').toArray()
  await store.flush()
  const stored = new Y.Doc()
  for (const part of await store.load(room)) Y.applyUpdate(stored, part.bytes)
  // A accepted the reading and stores it…
  expect(stored.getArray('readings').toArray()).toEqual(['before', 'during the unload'])
  // …and must serve it: the room loaded again lacks it until it unloads once more.
  expect(served).toEqual(['before', 'during the unload'])
  await again.disconnect()
})
