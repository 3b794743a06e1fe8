/**
 * Paced join answers (`SocketGuard.roomForAnswer`) on a relay that shares its rooms through Redis.
 * A client joins many large rooms at once on relay B, under a queue cap that holds two of them,
 * while their devices keep writing on relay A: the answers wait for the client's queue to drain,
 * and meanwhile the devices' writes reach B through Redis and are sent to every connection of
 * their room, the waiting one included. The client must end with every write exactly once, never
 * be cut as a slow reader, and the other clients of those rooms on B must keep getting the
 * writes while the answers wait.
 *
 * And a client joining rooms that only relay A holds: B loads each empty, answers the join at once,
 * and A's answer (the whole room) comes through Redis after. It reaches the client paced like an
 * answer (a catch-up, `catchUp.ts`), without B's load waiting for A, or for a holder that never
 * answers; a client that does not read is cut all the same.
 */
import { defaultConfiguration } from '@hocuspocus/server'
import { ManualTimers } from '@tidemark/engine/testing'
import IORedis from 'ioredis'
import * as decoding from 'lib0/decoding'
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { type RedisServer, startRedisServer } from '../scripts/redisServer.ts'
import type { Relay } from '../src/index.ts'
import { removeDataDirs } from './support/dataDirs.ts'
import { authFrame, syncFrame } from './support/hocuspocusFrames.ts'
import { acknowledged, answerWaits, fillRooms, queuedPeak } from './support/joinAnswerProbes.ts'
import { serverSockets } from './support/serverSockets.ts'
import { startTestRelay } from './support/testRelays.ts'
import { dashboardToken, groupEntry, metric, openRoom, type RoomClient, rawSocket, relaySocket, replicaLog, waitFor, waitUntil } from './support/roomClients.ts'

const originalTimeout = defaultConfiguration.timeout

let redis: RedisServer
const relays: Relay[] = []
const sockets: ReturnType<typeof relaySocket>[] = []
const clients: RoomClient[] = []
const raw: WebSocket[] = []

beforeAll(async () => {
  redis = await startRedisServer()
})

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy()
  for (const socket of sockets.splice(0)) socket.destroy()
  for (const ws of raw.splice(0)) ws.terminate()
  await Promise.all(relays.splice(0).map((relay) => relay.close()))
  defaultConfiguration.timeout = originalTimeout
  vi.restoreAllMocks()
})

afterAll(async () => {
  await redis.stop()
  removeDataDirs()
})

const FLEET = 'fleet-rj'
const MAX_QUEUED = 4 << 20
/** Readings each device writes before the joins: two batches of 4,000, about 740 KiB a room. */
const BATCH = 4_000
const BATCHES = 2

/** Hocuspocus' Sync message type, Yjs' step 2 (the answer to a step 1) and update. */
const SYNC = 0
const STEP2 = 1
const UPDATE = 2

/** A relay of the group; on `clock` (its timers and time), when given. */
function relay(clock?: ManualTimers): Promise<Relay> {
  return startTestRelay(relays, { redisUrl: redis.url, limits: { maxRoomBytes: 2 << 20, maxQueuedBytes: MAX_QUEUED }, ...(clock === undefined ? {} : { now: clock.read, timers: clock }) })
}

function socketTo(on: Relay): ReturnType<typeof relaySocket> {
  const socket = relaySocket(on.url)
  sockets.push(socket)
  return socket
}

/** The room, step and update of a sync step 2 or update message; null for any other message. */
function readSync(message: Uint8Array): { room: string; step: number; update: Uint8Array } | null {
  const decoder = decoding.createDecoder(message)
  const room = decoding.readVarString(decoder)
  if (decoding.readVarUint(decoder) !== SYNC) return null
  const step = decoding.readVarUint(decoder)
  if (step !== STEP2 && step !== UPDATE) return null
  return { room, step, update: decoding.readVarUint8Array(decoder) }
}

/** A replica's log, as text: compared whole, a reading lost or applied twice shows. */
function entries(doc: Y.Doc, replica: string): string {
  return JSON.stringify(replicaLog(doc, replica).toJSON(), (_key, value: unknown) => (value instanceof Uint8Array ? [...value] : value))
}

/** Every device writes one more reading, the `round`th after its batches. */
function writeRound(devices: readonly RoomClient[], names: readonly string[], round: number): void {
  for (const [i, device] of devices.entries()) {
    const name = names[i] as string
    replicaLog(device.doc, name).push([groupEntry(`${name}-temp`, (BATCHES * BATCH + round) * 60_000, round % 256)])
  }
}

