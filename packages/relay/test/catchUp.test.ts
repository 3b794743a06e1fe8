/**
 * Updates from the other relays (through Redis) reach each connection of their room paced
 * (`catchUp.ts`): on a real Hocuspocus document with the relay's fan-out, and connections on
 * fake sockets whose queues the test sets (`guardedSockets.ts`). Each weighing is recorded and
 * the room's encodings counted (`Y.encodeStateAsUpdate` spied on): a catch-up is weighed at the
 * bytes it is sent as, and encoded when sent. The real relays' behaviour is in
 * `redisJoinAnswers.test.ts`.
 */
import { type Connection, Document } from '@hocuspocus/server'
import * as decoding from 'lib0/decoding'
import { describe, expect, it, vi } from 'vitest'
import * as Y from 'yjs'
import { type CatchUpCounts, catchingUp, joinAnswered } from '../src/gate/catchUp.ts'
import { sendToOthers } from '../src/rooms/updateFanOut.ts'
import { guarded, MAX_QUEUED } from './support/guardedSockets.ts'

// Counts the room's encodings (`encodedUpdates`): Yjs as it is, its `encodeStateAsUpdate` spied on.
vi.mock('yjs', async (importOriginal) => {
  const yjs = await importOriginal<typeof import('yjs')>()
  return { ...yjs, encodeStateAsUpdate: vi.fn(yjs.encodeStateAsUpdate) }
})

/** The calls of `Y.encodeStateAsUpdate` with `document` since the file started (the tests' own included). */
const encodedUpdates = (document: Y.Doc): number => vi.mocked(Y.encodeStateAsUpdate).mock.calls.filter(([doc]) => doc === document).length

/** The origin the room's updates from the other relays are applied under. */
const REMOTE = 'from-redis'
const ROOM = 'fleet-c/d1'

/** A room with the relay's fan-out, and a doc of another relay that writes it. */
function room(): { document: Document; elsewhere: Y.Doc; write: (entries: number, origin?: unknown) => void; change: (edit: (doc: Y.Doc) => void) => void; counts: CatchUpCounts } {
  const document = new Document(ROOM)
  // Where the relay's metrics count the catch-ups sent.
  const counts: CatchUpCounts = { catchUps: 0, catchUpBytes: 0 }
  expect(sendToOthers(document, REMOTE, counts)).toBe(true)
  const elsewhere = new Y.Doc()
  let written = 0
  // Another relay's client makes `edit`; the update comes under `origin`.
  const change = (edit: (doc: Y.Doc) => void, origin: unknown = REMOTE): void => {
    const before = Y.encodeStateVector(elsewhere)
    edit(elsewhere)
    Y.applyUpdate(document, Y.encodeStateAsUpdate(elsewhere, before), origin)
  }
  return {
    document,
    elsewhere,
    counts,
    change,
    // Another relay's client writes `entries` entries; the update comes under `origin` (default: through Redis).
    write: (entries, origin = REMOTE) => change((doc) => doc.getArray<string>('log').push(Array.from({ length: entries }, () => `reading ${written++} `.padEnd(100, '.'))), origin),
  }
}

/**
 * A client of `document` on a socket whose queue is `queued` bytes (a drain due): it holds the room
 * as it stands (its join's answer), and takes every message the relay sends it into `doc`.
 */
function client(document: Document, queued: number) {
  const socket = guarded()
  socket.ws.bufferedAmount = queued
  socket.transport.writableNeedDrain = queued > 0
  const doc = new Y.Doc()
  Y.applyUpdate(doc, Y.encodeStateAsUpdate(document))
  const sent: number[] = []
  const messages: Uint8Array[] = []
  const connection = {
    webSocket: socket.ws,
    context: { socket: socket.guard },
    send(message: Uint8Array) {
      sent.push(message.byteLength)
      messages.push(message)
      socket.ws.bufferedAmount += message.byteLength
      const decoder = decoding.createDecoder(message)
      expect(decoding.readVarString(decoder)).toBe(ROOM)
      expect([decoding.readVarUint(decoder), decoding.readVarUint(decoder)]).toEqual([0, 2])
      Y.applyUpdate(doc, decoding.readVarUint8Array(decoder))
    },
  } as unknown as Connection
  document.addConnection(connection)
  // What each weighing of its answers and catch-ups found, in order.
  const weights: number[] = []
  const roomForAnswer = socket.guard.roomForAnswer.bind(socket.guard)
  socket.guard.roomForAnswer = (weigh) =>
    roomForAnswer(() => {
      const bytes = weigh()
      weights.push(bytes)
      return bytes
    })
  /** The transport drains but the queue stays full (the peer read only what was written since): waiting answers are weighed again. */
  const look = (): void => {
    socket.transport.emit('drain')
  }
  /** The peer read everything queued: the transport drains, and what was admitted is sent (microtasks). */
  const drain = async (): Promise<void> => {
    socket.ws.bufferedAmount = 0
    socket.transport.writableNeedDrain = false
    socket.transport.emit('drain')
    await Promise.resolve()
  }
  return { socket, doc, sent, messages, weights, connection, look, drain }
}

