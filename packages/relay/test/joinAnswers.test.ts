/**
 * What the relay queues for a socket that joins many rooms at once. Each join's step 1 is answered
 * with the room's whole state; the socket guard stops reading a socket only once half of
 * `maxQueuedBytes` is queued, and the joins already read would each queue their answer. The relay
 * admits a join's answer only while the socket's queue has room for it, and answers the rest as
 * the client reads: a client that reads normally is never cut for what it asked for.
 */
import * as decoding from 'lib0/decoding'
import { afterAll, afterEach, expect, it, vi } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import type { Relay } from '../src/index.ts'
import { removeDataDirs } from './support/dataDirs.ts'
import { authFrame, syncFrame } from './support/hocuspocusFrames.ts'
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

/** The room and payload size of a step 2 answer, or null for any other message. */
function readStep2(message: Uint8Array): { room: string; bytes: number } | null {
  const decoder = decoding.createDecoder(message)
  const room = decoding.readVarString(decoder)
  if (decoding.readVarUint(decoder) !== SYNC || decoding.readVarUint(decoder) !== STEP2) return null
  return { room, bytes: decoding.readVarUint8Array(decoder).byteLength }
}

/** Fills `fleet`'s rooms `names`, each with `batches` updates of 4,000 readings (about 800 KiB each), all rooms at once. */
async function fillRooms(relay: Relay, fleet: string, names: readonly string[], batches: number): Promise<void> {
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const devices = await Promise.all(names.map(async (name) => openRoom(socket, `${fleet}/${name}`, await deviceToken(fleet, name))))
  clients.push(...devices)
  await waitFor(() => devices.every((device) => device.synced()), 'the devices synced')
  for (let batch = 0; batch < batches; batch++) {
    for (const [i, device] of devices.entries()) {
      const name = names[i] as string
      device.doc.transact(() => {
        const log = replicaLog(device.doc, name)
        for (let j = 0; j < 4_000; j++) log.push([groupEntry(`${name}-temp`, (batch * 4_000 + j) * 60_000, j % 256)])
      })
    }
    await waitFor(() => devices.every((device) => !device.provider.hasUnsyncedChanges || device.closed.length > 0), `batch ${batch} acknowledged`, 60_000)
  }
  for (const device of devices) expect(device.closed).toEqual([])
}

it('a client joining 20 rooms of about 740 KiB in one write, under 4 MiB queued at most, gets every room and is not cut while it reads', async () => {
  const MAX_QUEUED = 4 << 20
  const made = serverSockets()
  const relay = await startTestRelay(relays, { limits: { maxRoomBytes: 2 << 20, maxQueuedBytes: MAX_QUEUED } })
  const rooms = Array.from({ length: 20 }, (_, i) => `d${i + 1}`)
  await fillRooms(relay, 'fleet-j', rooms, 2)

  const { ws: reader, closed } = await rawSocket(relay)
  raw.push(reader)
  const readerServerSide = made.at(-1) as WebSocket
  // The most the relay had queued for the reader after any of its sends.
  let peak = 0
  const send = readerServerSide.send.bind(readerServerSide)
  readerServerSide.send = ((...args: Parameters<WebSocket['send']>) => {
    send(...args)
    peak = Math.max(peak, readerServerSide.bufferedAmount)
  }) as WebSocket['send']
  const answered = new Map<string, number>()
  reader.on('message', (message: Buffer) => {
    const step2 = readStep2(new Uint8Array(message))
    if (step2 !== null) answered.set(step2.room, step2.bytes)
  })
  let closedWith: { code: number; reason: string } | undefined
  void closed.then((how) => (closedWith = how))

  // Every join and its step 1 in one burst: the relay reads them all before it queues any answer.
  const token = await dashboardToken('fleet-j')
  const burst = [...rooms.map((room) => authFrame(`fleet-j/${room}`, token)), ...rooms.map((room) => syncFrame(`fleet-j/${room}`, 0, Y.encodeStateVector(new Y.Doc())))]
  for (const frame of burst) reader.send(frame)

  await waitFor(() => answered.size === rooms.length || closedWith !== undefined, 'every room answered, or the reader closed', 60_000)
  console.log(`a reader joining ${rooms.length} rooms at once: at most ${peak} bytes queued for it (cap ${MAX_QUEUED}), ${answered.size} rooms answered`)
  expect(closedWith).toBeUndefined()
  expect(readerServerSide.readyState).toBe(WebSocket.OPEN)
  expect(answered.size).toBe(rooms.length)
  for (const bytes of answered.values()) expect(bytes).toBeGreaterThan(512 << 10)
  expect(peak).toBeLessThanOrEqual(MAX_QUEUED)
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
