/**
 * Two relay processes on one PostgreSQL, sharing a room through Redis: relay A acknowledges a
 * device's updates and is killed inside its write window, so it never stores them. Relay B
 * holds them in memory (they came through Redis), so the device, moving to B, does not send
 * them again: B must store them, as A never says it did. A fresh relay then reads every update
 * back from the database. When A does say it stored them, B writes none of them.
 */
import { afterAll, expect, it } from 'vitest'
import * as Y from 'yjs'
import { type RedisServer, startRedisServer } from '../scripts/redisServer.ts'
import { openPostgres } from '../src/index.ts'
import { type PostgresServer, startPostgres } from '../scripts/postgresServer.ts'
import { killRelays, spawnRelay } from './support/relayProcess.ts'
import { dashboardToken, deviceToken, groupEntry, metric, openRoom, relaySocket, replicaLog, SECRET_TEXT, waitFor, waitUntil } from './support/roomClients.ts'

let redis: RedisServer | undefined
let postgres: PostgresServer | undefined
const sockets: ReturnType<typeof relaySocket>[] = []

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await killRelays()
  await redis?.stop()
  await postgres?.stop()
})

function socketTo(url: string): ReturnType<typeof relaySocket> {
  const socket = relaySocket(url)
  sockets.push(socket)
  return socket
}

it('updates a killed relay acknowledged but never stored are stored by the relay that holds them through Redis', async () => {
  postgres = await startPostgres()
  redis = await startRedisServer()
  const shared = { DATABASE_URL: postgres.url, TIDEMARK_AUTH_SECRET: SECRET_TEXT, REDIS_URL: redis.url }
  // A's write window is a minute: it is killed inside it, having stored nothing.
  const a = await spawnRelay({ ...shared, TIDEMARK_STORE_DEBOUNCE_MS: '60000' })
  const b = await spawnRelay({ ...shared, TIDEMARK_STORE_DEBOUNCE_MS: '100' })
  const deviceDoc = new Y.Doc()
  const writer = openRoom(socketTo(a.url), 'fleet-w/d1', await deviceToken('fleet-w', 'd1'), deviceDoc)
  const reader = openRoom(socketTo(b.url), 'fleet-w/d1', await dashboardToken('fleet-w'))
  await waitFor(() => writer.synced() && reader.synced(), 'both synced')
  for (let i = 0; i < 10; i++) replicaLog(deviceDoc, 'd1').push([groupEntry('d1-temp', i * 60_000)])
  await waitFor(() => !writer.provider.hasUnsyncedChanges, 'A acknowledged the 10 updates')
  await waitFor(() => replicaLog(reader.doc, 'd1').length === 10, 'B has them through Redis')
  // A never says it stored them: B writes what it received through Redis once its hold ends.
  await waitUntil(async () => (await metric(b.httpUrl, 'tidemark_relay_updates_stored_total')) >= 10, 'B stored the relayed updates')
  // Each relay here writes to one PostgreSQL database, so B held A's changes first; what B wrote
  // came from that hold (the updates it got from A's answers to its join were written at once).
  expect(await metric(b.httpUrl, 'tidemark_relay_relayed_written_total')).toBeGreaterThan(0)
  expect(await metric(a.httpUrl, 'tidemark_relay_updates_stored_total')).toBe(0)
  expect(await a.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' })
  writer.destroy()

  const moved = openRoom(socketTo(b.url), 'fleet-w/d1', await deviceToken('fleet-w', 'd1'), deviceDoc)
  await waitFor(() => moved.synced(), 'the device synced with B')
  for (let i = 10; i < 12; i++) replicaLog(deviceDoc, 'd1').push([groupEntry('d1-temp', i * 60_000)])
  await waitFor(() => !moved.provider.hasUnsyncedChanges, 'B acknowledged the 2 later updates')
  for (const socket of sockets.splice(0)) socket.destroy()
  expect(await b.stop('SIGTERM')).toEqual({ code: 0, signal: null })

  const c = await spawnRelay({ DATABASE_URL: postgres.url, TIDEMARK_AUTH_SECRET: SECRET_TEXT })
  const fresh = openRoom(socketTo(c.url), 'fleet-w/d1', await dashboardToken('fleet-w'))
  await waitFor(() => fresh.synced(), 'a reader on a fresh relay synced')
  expect(replicaLog(fresh.doc, 'd1').toJSON()).toEqual(replicaLog(deviceDoc, 'd1').toJSON())
  expect(replicaLog(fresh.doc, 'd1').length).toBe(12)
  expect(await c.stop('SIGTERM')).toEqual({ code: 0, signal: null })
})

it('two relays holding a room store each of its updates once: the relay its client sent it to writes it, the other drops its copy when told it is stored', async () => {
  postgres ??= await startPostgres()
  redis ??= await startRedisServer()
  const shared = { DATABASE_URL: postgres.url, TIDEMARK_AUTH_SECRET: SECRET_TEXT, REDIS_URL: redis.url, TIDEMARK_STORE_DEBOUNCE_MS: '100' }
  const a = await spawnRelay(shared)
  const b = await spawnRelay(shared)
  const deviceDoc = new Y.Doc()
  const writer = openRoom(socketTo(a.url), 'fleet-o/d1', await deviceToken('fleet-o', 'd1'), deviceDoc)
  const reader = openRoom(socketTo(b.url), 'fleet-o/d1', await dashboardToken('fleet-o'))
  await waitFor(() => writer.synced() && reader.synced(), 'both synced')
  for (let i = 0; i < 10; i++) replicaLog(deviceDoc, 'd1').push([groupEntry('d1-temp', i * 60_000)])
  await waitFor(() => replicaLog(reader.doc, 'd1').length === 10, 'B has them through Redis')
  // A writes the 10 updates and says so through Redis; B, holding them, drops its copies.
  await waitUntil(async () => (await metric(b.httpUrl, 'tidemark_relay_relayed_confirmed_total')) >= 10, 'B heard A stored them')
  expect(await metric(a.httpUrl, 'tidemark_relay_updates_stored_total')).toBeGreaterThanOrEqual(10)
  expect(await metric(b.httpUrl, 'tidemark_relay_updates_stored_total')).toBe(0)
  expect(await metric(b.httpUrl, 'tidemark_relay_relayed_written_total')).toBe(0)
  expect(await metric(b.httpUrl, 'tidemark_relay_relayed_held_bytes')).toBe(0)
  const sql = await openPostgres(postgres.url, (error) => {
    throw error
  })
  try {
    const { rows } = await sql.query<{ n: number }>("select count(*)::int as n from tidemark_relay_updates where room = 'fleet-o/d1'")
    expect(rows[0]?.n).toBe(10)
  } finally {
    await sql.close()
  }
  for (const socket of sockets.splice(0)) socket.destroy()
  expect(await a.stop('SIGTERM')).toEqual({ code: 0, signal: null })
  expect(await b.stop('SIGTERM')).toEqual({ code: 0, signal: null })
})
