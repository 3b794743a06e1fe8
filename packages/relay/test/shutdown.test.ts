/**
 * Shutdown (relay in this process, PGlite): messages still queued when `close()` begins are
 * dropped, not applied after the last write; every update the relay applied is in the store
 * once `close()` resolves; and `close()` rejects, naming the bytes, when some could not be stored.
 */
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { afterAll, expect, it } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { openPglite, type SqlClient, startRelay } from '../src/index.ts'
import { STORE_SHUTDOWN_MS } from '../src/startRelay.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { ManualTimers } from '@tidemark/engine/testing'
import { deviceToken, groupEntry, openRoom, relaySocket, replicaLog, SECRET, waitFor } from './support/roomClients.ts'

const sockets: { destroy(): void }[] = []

afterAll(() => {
  for (const socket of sockets) socket.destroy()
  removeDataDirs()
})

const ROOM = 'fleet-s/d1'

function frame(type: number, write: (encoder: encoding.Encoder) => void): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarString(encoder, ROOM)
  encoding.writeVarUint(encoder, type)
  write(encoder)
  return encoding.toUint8Array(encoder)
}

/** The replica log entries stored for the room in a data directory. */
async function storedEntries(dataDir: string): Promise<number> {
  const sql = await openPglite(dataDir)
  try {
    const { rows } = await sql.query<{ bytes: Uint8Array }>(
      'select bytes from tidemark_relay_snapshots where room = $1 union all select bytes from tidemark_relay_updates where room = $1',
      [ROOM],
    )
    const doc = new Y.Doc()
    for (const row of rows) Y.applyUpdate(doc, row.bytes)
    return replicaLog(doc, 'd1').length
  } finally {
    await sql.close()
  }
}

it('close() drops the messages still queued, and every update the relay applied is stored when it resolves', async () => {
  const dataDir = freshDataDir()
  const relay = await startRelay({ port: 0, store: { dataDir }, auth: { secret: SECRET }, log: () => undefined })
  // Counts the updates a client connection applied to the relay's documents (Hocuspocus applies
  // them with the connection as the origin), and those applied after close() began.
  const emit = Object.getPrototypeOf(Y.Doc.prototype).emit as (this: Y.Doc, name: string, args: unknown[]) => void
  let applied = 0
  let appliedAfterClose = 0
  let closing: Promise<void> | undefined
  Y.Doc.prototype.emit = function (this: Y.Doc, name: string, args: unknown[]) {
    const origin = args[1]
    if (name === 'update' && typeof origin === 'object' && origin !== null && 'socketId' in origin) {
      applied++
      if (closing !== undefined) appliedAfterClose++
    }
    emit.call(this, name, args)
  } as typeof Y.Doc.prototype.emit
  try {
    const doc = new Y.Doc()
    const updates: Uint8Array[] = []
    doc.on('update', (update: Uint8Array) => updates.push(update))
    for (let i = 0; i < 300; i++) replicaLog(doc, 'd1').push([groupEntry('d1-temp', i * 60_000)])
    const ws = new WebSocket(relay.url)
    ws.on('error', () => undefined)
    await new Promise((resolve) => ws.once('open', resolve))
    const token = await deviceToken('fleet-s', 'd1')
    let acks = 0
    const authenticated = new Promise<void>((resolve) => {
      ws.on('message', (data: Buffer) => {
        const decoder = decoding.createDecoder(new Uint8Array(data))
        decoding.readVarString(decoder)
        const type = decoding.readVarUint(decoder)
        if (type === 2) resolve()
        // A sync status: the relay applied an update. Close while the rest are queued.
        if (type === 8 && decoding.readVarUint(decoder) === 1 && ++acks === 5) closing ??= relay.close()
      })
    })
    ws.send(frame(2, (e) => {
      encoding.writeVarUint(e, 0)
      encoding.writeVarString(e, token)
    }))
    await authenticated
    for (const update of updates) {
      ws.send(frame(0, (e) => {
        encoding.writeVarUint(e, 2)
        encoding.writeVarUint8Array(e, update)
      }))
    }
    await waitFor(() => closing !== undefined, 'five updates acknowledged')
    await closing
    ws.terminate()
    console.log(`shutdown: ${applied} updates applied by the relay (${appliedAfterClose} after close() began), ${acks} acknowledged`)
    expect(acks).toBeGreaterThanOrEqual(5)
    expect(appliedAfterClose).toBe(0)
    expect(await storedEntries(dataDir)).toBe(applied)
  } finally {
    Y.Doc.prototype.emit = emit as typeof Y.Doc.prototype.emit
    await (closing ?? relay.close()).catch(() => undefined)
  }
})

it('close() rejects, naming the bytes left unstored, when the store cannot write them', async () => {
  const dataDir = freshDataDir()
  const base = await openPglite(dataDir)
  let failing = false
  const sql: SqlClient = {
    kind: base.kind,
    query: (text, params) => base.query(text, params),
    transaction: (work) => (failing ? Promise.reject(new Error('the disk is full')) : base.transaction(work)),
    close: () => base.close(),
  }
  const relay = await startRelay({ port: 0, store: { sql }, auth: { secret: SECRET }, persistence: { writeWindowMs: 60_000 }, log: () => undefined })
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const device = openRoom(socket, ROOM, await deviceToken('fleet-s', 'd1'))
  await waitFor(() => device.synced(), 'synced')
  failing = true
  replicaLog(device.doc, 'd1').push([groupEntry('d1-temp', 0)])
  await waitFor(() => !device.provider.hasUnsyncedChanges, 'the update acknowledged')
  await expect(relay.close()).rejects.toThrow(/the relay closed, but \d+ bytes of accepted updates could not be stored: the disk is full/)
})

it('close() gives up on a store that stopped answering at its deadline, and reports the bytes it could not store', async () => {
  const base = await openPglite(freshDataDir())
  let stalled = false
  let entered = false
  const sql: SqlClient = {
    kind: base.kind,
    query: (text, params) => base.query(text, params),
    // A store that stopped answering: the write never ends.
    transaction: (work) => {
      if (!stalled) return base.transaction(work)
      entered = true
      return new Promise(() => undefined)
    },
    close: () => base.close(),
  }
  const clock = new ManualTimers(Date.now())
  const relay = await startRelay({ port: 0, store: { sql }, auth: { secret: SECRET }, now: () => clock.now, timers: clock, log: () => undefined })
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const device = openRoom(socket, ROOM, await deviceToken('fleet-s', 'd1'))
  await waitFor(() => device.synced(), 'synced')
  stalled = true
  replicaLog(device.doc, 'd1').push([groupEntry('d1-temp', 0)])
  await waitFor(() => !device.provider.hasUnsyncedChanges, 'the update acknowledged')
  let outcome: unknown
  const closing = relay.close().then(
    () => 'resolved',
    (error: unknown) => error,
  )
  void closing.then((value) => {
    outcome = value
  })
  await waitFor(() => entered, 'the shutdown write started')
  clock.advance(STORE_SHUTDOWN_MS - 1)
  await new Promise((resolve) => setImmediate(resolve))
  expect(outcome).toBeUndefined()
  clock.advance(1)
  const error = await closing
  expect(error).toBeInstanceOf(Error)
  expect((error as Error).message).toMatch(new RegExp(`the relay closed, but [1-9]\\d* bytes of accepted updates could not be stored: the store did not finish writing within ${STORE_SHUTDOWN_MS} ms`))
})
