/**
 * What the relay queues for a socket that joins many rooms at once. Each join's step 1 is answered
 * with what the client lacks of the room, the room's whole state at a first join; the socket guard
 * stops reading a socket only once half of `maxQueuedBytes` is queued, and the joins already read
 * would each queue their answer. The relay admits a join's answer only while the socket's queue
 * has room for it, and answers the rest as the client reads: a client that reads normally is never
 * cut for what it asked for. A client that holds the rooms already, or lacks only a few updates of
 * them, is weighed at what it lacks and not made to wait.
 */
import * as decoding from 'lib0/decoding'
import { afterAll, afterEach, expect, it, vi } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { SocketGuard } from '../src/gate/socketGuard.ts'
import type { Relay } from '../src/index.ts'
import { removeDataDirs } from './support/dataDirs.ts'
import { authFrame, syncFrame } from './support/hocuspocusFrames.ts'
import { answerWaits, fillRooms, queuedPeak } from './support/joinAnswerProbes.ts'
import { serverSockets } from './support/serverSockets.ts'
import { startTestRelay } from './support/testRelays.ts'
import { dashboardToken, deviceToken, groupEntry, metric, openRoom, type RoomClient, rawSocket, relaySocket, replicaLog, waitFor } from './support/roomClients.ts'

const relays: Relay[] = []
const sockets: ReturnType<typeof relaySocket>[] = []
const clients: RoomClient[] = []
const raw: WebSocket[] = []

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy()
  for (const socket of sockets.splice(0)) socket.destroy()
  for (const ws of raw.splice(0)) ws.terminate()
  await Promise.all(relays.splice(0).map((relay) => relay.close()))
  vi.restoreAllMocks()
})

afterAll(() => removeDataDirs())

/** Hocuspocus' Sync message type and Yjs' step 2: the answer to a client's step 1. */
const SYNC = 0
const STEP2 = 1

/** The room and update of a step 2 answer, or null for any other message. */
function readStep2(message: Uint8Array): { room: string; update: Uint8Array } | null {
  const decoder = decoding.createDecoder(message)
  const room = decoding.readVarString(decoder)
  if (decoding.readVarUint(decoder) !== SYNC || decoding.readVarUint(decoder) !== STEP2) return null
  return { room, update: decoding.readVarUint8Array(decoder) }
}

/** Fills `fleet`'s rooms `names`, each with `batches` updates of 4,000 readings (about 800 KiB each), all rooms at once; returns their devices. */
function fillRoomsOn(relay: Relay, fleet: string, names: readonly string[], batches: number): Promise<RoomClient[]> {
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  return fillRooms(socket, clients, fleet, names, batches)
}

/**
 * Joins every room of `docs` in one burst over a raw dashboard socket, each step 1 stating what its
 * document holds, applies each answer to it, and closes the socket once every room answered.
 * Returns the bytes of each room's answer (its step 2's update).
 */
async function joinInOneBurst(relay: Relay, fleet: string, docs: ReadonlyMap<string, Y.Doc>): Promise<Map<string, number>> {
  const { ws, closed } = await rawSocket(relay)
  raw.push(ws)
  const answered = new Map<string, number>()
  ws.on('message', (message: Buffer) => {
    const step2 = readStep2(new Uint8Array(message))
    if (step2 === null) return
    Y.applyUpdate(docs.get(step2.room) as Y.Doc, step2.update)
    answered.set(step2.room, step2.update.byteLength)
  })
  let closedWith: { code: number; reason: string } | undefined
  void closed.then((how) => (closedWith = how))
  const token = await dashboardToken(fleet)
  const rooms = [...docs.keys()]
  const burst = [...rooms.map((room) => authFrame(room, token)), ...rooms.map((room) => syncFrame(room, 0, Y.encodeStateVector(docs.get(room) as Y.Doc)))]
  for (const frame of burst) ws.send(frame)
  await waitFor(() => answered.size === rooms.length || closedWith !== undefined, 'every room answered, or the socket closed', 60_000)
  expect(closedWith).toBeUndefined()
  ws.terminate()
  return answered
}

