/**
 * The relay client against a real Hocuspocus 3.4 server: many rooms on one socket sync both
 * ways, `connected` means the relay answered, and pending local updates drop only as the
 * relay acknowledges them.
 */
import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import * as decoding from 'lib0/decoding'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { Awareness } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { createEngine, manual, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { bindDoc } from '../../src/binding/bindDoc.ts'
import { MESSAGE_AUTH } from '../../src/relay/relayProtocol.ts'
import { counted, device, relayClient, readings, statusOf, until, untilEngine, untilStatus } from './harness.ts'
import { signToken, startTestRelay, type TestRelay } from './testRelay.ts'

let server: TestRelay
beforeEach(async () => {
  server = await startTestRelay()
})
afterEach(async () => {
  await server.stop()
})

describe('relay client: sync', () => {
  it('syncs twelve rooms over one socket, both ways', async () => {
    const rooms = Array.from({ length: 12 }, (_, i) => `fleet-a/d${String(i + 1).padStart(2, '0')}`)
    const token = await signToken({ sub: 'writer', role: 'device', rooms: ['fleet-a/*'] })
    const writer = relayClient(server.url, token)
    const docs = rooms.map((room, i) => {
      const doc = new Y.Doc()
      doc.getMap('data').set('room', room)
      doc.getMap('data').set('n', i)
      writer.relay.join(doc, room)
      return doc
    })
    await Promise.all(docs.map((doc, i) => untilStatus(doc, `room ${rooms[i]} in sync`, (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)))
    expect(server.sockets()).toBe(1)

    const reader = relayClient(server.url, token)
    const copies = rooms.map((room) => {
      const doc = new Y.Doc()
      reader.relay.join(doc, room)
      return doc
    })
    await Promise.all(copies.map((doc, i) => until(`copy of ${rooms[i]}`, () => doc.getMap('data').get('n') === i, (notify) => on(doc, notify))))
    expect(copies.map((doc) => doc.getMap('data').get('room'))).toEqual(rooms)
    expect(server.sockets()).toBe(2)

    // A live update on one room reaches the other socket's copy, and no other room.
    docs[3]?.getMap('data').set('live', 'yes')
    await until('the live update', () => copies[3]?.getMap('data').get('live') === 'yes', (notify) => on(copies[3] as Y.Doc, notify))
    expect(copies.filter((doc) => doc.getMap('data').has('live'))).toHaveLength(1)
    expect(writer.errors).toEqual([])
    expect(reader.errors).toEqual([])
    writer.relay.destroy()
    reader.relay.destroy()
  })

  it('opens at most maxPendingRooms rooms at once (Auth sent, not in sync), in waves, until every room is in sync', async () => {
    const rooms = Array.from({ length: 40 }, (_, i) => `fleet-a/d${String(i + 1).padStart(2, '0')}`)
    const token = await signToken({ sub: 'dashboard', role: 'dashboard', rooms: ['fleet-a/*'] })
    const docs: Y.Doc[] = []
    const synced = (): number => docs.filter((doc) => statusOf(doc).state === 'connected').length
    // Opening rooms seen on every Auth the client sends: Auths so far less the rooms in sync.
    const opening: number[] = []
    class CountingSocket extends WebSocket {
      override send(data: Uint8Array): void {
        const decoder = decoding.createDecoder(data)
        decoding.readVarString(decoder)
        if (decoding.readVarUint(decoder) === MESSAGE_AUTH) opening.push(opening.length + 1 - synced())
        super.send(data)
      }
    }
    const { relay, errors } = relayClient(server.url, token, { maxPendingRooms: 6, WebSocket: CountingSocket as never })
    for (const room of rooms) {
      const doc = new Y.Doc()
      docs.push(doc)
      relay.join(doc, room)
    }
    await Promise.all(docs.map((doc, i) => untilStatus(doc, `room ${rooms[i]} in sync`, (s) => s.state === 'connected')))
    expect(opening).toHaveLength(rooms.length)
    expect(Math.max(...opening)).toBe(6)
    // A wave starts once at most 3 are opening; joins before the socket opened all wait for it.
    expect(opening.slice(0, 6)).toEqual([1, 2, 3, 4, 5, 6])
    expect(server.sockets()).toBe(1)
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('is connecting until the relay answered, and counts updates pending until the relay acknowledges them', async () => {
    const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
    let release: () => void = () => {}
    let held = new Promise<void>((resolve) => (release = resolve))
    server.hold = () => held
    const { relay, errors } = relayClient(server.url, token)
    let clock = 1_000
    const { engine, doc } = device(relay, 'fleet-a/d01', 'd01', { now: () => clock })
    // What the binding wrote before the join (its meta entry) counts as one update, each batch as one more.
    expect(statusOf(doc)).toMatchObject({ state: 'connecting', pendingLocalUpdates: 1 })
    engine.ingest(readings('d01', 3))
    expect(statusOf(doc).pendingLocalUpdates).toBe(2)
    // The relay answered (its step 2) but holds our step 2: in sync, and both still pending.
    clock = 2_000
    await untilStatus(doc, 'the relay answered', (s) => s.state === 'connected')
    expect(statusOf(doc)).toMatchObject({ state: 'connected', lastSync: 2_000, pendingLocalUpdates: 2, refusal: null })
    expect(engine.syncStatus()).toMatchObject({ state: 'connected', pendingLocalUpdates: 2 })
    engine.ingest(readings('d01', 2, 4))
    expect(statusOf(doc).pendingLocalUpdates).toBe(3)
    release()
    await untilStatus(doc, 'every update acknowledged', (s) => s.pendingLocalUpdates === 0)

    held = new Promise<void>((resolve) => (release = resolve))
    engine.ingest(readings('d01', 1, 6))
    expect(engine.syncStatus().pendingLocalUpdates).toBe(1)
    // Each acknowledgement is a sync: the last one moves lastSync to its time.
    clock = 3_000
    release()
    await untilEngine(engine, 'the live update acknowledged', () => engine.syncStatus().pendingLocalUpdates === 0)
    expect(engine.syncStatus()).toMatchObject({ state: 'connected', lastSync: 3_000, pendingLocalUpdates: 0 })
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('carries what was written before the join, and merges it into a second device', async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    const a = relayClient(server.url, token)
    const engineA = device(a.relay, 'fleet-a/shared', 'a')
    engineA.engine.ingest(readings('a', 4))
    await untilStatus(engineA.doc, 'a in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    const b = relayClient(server.url, token)
    const engineB = device(b.relay, 'fleet-a/shared', 'b')
    await untilEngine(engineB.engine, "a's readings at b", () => counted(engineB.engine) === 4)
    engineB.engine.ingest(readings('b', 2))
    await untilEngine(engineA.engine, "b's readings at a", () => counted(engineA.engine) === 6)
    // Both hold a's four readings and b's two, in the same windows.
    const cells = (engine: TidemarkEngine) => engine.results({ key: 'temp' }).map((r) => [r.start, r.count, r.sum])
    expect(counted(engineB.engine)).toBe(6)
    expect(cells(engineA.engine)).toEqual(cells(engineB.engine))
    expect(engineA.engine.results({ key: 'temp' }).reduce((n, r) => n + r.sum, 0)).toBe(1 + 2 + 3 + 4 + 1 + 2)
    expect([...a.errors, ...b.errors]).toEqual([])
    a.relay.destroy()
    b.relay.destroy()
  })

  it("answers the relay's step 1 once its step 2 is applied: a reconfigured replica's step 2 carries the deletions of its earlier session's log", async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    // Session 1 of replica r, lateness 0, in the room.
    const first = relayClient(server.url, token)
    const old = createEngine({ windows: tumbling(60_000), watermark: manual(), allowedLateness: 0, replicaId: 'r' }) as TidemarkEngine
    const oldDoc = new Y.Doc()
    bindDoc(old, oldDoc)
    old.ingest(readings('r', 30))
    first.relay.join(oldDoc, 'fleet-a/r')
    await untilStatus(oldDoc, 'session 1 in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    first.relay.destroy()
    // Session 2: its doc lost, lateness 10 min; it learns of session 1 only from the relay.
    const second = relayClient(server.url, token)
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), allowedLateness: 600_000, replicaId: 'r' }) as TidemarkEngine
    const doc = new Y.Doc()
    bindDoc(engine, doc)
    engine.ingest(readings('r', 30).map((event) => ({ ...event, value: 1 })))
    const socketsBefore = new Set(server.received.map((m) => m.socket))
    second.relay.join(doc, 'fleet-a/r')
    await untilStatus(doc, 'session 2 in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    const sent = server.received.filter((m) => !socketsBefore.has(m.socket) && m.room === 'fleet-a/r' && m.type === 0)
    // Its step 1, then one step 2 and no update after it: the deletions went with the step 2.
    expect(sent.map((m) => m.step)).toEqual([0, 1])
    // What the room holds after that step 2 alone is session 2's, as a reader of the new configuration counts it.
    const reader = createEngine({ windows: tumbling(60_000), watermark: manual(), allowedLateness: 600_000, replicaId: 'reader' }) as TidemarkEngine
    const readerDoc = new Y.Doc()
    bindDoc(reader, readerDoc)
    Y.applyUpdate(readerDoc, await server.content('fleet-a/r'))
    expect(reader.results().map((r) => [r.count, r.sum])).toEqual(engine.results().map((r) => [r.count, r.sum]))
    expect(engine.results().reduce((n, r) => n + r.sum, 0)).toBe(30)
    second.relay.destroy()
  })

  it('sends a room\'s token and nothing else until the relay authenticated it: a denied room leaves only its Auth on the relay', async () => {
    const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
    const { relay, errors } = relayClient(server.url, token)
    // Both docs hold this client's writes before they join: pending, but not sent before the Auth is answered.
    const allowed = device(relay, 'fleet-a/d01', 'd01')
    const denied = device(relay, 'fleet-a/d02', 'd02')
    allowed.engine.ingest(readings('d01', 2))
    denied.engine.ingest(readings('d02', 2))
    await untilStatus(denied.doc, 'the refusal', (s) => s.refusal !== null)
    await untilStatus(allowed.doc, 'in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    const sent = (room: string) => server.received.filter((m) => m.room === room).map((m) => (m.token !== null ? 'auth' : `${m.type}/${m.step}`))
    expect(sent('fleet-a/d02')).toEqual(['auth'])
    expect(sent('fleet-a/d01').slice(0, 2)).toEqual(['auth', '0/0'])
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('sends what another provider applied to the doc, but not on a read-only connection', async () => {
    const deviceToken = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/*'] })
    const wallToken = await signToken({ sub: 'wall', role: 'dashboard', rooms: ['fleet-a/*'] })
    const writer = relayClient(server.url, deviceToken)
    const reader = relayClient(server.url, wallToken)
    const written = new Y.Doc()
    const watched = new Y.Doc()
    writer.relay.join(written, 'fleet-a/d01')
    reader.relay.join(watched, 'fleet-a/d01')
    await untilStatus(written, 'the writer in sync', (s) => s.state === 'connected')
    await untilStatus(watched, 'the reader in sync', (s) => s.state === 'connected')
    // A tab's provider or a persistence provider applies a remote update (not a local transaction).
    const elsewhere = (text: string): Uint8Array => {
      const other = new Y.Doc()
      other.getMap('tab').set('note', text)
      return Y.encodeStateAsUpdate(other)
    }
    Y.applyUpdate(written, elsewhere('from a tab'), 'a tab provider')
    const note = (): unknown => watched.getMap('tab').get('note')
    await until('the tab update at the reader', () => note() === 'from a tab', (notify) => {
      watched.on('update', notify)
      return () => watched.off('update', notify)
    })
    // On the read-only connection: not forwarded (the relay would refuse it), so the room stays in sync.
    const before = server.received.filter((m) => m.socket === socketOfToken(wallToken) && m.type === 0 && m.step !== 0).length
    Y.applyUpdate(watched, elsewhere('from the wall'), 'a tab provider')
    // A later message on the same socket: an update forwarded in this task would have gone before it.
    reader.relay.join(new Y.Doc(), 'fleet-a/d02')
    await until('a later message of the reader', () => server.received.some((m) => m.room === 'fleet-a/d02'), (notify) => {
      server.events.on('message', notify)
      return () => server.events.off('message', notify)
    })
    expect(server.received.filter((m) => m.socket === socketOfToken(wallToken) && m.type === 0 && m.step !== 0).length).toBe(before)
    expect(statusOf(watched)).toMatchObject({ state: 'connected', refusal: null })
    expect(writer.errors).toEqual([])
    expect(reader.errors).toEqual([])
    writer.relay.destroy()
    reader.relay.destroy()
  })

  it('counts the peers present in a room through awareness, and forgets them when they leave', async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    const a = relayClient(server.url, token)
    const b = relayClient(server.url, token)
    const docA = new Y.Doc()
    const docB = new Y.Doc()
    a.relay.join(docA, 'fleet-a/d01', { awareness: new Awareness(docA) })
    const roomB = b.relay.join(docB, 'fleet-a/d01', { awareness: new Awareness(docB) })
    await untilStatus(docA, 'a in sync and sees b', (s) => s.state === 'connected' && s.peers === 1)
    await untilStatus(docB, 'b in sync and sees a', (s) => s.state === 'connected' && s.peers === 1)
    expect(statusOf(docA)).toMatchObject({ state: 'connected', peers: 1, refusal: null })
    expect(statusOf(docB)).toMatchObject({ state: 'connected', peers: 1, refusal: null })
    roomB.destroy()
    await untilStatus(docA, 'b gone', (s) => s.peers === 0)
    expect(statusOf(docA)).toMatchObject({ state: 'connected', peers: 0, refusal: null })
    expect([...a.errors, ...b.errors]).toEqual([])
    a.relay.destroy()
    b.relay.destroy()
  })

  it('reports what it cannot read from the relay and keeps syncing', async () => {
    const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
    const { relay, errors } = relayClient(server.url, token)
    const { engine, doc } = device(relay, 'fleet-a/d01', 'd01')
    await untilStatus(doc, 'in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    server.sendRaw('a text frame')
    server.sendRaw(new Uint8Array([0xff]))
    // Room fleet-a/d01, type 9 (none), then a sync message of an unknown step.
    server.sendRaw(new Uint8Array([11, ...new TextEncoder().encode('fleet-a/d01'), 9]))
    server.sendRaw(new Uint8Array([11, ...new TextEncoder().encode('fleet-a/d01'), 0, 7, 0]))
    engine.ingest(readings('d01', 2))
    await untilStatus(doc, 'still acknowledged', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    expect(errors.map((e) => e.message)).toEqual([
      `relay ${server.url}: undecodable message ignored (TypeError: string)`,
      expect.stringMatching(new RegExp(`^relay ${server.url}: undecodable message ignored \\(Error: `)),
      `relay ${server.url}: fleet-a/d01: malformed message of type 9 ignored (Error: unknown type)`,
      `relay ${server.url}: fleet-a/d01: malformed message of type 0 ignored (Error: unknown sync step 7)`,
    ])
    relay.destroy()
  })

  it("speaks the protocol of @hocuspocus/provider 3.4: both sync one room through the relay", async () => {
    const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
    const socket = new HocuspocusProviderWebsocket({ url: server.url, WebSocketPolyfill: WebSocket })
    const theirs = new Y.Doc()
    const provider = new HocuspocusProvider({ websocketProvider: socket, name: 'fleet-a/shared', document: theirs, token })
    provider.attach()
    const ours = relayClient(server.url, token)
    const doc = new Y.Doc()
    ours.relay.join(doc, 'fleet-a/shared')
    theirs.getMap('data').set('from', 'provider')
    doc.getMap('data').set('to', 'provider')
    await until('both ways', () => doc.getMap('data').get('from') === 'provider' && theirs.getMap('data').get('to') === 'provider', (notify) => {
      doc.on('update', notify)
      theirs.on('update', notify)
      return () => {
        doc.off('update', notify)
        theirs.off('update', notify)
      }
    })
    await untilStatus(doc, 'ours acknowledged', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    expect(ours.errors).toEqual([])
    provider.destroy()
    socket.destroy()
    ours.relay.destroy()
  })
})

function on(doc: Y.Doc, notify: () => void): () => void {
  doc.on('update', notify)
  return () => doc.off('update', notify)
}

/** The socket on which `token` authenticated. */
function socketOfToken(token: string): number {
  const auth = server.received.find((m) => m.token === token)
  if (auth === undefined) throw new Error('that token never authenticated')
  return auth.socket
}
