/**
 * Parts the relay does not put together: malformed parts refuse their room alone; the bytes the
 * relay holds in parts are capped, and past the cap a message whose next part is overdue makes
 * room for parts that keep coming. Through a real relay, with raw frames no client would send.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type WebSocket from 'ws'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import { type Relay, type RelayOptions, startRelay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { messageFrame, partFrame, partsOf, syncFrame, updateFrame } from './support/hocuspocusFrames.ts'
import { deviceToken, groupEntry, metric, openRoom, type RoomClient, relaySocket, replicaLog, SECRET, signToken, waitFor, waitUntil } from './support/roomClients.ts'

const relays: Relay[] = []
const rooms: RoomClient[] = []
const sockets: ReturnType<typeof relaySocket>[] = []

afterEach(async () => {
  for (const room of rooms.splice(0)) room.destroy()
  for (const socket of sockets.splice(0)) socket.destroy()
  await Promise.all(relays.splice(0).map((relay) => relay.close()))
})
afterAll(() => removeDataDirs())

async function relayWith(options: Partial<RelayOptions> = {}): Promise<Relay> {
  const relay = await startRelay({ port: 0, store: { dataDir: freshDataDir() }, auth: { secret: SECRET }, persistence: { writeWindowMs: 20 }, log: () => undefined, ...options })
  relays.push(relay)
  return relay
}

/** An update of `device`'s replica log writing one window at `start`. */
function update(device: string, start: number): Uint8Array {
  const doc = new Y.Doc()
  replicaLog(doc, device).push([groupEntry(`${device}-temp`, start)])
  return Y.encodeStateAsUpdate(doc)
}

/** Sends `frames` on `socket` as they are. */
function send(socket: ReturnType<typeof relaySocket>, ...frames: Uint8Array[]): void {
  for (const frame of frames) (socket.webSocket as unknown as WebSocket).send(frame)
}

