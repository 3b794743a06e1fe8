/**
 * Two relay processes sharing rooms through a redis-server started here: a device writes on A,
 * a dashboard reads on B; A is killed, the device reconnects to B and everything converges.
 */
import { afterAll, expect, it } from 'vitest'
import * as Y from 'yjs'
import { type RedisServer, startRedisServer } from '../scripts/redisServer.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { killRelays, spawnRelay } from './support/relayProcess.ts'
import { clockEntry, dashboardToken, deviceToken, groupEntry, metric, openRoom, relaySocket, replicaLog, SECRET_TEXT, scrapeMetrics, waitFor, waitUntil } from './support/roomClients.ts'

let redis: RedisServer | undefined
const sockets: ReturnType<typeof relaySocket>[] = []

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await killRelays()
  await redis?.stop()
  removeDataDirs()
})

function socketTo(url: string): ReturnType<typeof relaySocket> {
  const socket = relaySocket(url)
  sockets.push(socket)
  return socket
}

function entries(doc: Y.Doc): string {
  return JSON.stringify(replicaLog(doc, 'd1').toJSON(), (_key, value: unknown) => (value instanceof Uint8Array ? [...value] : value))
}

it('a writer on relay A and a reader on relay B share a room through Redis; A dies, the writer moves to B and converges; Redis dies, B keeps serving', async () => {
  redis = await startRedisServer()
  const url = redis.url
  const env = (): Record<string, string> => ({ TIDEMARK_DATA_DIR: freshDataDir(), TIDEMARK_AUTH_SECRET: SECRET_TEXT, REDIS_URL: url, TIDEMARK_STORE_DEBOUNCE_MS: '100' })
  const a = await spawnRelay(env())
  const b = await spawnRelay(env())
  const deviceDoc = new Y.Doc()
  const writer = openRoom(socketTo(a.url), 'fleet-x/d1', await deviceToken('fleet-x', 'd1'), deviceDoc)
  const reader = openRoom(socketTo(b.url), 'fleet-x/d1', await dashboardToken('fleet-x'))
  await waitFor(() => writer.synced() && reader.synced(), 'both synced')
  for (let i = 0; i < 20; i++) replicaLog(deviceDoc, 'd1').push([groupEntry('d1-temp', i * 60_000), clockEntry('d1-temp', 'd1', i)])
  await waitFor(() => replicaLog(reader.doc, 'd1').length === 40, 'the 20 updates crossed from A to B')
  expect(await metric(b.httpUrl, 'tidemark_relay_redis_errors_total')).toBe(0)

  expect(await a.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' })
  writer.destroy()
  const moved = openRoom(socketTo(b.url), 'fleet-x/d1', await deviceToken('fleet-x', 'd1'), deviceDoc)
  for (let i = 20; i < 30; i++) replicaLog(deviceDoc, 'd1').push([groupEntry('d1-temp', i * 60_000), clockEntry('d1-temp', 'd1', i)])
  await waitFor(() => moved.synced() && !moved.provider.hasUnsyncedChanges, 'the writer synced with B')
  await waitFor(() => replicaLog(reader.doc, 'd1').length === 60, 'the reader has all 30 updates')
  expect(entries(reader.doc)).toEqual(entries(deviceDoc))
  const late = openRoom(socketTo(b.url), 'fleet-x/d1', await dashboardToken('fleet-x'))
  await waitFor(() => late.synced(), 'a new reader on B synced')
  expect(entries(late.doc)).toEqual(entries(deviceDoc))
  expect(moved.closed).toEqual([])

  // Redis goes away: B keeps serving its connections, logs and counts the failed publishes.
  await redis.stop()
  redis = undefined
  for (let i = 30; i < 35; i++) replicaLog(deviceDoc, 'd1').push([groupEntry('d1-temp', i * 60_000), clockEntry('d1-temp', 'd1', i)])
  await waitFor(() => !moved.provider.hasUnsyncedChanges, 'B acknowledged the writes without Redis')
  await waitFor(() => replicaLog(reader.doc, 'd1').length === 70, 'the reader on B has them')
  await waitUntil(async () => (await metric(b.httpUrl, 'tidemark_relay_redis_errors_total')) > 0, 'the failed publishes counted')
  const metrics = await scrapeMetrics(b.httpUrl)
  expect(metrics.get('tidemark_relay_unhandled_rejections_total')).toBe(0)
  expect((await fetch(`${b.httpUrl}/healthz`)).status).toBe(200)
  expect(await b.stop('SIGTERM')).toEqual({ code: 0, signal: null })
})
