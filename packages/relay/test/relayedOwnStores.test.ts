/**
 * Relays of one Redis group that do not share a store: on separate PGlite data directories, or
 * on two PostgreSQL databases. Each store holds what its relay's clients sent and what reached
 * it through Redis while it had the room loaded: another relay saying it stored a change says
 * nothing of this relay's store, so the change is written here too (on PGlite as copies, merged
 * per room). Two relays in this process,
 * a redis-server (and a PostgreSQL) started here.
 */
import { afterAll, expect, it } from 'vitest'
import * as Y from 'yjs'
import { type RedisServer, startRedisServer } from '../scripts/redisServer.ts'
import { openPostgres, type Relay, type RelayOptions } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { type PostgresServer, startPostgres } from '../scripts/postgresServer.ts'
import { dashboardToken, deviceToken, groupEntry, metric, openRoom, type RoomClient, relaySocket, replicaLog, waitFor, waitUntil } from './support/roomClients.ts'
import { startTestRelay } from './support/testRelays.ts'

const relays: Relay[] = []
const clients: RoomClient[] = []
const sockets: ReturnType<typeof relaySocket>[] = []
let redis: RedisServer | undefined
let postgres: PostgresServer | undefined

afterAll(async () => {
  for (const client of clients) client.destroy()
  for (const socket of sockets) socket.destroy()
  await Promise.allSettled(relays.map((relay) => relay.close()))
  await redis?.stop()
  await postgres?.stop()
  removeDataDirs()
})

function open(relay: Relay, room: string, token: string, doc?: Y.Doc): RoomClient {
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const client = openRoom(socket, room, token, doc)
  clients.push(client)
  return client
}

/** B settled the 5 updates: wrote them to its store, or dropped them as A said it stored them. */
async function settledOnB(_a: Relay, b: Relay): Promise<boolean> {
  return (await metric(b.httpUrl, 'tidemark_relay_updates_stored_total')) + (await metric(b.httpUrl, 'tidemark_relay_relayed_confirmed_total')) >= 5
}

/**
 * A device writes 5 updates on relay A (started by `startA`), a dashboard reads them on relay B
 * (`startB`); once B `settled` them, B closes, and a relay on B's store alone (`startAlone`, no
 * Redis) must hold all 5.
 */
async function everyChangeInB(
  fleet: string,
  startA: () => Promise<Relay>,
  startB: () => Promise<Relay>,
  startAlone: () => Promise<Relay>,
  settled: (a: Relay, b: Relay) => Promise<boolean> = settledOnB,
): Promise<void> {
  const room = `${fleet}/d1`
  const a = await startA()
  const b = await startB()
  const deviceDoc = new Y.Doc()
  const writer = open(a, room, await deviceToken(fleet, 'd1'), deviceDoc)
  const reader = open(b, room, await dashboardToken(fleet))
  await waitFor(() => writer.synced() && reader.synced(), 'both synced')
  for (let i = 0; i < 5; i++) replicaLog(deviceDoc, 'd1').push([groupEntry('d1-temp', i * 60_000)])
  await waitFor(() => replicaLog(reader.doc, 'd1').length === 5, 'B has the 5 updates through Redis')
  await waitUntil(async () => (await metric(a.httpUrl, 'tidemark_relay_updates_stored_total')) >= 5, 'A stored them')
  await waitUntil(() => settled(a, b), 'B settled them')
  for (const client of clients.splice(0)) client.destroy()
  await b.close()
  // B's store alone, without Redis: the room as B stored it.
  const fresh = open(await startAlone(), room, await dashboardToken(fleet))
  await waitFor(() => fresh.synced(), "synced with B's store")
  expect(replicaLog(fresh.doc, 'd1').length).toBe(5)
}

it('a relay on its own data directory writes the changes another relay sent it through Redis, though that relay stored them in its own', async () => {
  redis = await startRedisServer()
  const url = redis.url
  const dirB = freshDataDir()
  await everyChangeInB(
    'fleet-s',
    () => startTestRelay(relays, { redisUrl: url }),
    () => startTestRelay(relays, { redisUrl: url }, dirB),
    () => startTestRelay(relays, {}, dirB),
    // Copies, merged: fewer rows than updates, written once nothing waits.
    async (_, b) => (await metric(b.httpUrl, 'tidemark_relay_store_pending_bytes')) === 0 && (await metric(b.httpUrl, 'tidemark_relay_updates_stored_total')) >= 1,
  )
})

it('a relay on another database than the relay that stored a change writes that change to its own', async () => {
  postgres = await startPostgres()
  redis ??= await startRedisServer()
  const url = redis.url
  const admin = await openPostgres(postgres.url, () => undefined)
  await admin.query('create database relay_b')
  await admin.close()
  const storeA: Partial<RelayOptions> = { store: { databaseUrl: postgres.url } }
  const storeB: Partial<RelayOptions> = { store: { databaseUrl: postgres.url.replace(/\/postgres$/, '/relay_b') } }
  await everyChangeInB(
    'fleet-o',
    () => startTestRelay(relays, { redisUrl: url, ...storeA }),
    () => startTestRelay(relays, { redisUrl: url, ...storeB }),
    () => startTestRelay(relays, storeB),
  )
})