const holds = (doc: Y.Doc, document: Document): boolean => Y.equalSnapshots(Y.snapshot(doc), Y.snapshot(document)) && doc.getArray('log').length === document.getArray('log').length

describe('updates from the other relays', () => {
  it('are sent at once while the socket’s queue has room for them, answers to joins waiting or not', () => {
    const { document, write } = room()
    const reader = client(document, MAX_QUEUED / 2 - (4 << 10))
    // A join's answer of half the queue waits for it to drain.
    let answered = false
    void reader.socket.guard.roomForAnswer(() => MAX_QUEUED / 2).then(() => (answered = true))
    write(10)
    expect(reader.sent).toHaveLength(1)
    expect(catchingUp(reader.connection)).toBe(false)
    expect(holds(reader.doc, document)).toBe(true)
    expect(answered).toBe(false)
  })

  it('that do not fit wait, with every later update of the room, for one catch-up once the queue drains; then they go at once again', async () => {
    const { document, write, counts } = room()
    const reader = client(document, MAX_QUEUED / 2)
    const idle = client(document, 0)
    const weights: (() => number)[] = []
    const roomForAnswer = reader.socket.guard.roomForAnswer.bind(reader.socket.guard)
    reader.socket.guard.roomForAnswer = (weigh) => {
      weights.push(weigh)
      return roomForAnswer(weigh)
    }
    write(2_000)
    // A later one from Redis, and one from a client of this relay (a connection's own origin): the catch-up carries them.
    write(1)
    write(3, idle.connection)
    expect(reader.sent).toEqual([])
    expect(catchingUp(reader.connection)).toBe(true)
    expect(weights).toHaveLength(1)
    // The other client, whose queue is empty, had each (but its own) at once.
    expect(idle.sent).toHaveLength(2)

    const weighed = (weights[0] as () => number)()
    expect(counts).toEqual({ catchUps: 0, catchUpBytes: 0 })
    await reader.drain()
    expect(reader.sent).toEqual([weighed])
    expect(counts).toEqual({ catchUps: 1, catchUpBytes: weighed })
    expect(catchingUp(reader.connection)).toBe(false)
    expect(holds(reader.doc, document)).toBe(true)
    write(1)
    expect(reader.sent).toHaveLength(2)
    expect(holds(reader.doc, document)).toBe(true)
    expect(reader.socket.ws.terminated).toBe(false)
  })

  it('a client whose queue never drains is sent nothing more of the room, and its catch-up is let go, unsent, when its socket closes', async () => {
    const { document, write, counts } = room()
    const reader = client(document, MAX_QUEUED / 2)
    for (let i = 0; i < 50; i++) write(1_000)
    expect(reader.sent).toEqual([])
    expect(reader.socket.ws.bufferedAmount).toBe(MAX_QUEUED / 2)
    reader.socket.ws.readyState = 3
    reader.socket.ws.emit('close')
    await Promise.resolve()
    expect(reader.sent).toEqual([])
    expect(catchingUp(reader.connection)).toBe(false)
    expect(counts).toEqual({ catchUps: 0, catchUpBytes: 0 })
  })

  it('that a storm of the room’s clients did not fit are encoded once for all of them, and held once, not once per client', async () => {
    const { document, write } = room()
    // Each client's queue is busy (its join's answer) when the other relay's state comes.
    const storm = Array.from({ length: 50 }, () => client(document, MAX_QUEUED / 2))
    write(2_000)
    for (const reader of storm) expect(catchingUp(reader.connection)).toBe(true)
    for (const reader of storm) await reader.drain()
    const encodings = new Set(storm.flatMap((reader) => reader.messages))
    expect(storm.map((reader) => reader.sent.length)).toEqual(storm.map(() => 1))
    expect(encodings.size).toBe(1)
    for (const reader of storm) expect(holds(reader.doc, document)).toBe(true)
  })

  it('a storm whose clients are sent their catch-up as the room changes between them: each ends with the room', async () => {
    const { document, write } = room()
    const storm = Array.from({ length: 5 }, () => client(document, MAX_QUEUED / 2))
    write(200)
    write(1, null)
    for (const reader of storm) {
      await reader.drain()
      write(1)
    }
    for (const reader of storm) expect(catchingUp(reader.connection)).toBe(false)
    for (const reader of storm) expect(holds(reader.doc, document)).toBe(true)
  })

  it('that wait are weighed again at each look as the room changes without being encoded: the catch-up is encoded once, when sent, at the bytes weighed last', async () => {
    const { document, write } = room()
    const reader = client(document, MAX_QUEUED / 2)
    write(2_000)
    const encodedBefore = encodedUpdates(document)
    for (let i = 0; i < 10; i++) {
      write(5)
      reader.look()
    }
    // Weighed when it came, then at each look, each time larger: what the room took meanwhile counts.
    expect(reader.weights).toHaveLength(11)
    for (let i = 1; i < reader.weights.length; i++) expect(reader.weights[i]).toBeGreaterThan(reader.weights[i - 1] as number)
    expect(encodedUpdates(document) - encodedBefore).toBe(0)
    await reader.drain()
    expect(encodedUpdates(document) - encodedBefore).toBe(1)
    expect(reader.weights).toHaveLength(12)
    expect(reader.sent).toEqual([reader.weights.at(-1)])
    expect(holds(reader.doc, document)).toBe(true)
  })

  it('are weighed to the byte of the catch-up sent, as the room changes while it waits: entries deleted (before it and in it) and settings overwritten', async () => {
    const { document, write, change } = room()
    // Entries the clients hold already, from a client of this relay.
    write(100, null)
    const storm = Array.from({ length: 5 }, () => client(document, MAX_QUEUED / 2))
    write(500)
    const edits: ((doc: Y.Doc) => void)[] = [
      (doc) => doc.getArray('log').delete(150, 200),
      (doc) => doc.getMap('settings').set('interval', 5),
      (doc) => {
        doc.getMap('settings').set('interval', 10)
        doc.getArray('log').delete(0, 30)
      },
      (doc) => doc.getText('note').insert(0, 'calibrated ✓'),
      (doc) => doc.getArray('log').delete(40, 300),
    ]
    const encodedBefore = encodedUpdates(document)
    for (const [i, reader] of storm.entries()) {
      change(edits[i] as (doc: Y.Doc) => void)
      reader.look()
      await reader.drain()
      expect(reader.sent).toHaveLength(1)
      expect(reader.sent).toEqual([reader.weights.at(-1)])
      expect(holds(reader.doc, document)).toBe(true)
    }
    // One encoding for each version of the room a catch-up was sent at.
    expect(encodedUpdates(document) - encodedBefore).toBe(storm.length)
  })

  it('of a room holding an update it cannot apply yet are encoded to be weighed, once, and weighed at what is sent', async () => {
    const { document, write } = room()
    const reader = client(document, MAX_QUEUED / 2)
    write(200)
    // A third writer's second update came before its first: Yjs holds it pending, and sends it with the room.
    const third = new Y.Doc()
    third.getArray<string>('log').push(['first'])
    const first = Y.encodeStateVector(third)
    third.getArray<string>('log').push(['second'])
    Y.applyUpdate(document, Y.encodeStateAsUpdate(third, first), REMOTE)
    expect(document.store.pendingStructs).not.toBeNull()
    const encodedBefore = encodedUpdates(document)
    reader.look()
    reader.look()
    await reader.drain()
    expect(encodedUpdates(document) - encodedBefore).toBe(1)
    expect(reader.sent).toEqual([reader.weights.at(-1)])
    expect(reader.doc.store.pendingStructs).not.toBeNull()
    expect(reader.doc.getArray('log').length).toBe(document.getArray('log').length)
  })

  it('a connection whose join is answered while it waits for its catch-up is sent, after the answer, only what the room took since', async () => {
    const { document, write } = room()
    const reader = client(document, MAX_QUEUED / 2)
    write(2_000)
    expect(catchingUp(reader.connection)).toBe(true)
    // Its join's answer goes now (Hocuspocus' step 2): the room as it stands.
    joinAnswered(reader.connection, document)
    Y.applyUpdate(reader.doc, Y.encodeStateAsUpdate(document))
    write(1)
    expect(reader.sent).toEqual([])
    await reader.drain()
    expect(reader.sent).toHaveLength(1)
    expect(reader.sent[0]).toBeLessThan(1_000)
    expect(catchingUp(reader.connection)).toBe(false)
    expect(holds(reader.doc, document)).toBe(true)
  })

  it('a storm of connections whose joins are answered while they wait, the room as it stood, shares one catch-up: encoded once for all of them', async () => {
    const { document, write } = room()
    // Each client's queue is busy (its join's answer) when the other relay's state comes.
    const storm = Array.from({ length: 20 }, () => client(document, MAX_QUEUED / 2))
    write(2_000)
    // Their joins' answers go now, the room as it stands: each catch-up carries only what comes after.
    for (const reader of storm) {
      joinAnswered(reader.connection, document)
      Y.applyUpdate(reader.doc, Y.encodeStateAsUpdate(document, Y.encodeStateVector(reader.doc)))
    }
    write(1)
    const encodedBefore = encodedUpdates(document)
    for (const reader of storm) await reader.drain()
    expect(storm.map((reader) => reader.sent.length)).toEqual(storm.map(() => 1))
    expect(new Set(storm.flatMap((reader) => reader.messages)).size).toBe(1)
    expect(encodedUpdates(document) - encodedBefore).toBe(1)
    for (const reader of storm) expect(holds(reader.doc, document)).toBe(true)
    // Answered at another version of the room: a catch-up of its own, from there.
    const late = client(document, MAX_QUEUED / 2)
    write(50)
    joinAnswered(late.connection, document)
    Y.applyUpdate(late.doc, Y.encodeStateAsUpdate(document, Y.encodeStateVector(late.doc)))
    const other = client(document, MAX_QUEUED / 2)
    write(50)
    write(1)
    joinAnswered(other.connection, document)
    Y.applyUpdate(other.doc, Y.encodeStateAsUpdate(document, Y.encodeStateVector(other.doc)))
    write(1)
    await late.drain()
    await other.drain()
    expect(late.sent[0]).toBeGreaterThan(other.sent[0] as number)
    expect(holds(late.doc, document)).toBe(true)
    expect(holds(other.doc, document)).toBe(true)
  })

  it('a connection whose join is answered while it waits for its catch-up, the room taking nothing after, is sent no catch-up', async () => {
    const { document, write } = room()
    const reader = client(document, MAX_QUEUED / 2)
    write(2_000)
    joinAnswered(reader.connection, document)
    Y.applyUpdate(reader.doc, Y.encodeStateAsUpdate(document))
    await reader.drain()
    expect(reader.sent).toEqual([])
    expect(catchingUp(reader.connection)).toBe(false)
    expect(holds(reader.doc, document)).toBe(true)
    write(1)
    expect(reader.sent).toHaveLength(1)
  })

  it('a catch-up of a connection that left its room (its socket still open) is not sent', async () => {
    const { document, write } = room()
    const reader = client(document, MAX_QUEUED / 2)
    write(2_000)
    document.removeConnection(reader.connection)
    await reader.drain()
    expect(reader.sent).toEqual([])
    expect(catchingUp(reader.connection)).toBe(false)
  })
})

describe('updates made on this relay', () => {
  it('are not paced: sent at once past half of the queue, to a client not catching up', () => {
    const { document, write } = room()
    const reader = client(document, MAX_QUEUED / 2)
    write(10, null)
    expect(reader.sent).toHaveLength(1)
    expect(catchingUp(reader.connection)).toBe(false)
  })
})
