/**
 * Compaction on a store the relay alone writes (PGlite): a loaded room is snapshotted from its
 * document, without reading its rows back; rows written after the last the store saw stay; an
 * unloaded room is read back. Hocuspocus and the persistence in this process.
 */
import { Hocuspocus } from '@hocuspocus/server'
import { afterAll, expect, it } from 'vitest'
import * as Y from 'yjs'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import { IdleRooms } from '../src/rooms/idleRooms.ts'
import { RoomSizes } from '../src/rooms/roomSizes.ts'
import { openPglite } from '../src/store/pgliteClient.ts'
import { RoomPersistence } from '../src/store/roomPersistence.ts'
import { RoomStore } from '../src/store/roomStore.ts'
import type { SqlClient, SqlQueryable } from '../src/store/sqlClient.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'

const cleanups: (() => Promise<void>)[] = []

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  removeDataDirs()
})

const log = (): void => undefined
const timers = { setTimeout: (run: () => void, ms: number) => setTimeout(run, ms), clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout) }

/** `sql` with every statement it runs (in transactions too) listed in `statements`. */
function recorded(sql: SqlClient, statements: string[]): SqlClient {
  const record = (on: SqlQueryable): SqlQueryable => ({
    query: (text, params) => {
      statements.push(text)
      return on.query(text, params)
    },
  })
  return { kind: sql.kind, query: record(sql).query, transaction: (work) => sql.transaction((tx) => work(record(tx))), close: () => sql.close() }
}

/** Statements that read update rows' bytes back. */
const readsRows = (statements: readonly string[]): string[] => statements.filter((text) => /select[\s\S]*bytes[\s\S]*from tidemark_relay_updates/.test(text))

async function relayOnPglite(statements: string[]): Promise<{ store: RoomStore; hocuspocus: Hocuspocus; sql: SqlClient }> {
  const metrics = new RelayMetrics()
  const sql = await openPglite(freshDataDir())
  // A write window no test waits out: every write here is a flush.
  const store = await RoomStore.open(recorded(sql, statements), { writeWindowMs: 60_000, compactAfterRows: 10_000, compactAfterBytes: 1 << 30 }, metrics, log)
  cleanups.push(() => store.close())
  const idle = new IdleRooms(60_000, Date.now, timers, log)
  const hocuspocus = new Hocuspocus({ quiet: true, extensions: [new RoomPersistence({ store, sizes: new RoomSizes(1 << 20), idle, metrics, log })] })
  idle.attach(hocuspocus)
  return { store, hocuspocus, sql }
}

async function storedState(store: RoomStore, room: string): Promise<unknown> {
  const doc = new Y.Doc()
  for (const part of await store.load(room)) Y.applyUpdate(doc, part.bytes)
  return doc.getArray('readings').toJSON()
}

it("a loaded room compacts from its document: no row is read back, and a row written while the compaction waited stays", async () => {
  const statements: string[] = []
  const { store, hocuspocus, sql } = await relayOnPglite(statements)
  const room = 'fleet-k/d1'
  const connection = await hocuspocus.openDirectConnection(room)
  for (let i = 0; i < 20; i++) await connection.transact((doc) => doc.getArray('readings').push([i]))
  await store.flush()
  // A reading queued, not written yet: its write is queued on the database before the compaction's.
  await connection.transact((doc) => doc.getArray('readings').push(['late']))
  statements.length = 0
  const flushing = store.flush()
  const snapshotBytes = await store.compact(room)
  await flushing
  expect(readsRows(statements)).toEqual([])
  expect(snapshotBytes).toBeGreaterThan(0)
  // The 20 rows the store had seen written are folded; the late reading's row, written after, stays.
  const { rows } = await sql.query<{ n: number }>('select count(*)::int as n from tidemark_relay_updates where room = $1', [room])
  expect(rows[0]?.n).toBe(1)
  expect(store.hasRows(room)).toBe(true)
  const served = (hocuspocus.documents.get(room) as Y.Doc).getArray('readings').toJSON()
  expect(served).toHaveLength(21)
  expect(await storedState(store, room)).toEqual(served)
  await connection.disconnect()
})

it('a room not loaded compacts by reading its rows back', async () => {
  const statements: string[] = []
  const { store } = await relayOnPglite(statements)
  const room = 'fleet-k/d2'
  const writer = new Y.Doc()
  writer.on('update', (update: Uint8Array) => store.append(room, update))
  for (let i = 0; i < 5; i++) writer.getArray('readings').push([i])
  await store.load(room)
  await store.flush()
  statements.length = 0
  expect(await store.compact(room)).toBeGreaterThan(0)
  expect(readsRows(statements)).toHaveLength(1)
  expect(store.hasRows(room)).toBe(false)
  expect(await storedState(store, room)).toEqual([0, 1, 2, 3, 4])
})
