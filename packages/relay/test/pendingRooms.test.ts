/**
 * Room names a socket has not opened, against a relay process: Hocuspocus allocates state for
 * every name a socket sends (about half a kilobyte, until the socket closes), so tiny frames
 * naming new rooms would cost the relay far more memory than the bytes they take on the wire.
 * A room's first frame must be its Auth, each pending name counts against the unauthenticated
 * budget, and late frames of a room the relay closed are dropped without closing the socket.
 */
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { afterAll, expect, it } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { type Exit, killRelays, type RelayProcess, spawnRelay } from './support/relayProcess.ts'
import { dashboardToken, deviceToken, groupEntry, metric, openRoom, relaySocket, replicaLog, SECRET_TEXT, scrapeMetrics, waitFor } from './support/roomClients.ts'

const sockets: { destroy(): void }[] = []
let relay: RelayProcess | undefined
let exit: Exit | undefined

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await killRelays()
  removeDataDirs()
})

async function theRelay(): Promise<RelayProcess> {
  if (relay === undefined) {
    relay = await spawnRelay({ TIDEMARK_DATA_DIR: freshDataDir(), TIDEMARK_AUTH_SECRET: SECRET_TEXT, TIDEMARK_AUTH_TIMEOUT_MS: '60000' })
    void relay.exited.then((how) => {
      exit = how
    })
  }
  return relay
}

function frame(room: string, type: number, write: (encoder: encoding.Encoder) => void = () => undefined): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarString(encoder, room)
  encoding.writeVarUint(encoder, type)
  write(encoder)
  return encoding.toUint8Array(encoder)
}

const authFrame = (room: string, token: string): Uint8Array =>
  frame(room, 2, (e) => {
    encoding.writeVarUint(e, 0)
    encoding.writeVarString(e, token)
  })

const updateFrame = (room: string, update: Uint8Array): Uint8Array =>
  frame(room, 0, (e) => {
    encoding.writeVarUint(e, 2)
    encoding.writeVarUint8Array(e, update)
  })

interface RawSocket {
  readonly ws: WebSocket
  readonly closed: Promise<{ code: number; reason: string }>
  /** Types of the messages received per room. */
  readonly received: Map<string, number[]>
}

async function rawSocket(url: string): Promise<RawSocket> {
  const ws = new WebSocket(url)
  ws.on('error', () => undefined)
  const received = new Map<string, number[]>()
  ws.on('message', (data: Buffer) => {
    const decoder = decoding.createDecoder(new Uint8Array(data))
    const room = decoding.readVarString(decoder)
    received.set(room, [...(received.get(room) ?? []), decoding.readVarUint(decoder)])
  })
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })))
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  return { ws, closed, received }
}

const heapMiB = async (httpUrl: string): Promise<number> => ((await scrapeMetrics(httpUrl)).get('nodejs_heap_size_used_bytes') ?? 0) / 2 ** 20

it('a room whose first frame is not its Auth closes the socket with not-authenticated', async () => {
  const { url, httpUrl } = await theRelay()
  const socket = await rawSocket(url)
  // QueryAwareness for a new room name: a few bytes on the wire, a hook payload in Hocuspocus.
  for (let i = 0; i < 1000 && socket.ws.readyState === WebSocket.OPEN; i++) socket.ws.send(frame(`x.${i}`, 3))
  expect(await socket.closed).toEqual({ code: 4401, reason: 'tidemark:not-authenticated' })
  expect(await metric(httpUrl, 'tidemark_relay_refusals_total{reason="not-authenticated"}')).toBe(1)
})

it('Auth frames naming ever new rooms exhaust the socket budget at a fixed cost per name; memory stays bounded and another room keeps syncing', async () => {
  const { url, httpUrl } = await theRelay()
  const writer = openRoom((sockets[sockets.push(relaySocket(url)) - 1] as ReturnType<typeof relaySocket>), 'fleet-p/d1', await deviceToken('fleet-p', 'd1'))
  const reader = openRoom((sockets[sockets.push(relaySocket(url)) - 1] as ReturnType<typeof relaySocket>), 'fleet-p/d1', await dashboardToken('fleet-p'))
  await waitFor(() => writer.synced() && reader.synced(), 'the good room synced')
  const before = await heapMiB(httpUrl)
  const attackers = await Promise.all(Array.from({ length: 4 }, () => rawSocket(url)))
  let names = 0
  for (const [s, socket] of attackers.entries()) {
    // Tiny frames, each naming a new room with an empty token: 1 MB of them would be 100,000 names.
    for (let i = 0, bytes = 0; bytes < 1_000_000 && socket.ws.readyState === WebSocket.OPEN; i++) {
      const data = authFrame(`${s}.${i}`, '')
      bytes += data.byteLength
      socket.ws.send(data)
      names++
    }
  }
  const closes = await Promise.all(attackers.map((socket) => socket.closed))
  expect(closes).toEqual(attackers.map(() => ({ code: 4413, reason: 'tidemark:unauthenticated-limit' })))
  replicaLog(writer.doc, 'd1').push([groupEntry('d1-temp', 0)])
  await waitFor(() => replicaLog(reader.doc, 'd1').length === 1, 'the good room still syncs')
  const after = await heapMiB(httpUrl)
  console.log(`pending rooms: ${names} names sent over 4 sockets; relay heap ${before.toFixed(0)} MiB before, ${after.toFixed(0)} MiB after`)
  // Unbounded, the same bytes held about 80 MiB of Hocuspocus state per socket.
  expect(after - before).toBeLessThan(48)
  expect(exit).toBeUndefined()
})

it('late frames of a room the relay closed are dropped; the socket and its other rooms stay open', async () => {
  const { url } = await theRelay()
  const socket = await rawSocket(url)
  // A dashboard's room: its first update is refused (read-only) and the room closed.
  socket.ws.send(authFrame('fleet-q/d1', await dashboardToken('fleet-q')))
  await waitFor(() => socket.received.get('fleet-q/d1')?.includes(2) === true, 'authenticated')
  const forged = new Y.Doc()
  replicaLog(forged, 'd1').push([groupEntry('d1-temp', 0)])
  socket.ws.send(updateFrame('fleet-q/d1', Y.encodeStateAsUpdate(forged)))
  await waitFor(() => socket.received.get('fleet-q/d1')?.includes(7) === true, 'the room closed')
  // Frames the client had in flight: dropped, not a reason to close the socket.
  for (let i = 0; i < 5; i++) socket.ws.send(updateFrame('fleet-q/d1', Y.encodeStateAsUpdate(forged)))
  socket.ws.send(authFrame('fleet-q/d2', await deviceToken('fleet-q', 'd2')))
  await waitFor(() => socket.received.get('fleet-q/d2')?.includes(2) === true, 'another room opened on the same socket')
  expect(socket.ws.readyState).toBe(WebSocket.OPEN)
  socket.ws.terminate()
})
