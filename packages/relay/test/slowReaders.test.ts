/**
 * Readers slower than their rooms, on a real relay. The relay writes every update of a room to
 * each of its connections with `ws.send`, which queues without limit (`bufferedAmount`) once the
 * peer's TCP window is full.
 *
 * - A socket that stops reading altogether is cut once it misses its pings. Hocuspocus 3.4's ping
 *   timeout (`timeout`, 30 s) closes only the socket's room connections: the bytes already queued
 *   would stay in the relay's memory for as long as the peer keeps its TCP connection up (a peer
 *   that does not read still acknowledges at the TCP level), and the same token could do it again
 *   on a new socket.
 * - One that stops reading while its rooms keep changing is cut as soon as more than
 *   `maxQueuedBytes` is queued for it, whatever its ping timeout.
 * - One on a slow link that keeps reading is not cut, though each ping waits behind its backlog
 *   for longer than the ping timeout: it reads its way through and ends with every update.
 *
 * The ping timeout is shortened through Hocuspocus' `defaultConfiguration` (the relay passes no
 * `timeout`), so the tests need not wait 30 to 60 s. The slow link is the relay's side of the
 * reader's socket writing at a fixed rate (`slowWrites`): what waits for the link waits in the
 * relay, as on a real slow link, where the kernel's socket buffers stay small (on loopback they
 * grow to tens of MiB, which would hide the backlog from the relay).
 */
import { defaultConfiguration } from '@hocuspocus/server'
import { afterAll, afterEach, expect, it, vi } from 'vitest'
import WebSocket from 'ws'
import type { Relay } from '../src/index.ts'
import { removeDataDirs } from './support/dataDirs.ts'
import { authFrame } from './support/hocuspocusFrames.ts'
import { serverSockets } from './support/serverSockets.ts'
import { startTestRelay } from './support/testRelays.ts'
import { dashboardToken, deviceToken, groupEntry, metric, openRoom, type RoomClient, rawSocket, relaySocket, replicaLog, waitFor, waitUntil } from './support/roomClients.ts'

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

/** One update of `entries` readings (about 200 bytes each) to `device`'s log. */
function write(device: RoomClient, replica: string, entries: number, from: number): void {
  device.doc.transact(() => {
    const log = replicaLog(device.doc, replica)
    for (let i = 0; i < entries; i++) log.push([groupEntry(`${replica}-temp`, (from + i) * 60_000, i % 256)])
  })
}

it('a socket that stops reading is cut once it misses its pings, and what the relay buffered for it is let go', async () => {
  // Long enough for the device's next update to reach the relay once the kernel's buffers are
  // full, on a loaded machine too: the reader is cut two quiet checks (one timeout) after that.
  const PING_TIMEOUT_MS = 8_000
  defaultConfiguration.timeout = PING_TIMEOUT_MS
  // The relay's side of each socket, to read its bufferedAmount.
  const made = serverSockets()
  const relay = await startTestRelay(relays, { limits: { maxRoomBytes: 64 << 20 } })

  const deviceSocket = relaySocket(relay.url)
  sockets.push(deviceSocket)
  const device = openRoom(deviceSocket, 'fleet-s/d1', await deviceToken('fleet-s', 'd1'))
  clients.push(device)
  await waitFor(() => device.synced(), 'the device synced')

  // A reader: opens the room, takes the relay's first answer, then never reads again (nor pongs).
  const { ws: reader } = await rawSocket(relay)
  raw.push(reader)
  const readerServerSide = made.at(-1) as WebSocket
  const answered = new Promise((resolve) => reader.once('message', resolve))
  reader.send(authFrame('fleet-s/d1', await dashboardToken('fleet-s')))
  await answered
  reader.pause()

  // What the relay queues for the reader, read as each message is queued: a check of liveness
  // may cut the reader between two batches (on a loaded machine the device's writes come slowly),
  // and the queue is let go with it.
  let peak = 0
  const send = readerServerSide.send.bind(readerServerSide)
  readerServerSide.send = ((...args: Parameters<WebSocket['send']>) => {
    send(...args)
    peak = Math.max(peak, readerServerSide.bufferedAmount)
  }) as WebSocket['send']
  // The fleet's updates: up to about 9 MB, in updates of about 380 KB, each forwarded to the
  // reader (the kernel's socket buffers on loopback take the first MiBs).
  for (let batch = 0; batch < 24 && peak < 1 << 20 && readerServerSide.readyState === WebSocket.OPEN; batch++) {
    write(device, 'd1', 4_000, batch * 4_000)
    await waitFor(() => !device.provider.hasUnsyncedChanges || device.closed.length > 0, `batch ${batch} acknowledged`)
  }
  expect(device.closed).toEqual([])
  console.log(`bytes buffered on the relay for the reader that stopped reading: ${peak}`)
  // Past what the kernel's buffers took: the relay itself held bytes for the reader. How many
  // depends on how many updates came between the kernel's buffers filling and the cut.
  expect(peak).toBeGreaterThan(0)

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

it('a reader that stops reading is cut as slow-reader once more than maxQueuedBytes is queued for it, long before its ping timeout', async () => {
  const made = serverSockets()
  // 2 MiB rooms, 4 MiB queued at most; Hocuspocus' ping timeout stays 30 s.
  const relay = await startTestRelay(relays, { limits: { maxRoomBytes: 2 << 20, maxQueuedBytes: 4 << 20 } })
  const rooms = Array.from({ length: 40 }, (_, i) => `d${i + 1}`)

  // A reader of every room: opens them, takes the relay's answers, then never reads again.
  const { ws: reader } = await rawSocket(relay)
  raw.push(reader)
  const readerServerSide = made.at(-1) as WebSocket
  let answers = 0
  reader.on('message', () => answers++)
  const token = await dashboardToken('fleet-q')
  for (const room of rooms) reader.send(authFrame(`fleet-q/${room}`, token))
  await waitFor(() => answers >= rooms.length, 'the relay to answer each room of the reader')
  reader.pause()

  // Each device writes about 800 KiB to its room, one room after another, until the reader is cut.
  const deviceSocket = relaySocket(relay.url)
  sockets.push(deviceSocket)
  const started = Date.now()
  let written = 0
  for (const room of rooms) {
    if (readerServerSide.readyState === WebSocket.CLOSED) break
    const device = openRoom(deviceSocket, `fleet-q/${room}`, await deviceToken('fleet-q', room))
    clients.push(device)
    await waitFor(() => device.synced(), `${room} synced`)
    write(device, room, 4_000, 0)
    await waitFor(() => !device.provider.hasUnsyncedChanges || device.closed.length > 0, `${room}'s update acknowledged`)
    expect(device.closed).toEqual([])
    written++
  }
  await waitFor(() => readerServerSide.readyState === WebSocket.CLOSED, `the relay to cut the reader (${readerServerSide.bufferedAmount} bytes queued for it)`)
  console.log(`the reader was cut after ${written} rooms of about 800 KiB, ${Date.now() - started} ms after the first`)
  expect(Date.now() - started).toBeLessThan(originalTimeout)
  expect(readerServerSide.bufferedAmount).toBe(0)
  expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="slow-reader"}')).toBe(1)
  expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="unresponsive"}')).toBe(0)
  // The devices write on.
  const last = clients.at(-1) as RoomClient
  write(last, rooms[written - 1] as string, 10, 10_000)
  await waitFor(() => !last.provider.hasUnsyncedChanges, 'a write after the cut acknowledged')
})

