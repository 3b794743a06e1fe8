/**
 * Parts the relay does not put together: malformed parts refuse their room alone; the bytes the
 * relay holds in parts are capped, and past the cap a message whose next part is overdue makes
 * room for parts that keep coming. Through a real relay, with raw frames no client would send.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type WebSocket from 'ws'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import type { Relay, RelayOptions } from '../src/index.ts'
import { removeDataDirs } from './support/dataDirs.ts'
import { startTestRelay } from './support/testRelays.ts'
import { awarenessFrame, messageFrame, partFrame, partsOf, syncFrame, updateFrame } from './support/hocuspocusFrames.ts'
import { dashboardToken, deviceToken, groupEntry, metric, openRoom, type RoomClient, relaySocket, replicaLog, signToken, waitFor, waitUntil } from './support/roomClients.ts'

const relays: Relay[] = []
const rooms: RoomClient[] = []
const sockets: ReturnType<typeof relaySocket>[] = []

afterEach(async () => {
  for (const room of rooms.splice(0)) room.destroy()
  for (const socket of sockets.splice(0)) socket.destroy()
  await Promise.all(relays.splice(0).map((relay) => relay.close()))
})
afterAll(() => removeDataDirs())

const relayWith = (options: Partial<RelayOptions> = {}): Promise<Relay> => startTestRelay(relays, options)

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

  it("a dashboard's step 2 in parts, larger than what the room has left, is put together and not applied, not refused as room-too-large", async () => {
    const relay = await relayWith({ limits: { maxRoomBytes: 48 << 10, maxMessageBytes: 16 << 10 } })
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const reader = openRoom(socket, 'fleet-m/d1', await signToken({ sub: 'ops', role: 'dashboard', rooms: ['fleet-m/*'] }))
    const writer = openRoom(relaySocket(relay.url), 'fleet-m/d1', await deviceToken('fleet-m', 'd1'))
    rooms.push(reader, writer)
    await waitFor(() => reader.synced() && writer.synced(), 'synced')
    // The device fills about half of the room, in updates within the message limit.
    for (let batch = 0; batch < 6; batch++) {
      replicaLog(writer.doc, 'd1').push(Array.from({ length: 50 }, (_, i) => groupEntry('d1-temp', (batch * 50 + i) * 60_000)))
      await waitFor(() => !writer.provider.hasUnsyncedChanges, 'the device acknowledged')
    }
    expect(Y.encodeStateAsUpdate(writer.doc).byteLength).toBeGreaterThan(20 << 10)
    // What a dashboard holds of a room a restarted relay lost: 400 other entries, about 30 KiB.
    const held = new Y.Doc()
    replicaLog(held, 'd1').push(Array.from({ length: 400 }, (_, i) => groupEntry('d1-temp', (1_000 + i) * 60_000)))
    const step2 = syncFrame('fleet-m/d1', 1, Y.encodeStateAsUpdate(held))
    expect(step2.byteLength).toBeGreaterThan(28 << 10)
    send(socket, ...partsOf('fleet-m/d1', step2, 4))
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_messages_in_parts_total')) === 1, 'the whole put together')
    expect(reader.closed).toEqual([])
    expect(replicaLog(writer.doc, 'd1').length).toBe(300)
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


describe('under the cap on bytes in parts, messages that stalled or are overdue make room for parts that keep coming', () => {
  const KIB = 1 << 10
  /** A relay holding at most 4 x 64 KiB in parts, on a clock the test moves, with devices d1…d`n` of fleet-a, each on a socket of its own. */
  async function stallSetup(devices: number) {
    const clock = { now: Date.now() }
    const relay = await relayWith({ limits: { maxRoomBytes: 64 * KIB, maxMessageBytes: 64 * KIB }, now: () => clock.now })
    const open: { room: RoomClient; socket: ReturnType<typeof relaySocket> }[] = []
    for (let d = 1; d <= devices; d++) {
      const socket = relaySocket(relay.url)
      sockets.push(socket)
      open.push({ socket, room: openRoom(socket, `fleet-a/d${d}`, await deviceToken('fleet-a', `d${d}`)) })
    }
    rooms.push(...open.map(({ room }) => room))
    await waitFor(() => open.every(({ room }) => room.synced()), `${devices} rooms synced`)
    const at = (d: number) => open[d - 1] as { room: RoomClient; socket: ReturnType<typeof relaySocket> }
    /** Sends part `index` of `count` of a message of `total` bytes in room `d` (`bytes` of it), and waits until the relay holds `holds` KiB. */
    const sendPart = async (d: number, [index, count, total]: [number, number, number], bytes: number, holds: number): Promise<void> => {
      send(at(d).socket, partFrame(`fleet-a/d${d}`, index, count, total, new Uint8Array(bytes)))
      await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_assembling_bytes')) === holds * KIB, `${holds} KiB held after d${d}'s part`)
    }
    const closes = () => open.map(({ room }) => room.closed)
    const stalledTotal = () => metric(relay.httpUrl, 'tidemark_relay_messages_in_parts_stalled_total')
    return { relay, clock, at, sendPart, closes, stalledTotal }
  }
  const RATE_LIMITED = ['tidemark:refused rate-limited']

  it('the message that moved least recently is let go, not the one that started first; nothing is let go before partStallMs', async () => {
    const { clock, at, sendPart, closes, stalledTotal } = await stallSetup(6)
    const t0 = clock.now
    const half: [number, number, number] = [0, 2, 61 * KIB]
    // d1 started first (5 s in; due at 30 s + 61 KiB at 8 KiB/s, 42.6 s) and is still sending;
    // d2, d3 and d4 sent one part 10 s in and no more.
    clock.now = t0 + 5_000
    await sendPart(1, [0, 3, 61 * KIB], 30 * KIB, 30)
    clock.now = t0 + 10_000
    await sendPart(2, half, 60 * KIB, 90)
    await sendPart(3, half, 60 * KIB, 150)
    await sendPart(4, half, 60 * KIB, 210)
    clock.now = t0 + 20_000
    await sendPart(1, [1, 3, 61 * KIB], 30 * KIB, 240)
    // 29.999 s after d2's part: not stalled yet, so d5's 60 KiB (past 256 KiB) is refused.
    clock.now = t0 + 39_999
    send(at(5).socket, partFrame('fleet-a/d5', 0, 2, 61 * KIB, new Uint8Array(60 * KIB)))
    await waitFor(() => at(5).room.closed.length > 0, 'd5 refused')
    expect(at(5).room.closed).toEqual(RATE_LIMITED)
    expect(await stalledTotal()).toBe(0)
    // At 30 s, d6's part lets go of d2's message alone: 60 KiB are enough room.
    clock.now = t0 + 40_000
    await sendPart(6, half, 60 * KIB, 240)
    expect(closes()).toEqual([[], RATE_LIMITED, [], [], RATE_LIMITED, []])
    expect(await stalledTotal()).toBe(1)
  })

  it('a message whose socket keeps receiving is not stalled; one kept alive by a trickle of parts is let go once overdue', async () => {
    const { relay, clock, at, sendPart, closes, stalledTotal } = await stallSetup(6)
    const t0 = clock.now
    // d1's socket receives all along (as while a part crosses a slow link), seen by an observer of d1's room.
    const observer = openRoom(relaySocket(relay.url), 'fleet-a/d1', await dashboardToken('fleet-a'))
    rooms.push(observer)
    await waitFor(() => observer.synced(), 'the observer synced')
    let presenceClock = 0
    const keepReceiving = async (): Promise<void> => {
      const update = encoding.createEncoder()
      encoding.writeVarUint(update, 1)
      encoding.writeVarUint(update, 4242)
      encoding.writeVarUint(update, ++presenceClock)
      encoding.writeVarString(update, JSON.stringify({ at: presenceClock }))
      send(at(1).socket, awarenessFrame('fleet-a/d1', encoding.toUint8Array(update)))
      const shown = presenceClock
      await waitFor(() => (observer.provider.awareness?.getStates().get(4242) as { at?: number } | undefined)?.at === shown, 'the relay read it')
    }
    await sendPart(1, [0, 2, 61 * KIB], 60 * KIB, 60)
    // d2, d3 and d4 send a byte every 29 s of a message of 61 KiB in 1,025 parts: never stalled.
    for (let d = 2; d <= 4; d++) await sendPart(d, [0, 1025, 61 * KIB], 60 * KIB, 60 * d)
    clock.now = t0 + 29_000
    for (let d = 2; d <= 4; d++) await sendPart(d, [1, 1025, 61 * KIB], 1, 240 + (d - 1) / KIB)
    await keepReceiving()
    // At 35 s d1 had no part for 35 s but its socket received: nothing has stalled, and the
    // tricklers are not overdue yet (due 30 s + 61 KiB at 8 KiB/s after their first part, 37.6 s).
    clock.now = t0 + 35_000
    send(at(5).socket, partFrame('fleet-a/d5', 0, 2, 61 * KIB, new Uint8Array(60 * KIB)))
    await waitFor(() => at(5).room.closed.length > 0, 'd5 refused')
    expect(await stalledTotal()).toBe(0)
    // At 38 s the tricklers are overdue: the one that moved least recently goes, d1 stays.
    clock.now = t0 + 38_000
    await keepReceiving()
    await sendPart(6, [0, 2, 61 * KIB], 60 * KIB, 240 + 2 / KIB)
    expect(closes()).toEqual([[], RATE_LIMITED, [], [], RATE_LIMITED, []])
    expect(await stalledTotal()).toBe(1)
  })

  it("one sender holds at most one room's worth in parts; a dashboard's whole is bounded by what a room may hold", async () => {
    const relay = await relayWith({ limits: { maxRoomBytes: 64 * KIB, maxMessageBytes: 64 * KIB } })
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const token = await dashboardToken('fleet-m')
    const [d1, d2, d3] = [1, 2, 3].map((d) => openRoom(socket, `fleet-m/d${d}`, token)) as [RoomClient, RoomClient, RoomClient]
    rooms.push(d1, d2, d3)
    await waitFor(() => d1.synced() && d2.synced() && d3.synced(), 'three rooms synced')
    send(socket, partFrame('fleet-m/d1', 0, 2, 41 * KIB, new Uint8Array(40 * KIB)))
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_assembling_bytes')) === 40 * KIB, 'the first held')
    // Another 40 KiB of the same sender's would pass 64 KiB, with the relay's 256 KiB far from full.
    send(socket, partFrame('fleet-m/d2', 0, 2, 41 * KIB, new Uint8Array(40 * KIB)))
    await waitFor(() => d2.closed.length > 0, 'the second refused')
    expect(d2.closed).toEqual(RATE_LIMITED)
    send(socket, partFrame('fleet-m/d3', 0, 2, 64 * KIB + 1, new Uint8Array(1 * KIB)))
    await waitFor(() => d3.closed.length > 0, 'the third refused')
    expect([d1.closed, d3.closed]).toEqual([[], ['tidemark:refused room-too-large']])
  })
})
