/**
 * Catch-ups (`catchUp.ts`) weighed to the byte of the message sent, on a real Hocuspocus document
 * with the relay's fan-out and clients on fake sockets (`guardedSockets.ts`), through seeded runs
 * of what a room goes through: entries written, inserted, deleted; text written and formatted;
 * settings overwritten by nested types (whose entries are collected); updates Yjs cannot apply
 * yet; sockets whose queues fill, drain and are looked at; joins answered while their connection
 * waits. The guard admits a catch-up on its weight: a message larger than it could take the
 * socket's queue past `maxQueuedBytes`. `TIDEMARK_SEED=<n>` replays one run;
 * `TIDEMARK_EXTENSIVE=1` runs more.
 */
import { type Connection, Document } from '@hocuspocus/server'
import { seededRandom } from '@tidemark/seeded-random'
import { extensive, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import * as decoding from 'lib0/decoding'
import { expect, it } from 'vitest'
import * as Y from 'yjs'
import { catchingUp, joinAnswered } from '../src/gate/catchUp.ts'
import { sendToOthers } from '../src/rooms/updateFanOut.ts'
import { guarded, MAX_QUEUED } from './support/guardedSockets.ts'

const FILE = 'packages/relay/test/catchUpWeights.test.ts'
const NAME = 'every catch-up is sent at the bytes it was admitted at, and every client ends with the room (seeded)'
const REMOTE = 'from-redis'
const ROOM = 'fleet-c/d1'

/** A client of `document` whose socket's queue the run fills and drains; what it is sent goes into `doc`. */
function client(document: Document, problems: string[]) {
  const socket = guarded()
  const doc = new Y.Doc()
  Y.applyUpdate(doc, Y.encodeStateAsUpdate(document))
  // The weight of the catch-up admitted last, until its message is sent (or the run moves on).
  let admitted: number | null = null
  const connection = {
    webSocket: socket.ws,
    context: { socket: socket.guard },
    send(message: Uint8Array) {
      if (admitted !== null && message.byteLength !== admitted) problems.push(`a catch-up admitted at ${admitted} bytes was sent as ${message.byteLength}`)
      admitted = null
      socket.ws.bufferedAmount += message.byteLength
      const decoder = decoding.createDecoder(message)
      decoding.readVarString(decoder)
      decoding.readVarUint(decoder)
      decoding.readVarUint(decoder)
      Y.applyUpdate(doc, decoding.readVarUint8Array(decoder))
    },
  } as unknown as Connection
  document.addConnection(connection)
  const roomForAnswer = socket.guard.roomForAnswer.bind(socket.guard)
  socket.guard.roomForAnswer = (weigh) => {
    let weight = 0
    return roomForAnswer(() => (weight = weigh())).then(() => {
      admitted = weight
    })
  }
  /** What the guard admitted is sent (microtasks), then its settling timer runs. */
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 4; i++) await Promise.resolve()
    socket.timers.advance(0)
    for (let i = 0; i < 4; i++) await Promise.resolve()
    admitted = null
  }
  return {
    doc,
    connection,
    fill: () => {
      socket.ws.bufferedAmount = MAX_QUEUED / 2
      socket.transport.writableNeedDrain = true
    },
    look: async () => {
      socket.transport.emit('drain')
      await settle()
    },
    drain: async () => {
      socket.ws.bufferedAmount = 0
      socket.transport.writableNeedDrain = false
      socket.transport.emit('drain')
      await settle()
    },
  }
}