it('a client joining 20 rooms of about 740 KiB in one write, under 4 MiB queued at most, gets every room and is not cut while it reads', async () => {
  const MAX_QUEUED = 4 << 20
  const made = serverSockets()
  const relay = await startTestRelay(relays, { limits: { maxRoomBytes: 2 << 20, maxQueuedBytes: MAX_QUEUED } })
  const rooms = Array.from({ length: 20 }, (_, i) => `d${i + 1}`)
  await fillRoomsOn(relay, 'fleet-j', rooms, 2)

  const { ws: reader, closed } = await rawSocket(relay)
  raw.push(reader)
  const readerServerSide = made.at(-1) as WebSocket
  // The most the relay had queued for the reader after any of its sends.
  const peak = queuedPeak(readerServerSide)
  const answered = new Map<string, number>()
  reader.on('message', (message: Buffer) => {
    const step2 = readStep2(new Uint8Array(message))
    if (step2 !== null) answered.set(step2.room, step2.update.byteLength)
  })
  let closedWith: { code: number; reason: string } | undefined
  void closed.then((how) => (closedWith = how))

  // Every join and its step 1 in one burst: the relay reads them all before it queues any answer.
  const token = await dashboardToken('fleet-j')
  const burst = [...rooms.map((room) => authFrame(`fleet-j/${room}`, token)), ...rooms.map((room) => syncFrame(`fleet-j/${room}`, 0, Y.encodeStateVector(new Y.Doc())))]
  for (const frame of burst) reader.send(frame)

  await waitFor(() => answered.size === rooms.length || closedWith !== undefined, 'every room answered, or the reader closed', 60_000)
  console.log(`a reader joining ${rooms.length} rooms at once: at most ${peak()} bytes queued for it (cap ${MAX_QUEUED}), ${answered.size} rooms answered`)
  expect(closedWith).toBeUndefined()
  expect(readerServerSide.readyState).toBe(WebSocket.OPEN)
  expect(answered.size).toBe(rooms.length)
  for (const bytes of answered.values()) expect(bytes).toBeGreaterThan(512 << 10)
  expect(peak()).toBeLessThanOrEqual(MAX_QUEUED)
  expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="slow-reader"}')).toBe(0)
})

it("a dashboard following 1,000 small rooms over one socket, under a queue cap of two rooms' bytes, syncs them all", async () => {
  const relay = await startTestRelay(relays, { limits: { maxRoomBytes: 64 << 10, maxQueuedBytes: 128 << 10 } })
  const rooms = Array.from({ length: 1_000 }, (_, i) => `d${i + 1}`)
  // One small reading in each room, written straight through a raw socket per batch of rooms.
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const written = Array.from({ length: 20 }, (_, i) => `d${i + 1}`)
  const devices = await Promise.all(written.map(async (name) => openRoom(socket, `fleet-k/${name}`, await deviceToken('fleet-k', name))))
  clients.push(...devices)
  await waitFor(() => devices.every((device) => device.synced()), 'the devices synced')
  for (const [i, device] of devices.entries()) replicaLog(device.doc, written[i] as string).push([groupEntry(`${written[i]}-temp`, 0, i)])
  await waitFor(() => devices.every((device) => !device.provider.hasUnsyncedChanges), 'the readings acknowledged')

  const dashboardSocket = relaySocket(relay.url)
  sockets.push(dashboardSocket)
  const token = await dashboardToken('fleet-k')
  const started = Date.now()
  const followed = rooms.map((room) => openRoom(dashboardSocket, `fleet-k/${room}`, token))
  clients.push(...followed)
  await waitFor(() => followed.every((room) => room.synced() || room.closed.length > 0 || room.denied.length > 0), 'the dashboard synced every room', 60_000)
  console.log(`a dashboard synced ${rooms.length} rooms in ${Date.now() - started} ms`)
  expect(followed.flatMap((room) => [...room.closed, ...room.denied])).toEqual([])
  for (const [i, name] of written.entries()) expect(replicaLog((followed[i] as RoomClient).doc, name).length).toBe(1)
})

