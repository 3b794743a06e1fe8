/**
 * Messages over `maxMessageBytes`, sent in parts: `connectRelay` cuts a step 2 or an update over
 * the limit into Part messages, and the relay applies the whole once the last part came, as if it
 * had come in one message. Through a real relay: a device's backlog far over the limit reaches a
 * dashboard exactly; a reconfigured replica's step 2 (its deletions of its old log with its new
 * entries) reaches it as one, so the dashboard never merges the old log; a presence over the
 * limit is withdrawn instead of sent, and the room syncs on; a connection closed in the middle
 * of its messages takes nothing with it, and each message it drops is counted once
 * (`tidemark_relay_closed_connection_messages_dropped_total`). Parts the relay does not put
 * together: partsRefused.test.ts.
 */
import { createEngine, manual, type StreamEvent, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { ManualTimers } from '@tidemark/engine/testing'
import { bindDoc, connectRelay, followRooms, type Relay as RelayClient, syncStatusTracker } from '@tidemark/yjs'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { Awareness } from 'y-protocols/awareness'
import * as Y from 'yjs'
import type { Relay, RelayOptions } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { startTestRelay } from './support/testRelays.ts'
import { authFrame, messageFrame, PART, partFrame, presenceText, syncFrame } from './support/hocuspocusFrames.ts'
import { dashboardToken, metric, openRoom, type RoomClient, relaySocket, scrapeMetrics, signToken, waitFor, waitUntil } from './support/roomClients.ts'

const T0 = 1_700_000_040_000
const JITTER = { baseMs: 50, capMs: 200 }
/** Hocuspocus' BroadcastStateless message type, which the relay refuses from clients. */
const MESSAGE_BROADCAST_STATELESS = 6
const relays: Relay[] = []
const clients: RelayClient[] = []
const rooms: RoomClient[] = []
const sockets: ReturnType<typeof relaySocket>[] = []

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy()
  for (const room of rooms.splice(0)) room.destroy()
  for (const socket of sockets.splice(0)) socket.destroy()
  await Promise.all(relays.splice(0).map((relay) => relay.close()))
})
afterAll(() => removeDataDirs())

const relayWith = (options: Partial<RelayOptions> = {}, dataDir = freshDataDir()): Promise<Relay> => startTestRelay(relays, options, dataDir)

function readings(source: string, from: number, count: number, value: (i: number) => number, keys = 40): StreamEvent[] {
  return Array.from({ length: count }, (_, n) => {
    const i = from + n
    return { id: `${source}-${i}`, source, seq: i, ts: T0 + i * 1_000, key: `zone-${i % keys}`, value: value(i) }
  })
}

/** Every window of `engine` as `window key start: count sum`, in results order. */
const windows = (engine: TidemarkEngine): string[] => engine.results().map((r) => `${r.window} ${r.key} ${r.start}: ${r.count} ${r.sum}`)
const inSync = (engine: TidemarkEngine): boolean => engine.syncStatus().state === 'connected' && engine.syncStatus().pendingLocalUpdates === 0

/** A dashboard engine following `fleet`'s rooms through `relay`, and how many rooms it follows. */
/** The engine options the tests use: one tumbling spec, a manual watermark. */
interface WindowOptions {
  readonly windows: ReturnType<typeof tumbling>
  readonly watermark: ReturnType<typeof manual>
  readonly allowedLateness: number
}

function dashboard(relay: Relay, fleet: string, options: WindowOptions): TidemarkEngine & { following(): number } {
  const engine = createEngine(options) as TidemarkEngine
  const client = connectRelay({ url: relay.url, token: () => signToken({ sub: 'ops', role: 'dashboard', rooms: [`${fleet}/*`] }), WebSocket, jitter: JITTER })
  clients.push(client)
  const follower = followRooms(engine, client, { directory: `${fleet}/_directory` })
  return Object.assign(engine, { following: () => follower.rooms().size })
}