/**
 * A raw dashboard socket to `on` on a link of 8 MiB/s, with the relay's side of it and the most
 * the relay had queued for it after any of its sends; `closedWith` is set once the socket closed.
 */
async function slowReader(on: Relay): Promise<{ ws: WebSocket; serverSide: WebSocket; peak: () => number; closedWith: () => { code: number; reason: string } | undefined }> {
  const slow: { rate?: number } = { rate: 8 << 20 }
  const made = serverSockets(slow)
  const { ws, closed } = await rawSocket(on)
  raw.push(ws)
  delete slow.rate
  const serverSide = made.at(-1) as WebSocket
  const peak = queuedPeak(serverSide)
  let closedWith: { code: number; reason: string } | undefined
  void closed.then((how) => (closedWith = how))
  return { ws, serverSide, peak, closedWith: () => closedWith }
}

/** Stops the link under the relay's side of a socket carrying anything until the returned function is called. */
function stallLink(serverSide: WebSocket): () => void {
  type Write = (chunk: unknown, encoding: unknown, done: (error?: Error | null) => void) => void
  const socket = (serverSide as unknown as { _socket: { _write: Write } })._socket
  const write = socket._write
  let waiting: (() => void) | undefined
  let stalled = true
  // A stream hands its writes over one at a time: at most one waits.
  socket._write = (chunk, encoding, done) => {
    if (stalled) waiting = () => write.call(socket, chunk, encoding, done)
    else write.call(socket, chunk, encoding, done)
  }
  return () => {
    stalled = false
    waiting?.()
  }
}

/** Every join of `rooms` and its step 1 (holding nothing) in one burst: the relay reads them all before it queues any answer. */
function joinInOneBurst(ws: WebSocket, rooms: readonly string[], token: string): void {
  for (const room of rooms) ws.send(authFrame(room, token))
  for (const room of rooms) ws.send(syncFrame(room, 0, Y.encodeStateVector(new Y.Doc())))
}