it('a client rejoining 8 rooms of about 740 KiB that it holds is answered without waiting for its queue to drain; one that lacks them waits as before', async () => {
  const relay = await startTestRelay(relays, { limits: { maxRoomBytes: 2 << 20, maxQueuedBytes: 4 << 20 } })
  const names = Array.from({ length: 8 }, (_, i) => `d${i + 1}`)
  const devices = await fillRoomsOn(relay, 'fleet-r', names, 2)
  // Readings deleted too: a rejoining client is sent the room's delete set.
  for (const [i, device] of devices.entries()) replicaLog(device.doc, names[i] as string).delete(10, 5)
  await waitFor(() => devices.every((device) => !device.provider.hasUnsyncedChanges), 'the deletions acknowledged')
  const docs = new Map(names.map((name) => [`fleet-r/${name}`, new Y.Doc()]))

  // Under half of 4 MiB, two rooms' whole states fit at once: the others wait for the queue to
  // drain, as many as the kernel does not take at once (measured: 4 to 6 of 8, from run to run).
  const first = answerWaits()
  const joined = await joinInOneBurst(relay, 'fleet-r', docs)
  console.log(`a client lacking ${names.length} rooms: ${first.waited} answers waited, weighed ${first.weights.join(', ')}`)
  expect(first.weights).toHaveLength(names.length)
  for (const weight of first.weights) expect(weight).toBeGreaterThan(512 << 10)
  expect(first.waited).toBeGreaterThan(0)
  for (const bytes of joined.values()) expect(bytes).toBeGreaterThan(512 << 10)
  vi.restoreAllMocks()

  // The same client back after a blip, holding every room: each answer is the room's delete set.
  const again = answerWaits()
  const rejoined = await joinInOneBurst(relay, 'fleet-r', docs)
  console.log(`the client rejoining holding them: ${again.waited} answers waited, weighed ${again.weights.join(', ')}; answers of ${[...rejoined.values()].join(', ')} bytes`)
  expect(again.weights).toHaveLength(names.length)
  expect(again.waited).toBe(0)
  for (const weight of again.weights) expect(weight).toBeLessThan(1 << 10)
  for (const bytes of rejoined.values()) expect(bytes).toBeGreaterThan(2)
  for (const bytes of rejoined.values()) expect(bytes).toBeLessThan(64)
  for (const [i, name] of names.entries()) expect(replicaLog(docs.get(`fleet-r/${name}`) as Y.Doc, name).length).toBe(replicaLog((devices[i] as RoomClient).doc, name).length)
  expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="slow-reader"}')).toBe(0)
})

it('a client rejoining 8 rooms of about 740 KiB after their devices wrote a few readings is weighed at what it lacks, and answered without waiting; its first join waits as before', async () => {
  const relay = await startTestRelay(relays, { limits: { maxRoomBytes: 2 << 20, maxQueuedBytes: 4 << 20 } })
  const names = Array.from({ length: 8 }, (_, i) => `d${i + 1}`)
  const devices = await fillRoomsOn(relay, 'fleet-l', names, 2)
  const docs = new Map(names.map((name) => [`fleet-l/${name}`, new Y.Doc()]))

  // Its first join lacks the rooms whole: weighed at them, under half of 4 MiB two fit at once,
  // and the others wait for the queue to drain (as many as the kernel does not take at once).
  const first = answerWaits()
  await joinInOneBurst(relay, 'fleet-l', docs)
  console.log(`a client lacking ${names.length} rooms: ${first.waited} answers waited, weighed ${first.weights.join(', ')}`)
  expect(first.weights).toHaveLength(names.length)
  for (const weight of first.weights) expect(weight).toBeGreaterThan(512 << 10)
  expect(first.waited).toBeGreaterThan(0)
  vi.restoreAllMocks()

  // The client's socket drops; meanwhile each device writes three readings, one update each, and deletes one.
  for (const [i, device] of devices.entries()) {
    const log = replicaLog(device.doc, names[i] as string)
    for (let j = 0; j < 3; j++) log.push([groupEntry(`${names[i]}-temp`, (8_000 + j) * 60_000, j)])
    log.delete(7, 1)
  }
  await waitFor(() => devices.every((device) => !device.provider.hasUnsyncedChanges), 'the readings acknowledged')

  const again = answerWaits()
  const rejoined = await joinInOneBurst(relay, 'fleet-l', docs)
  const answers = [...rejoined.values()]
  console.log(`the client rejoining lacking a few readings: ${again.waited} answers waited, weighed ${again.weights.join(', ')}; updates of ${answers.join(', ')} bytes`)
  expect(again.weights).toHaveLength(names.length)
  expect(again.waited).toBe(0)
  // Each answer carries the three readings (about 100 bytes each); its weight, both messages
  // framed, is no less than its update and near it, not the room's 740 KiB.
  for (const bytes of answers) expect(bytes).toBeGreaterThan(300)
  for (const weight of again.weights) expect(weight).toBeGreaterThan(Math.max(...answers))
  for (const weight of again.weights) expect(weight).toBeLessThan(Math.min(...answers) + 128)
  for (const [i, name] of names.entries()) expect(replicaLog(docs.get(`fleet-l/${name}`) as Y.Doc, name).toJSON()).toEqual(replicaLog((devices[i] as RoomClient).doc, name).toJSON())
  expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="slow-reader"}')).toBe(0)
})

