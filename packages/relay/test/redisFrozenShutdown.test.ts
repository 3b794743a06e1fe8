/**
 * A relay stopped while Redis does not answer (paused, or its host unreachable without a reset):
 * the shutdown does not wait on Redis, writes what the room took and closes its store.
 */
import { afterAll, expect, it } from 'vitest'
import { type RedisServer, startRedisServer } from '../scripts/redisServer.ts'
import { startRelay } from '../src/startRelay.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { dashboardToken, deviceToken, groupEntry, openRoom, relaySocket, replicaLog, SECRET, waitFor } from './support/roomClients.ts'

let redis: RedisServer | undefined
let paused = false
const sockets: ReturnType<typeof relaySocket>[] = []

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  if (redis !== undefined && paused) process.kill(redis.pid, 'SIGCONT')
  await redis?.stop()
  removeDataDirs()
})

it('a relay closed while Redis does not answer closes within seconds, with what it took stored', { timeout: 60_000 }, async () => {
  redis = await startRedisServer()
  const dataDir = freshDataDir()
  const relay = await startRelay({ port: 0, store: { dataDir }, auth: { secret: SECRET }, redisUrl: redis.url, persistence: { writeWindowMs: 20 }, log: () => undefined })
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const device = openRoom(socket, 'fleet/d1', await deviceToken('fleet', 'd1'))
  await waitFor(() => device.synced(), 'the device synced')
  process.kill(redis.pid, 'SIGSTOP')
  paused = true
  replicaLog(device.doc, 'd1').push([groupEntry('d1-temp', 0)])
  await waitFor(() => !device.provider.hasUnsyncedChanges, 'the relay acknowledged the update')

  let outcome = 'pending'
  relay.close().then(
    () => (outcome = 'closed'),
    (error: Error) => (outcome = `rejected: ${error.message}`),
  )
  // Without a bound on leaving Redis, the shutdown waited out its whole 30 s store deadline and
  // rejected, skipping its last write and the store's close.
  await waitFor(() => outcome !== 'pending', 'the relay closed', 10_000)
  expect(outcome).toBe('closed')
  socket.destroy()

  const reopened = await startRelay({ port: 0, store: { dataDir }, auth: { secret: SECRET }, log: () => undefined })
  try {
    const readSocket = relaySocket(reopened.url)
    sockets.push(readSocket)
    const reader = openRoom(readSocket, 'fleet/d1', await dashboardToken('fleet'))
    await waitFor(() => reader.synced() && replicaLog(reader.doc, 'd1').length === 1, 'the update read back from the store')
    readSocket.destroy()
  } finally {
    await reopened.close()
  }
})