describe('malformed parts refuse their room alone', () => {
  it.each([
    ['a part whose first did not come', (room: string) => [partFrame(room, 1, 3, 90, new Uint8Array(30))], 'part 1 of a message whose first part did not come'],
    ['a message in one part', (room: string) => [partFrame(room, 0, 1, 30, new Uint8Array(30))], 'a message in 1 part: it would have been sent whole'],
    ['more parts than bytes', (room: string) => [partFrame(room, 0, 40, 30, new Uint8Array(1))], '40 parts for 30 bytes'],
    ['a part out of order', (room: string) => [partFrame(room, 0, 3, 90, new Uint8Array(30)), partFrame(room, 2, 3, 90, new Uint8Array(30))], 'part 2 came where part 1 was due'],
    ['a first part again', (room: string) => [partFrame(room, 0, 3, 90, new Uint8Array(30)), partFrame(room, 0, 3, 90, new Uint8Array(30))], "a message's first part came before the last part of the message before it"],
    ['a part that disagrees', (room: string) => [partFrame(room, 0, 3, 90, new Uint8Array(30)), partFrame(room, 1, 4, 90, new Uint8Array(30))], 'part 1 says 4 parts of 90 bytes, the first said 3 of 90'],
    ['an empty part', (room: string) => [partFrame(room, 0, 3, 90, new Uint8Array(30)), partFrame(room, 1, 3, 90, new Uint8Array(0))], 'part 1 is empty'],
    ['parts longer than announced', (room: string) => [partFrame(room, 0, 2, 40, new Uint8Array(30)), partFrame(room, 1, 2, 40, new Uint8Array(30))], 'the parts are longer than the 40 bytes the first announced'],
    ['parts shorter than announced', (room: string) => [partFrame(room, 0, 2, 90, new Uint8Array(30)), partFrame(room, 1, 2, 90, new Uint8Array(30))], 'the parts make 60 bytes, the first announced 90'],
    ['parts of another room', (room: string) => partsOf(room, updateFrame('fleet-m/other', update('d1', 0)), 3), 'its parts do not make a step 2 or update of fleet-m/d1'],
    ['parts of a message that is not a sync', (room: string) => partsOf(room, messageFrame(room, 5, (e) => encoding.writeVarString(e, 'x'.repeat(200))), 3), 'its parts do not make a step 2 or update of fleet-m/d1'],
    ['parts that are not a message', (room: string) => partsOf(room, new Uint8Array(300).fill(0xff), 3), 'its parts do not make a step 2 or update of fleet-m/d1'],
  ])('%s', async (_what, frames, detail) => {
    const relay = await relayWith()
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const room = openRoom(socket, 'fleet-m/d1', await deviceToken('fleet-m', 'd1'))
    const other = openRoom(socket, 'fleet-m/d2', await deviceToken('fleet-m', 'd2'))
    rooms.push(room, other)
    await waitFor(() => room.synced() && other.synced(), 'both rooms synced')
    for (const frame of frames('fleet-m/d1')) (socket.webSocket as unknown as WebSocket).send(frame)
    await waitFor(() => room.closed.length > 0, 'the refusal')
    expect(room.closed).toEqual([`tidemark:refused malformed-message ${detail}`])
    // The socket and its other room carry on; nothing of the parts is kept.
    replicaLog(other.doc, 'd2').push([groupEntry('d2-temp', 60_000)])
    await waitFor(() => !other.provider.hasUnsyncedChanges, 'the other room acknowledged')
    expect(other.closed).toEqual([])
    expect(await metric(relay.httpUrl, 'tidemark_relay_assembling_bytes')).toBe(0)
  })

  it('a whole sent in parts by hand is applied once and acknowledged; parts announcing more than the room may hold are refused as room-too-large', async () => {
    const relay = await relayWith({ limits: { maxRoomBytes: 64 << 10 } })
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const writer = openRoom(socket, 'fleet-m/d1', await deviceToken('fleet-m', 'd1'))
    const reader = openRoom(relaySocket(relay.url), 'fleet-m/d1', await signToken({ sub: 'ops', role: 'dashboard', rooms: ['fleet-m/*'] }))
    rooms.push(writer, reader)
    await waitFor(() => writer.synced() && reader.synced(), 'synced')
    for (const frame of partsOf('fleet-m/d1', updateFrame('fleet-m/d1', update('d1', 120_000)), 4)) (socket.webSocket as unknown as WebSocket).send(frame)
    await waitFor(() => replicaLog(reader.doc, 'd1').length === 1, 'the dashboard has the update')
    expect(await metric(relay.httpUrl, 'tidemark_relay_updates_in_total')).toBe(1)
    expect(await metric(relay.httpUrl, 'tidemark_relay_messages_in_parts_total')).toBe(1)
    ;(socket.webSocket as unknown as WebSocket).send(partFrame('fleet-m/d1', 0, 2, 65 << 10, new Uint8Array(1024)))
    await waitFor(() => writer.closed.length > 0, 'the refusal')
    expect(writer.closed).toEqual(['tidemark:refused room-too-large'])
  })

  it("a dashboard's step 2 in parts, larger than the room may hold, is put together and not applied, not refused as room-too-large", async () => {
    const relay = await relayWith({ limits: { maxRoomBytes: 16 << 10, maxMessageBytes: 16 << 10 } })
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const reader = openRoom(socket, 'fleet-m/d1', await signToken({ sub: 'ops', role: 'dashboard', rooms: ['fleet-m/*'] }))
    const writer = openRoom(relaySocket(relay.url), 'fleet-m/d1', await deviceToken('fleet-m', 'd1'))
    rooms.push(reader, writer)
    await waitFor(() => reader.synced() && writer.synced(), 'synced')
    // What a dashboard holds of a room a restarted relay lost: 500 entries, about 40 KiB.
    const held = new Y.Doc()
    replicaLog(held, 'd1').push(Array.from({ length: 500 }, (_, i) => groupEntry('d1-temp', i * 60_000)))
    const step2 = syncFrame('fleet-m/d1', 1, Y.encodeStateAsUpdate(held))
    expect(step2.byteLength).toBeGreaterThan(32 << 10)
    send(socket, ...partsOf('fleet-m/d1', step2, 4))
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_messages_in_parts_total')) === 1, 'the whole put together')
    expect(reader.closed).toEqual([])
    expect(replicaLog(writer.doc, 'd1').length).toBe(0)
  })

  it('past the bytes the relay assembles at once, a part is refused as rate-limited; a closed socket releases its parts', async () => {
    // Assembling at most 4 x maxRoomBytes = 256 KiB at once, in parts of up to 64 KiB.
    const relay = await relayWith({ limits: { maxRoomBytes: 64 << 10, maxMessageBytes: 64 << 10 } })
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const open: RoomClient[] = []
    for (let d = 1; d <= 5; d++) open.push(openRoom(socket, `fleet-a/d${d}`, await deviceToken('fleet-a', `d${d}`)))
    rooms.push(...open)
    await waitFor(() => open.every((room) => room.synced()), 'five rooms synced')
    // Four rooms each hold a first part of 60 KiB: 240 KiB.
    for (let d = 1; d <= 4; d++) (socket.webSocket as unknown as WebSocket).send(partFrame(`fleet-a/d${d}`, 0, 2, 61 << 10, new Uint8Array(60 << 10)))
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_assembling_bytes')) === 4 * (60 << 10), 'four first parts held')
    ;(socket.webSocket as unknown as WebSocket).send(partFrame('fleet-a/d5', 0, 2, 61 << 10, new Uint8Array(60 << 10)))
    await waitFor(() => (open[4] as RoomClient).closed.length > 0, 'the fifth refused')
    expect((open[4] as RoomClient).closed).toEqual(['tidemark:refused rate-limited'])
    expect(open.slice(0, 4).map((room) => room.closed)).toEqual([[], [], [], []])
    // The socket closes: what its rooms were assembling is let go.
    socket.destroy()
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_assembling_bytes')) === 0, 'the parts released')
  })
})