/** Waits until `dashboard` shows exactly what `device` holds; the timeout names both. */
async function untilEqual(dashboard: TidemarkEngine, device: TidemarkEngine, what: string): Promise<void> {
  try {
    await waitFor(() => windows(dashboard).join('\n') === windows(device).join('\n'), what, 30_000)
  } catch (error) {
    const sum = (engine: TidemarkEngine) => engine.results().reduce((s, r) => s + r.sum, 0)
    throw new Error(`${(error as Error).message}: the dashboard shows sum ${sum(dashboard)}, the device ${sum(device)}`)
  }
}

describe('messages over maxMessageBytes go in parts', () => {
  it("a device's backlog of 10x the limit reaches a dashboard exactly, and the relay keeps it across a restart", async () => {
    const limit = 32 << 10
    const dataDir = freshDataDir()
    let relay = await relayWith({ limits: { maxMessageBytes: limit } }, dataDir)
    const options = { windows: tumbling(60_000), watermark: manual(), allowedLateness: 86_400_000 }
    // Offline for hours: 9,000 readings over 150 minutes and 40 zones, bound before it ever joins.
    const device = createEngine({ ...options, replicaId: 'r' }) as TidemarkEngine
    const doc = new Y.Doc()
    bindDoc(device, doc)
    device.ingest(readings('dr', 1, 9_000, (i) => i % 97))
    const backlog = Y.encodeStateAsUpdate(doc).byteLength
    expect(backlog).toBeGreaterThan(10 * limit)
    const errors: Error[] = []
    const token = () => signToken({ sub: 'r', role: 'device', rooms: ['fleet-p/r'], replicas: ['r'], sources: ['dr'] })
    const client = connectRelay({ url: relay.url, token, WebSocket, jitter: JITTER, maxMessageBytes: limit, onError: (e) => errors.push(e) })
    clients.push(client)
    client.join(doc, 'fleet-p/r')
    const watcher = dashboard(relay, 'fleet-p', options)
    await waitFor(() => inSync(device), 'the backlog acknowledged')
    await untilEqual(watcher, device, 'the dashboard shows the backlog')
    // Live updates over the limit go in parts too.
    device.ingest(readings('dr', 9_001, 3_000, (i) => i % 89))
    await waitFor(() => inSync(device), 'the update acknowledged')
    await untilEqual(watcher, device, 'the dashboard shows the update')
    expect(errors).toEqual([])
    // The backlog's step 2 and the live update, at least.
    expect(await metric(relay.httpUrl, 'tidemark_relay_messages_in_parts_total')).toBeGreaterThanOrEqual(2)
    expect(await metric(relay.httpUrl, 'tidemark_relay_assembling_bytes')).toBe(0)
    expect([...(await scrapeMetrics(relay.httpUrl))].filter(([name, n]) => name.startsWith('tidemark_relay_refusals_total') && n > 0)).toEqual([])

    // Restarted on its store, the relay serves the whole of it to a new dashboard.
    for (const c of clients.splice(0)) c.destroy()
    await relay.close()
    relays.splice(relays.indexOf(relay), 1)
    relay = await relayWith({ limits: { maxMessageBytes: limit } }, dataDir)
    await untilEqual(dashboard(relay, 'fleet-p', options), device, 'a new dashboard after the restart')
  }, 90_000)

  it("a reconfigured replica's step 2 reaches a dashboard as one: its old log never merged", async () => {
    const relay = await relayWith({ limits: { maxMessageBytes: 16 << 10 } })
    const OLD = { windows: tumbling(60_000), watermark: manual(), allowedLateness: 0 }
    const NEW = { windows: tumbling(60_000), watermark: manual(), allowedLateness: 600_000 }
    const token = () => signToken({ sub: 'r', role: 'device', rooms: ['fleet-c/r'], replicas: ['r'], sources: ['dr'] })
    const errors: Error[] = []
    // Session 1, the old configuration, synced.
    const first = createEngine({ ...OLD, replicaId: 'r' }) as TidemarkEngine
    const doc = new Y.Doc()
    bindDoc(first, doc)
    first.ingest(readings('dr', 1, 600, () => 100))
    const c1 = connectRelay({ url: relay.url, token, WebSocket, jitter: JITTER, maxMessageBytes: 16 << 10, onError: (e) => errors.push(e) })
    clients.push(c1)
    c1.join(doc, 'fleet-c/r')
    await waitFor(() => inSync(first), 'session 1 synced')
    // A dashboard already under the new configuration, following the room (session 1's entries are not its configuration's).
    const watcher = dashboard(relay, 'fleet-c', NEW)
    await waitFor(() => watcher.following() === 1 && watcher.syncStatus().state === 'connected', 'the dashboard follows the room')
    c1.destroy()
    // Session 2 on the persisted doc, a new configuration: its bind deletes the old log and
    // writes the same readings again with other values; one step 2 of over 16 KiB carries both.
    const persisted = new Y.Doc()
    Y.applyUpdate(persisted, Y.encodeStateAsUpdate(doc))
    const second = createEngine({ ...NEW, replicaId: 'r' }) as TidemarkEngine
    second.ingest(readings('dr', 1, 600, () => 1))
    bindDoc(second, persisted)
    const c2 = connectRelay({ url: relay.url, token, WebSocket, jitter: JITTER, maxMessageBytes: 16 << 10, onError: (e) => errors.push(e) })
    clients.push(c2)
    c2.join(persisted, 'fleet-c/r')
    await waitFor(() => inSync(second), 'session 2 synced')
    expect(second.syncStatus().refusal).toBeNull()
    await untilEqual(watcher, second, 'the dashboard shows session 2 alone')
    // Session 1's step 2 and session 2's.
    expect(await metric(relay.httpUrl, 'tidemark_relay_messages_in_parts_total')).toBe(2)
    expect(errors).toEqual([])
  }, 60_000)
})