it("a client joining 10 rooms of about 740 KiB at once on relay B, under a queue cap of two rooms' bytes, while their devices keep writing on relay A, gets every write once, is not cut, and does not hold up B's other clients", async () => {
  const a = await relay()
  const b = await relay()
  const names = Array.from({ length: 10 }, (_, i) => `d${i + 1}`)
  const rooms = names.map((name) => `${FLEET}/${name}`)
  const devices = await fillRooms(socketTo(a), clients, FLEET, names, BATCHES, BATCH)

  // Another dashboard on B follows every room: B holds them, so a join's answer weighs the room.
  const watcherSocket = socketTo(b)
  const token = await dashboardToken(FLEET)
  const watcher = rooms.map((room) => openRoom(watcherSocket, room, token))
  clients.push(...watcher)
  const holds = (docs: readonly Y.Doc[], readings: number): boolean => docs.every((doc, i) => replicaLog(doc, names[i] as string).length === readings)
  await waitFor(() => holds(watcher.map((room) => room.doc), BATCHES * BATCH), 'the watcher on B has every room', 30_000)

  // The joining client, on a link of 8 MiB/s.
  const reader = await slowReader(b)
  const docs = new Map(rooms.map((room) => [room, new Y.Doc()]))
  const answered = new Set<string>()
  const answerTimes: number[] = []
  let started = 0
  // Updates sent to the client for a room before that room's answer: writes that came through Redis while the answer waited.
  let updatesBeforeAnswer = 0
  reader.ws.on('message', (message: Buffer) => {
    const sync = readSync(new Uint8Array(message))
    if (sync === null) return
    Y.applyUpdate(docs.get(sync.room) as Y.Doc, sync.update)
    if (sync.step === STEP2) {
      answered.add(sync.room)
      answerTimes.push(Date.now() - started)
    } else if (!answered.has(sync.room)) updatesBeforeAnswer++
  })
  const waits = answerWaits()
  started = Date.now()
  joinInOneBurst(reader.ws, rooms, token)

  // The devices write a round, and the watcher on B must have it, while the client's answers come in.
  let rounds = 0
  let roundsWhileWaiting = 0
  let slowestRoundMs = 0
  const lastRound = (): number => BATCHES * BATCH + rounds
  while (rounds < 30 && (answered.size < rooms.length || rounds < 5) && reader.closedWith() === undefined) {
    const waiting = answered.size < rooms.length
    const sent = Date.now()
    writeRound(devices, names, rounds++)
    await acknowledged(devices, `round ${rounds}`)
    await waitFor(() => holds(watcher.map((room) => room.doc), lastRound()), `the watcher on B has round ${rounds}`, 10_000)
    slowestRoundMs = Math.max(slowestRoundMs, Date.now() - sent)
    if (waiting && answered.size < rooms.length) roundsWhileWaiting++
  }

  await waitFor(() => reader.closedWith() !== undefined || holds([...docs.values()], lastRound()), 'the client has every write of every room', 30_000)
  console.log(
    `a client joining ${rooms.length} rooms on B: ${waits.waited} answers waited, at most ${reader.peak()} bytes queued (cap ${MAX_QUEUED}); ` +
      `${rounds} rounds of writes on A, ${roundsWhileWaiting} reached B's watcher while answers waited (slowest ${slowestRoundMs} ms), ${updatesBeforeAnswer} updates came before their room's answer; answers at ${answerTimes.join(', ')} ms`,
  )
  expect(reader.closedWith()).toBeUndefined()
  expect(reader.serverSide.readyState).toBe(WebSocket.OPEN)
  expect(answered.size).toBe(rooms.length)
  expect(waits.waited).toBeGreaterThanOrEqual(rooms.length - 3)
  expect(roundsWhileWaiting).toBeGreaterThan(0)
  // Whether a write reaches the client before its room's answer, or inside the answer or a
  // catch-up, depends on when B reads the burst's joins: 0 or 241 such updates, about half the
  // runs each, every write once either way (test/catchUp.test.ts covers both paths as they meet).
  expect(reader.peak()).toBeLessThanOrEqual(MAX_QUEUED)
  // Every write once: a reading lost, or applied twice, changes a log's length or content.
  for (const [i, name] of names.entries()) {
    expect(replicaLog((devices[i] as RoomClient).doc, name)).toHaveLength(lastRound())
    expect(entries(docs.get(`${FLEET}/${name}`) as Y.Doc, name)).toEqual(entries((devices[i] as RoomClient).doc, name))
    expect(entries((watcher[i] as RoomClient).doc, name)).toEqual(entries((devices[i] as RoomClient).doc, name))
  }
  expect(await metric(b.httpUrl, 'tidemark_relay_refusals_total{reason="slow-reader"}')).toBe(0)
  expect(await metric(b.httpUrl, 'tidemark_relay_redis_errors_total')).toBe(0)
}, 60_000)

/**
 * Joins all of `rooms` on `on` in one burst, as a raw socket on a slow link reading into a doc per
 * room; `largest` is the largest sync message's update it took.
 */
async function joinRoomsOnSlowLink(
  on: Relay,
  rooms: readonly string[],
): Promise<Awaited<ReturnType<typeof slowReader>> & { docs: Map<string, Y.Doc>; answered: Set<string>; largest: () => number; received: Map<string, number> }> {
  const reader = await slowReader(on)
  const docs = new Map(rooms.map((room) => [room, new Y.Doc()]))
  const answered = new Set<string>()
  // Bytes of the updates each room was sent (answers, catch-ups and live updates).
  const received = new Map<string, number>()
  let largest = 0
  reader.ws.on('message', (message: Buffer) => {
    const sync = readSync(new Uint8Array(message))
    if (sync === null) return
    Y.applyUpdate(docs.get(sync.room) as Y.Doc, sync.update)
    if (sync.step === STEP2) answered.add(sync.room)
    largest = Math.max(largest, sync.update.byteLength)
    received.set(sync.room, (received.get(sync.room) ?? 0) + sync.update.byteLength)
  })
  joinInOneBurst(reader.ws, rooms, await dashboardToken(FLEET))
  return { ...reader, docs, answered, largest: () => largest, received }
}