it('a client rejoining a room it holds, whose answer waits while the device writes to it, is weighed at no less than what it is then sent', async () => {
  const relay = await startTestRelay(relays, { limits: { maxRoomBytes: 2 << 20, maxQueuedBytes: 4 << 20 } })
  const [device] = await fillRoomsOn(relay, 'fleet-w', ['d1'], 1)
  const room = 'fleet-w/d1'
  const doc = new Y.Doc()
  await joinInOneBurst(relay, 'fleet-w', new Map([[room, doc]]))

  // The client is back holding the room. Its join's answer waits (as behind a large answer queued
  // before it) while the device writes a batch the client does not hold yet.
  let admit = (): void => undefined
  const waiting = new Promise<void>((resolve) => (admit = resolve))
  const weights: number[] = []
  const roomForAnswer = SocketGuard.prototype.roomForAnswer
  let asked = 0
  vi.spyOn(SocketGuard.prototype, 'roomForAnswer').mockImplementation(function (this: SocketGuard, weigh: () => number) {
    asked++
    weights.push(weigh())
    // Every weighing the guard makes of it, the last one just before it is sent.
    return waiting.then(() =>
      roomForAnswer.call(this, () => {
        const bytes = weigh()
        weights.push(bytes)
        return bytes
      }),
    )
  })
  const { ws, closed } = await rawSocket(relay)
  raw.push(ws)
  // The bytes of every message answering the join: its step 2, then the relay's step 1.
  let answer = 0
  let answered = false
  let broadcasts = 0
  ws.on('message', (message: Buffer) => {
    const decoder = decoding.createDecoder(new Uint8Array(message))
    decoding.readVarString(decoder)
    if (decoding.readVarUint(decoder) !== SYNC) return
    const step = decoding.readVarUint(decoder)
    if (step === 2) broadcasts++
    else answer += message.byteLength
    if (step === STEP2) {
      Y.applyUpdate(doc, decoding.readVarUint8Array(decoder))
      answered = true
    }
  })
  let closedWith: { code: number; reason: string } | undefined
  void closed.then((how) => (closedWith = how))
  ws.send(authFrame(room, await dashboardToken('fleet-w')))
  ws.send(syncFrame(room, 0, Y.encodeStateVector(doc)))
  await waitFor(() => asked > 0, 'the join asked for room for its answer')
  const log = replicaLog((device as RoomClient).doc, 'd1')
  ;(device as RoomClient).doc.transact(() => {
    for (let j = 0; j < 4_000; j++) log.push([groupEntry('d1-temp', (4_000 + j) * 60_000, j % 256)])
  })
  await waitFor(() => broadcasts === 1 || closedWith !== undefined, 'the client read the batch as it was written', 60_000)
  admit()
  await waitFor(() => answered || closedWith !== undefined, 'the join answered, or the socket closed', 60_000)
  // The relay's step 1 comes in the same tick as the step 2.
  await new Promise((resolve) => setImmediate(resolve))
  console.log(`a rejoin answered after the room grew: weighed ${weights.join(', ')}, sent ${answer} bytes`)
  expect(closedWith).toBeUndefined()
  expect(replicaLog(doc, 'd1').length).toBe(log.length)
  expect(answer).toBeGreaterThan(256 << 10)
  expect(Math.max(...weights)).toBeGreaterThanOrEqual(answer)
})