describe('a presence over maxMessageBytes', () => {
  it('is withdrawn, never sent: a dashboard stops showing it, the device syncs on, and a smaller one shows again', async () => {
    const limit = 4_096
    const relay = await relayWith({ limits: { maxMessageBytes: limit } })
    const device = createEngine({ windows: tumbling(60_000), watermark: manual(), allowedLateness: 86_400_000, replicaId: 'r' }) as TidemarkEngine
    const doc = new Y.Doc()
    bindDoc(device, doc)
    const awareness = new Awareness(doc)
    awareness.setLocalState({ name: 'r' })
    const errors: Error[] = []
    const token = () => signToken({ sub: 'r', role: 'device', rooms: ['fleet-p/r'], replicas: ['r'], sources: ['dr'] })
    const client = connectRelay({ url: relay.url, token, WebSocket, jitter: JITTER, maxMessageBytes: limit, onError: (e) => errors.push(e) })
    clients.push(client)
    client.join(doc, 'fleet-p/r', { awareness })
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const observer = openRoom(socket, 'fleet-p/r', await signToken({ sub: 'ops', role: 'dashboard', rooms: ['fleet-p/*'] }))
    rooms.push(observer)
    const shown = () => observer.provider.awareness?.getStates().get(doc.clientID) as { name: string } | undefined
    await waitFor(() => shown()?.name === 'r', 'the presence shown')

    awareness.setLocalState({ name: 'x'.repeat(8_000) })
    await waitFor(() => shown() === undefined, 'the large presence withdrawn')
    expect(errors.map((e) => e.message.replace(/\d{4,} bytes/, 'N bytes'))).toEqual([
      `relay ${relay.url}: fleet-p/r: the presence of client ${doc.clientID} is N bytes, over maxMessageBytes (4096): not sent, withdrawn from the room until it is smaller`,
    ])
    device.ingest(readings('dr', 1, 20, (i) => i))
    await waitFor(() => inSync(device), 'the readings acknowledged')
    awareness.setLocalState({ name: 'r again' })
    await waitFor(() => shown()?.name === 'r again', 'the smaller presence shown again')
    expect(errors).toHaveLength(1)
    expect(await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')).toBe(0)
    expect([...(await scrapeMetrics(relay.httpUrl))].filter(([name, n]) => name.startsWith('tidemark_relay_refusals_total') && n > 0)).toEqual([])
    awareness.destroy()
  })
  it('one awareness in two rooms is withdrawn once from each: its withdrawal, sent back by the relay, starts no exchange between them', async () => {
    const relay = await relayWith({ limits: { maxMessageBytes: 4_096 } })
    const { doc, awareness, errors, client } = dashboardPresence(relay)
    awareness.setLocalState({ name: 'ops' })
    client.join(doc, 'fleet-p/a', { awareness })
    client.join(doc, 'fleet-p/b', { awareness })
    const [a, b] = [await observe(relay, 'fleet-p/a'), await observe(relay, 'fleet-p/b')]
    const shown = (observer: RoomClient) => observer.provider.awareness?.getStates().get(doc.clientID)
    await waitFor(() => shown(a) !== undefined && shown(b) !== undefined, 'the presence shown in both rooms')
    const clock = awareness.meta.get(doc.clientID)?.clock
    awareness.setLocalState({ name: 'x'.repeat(8_000) })
    await waitFor(() => shown(a) === undefined && shown(b) === undefined, 'the presence withdrawn from both rooms')
    // A round trip through each room: an exchange between them would have raised the clock and reported again by then.
    await roundTrip(a, awareness, 'a')
    await roundTrip(b, awareness, 'b')
    expect(errors.map((e) => e.message.replace(/\d{4,} bytes/, 'N bytes').replace(`${doc.clientID}`, 'C'))).toEqual([
      `relay ${relay.url}: fleet-p/a: the presence of client C is N bytes, over maxMessageBytes (4096): not sent, withdrawn from the room until it is smaller`,
      `relay ${relay.url}: fleet-p/b: the presence of client C is N bytes, over maxMessageBytes (4096): not sent, withdrawn from the room until it is smaller`,
    ])
    expect(awareness.meta.get(doc.clientID)?.clock).toBe((clock as number) + 1)
    expect([...a.closed, ...b.closed]).toEqual([])
    awareness.setLocalState({ name: 'ops again' })
    await waitFor(() => (shown(a) as { name?: string } | undefined)?.name === 'ops again' && (shown(b) as { name?: string } | undefined)?.name === 'ops again', 'the smaller presence in both rooms')
    expect(await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')).toBe(0)
    awareness.destroy()
  })

  it('one the relay never showed is not withdrawn: nothing the relay drops as set by another', async () => {
    const relay = await relayWith({ limits: { maxMessageBytes: 4_096 } })
    const { doc, awareness, errors, client } = dashboardPresence(relay)
    awareness.setLocalState({ name: 'x'.repeat(8_000) })
    client.join(doc, 'fleet-p/a', { awareness })
    await waitFor(() => errors.length === 1, 'the presence reported')
    // The awareness renews its state every 15 s: neither reported nor withdrawn again.
    awareness.setLocalState(awareness.getLocalState())
    // The relay has read what came before a later room's join on the same socket.
    const later = new Y.Doc()
    client.join(later, 'fleet-p/b')
    await waitFor(() => syncStatusTracker(later).status().state === 'connected', 'a later room in sync')
    const observer = await observe(relay, 'fleet-p/a')
    await waitFor(() => observer.synced(), 'an observer in sync')
    expect(observer.provider.awareness?.getStates().has(doc.clientID)).toBe(false)
    expect(errors).toHaveLength(1)
    expect(await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')).toBe(0)
    awareness.destroy()
  })
})

/** A dashboard's doc and awareness, and a client within 4,096 bytes a message (what it joins is up to the test). */
function dashboardPresence(relay: Relay): { doc: Y.Doc; awareness: Awareness; errors: Error[]; client: RelayClient } {
  const doc = new Y.Doc()
  const awareness = new Awareness(doc)
  const errors: Error[] = []
  const token = () => signToken({ sub: 'ops', role: 'dashboard', rooms: ['fleet-p/*'] })
  const client = connectRelay({ url: relay.url, token, WebSocket, jitter: JITTER, maxMessageBytes: 4_096, onError: (e) => errors.push(e) })
  clients.push(client)
  return { doc, awareness, errors, client }
}

/** Waits until a presence `observer` sets after what came before reaches `awareness` through its room. */
async function roundTrip(observer: RoomClient, awareness: Awareness, mark: string): Promise<void> {
  observer.provider.setAwarenessField('mark', mark)
  const id = observer.provider.awareness?.clientID as number
  await waitFor(() => (awareness.getStates().get(id) as { mark?: string } | undefined)?.mark === mark, `a round trip through ${mark}`)
}

/** A Hocuspocus provider watching `room`. */
async function observe(relay: Relay, room: string): Promise<RoomClient> {
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const observer = openRoom(socket, room, await signToken({ sub: 'observer', role: 'dashboard', rooms: ['fleet-p/*'] }))
  rooms.push(observer)
  return observer
}

describe('a room connection closed in the middle of its messages', () => {
  it('a token expiring while parts are on their way: the parts in flight are dropped, and the device joins again and syncs', async () => {
    const limit = 8 << 10
    // The relay's clock and deadlines are the test's: the token expires when the test moves the
    // clock, once the relay has taken parts of the backlog and the rest is held in the uplink.
    const clock = new ManualTimers(Math.floor(Date.now() / 1000) * 1000)
    const relay = await relayWith({ limits: { maxMessageBytes: limit }, now: clock.read, timers: clock })
    const options = { windows: tumbling(60_000), watermark: manual(), allowedLateness: 86_400_000 }
    const device = createEngine({ ...options, replicaId: 'r' }) as TidemarkEngine
    const doc = new Y.Doc()
    bindDoc(device, doc)
    // About 15 parts: the first 3 go out, the rest wait in the uplink until released.
    device.ingest(readings('dr', 1, 3_000, (i) => i % 97))
    let reads = 0
    const claims = { sub: 'r', role: 'device', rooms: ['fleet-p/r'], replicas: ['r'], sources: ['dr'] }
    // The first token expires a minute of the relay's clock from now, the next ones a day.
    const token = () => signToken(claims, { expiresAt: Math.floor((clock.now + (++reads === 1 ? 60_000 : 86_400_000)) / 1000) })
    const uplink = heldUplink(3)
    const errors: Error[] = []
    const client = connectRelay({ url: relay.url, token, WebSocket: uplink.WebSocket, jitter: JITTER, maxMessageBytes: limit, onError: (e) => errors.push(e) })
    clients.push(client)
    client.join(doc, 'fleet-p/r')
    await waitFor(() => uplink.held() > 0, 'parts held in the uplink')
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_assembling_bytes')) === uplink.partBytes(), 'the first 3 parts taken')
    // At exp the relay closes the room connection: the parts it took are let go.
    clock.advance(60_000)
    expect(await metric(relay.httpUrl, 'tidemark_relay_tokens_expired_total')).toBe(1)
    expect(await metric(relay.httpUrl, 'tidemark_relay_assembling_bytes')).toBe(0)
    // The rest of the message reaches the relay after its connection closed, then the device joins again.
    uplink.release()
    await waitFor(() => inSync(device) || device.syncStatus().refusal !== null, 'the backlog acknowledged', 60_000)
    expect(device.syncStatus().refusal).toBeNull()
    expect(reads).toBe(2)
    expect(await metric(relay.httpUrl, 'tidemark_relay_tokens_expired_total')).toBe(1)
    expect(errors.filter((e) => /4413|refused/.test(e.message))).toEqual([])
    await untilEqual(dashboard(relay, 'fleet-p', options), device, 'a dashboard shows the backlog')
    expect(await metric(relay.httpUrl, 'tidemark_relay_assembling_bytes')).toBe(0)
  }, 90_000)

  it('messages still waiting for their turn when the socket closes take nothing: no parts, no presence kept for a connection that is gone', async () => {
    const relay = await relayWith({ limits: { maxMessageBytes: 8 << 10, maxRoomBytes: 256 << 10 } })
    const room = 'fleet-p/d1'
    const presence = (client: number, clock: number, name: string): Uint8Array => presenceText(room, [[client, clock, JSON.stringify({ name })]])
    const shown = (observer: RoomClient, client: number) => (observer.provider.awareness?.getStates().get(client) as { name?: string } | undefined)?.name
    // Another connection holds client 777's presence: while the closing socket's connection is
    // open, each of its messages setting it is dropped and counted as a presence dropped.
    const observer = await observe(relay, room)
    await waitFor(() => observer.synced(), 'an observer in sync')
    const holder = await openRaw(relay, room, await dashboardToken('fleet-p'))
    holder.send(presence(777, 1, 'holder'))
    await waitFor(() => shown(observer, 777) === 'holder', "the holder's presence shown")
    expect(await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')).toBe(0)
    // Behind 600 of those: the first 299 parts of a message, and a presence of its own; then the socket closes.
    const squats = Array.from({ length: 600 }, () => presence(777, 2, 'squatter'))
    const parts = Array.from({ length: 299 }, (_, i) => partFrame(room, i, 300, 300 * 800, new Uint8Array(800).fill(1)))
    await closeBehindQueue(relay, room, await dashboardToken('fleet-p'), [...squats, ...parts, presence(4242, 1, 'ops')])
    // Each of the 900 messages behind the open room is counted once: as a presence dropped while
    // its connection was open, or as dropped for its connection having ended. Parts or a presence
    // taken count in neither, so the sum reaches 900 only once every message has had its turn and
    // the last 300 all came after the connection ended.
    const dropped = async () => ({
      closed: await metric(relay.httpUrl, 'tidemark_relay_closed_connection_messages_dropped_total'),
      presence: await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total'),
    })
    let counts = await dropped()
    await waitUntil(async () => {
      counts = await dropped()
      return counts.closed + counts.presence === 900
    }, 'every message of the closed socket handled').catch((error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(counts)}`)
    })
    expect(counts.closed).toBe(900 - counts.presence)
    expect(counts.presence).toBeLessThanOrEqual(600)
    expect(await metric(relay.httpUrl, 'tidemark_relay_assembling_bytes')).toBe(0)
    // The same dashboard's presence on a new connection is its own again.
    const again = await openRaw(relay, room, await dashboardToken('fleet-p'))
    again.send(presence(4242, 2, 'ops again'))
    await waitFor(() => shown(observer, 4242) === 'ops again', 'the presence shown')
    expect(await dropped()).toEqual(counts)
    again.close()
    holder.close()
  }, 30_000)

  it('counts each message of an ended room connection once: those waiting for their turn, those sent after it, none after the next Auth', async () => {
    const relay = await relayWith()
    const room = 'fleet-p/d2'
    const closedDropped = () => metric(relay.httpUrl, 'tidemark_relay_closed_connection_messages_dropped_total')
    const ws = await openRaw(relay, room, await dashboardToken('fleet-p'))
    const stepOne = () => syncFrame(room, 0, Y.encodeStateVector(new Y.Doc()))
    let received = 0
    ws.on('message', () => received++)
    // Refused (clients may not broadcast) with 50 step 1s sent behind it: the connection ends in
    // the refused message's turn, so each of the 50 is dropped, waiting for its turn or on arrival.
    ws.send(messageFrame(room, MESSAGE_BROADCAST_STATELESS, (e) => encoding.writeVarString(e, 'to all')))
    for (let i = 0; i < 50; i++) ws.send(stepOne())
    await waitUntil(async () => (await closedDropped()) >= 50, 'the 50 step 1s dropped')
    expect(await closedDropped()).toBe(50)
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="malformed-message"}')).toBe(1)
    // Sent once the connection had ended: dropped on arrival, until the room's next Auth.
    for (let i = 0; i < 20; i++) ws.send(stepOne())
    await waitUntil(async () => (await closedDropped()) >= 70, 'the 20 later step 1s dropped')
    expect(await closedDropped()).toBe(70)
    // What the client got: the refusal and the room's CLOSE, no answer to any of the 70.
    await waitFor(() => received >= 2, 'the refusal and the CLOSE')
    expect(received).toBe(2)
    // The room's next Auth opens it again, and its messages go through uncounted.
    const before = received
    ws.send(authFrame(room, await dashboardToken('fleet-p')))
    await waitFor(() => received > before, 'authenticated again')
    const opened = received
    for (let i = 0; i < 10; i++) ws.send(stepOne())
    await waitFor(() => received >= opened + 10, 'the 10 step 1s answered')
    expect(await closedDropped()).toBe(70)
    ws.close()
  }, 30_000)
})

/**
 * A `ws` WebSocket class whose sockets send their first `passed` Part messages and then hold
 * everything they send (what a slow uplink has not sent yet) until `release()`, after which
 * they send as usual. A socket closed meanwhile sends nothing of what it held. `partBytes` is
 * what the Part messages it sent carried of their message.
 */
function heldUplink(passed: number): { readonly WebSocket: typeof WebSocket; held(): number; partBytes(): number; release(): void } {
  const queue: { readonly socket: WebSocket; readonly send: () => void }[] = []
  let parts = 0
  let partBytes = 0
  let holding = true
  /** The bytes of its message a Part message carries, or null for another message. */
  const carried = (data: unknown): number | null => {
    if (!(data instanceof Uint8Array)) return null
    const decoder = decoding.createDecoder(data)
    decoding.readVarString(decoder)
    if (decoding.readVarUint(decoder) !== PART) return null
    for (let field = 0; field < 3; field++) decoding.readVarUint(decoder) // index, count, total
    return decoding.readVarUint8Array(decoder).byteLength
  }
  class HeldUplink extends WebSocket {
    override send(data: Parameters<WebSocket['send']>[0]): void {
      const bytes = holding && queue.length === 0 ? carried(data) : null
      if (holding && (queue.length > 0 || (bytes !== null && ++parts > passed))) {
        queue.push({ socket: this, send: () => super.send(data) })
        return
      }
      if (bytes !== null) partBytes += bytes
      super.send(data)
    }
  }
  return {
    WebSocket: HeldUplink as unknown as typeof WebSocket,
    held: () => queue.length,
    partBytes: () => partBytes,
    release() {
      holding = false
      for (const { socket, send } of queue.splice(0)) if (socket.readyState === WebSocket.OPEN) send()
    },
  }
}

/** A raw socket with `room` open on it (its connection established). */
async function openRaw(relay: Relay, room: string, token: string): Promise<WebSocket> {
  const ws = new WebSocket(relay.url)
  ws.on('error', () => undefined)
  await new Promise((resolve) => ws.once('open', resolve))
  let received = 0
  ws.on('message', () => received++)
  ws.send(authFrame(room, token))
  await waitFor(() => received >= 1, 'authenticated')
  // The relay's answer to a step 1: the room's connection is established.
  ws.send(syncFrame(room, 0, Y.encodeStateVector(new Y.Doc())))
  await waitFor(() => received >= 2, 'the room open')
  return ws
}

/** Opens `room` on a raw socket, sends `frames`, and closes the socket while they wait for their turn. */
async function closeBehindQueue(relay: Relay, room: string, token: string, frames: readonly Uint8Array[]): Promise<void> {
  const ws = await openRaw(relay, room, token)
  for (const frame of frames) ws.send(frame)
  const closed = new Promise((resolve) => ws.once('close', resolve))
  ws.close()
  await closed
}