it('a client joining 8 rooms of about 740 KiB at once on relay B, which does not hold them, under a queue cap of two rooms, gets them from relay A paced and is not cut', async () => {
  const a = await relay()
  const b = await relay()
  const names = Array.from({ length: 8 }, (_, i) => `e${i + 1}`)
  const rooms = names.map((name) => `${FLEET}/${name}`)
  // Only A holds what the devices wrote: B's data directory is its own, so B loads each room empty
  // as the client joins it, answers the join at once, and A's answer comes through Redis after.
  const devices = await fillRooms(socketTo(a), clients, FLEET, names, BATCHES, BATCH)

  const waits = answerWaits()
  const reader = await joinRoomsOnSlowLink(b, rooms)
  const holds = (readings: number): boolean => [...reader.docs.values()].every((doc, i) => replicaLog(doc, names[i] as string).length === readings)
  await waitFor(() => reader.closedWith() !== undefined || holds(BATCHES * BATCH), 'the client has every room, or was cut', 30_000)
  // Paced: the joins' answers, then the rooms from A that did not fit in the client's queue.
  const catchUps = waits.weights.length - rooms.length
  console.log(
    `a client joining ${rooms.length} rooms B did not hold: ${catchUps} rooms from A paced, ${waits.waited} of ${waits.weights.length} paced sends waited, ` +
      `largest message ${reader.largest()} bytes, at most ${reader.peak()} bytes queued (cap ${MAX_QUEUED})`,
  )
  expect(reader.closedWith()).toBeUndefined()
  expect(reader.peak()).toBeLessThanOrEqual(MAX_QUEUED)
  expect(await metric(b.httpUrl, 'tidemark_relay_refusals_total{reason="slow-reader"}')).toBe(0)
  // The rooms came whole, each in one message, and some of them waited for the client's queue to drain.
  expect(reader.largest()).toBeGreaterThan(512 << 10)
  expect(catchUps).toBeGreaterThan(0)
  expect(waits.waited).toBeGreaterThan(0)
  for (const [i, name] of names.entries()) expect(entries(reader.docs.get(`${FLEET}/${name}`) as Y.Doc, name)).toEqual(entries((devices[i] as RoomClient).doc, name))
}, 60_000)

it('a client whose answers to its joins on relay B wait while the rooms take a large write on relay A is sent that write once: in the answer, not again in a catch-up', async () => {
  const a = await relay()
  const b = await relay()
  const names = ['w1', 'w2', 'w3', 'w4']
  const rooms = names.map((name) => `${FLEET}/${name}`)
  const devices = await fillRooms(socketTo(a), clients, FLEET, names, BATCHES, BATCH)
  // B holds the rooms whole: a dashboard on B has synced them.
  const onB = socketTo(b)
  const observers = await Promise.all(rooms.map(async (room) => openRoom(onB, room, await dashboardToken(FLEET))))
  clients.push(...observers)
  const readings = (count: number): boolean => observers.every((observer, i) => replicaLog(observer.doc, names[i] as string).length === count)
  await waitFor(() => readings(BATCHES * BATCH), 'B holds the rooms')

  // The client joins the four rooms while its link carries nothing for now: two answers fill its
  // queue past half of the cap, the other two wait.
  const waits = answerWaits()
  const reader = await joinRoomsOnSlowLink(b, rooms)
  const resume = stallLink(reader.serverSide)
  const queuedRooms = (): number => Math.floor(reader.serverSide.bufferedAmount / (waits.weights[0] ?? Number.POSITIVE_INFINITY))
  await waitFor(() => waits.weights.length === rooms.length && queuedRooms() === 2, 'two answers queued (no third fits), the others waiting')
  // Meanwhile the devices write a batch as large as the rooms were (it does not fit in the queue).
  for (const [i, device] of devices.entries()) {
    const name = names[i] as string
    device.doc.transact(() => {
      const log = replicaLog(device.doc, name)
      for (let j = 0; j < BATCHES * BATCH; j++) log.push([groupEntry(`${name}-temp`, (BATCHES * BATCH + j) * 60_000, j % 256)])
    })
  }
  await waitFor(() => readings(2 * BATCHES * BATCH), 'B took the batch')
  resume()

  const holds = (): boolean => reader.docs.size === rooms.length && [...reader.docs.values()].every((doc, i) => replicaLog(doc, names[i] as string).length === 2 * BATCHES * BATCH)
  await waitFor(() => reader.closedWith() !== undefined || holds(), 'the client has every room, or was cut', 30_000)
  await waitFor(() => reader.serverSide.bufferedAmount === 0, 'the client read everything queued for it')
  const sent = rooms.map((room) => reader.received.get(room) ?? 0)
  const sizes = devices.map((device) => Y.encodeStateAsUpdate(device.doc).byteLength)
  console.log(`answers that waited while the rooms took a batch: sent ${sent.join(', ')} bytes for rooms of ${sizes.join(', ')} bytes`)
  expect(reader.closedWith()).toBeUndefined()
  for (const [i, name] of names.entries()) expect(entries(reader.docs.get(rooms[i] as string) as Y.Doc, name)).toEqual(entries((devices[i] as RoomClient).doc, name))
  // Each room about once (framing and deletions aside): the two answered at once, then sent the
  // batch; the two whose answers waited, in their answers alone.
  for (const [i, bytes] of sent.entries()) expect(bytes, rooms[i]).toBeLessThan(1.1 * (sizes[i] as number))
}, 60_000)