describe('under the cap on bytes in parts, a stalled message makes room for parts that keep coming', () => {
  /** A relay holding at most 4 x 64 KiB in parts, on a clock the test moves; a socket with devices d1…d`n` of fleet-a open on it. */
  async function stallSetup(devices: number) {
    const clock = { now: Date.now() }
    const relay = await relayWith({ limits: { maxRoomBytes: 64 << 10, maxMessageBytes: 64 << 10 }, now: () => clock.now })
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const open: RoomClient[] = []
    for (let d = 1; d <= devices; d++) open.push(openRoom(socket, `fleet-a/d${d}`, await deviceToken('fleet-a', `d${d}`)))
    rooms.push(...open)
    await waitFor(() => open.every((room) => room.synced()), `${devices} rooms synced`)
    const assembling = () => metric(relay.httpUrl, 'tidemark_relay_assembling_bytes')
    /** Sends part `index` of a message of 2 x 30 KiB + 1 KiB (60 KiB for part 0 of 2 when `index` is null) in room `d`, and waits until the relay holds `holds` KiB. */
    const sendPart = async (d: number, index: number | null, holds: number): Promise<void> => {
      const frame = index === null ? partFrame(`fleet-a/d${d}`, 0, 2, 61 << 10, new Uint8Array(60 << 10)) : partFrame(`fleet-a/d${d}`, index, 3, 61 << 10, new Uint8Array(30 << 10))
      send(socket, frame)
      await waitUntil(async () => (await assembling()) === holds << 10, `${holds} KiB held after d${d}'s part`)
    }
    return { relay, socket, clock, open, sendPart }
  }

  it('the message whose latest part is oldest is let go, not the one that started first; nothing is let go before partStallMs', async () => {
    const { relay, socket, clock, open, sendPart } = await stallSetup(6)
    const t0 = clock.now
    // d1 started first and is still sending; d2, d3 and d4 sent one part 10 s in and no more.
    await sendPart(1, 0, 30)
    clock.now = t0 + 10_000
    await sendPart(2, null, 90)
    await sendPart(3, null, 150)
    await sendPart(4, null, 210)
    clock.now = t0 + 20_000
    await sendPart(1, 1, 240)
    // 29.999 s after d2's part: not stalled yet, so d5's 60 KiB (past 256 KiB) is refused.
    clock.now = t0 + 39_999
    send(socket, partFrame('fleet-a/d5', 0, 2, 61 << 10, new Uint8Array(60 << 10)))
    await waitFor(() => (open[4] as RoomClient).closed.length > 0, 'd5 refused')
    expect((open[4] as RoomClient).closed).toEqual(['tidemark:refused rate-limited'])
    expect(await metric(relay.httpUrl, 'tidemark_relay_messages_in_parts_stalled_total')).toBe(0)
    // At 30 s, d6's part lets go of d2's message alone: 60 KiB are enough room.
    clock.now = t0 + 40_000
    await sendPart(6, null, 240)
    expect(open.map((room) => room.closed)).toEqual([[], ['tidemark:refused rate-limited'], [], [], ['tidemark:refused rate-limited'], []])
    expect(await metric(relay.httpUrl, 'tidemark_relay_messages_in_parts_stalled_total')).toBe(1)
  })
})