it('a reader on a slow link joining a room the link takes longer than the ping timeout to carry reads its way through, and is not cut', async () => {
  const PING_TIMEOUT_MS = 3_000
  const RATE = 192 << 10
  defaultConfiguration.timeout = PING_TIMEOUT_MS
  const slow: { rate?: number | undefined } = {}
  const made = serverSockets(slow)
  const relay = await startTestRelay(relays, { limits: { maxRoomBytes: 64 << 20 } })

  // The room: 24,000 readings in 6 updates, about 1.6 MB in the doc (8 s or more at 192 KiB/s).
  const deviceSocket = relaySocket(relay.url)
  sockets.push(deviceSocket)
  const device = openRoom(deviceSocket, 'fleet-l/d1', await deviceToken('fleet-l', 'd1'))
  clients.push(device)
  await waitFor(() => device.synced(), 'the device synced')
  const batches = 6
  for (let batch = 0; batch < batches; batch++) {
    write(device, 'd1', 4_000, batch * 4_000)
    await waitFor(() => !device.provider.hasUnsyncedChanges || device.closed.length > 0, `batch ${batch} acknowledged`)
  }
  expect(device.closed).toEqual([])

  // A reader joins over the slow link: the room's state goes to it as one step 2, and every ping
  // after it waits behind it.
  slow.rate = RATE
  const readerSocket = relaySocket(relay.url)
  sockets.push(readerSocket)
  const reader = openRoom(readerSocket, 'fleet-l/d1', await dashboardToken('fleet-l'))
  clients.push(reader)
  await waitFor(() => made.length === 2, 'the reader connected')
  slow.rate = undefined
  const readerServerSide = made[1] as WebSocket
  // How long each ping the relay sends the reader (its guard's and Hocuspocus') waits for its pong.
  const pinged: number[] = []
  let slowestPong = 0
  const ping = readerServerSide.ping.bind(readerServerSide)
  readerServerSide.ping = ((...args: Parameters<WebSocket['ping']>) => {
    pinged.push(Date.now())
    ping(...args)
  }) as WebSocket['ping']
  readerServerSide.on('pong', () => {
    const sent = pinged.shift()
    if (sent !== undefined) slowestPong = Math.max(slowestPong, Date.now() - sent)
  })

  const entries = batches * 4_000
  await waitFor(() => replicaLog(reader.doc, 'd1').length === entries || reader.closed.length > 0, 'the reader to have every reading', 60_000)
  // A pong after the last ping shows how long the pings waited.
  await waitFor(() => pinged.length === 0 || reader.closed.length > 0, 'the pong of the last ping', 2 * PING_TIMEOUT_MS)
  console.log(`the reader on the slow link: its slowest pong came ${slowestPong} ms after its ping`)
  expect(reader.closed).toEqual([])
  expect(replicaLog(reader.doc, 'd1').length).toBe(entries)
  expect(readerServerSide.readyState).toBe(WebSocket.OPEN)
  expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="unresponsive"}')).toBe(0)
  // The case at hand: pongs waited behind the room's state for longer than the ping timeout.
  expect(slowestPong).toBeGreaterThan(PING_TIMEOUT_MS)
})