it('a holder of the rooms that never answers (subscribed to their channels, frozen) adds no wait to their loads on relay B: the joins are answered with B\'s clock standing still', async () => {
  const a = await relay()
  const names = ['f1', 'f2', 'f3']
  const rooms = names.map((name) => `${FLEET}/${name}`)
  const devices = await fillRooms(socketTo(a), clients, FLEET, names, 1, BATCH)
  // A relay frozen while holding the rooms: Redis keeps it subscribed to their channels, and
  // counts it among those that took each exchange, but it never answers.
  const frozen = new IORedis(redis.url)
  try {
    await frozen.subscribe(...rooms.map((room) => `tidemark:${room}`))
    // B's one bound on a load's wait for Redis is a timer on its clock, which never moves here: a
    // load waiting for the frozen holder would never end, and the joins never be answered.
    const clock = new ManualTimers(Date.now())
    const b = await relay(clock)
    const reader = await joinRoomsOnSlowLink(b, rooms)
    await waitFor(() => reader.answered.size === rooms.length, "the joins' answers")
    const publisher = new IORedis(redis.url)
    const subscribers = (await publisher.call('PUBSUB', 'NUMSUB', ...rooms.map((room) => `tidemark:${room}`)).finally(() => publisher.disconnect())) as (string | number)[]
    // A, B and the frozen holder on every room's channel.
    expect(subscribers.filter((_, i) => i % 2 === 1).map(Number)).toEqual(rooms.map(() => 3))
    // And A's answers, which came after through Redis, reach the client.
    await waitFor(() => names.every((name) => replicaLog(reader.docs.get(`${FLEET}/${name}`) as Y.Doc, name).length === BATCH), "A's rooms on the client")
    for (const [i, name] of names.entries()) expect(entries(reader.docs.get(`${FLEET}/${name}`) as Y.Doc, name)).toEqual(entries((devices[i] as RoomClient).doc, name))
    expect(reader.closedWith()).toBeUndefined()
  } finally {
    frozen.disconnect()
  }
}, 60_000)

it('a client on relay B that stops reading while the rooms it joined come from relay A is cut once it misses its pings, and what waited for it is let go', async () => {
  const PING_TIMEOUT_MS = 4_000
  const a = await relay()
  const names = Array.from({ length: 8 }, (_, i) => `g${i + 1}`)
  const rooms = names.map((name) => `${FLEET}/${name}`)
  await fillRooms(socketTo(a), clients, FLEET, names, BATCHES, BATCH)
  defaultConfiguration.timeout = PING_TIMEOUT_MS
  const b = await relay()

  const waits = answerWaits()
  const reader = await joinRoomsOnSlowLink(b, rooms)
  // It reads nothing more after the first answer: nor the rooms, nor the relay's pings.
  await waitFor(() => reader.answered.size > 0, 'a first answer')
  reader.ws.pause()
  await waitUntil(
    async () => reader.serverSide.readyState === WebSocket.CLOSED && (await metric(b.httpUrl, 'tidemark_relay_connections')) === 0,
    `the relay to cut the client that stopped reading (${reader.serverSide.bufferedAmount} bytes queued for it)`,
    4 * PING_TIMEOUT_MS,
  )
  console.log(`a client that stopped reading: cut with ${waits.waited} of ${waits.weights.length} paced sends having waited, at most ${reader.peak()} bytes queued (cap ${MAX_QUEUED})`)
  expect(reader.serverSide.bufferedAmount).toBe(0)
  expect(reader.peak()).toBeLessThanOrEqual(MAX_QUEUED)
  expect(await metric(b.httpUrl, 'tidemark_relay_refusals_total{reason="unresponsive"}')).toBe(1)
}, 60_000)
