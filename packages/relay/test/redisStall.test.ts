/**
 * A Redis that stops answering without closing its connections (SIGSTOP): the relay keeps
 * serving its clients, keeps a bounded amount for Redis (not every publish for as long as Redis
 * is silent), and once Redis answers again, the relays exchange what they missed. Two relays in
 * this process, relay A on a manual clock (its bound on Redis's answer is a timer of its own).
 */
import { ManualTimers } from '@tidemark/engine/testing'
import IORedis from 'ioredis'
import { afterAll, afterEach, beforeEach, expect, it } from 'vitest'
import type * as Y from 'yjs'
import { type RedisServer, startRedisServer } from '../scripts/redisServer.ts'
import { type Relay, startRelay } from '../src/index.ts'
import { REDIS_ANSWER_MS } from '../src/scaleout/unansweredPublishes.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { dashboardToken, deviceToken, groupEntry, metric, openRoom, type RoomClient, relaySocket, replicaLog, SECRET, waitFor } from './support/roomClients.ts'

const ROOM = 'fleet-z/d1'

/** Bytes of PUBLISH commands the relays' Redis clients (in this process) sent and Redis has not answered. */
let unansweredPublishBytes = 0
type SendCommand = (this: IORedis, command: { name: string; args: unknown[]; promise: Promise<unknown> }, stream?: unknown) => unknown
const prototype = IORedis.prototype as unknown as { sendCommand: SendCommand }
const sendCommand = prototype.sendCommand
prototype.sendCommand = function (command, stream) {
  if (command.name === 'publish') {
    const bytes = command.args.reduce<number>((sum, arg) => sum + (Buffer.isBuffer(arg) ? arg.byteLength : String(arg).length), 0)
    unansweredPublishBytes += bytes
    const settled = (): void => {
      unansweredPublishBytes -= bytes
    }
    command.promise.then(settled, settled)
  }
  return sendCommand.call(this, command, stream)
}

let redis: RedisServer
let paused = false
const relays: Relay[] = []
const sockets: ReturnType<typeof relaySocket>[] = []
const clients: RoomClient[] = []

beforeEach(async () => {
  redis = await startRedisServer()
})

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy()
  for (const socket of sockets.splice(0)) socket.destroy()
  if (paused) process.kill(redis.pid, 'SIGCONT')
  paused = false
  for (const relay of relays.splice(0)) await relay.close()
  await redis.stop()
})

afterAll(() => {
  prototype.sendCommand = sendCommand
  removeDataDirs()
})

async function relay(options: { readonly clock?: ManualTimers; readonly log?: string[] } = {}): Promise<Relay> {
  const { clock, log } = options
  const started = await startRelay({
    port: 0,
    store: { dataDir: freshDataDir() },
    auth: { secret: SECRET },
    redisUrl: redis.url,
    persistence: { writeWindowMs: 20 },
    log: (level, line) => log?.push(`${level} ${line}`),
    ...(clock === undefined ? {} : { now: clock.read, timers: clock }),
  })
  relays.push(started)
  return started
}

function open(on: Relay, token: string, doc?: Y.Doc): RoomClient {
  const socket = relaySocket(on.url)
  sockets.push(socket)
  const client = openRoom(socket, ROOM, token, doc)
  clients.push(client)
  return client
}

function pause(): void {
  process.kill(redis.pid, 'SIGSTOP')
  paused = true
}

function resume(): void {
  process.kill(redis.pid, 'SIGCONT')
  paused = false
}

/** Entries per update `write` makes (an update of about 1.5 KiB). */
const PER_UPDATE = 16

/** The device writes `count` updates of `PER_UPDATE` readings (from update `from`), each acknowledged by its relay. */
async function write(device: RoomClient, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i++) {
    replicaLog(device.doc, 'd1').push(Array.from({ length: PER_UPDATE }, (_, k) => groupEntry('d1-temp', (i * PER_UPDATE + k) * 60_000, i % 256)))
    if (i % 20 === 19) await waitFor(() => !device.provider.hasUnsyncedChanges, `reading ${i} acknowledged`)
  }
  await waitFor(() => !device.provider.hasUnsyncedChanges, 'the readings acknowledged')
}

