/**
 * A socket that stops reading. The relay writes every update of a room to each of its
 * connections with `ws.send`, which buffers without limit (`bufferedAmount`) once the peer's TCP
 * window is full. Hocuspocus 3.4's ping timeout (`timeout`, 30 s) closes the socket's room
 * connections, not the socket: the bytes already buffered would stay in the relay's memory for as
 * long as the peer keeps its TCP connection open (a peer that does not read still acknowledges at
 * the TCP level), and the same token could do it again on a new socket. The relay cuts a socket
 * that answers no ping within that timeout.
 *
 * The ping timeout is shortened here through Hocuspocus' `defaultConfiguration` (the relay passes
 * no `timeout`), so the test need not wait 30 to 60 s.
 */
import { defaultConfiguration } from '@hocuspocus/server'
import { afterAll, afterEach, expect, it, vi } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import type { Relay } from '../src/index.ts'
import { removeDataDirs } from './support/dataDirs.ts'
import { authFrame } from './support/hocuspocusFrames.ts'
import { startTestRelay } from './support/testRelays.ts'
import { dashboardToken, deviceToken, groupEntry, metric, openRoom, type RoomClient, relaySocket, replicaLog, waitFor, waitUntil } from './support/roomClients.ts'

const PING_TIMEOUT_MS = 3_000
const originalTimeout = defaultConfiguration.timeout

const relays: Relay[] = []
const sockets: ReturnType<typeof relaySocket>[] = []
const clients: RoomClient[] = []
const raw: WebSocket[] = []

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy()
  for (const socket of sockets.splice(0)) socket.destroy()
  for (const ws of raw.splice(0)) ws.terminate()
  await Promise.all(relays.splice(0).map((relay) => relay.close()))
  defaultConfiguration.timeout = originalTimeout
  vi.restoreAllMocks()
})

afterAll(() => removeDataDirs())

it('a socket that stops reading is cut once it misses its pings, and what the relay buffered for it is let go', async () => {
  defaultConfiguration.timeout = PING_TIMEOUT_MS
  // The relay's side of each socket, to read its bufferedAmount.
  const serverSockets: WebSocket[] = []
  const handleUpgrade = WebSocketServer.prototype.handleUpgrade
  vi.spyOn(WebSocketServer.prototype, 'handleUpgrade').mockImplementation(function (this: WebSocketServer, request, socket, head, callback) {
    return handleUpgrade.call(this, request, socket, head, (ws, req) => {
      serverSockets.push(ws)
      callback(ws, req)
    })
  })
  const relay = await startTestRelay(relays, { limits: { maxRoomBytes: 64 << 20 } })

  const deviceSocket = relaySocket(relay.url)
  sockets.push(deviceSocket)
  const device = openRoom(deviceSocket, 'fleet-s/d1', await deviceToken('fleet-s', 'd1'))
  clients.push(device)
  await waitFor(() => device.synced(), 'the device synced')

  // A reader: opens the room, takes the relay's first answer, then never reads again (nor pongs).
  const reader = new WebSocket(relay.url)
  raw.push(reader)
  reader.on('error', () => undefined)
  await new Promise((resolve, reject) => {
    reader.once('open', resolve)
    reader.once('error', reject)
  })
  const readerServerSide = serverSockets.at(-1) as WebSocket
  const answered = new Promise((resolve) => reader.once('message', resolve))
  reader.send(authFrame('fleet-s/d1', await dashboardToken('fleet-s')))
  await answered
  reader.pause()

  // The fleet's updates: up to about 18 MiB, in updates of about 800 KiB, each forwarded to the
  // reader (the kernel's socket buffers on loopback take the first MiBs).
  let peak = 0
  for (let batch = 0; batch < 24 && peak < 1 << 20; batch++) {
    device.doc.transact(() => {
      const log = replicaLog(device.doc, 'd1')
      for (let i = 0; i < 4_000; i++) log.push([groupEntry('d1-temp', (batch * 4_000 + i) * 60_000, i % 256)])
    })
    await waitFor(() => !device.provider.hasUnsyncedChanges || device.closed.length > 0, `batch ${batch} acknowledged`)
    peak = Math.max(peak, readerServerSide.bufferedAmount)
  }
  expect(device.closed).toEqual([])
  peak = Math.max(peak, readerServerSide.bufferedAmount)
  console.log(`bytes buffered on the relay for the reader that stopped reading: ${peak}`)
  // Past what the kernel's buffers took: the relay itself holds bytes for the reader.
  expect(peak).toBeGreaterThan(512 << 10)

  // Hocuspocus' ping check runs every PING_TIMEOUT_MS; a socket that missed a ping is past its
  // timeout within 2 × PING_TIMEOUT_MS (its room connection is closed then). Given 4 ×, the relay should have cut it by then and freed
  // what it buffered; the reader's TCP connection is still up (it just does not read).
  await waitUntil(
    async () => readerServerSide.readyState === WebSocket.CLOSED && (await metric(relay.httpUrl, 'tidemark_relay_connections')) === 1,
    `the relay to cut the socket that stopped reading (still ${['CONNECTING', 'OPEN', 'CLOSING', 'CLOSED'][readerServerSide.readyState]}, ${readerServerSide.bufferedAmount} bytes buffered)`,
    4 * PING_TIMEOUT_MS,
  )
  expect(readerServerSide.bufferedAmount).toBe(0)
})
