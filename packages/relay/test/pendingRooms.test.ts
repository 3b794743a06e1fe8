/**
 * Room names a socket has not opened, against a relay process: Hocuspocus allocates state for
 * every name a socket sends (about half a kilobyte, until the socket closes), so tiny frames
 * naming new rooms would cost the relay far more memory than the bytes they take on the wire.
 * Each pending name counts against the socket's unauthenticated budget; a room's frames sent
 * before its Auth (a provider's offline queue) still wait for it.
 */
import * as decoding from 'lib0/decoding'
import { afterAll, expect, it } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { authFrame, messageFrame, updateFrame } from './support/hocuspocusFrames.ts'
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

const BUDGET_REFUSALS = 'tidemark_relay_refusals_total{reason="unauthenticated-limit"}'

/**
 * Every attacker's socket was closed by the relay for the unauthenticated budget, as its refusal
 * count says. The close code is 4413, or 1006 when the relay cut a socket that went on flooding
 * before its close frame got through.
 */
async function expectClosedForBudget(attackers: readonly RawSocket[], httpUrl: string, refusedBefore: number): Promise<void> {
  const closes = await Promise.all(attackers.map((socket) => socket.closed))
  for (const close of closes) expect([4413, 1006]).toContain(close.code)
  expect(closes.filter((close) => close.code === 4413).every((close) => close.reason === 'tidemark:unauthenticated-limit')).toBe(true)
  expect((await metric(httpUrl, BUDGET_REFUSALS)) - refusedBefore).toBe(attackers.length)
}

const heapMiB = async (httpUrl: string): Promise<number> => ((await scrapeMetrics(httpUrl)).get('nodejs_heap_size_used_bytes') ?? 0) / 2 ** 20

it('tiny frames naming ever new rooms exhaust the socket budget at a fixed cost per name; memory stays bounded', async () => {
  const { url, httpUrl } = await theRelay()
  const before = await heapMiB(httpUrl)
  const refusedBefore = await metric(httpUrl, BUDGET_REFUSALS)
  const attackers = await Promise.all(Array.from({ length: 4 }, () => rawSocket(url)))
  for (const [s, socket] of attackers.entries()) {
    // QueryAwareness for a new room name: a few bytes on the wire; 1 MB of them would be 150,000 names.
    for (let i = 0, bytes = 0; bytes < 1_000_000 && socket.ws.readyState === WebSocket.OPEN; i++) {
      const data = messageFrame(`${s}.${i}`, 3)
      bytes += data.byteLength
      socket.ws.send(data)
    }
  }
  await expectClosedForBudget(attackers, httpUrl, refusedBefore)
  const after = await heapMiB(httpUrl)
  console.log(`pending rooms (QueryAwareness): relay heap ${before.toFixed(0)} MiB before, ${after.toFixed(0)} MiB after`)
  // Unbounded, the same bytes held about 80 MiB of Hocuspocus state per socket.
  expect(after - before).toBeLessThan(48)
  expect(await metric(httpUrl, 'tidemark_relay_refusals_total{reason="unauthenticated-limit"}')).toBe(4)
})

it('Auth frames naming ever new rooms exhaust the socket budget at a fixed cost per name; memory stays bounded and another room keeps syncing', async () => {
  const { url, httpUrl } = await theRelay()
  const writerSocket = relaySocket(url)
  const readerSocket = relaySocket(url)
  sockets.push(writerSocket, readerSocket)
  const writer = openRoom(writerSocket, 'fleet-p/d1', await deviceToken('fleet-p', 'd1'))
  const reader = openRoom(readerSocket, 'fleet-p/d1', await dashboardToken('fleet-p'))
  await waitFor(() => writer.synced() && reader.synced(), 'the good room synced')
  const before = await heapMiB(httpUrl)
  const refusedBefore = await metric(httpUrl, BUDGET_REFUSALS)
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
  await expectClosedForBudget(attackers, httpUrl, refusedBefore)
  replicaLog(writer.doc, 'd1').push([groupEntry('d1-temp', 0)])
  await waitFor(() => replicaLog(reader.doc, 'd1').length === 1, 'the good room still syncs')
  const after = await heapMiB(httpUrl)
  console.log(`pending rooms (Auth): ${names} names sent over 4 sockets; relay heap ${before.toFixed(0)} MiB before, ${after.toFixed(0)} MiB after`)
  // Unbounded, the same bytes held about 80 MiB of Hocuspocus state per socket.
  expect(after - before).toBeLessThan(48)
  expect(exit).toBeUndefined()
})

it("a room's frames sent before its Auth wait for it: the room opens and applies them, the socket stays open", async () => {
  const { url } = await theRelay()
  const socket = await rawSocket(url)
  const doc = new Y.Doc()
  replicaLog(doc, 'd2').push([groupEntry('d2-temp', 0)])
  // A provider's offline queue, flushed as the socket opens, ahead of its token.
  socket.ws.send(updateFrame('fleet-q/d2', Y.encodeStateAsUpdate(doc)))
  socket.ws.send(authFrame('fleet-q/d2', await deviceToken('fleet-q', 'd2')))
  // Authenticated (2), then the sync status (8) acknowledging the update.
  await waitFor(() => socket.received.get('fleet-q/d2')?.includes(8) === true, 'the early update acknowledged')
  expect(socket.received.get('fleet-q/d2')?.[0]).toBe(2)
  expect(socket.ws.readyState).toBe(WebSocket.OPEN)
  socket.ws.terminate()
})