it('while Redis does not answer, the relay keeps a bounded amount for it and keeps serving its clients', { timeout: 60_000 }, async () => {
  const clock = new ManualTimers(Date.now())
  const log: string[] = []
  const a = await relay({ clock, log })
  const device = open(a, await deviceToken('fleet-z', 'd1'))
  const local = open(a, await dashboardToken('fleet-z'))
  await waitFor(() => device.synced() && local.synced(), 'both synced')
  await waitFor(() => unansweredPublishBytes === 0, 'the exchange at load answered')

  pause()
  await write(device, 0, 10)
  // Longer than Redis may take to answer: the relay counts itself cut off from Redis.
  clock.advance(2 * REDIS_ANSWER_MS)
  const atCutOff = unansweredPublishBytes
  expect(atCutOff).toBeGreaterThan(10 * 1_024)

  // 300 KiB more: before the bound, every byte of it waited for Redis in the client's queue.
  await write(device, 10, 200)
  await waitFor(() => replicaLog(local.doc, 'd1').length === 210 * PER_UPDATE, 'the dashboard on the same relay has every reading')
  expect(unansweredPublishBytes - atCutOff).toBeLessThan(4_096)
  expect(await metric(a.httpUrl, 'tidemark_relay_redis_publishes_dropped_total')).toBeGreaterThanOrEqual(200)
  expect(await metric(a.httpUrl, 'tidemark_relay_redis_unanswered_bytes')).toBeLessThan(atCutOff + 4_096)
  expect(log.filter((line) => line.includes('has not answered'))).toHaveLength(1)

  resume()
  await waitFor(() => log.some((line) => line.includes('Redis is reachable again')), 'the relay saw Redis answer again')
  await waitFor(() => unansweredPublishBytes === 0, 'Redis answered everything')
  // Publishing again.
  const dropped = await metric(a.httpUrl, 'tidemark_relay_redis_publishes_dropped_total')
  await write(device, 210, 1)
  await waitFor(() => unansweredPublishBytes === 0, 'Redis answered the new publish')
  expect(await metric(a.httpUrl, 'tidemark_relay_redis_publishes_dropped_total')).toBe(dropped)
})

it('after Redis answers again, a reader on relay B gets every update and the presence a device sent relay A meanwhile', { timeout: 60_000 }, async () => {
  const clock = new ManualTimers(Date.now())
  const log: string[] = []
  const a = await relay({ clock, log })
  const b = await relay()
  const device = open(a, await deviceToken('fleet-z', 'd1'))
  const reader = open(b, await dashboardToken('fleet-z'))
  await waitFor(() => device.synced() && reader.synced(), 'both synced')
  await write(device, 0, 5)
  await waitFor(() => replicaLog(reader.doc, 'd1').length === 5 * PER_UPDATE, 'the first readings crossed')

  pause()
  await write(device, 5, 10)
  clock.advance(2 * REDIS_ANSWER_MS)
  await waitFor(() => log.some((line) => line.includes('has not answered')), 'relay A counted itself cut off from Redis')
  // Dropped by relay A, not queued: the exchange brings them.
  await write(device, 15, 50)
  device.provider.awareness?.setLocalState({ name: 'd1 during the stall' })
  expect(await metric(a.httpUrl, 'tidemark_relay_redis_publishes_dropped_total')).toBeGreaterThanOrEqual(50)

  resume()
  await waitFor(() => replicaLog(reader.doc, 'd1').length === 65 * PER_UPDATE, 'the reader on B has every reading written on A during the stall', 10_000)
  expect(JSON.stringify(replicaLog(reader.doc, 'd1').toJSON())).toEqual(JSON.stringify(replicaLog(device.doc, 'd1').toJSON()))
  const deviceId = device.doc.clientID
  // Well before the device renews its presence (every 15 s).
  await waitFor(() => (reader.provider.awareness?.getStates().get(deviceId) as { name?: string } | undefined)?.name === 'd1 during the stall', "the device's presence on B", 5_000)
})