async function run(seed: number): Promise<void> {
  const random = seededRandom(seed)
  const below = (n: number): number => Math.floor(random() * n)
  const document = new Document(ROOM)
  sendToOthers(document, REMOTE)
  const problems: string[] = []
  const clients = Array.from({ length: 4 }, () => client(document, problems))
  const writers = Array.from({ length: 3 }, () => new Y.Doc())
  // Updates Yjs holds pending until the one before them comes.
  const early: Uint8Array[] = []
  const change = (edit: (doc: Y.Doc) => void, origin: unknown): void => {
    const writer = writers[below(writers.length)] as Y.Doc
    Y.applyUpdate(writer, Y.encodeStateAsUpdate(document, Y.encodeStateVector(writer)))
    const before = Y.encodeStateVector(writer)
    edit(writer)
    Y.applyUpdate(document, Y.encodeStateAsUpdate(writer, before), origin)
  }
  for (let step = 0; step < 300; step++) {
    const origin = below(4) === 0 ? null : REMOTE
    const reader = clients[below(clients.length)] as ReturnType<typeof client>
    const roll = below(100)
    if (roll < 25) {
      change((doc) => {
        const log = doc.getArray<unknown>('log')
        log.insert(below(log.length + 1), Array.from({ length: 1 + below(20) }, (_, i) => (i % 3 === 0 ? i * 1.5 : `reading ${step}.${i}`)))
      }, origin)
    } else if (roll < 30) {
      // Entries one at a time at many places: many structs of one writer (its running totals).
      change((doc) => {
        const log = doc.getArray<unknown>('log')
        for (let i = 0; i < 30; i++) log.insert(below(log.length + 1), [i % 2 === 0 ? new Uint8Array([i]) : { at: i, v: [true, null, 2 ** 40] }])
      }, origin)
    } else if (roll < 40) {
      change((doc) => {
        const log = doc.getArray('log')
        const at = below(log.length)
        if (log.length > 0) log.delete(at, Math.min(log.length - at, 1 + below(10)))
      }, origin)
    } else if (roll < 48) {
      change((doc) => {
        const note = doc.getText('note')
        if (note.length === 0 || random() < 0.6) note.insert(below(note.length + 1), `✓😀${step}`, random() < 0.5 ? { bold: true } : undefined)
        else note.delete(below(note.length), 1)
        if (note.length > 2 && random() < 0.5) note.format(0, 2, { italic: random() < 0.5 ? true : null })
      }, origin)
    } else if (roll < 54) {
      change((doc) => {
        const nested = random() < 0.5 ? Y.Array.from(Array.from({ length: 20 }, (_, i) => `entry ${i}`)) : new Y.XmlElement('p')
        doc.getMap('settings').set(`s${below(3)}`, random() < 0.3 ? { interval: step } : nested)
      }, origin)
    } else if (roll < 57) {
      if (early.length > 0 && random() < 0.5) Y.applyUpdate(document, early.shift() as Uint8Array, origin)
      else {
        const device = new Y.Doc()
        device.getArray<string>('log').push(['first'])
        const first = Y.encodeStateVector(device)
        device.getArray<string>('log').push(['second'])
        early.push(Y.encodeStateAsUpdate(device))
        Y.applyUpdate(document, Y.encodeStateAsUpdate(device, first), origin)
      }
    } else if (roll < 70) reader.fill()
    else if (roll < 80) await reader.look()
    else if (roll < 92) await reader.drain()
    else if (catchingUp(reader.connection)) {
      // Its join is answered now: the room as it stands.
      joinAnswered(reader.connection, document)
      Y.applyUpdate(reader.doc, Y.encodeStateAsUpdate(document, Y.encodeStateVector(reader.doc)))
    }
  }
  for (const update of early) Y.applyUpdate(document, update, REMOTE)
  for (const reader of clients) await reader.drain()
  expect(problems).toEqual([])
  for (const reader of clients) {
    expect(catchingUp(reader.connection)).toBe(false)
    expect(reader.doc.store.pendingStructs).toBeNull()
    expect(reader.doc.getArray('log').toJSON()).toEqual(document.getArray('log').toJSON())
    expect(reader.doc.getText('note').toDelta()).toEqual(document.getText('note').toDelta())
    expect(reader.doc.getMap('settings').toJSON()).toEqual(document.getMap('settings').toJSON())
  }
}

it(NAME, async () => {
  const seeds = process.env.TIDEMARK_SEED === undefined ? Array.from({ length: extensive ? 1_000 : 20 }, (_, i) => i + 1) : [Number(process.env.TIDEMARK_SEED)]
  for (const seed of seeds) {
    try {
      await run(seed)
    } catch (error) {
      const repro = `TIDEMARK_SEED=${seed} npx vitest run --project relay ${FILE}`
      console.error(`seed ${seed}; repro: ${repro}`)
      throw new Error(`seed ${seed}; repro: ${repro}\n${error instanceof Error ? error.message : String(error)}`, { cause: error })
    }
  }
}, PROPERTY_TIMEOUT)
