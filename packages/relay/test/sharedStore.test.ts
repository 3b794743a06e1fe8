/**
 * Relays sharing one database (two RoomStores on one PGlite here; PostgreSQL in postgres.test.ts):
 * each writes the updates its rooms take, and the store keeps one row per update. A store
 * written before rows carried a digest keeps its rows and takes new ones beside them.
 */
import { afterAll, expect, it } from 'vitest'
import * as Y from 'yjs'
import { openPglite } from '../src/index.ts'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import { RoomStore } from '../src/store/roomStore.ts'
import { applyStoredParts, type StoredPart } from '../src/store/storedParts.ts'
import type { SqlClient } from '../src/store/sqlClient.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { deviceUpdates, replicaLog } from './support/roomClients.ts'

afterAll(() => removeDataDirs())

const TIMING = { writeWindowMs: 60_000, compactAfterRows: 10_000, compactAfterBytes: 1 << 30 }
const log = (): void => undefined

/** A device's document and its updates: `readings` one-minute readings. */
function written(device: string, readings: number): { doc: Y.Doc; updates: Uint8Array[] } {
  return deviceUpdates(device, Array.from({ length: readings }, (_, i) => i * 60_000))
}

async function rowsOf(sql: SqlClient, room: string): Promise<number> {
  const { rows } = await sql.query<{ n: number }>('select count(*)::int as n from tidemark_relay_updates where room = $1', [room])
  return rows[0]?.n ?? -1
}

function loaded(parts: readonly StoredPart[]): Y.Doc {
  const doc = new Y.Doc()
  expect(applyStoredParts(doc, parts, null)).toEqual([])
  return doc
}

it('two relays on one store write the same updates and it keeps one row each; rows from before digests stay and load', async () => {
  const sql = await openPglite(freshDataDir())
  try {
    // A store as relays wrote it before rows had a digest, holding one update of d1.
    const d1 = written('d1', 20)
    const d2 = written('d2', 5)
    await sql.query('create table tidemark_relay_updates (seq bigint generated always as identity primary key, room text not null, bytes bytea not null)')
    await sql.query('insert into tidemark_relay_updates (room, bytes) values ($1, $2)', ['fleet-s/d1', d1.updates[0]])

    const metricsA = new RelayMetrics()
    const metricsB = new RelayMetrics()
    const a = await RoomStore.open(sql, TIMING, metricsA, log)
    const b = await RoomStore.open(sql, TIMING, metricsB, log)
    expect(await rowsOf(sql, 'fleet-s/d1')).toBe(1)

    // Each relay takes every update but the first of d1 (already stored), its rooms in its own order.
    for (const update of d1.updates.slice(1)) a.append('fleet-s/d1', update)
    for (const update of d2.updates) a.append('fleet-s/d2', update)
    for (const update of d2.updates) b.append('fleet-s/d2', update)
    for (const update of d1.updates.slice(1)) b.append('fleet-s/d1', update)
    await Promise.all([a.flush(), b.flush()])

    expect(await rowsOf(sql, 'fleet-s/d1')).toBe(20)
    expect(await rowsOf(sql, 'fleet-s/d2')).toBe(5)
    expect(metricsA.updatesStored + metricsB.updatesStored).toBe(24)
    expect(metricsA.updatesAlreadyStored + metricsB.updatesAlreadyStored).toBe(24)

    // A retried write (the same update queued again) adds nothing either.
    a.append('fleet-s/d2', d2.updates[4] as Uint8Array)
    await a.flush()
    expect(await rowsOf(sql, 'fleet-s/d2')).toBe(5)

    // The rows load in any order as the documents they came from, and compact as before.
    for (const [device, source] of [['d1', d1], ['d2', d2]] as const) {
      const room = `fleet-s/${device}`
      expect(replicaLog(loaded(await a.load(room)), device).toJSON()).toEqual(replicaLog(source.doc, device).toJSON())
      expect(Y.encodeStateVector(loaded(await b.load(room)))).toEqual(Y.encodeStateVector(source.doc))
      expect(await a.compact(room)).toBeGreaterThan(0)
      expect(await rowsOf(sql, room)).toBe(0)
      expect(Y.encodeStateVector(loaded(await b.load(room)))).toEqual(Y.encodeStateVector(source.doc))
    }

    // An update folded into a snapshot and written again (a relay's late write) is a row again:
    // harmless, applying it twice changes nothing, and the next compaction folds it.
    b.append('fleet-s/d2', d2.updates[0] as Uint8Array)
    await b.flush()
    expect(await rowsOf(sql, 'fleet-s/d2')).toBe(1)
    expect(Y.encodeStateVector(loaded(await a.load('fleet-s/d2')))).toEqual(Y.encodeStateVector(d2.doc))
  } finally {
    await sql.close()
  }
})

it("a room's rows load whole: two clients' edits of one key, whose digest order leaves Yjs holding most of them pending, are stored in the order they arrived", async () => {
  const sql = await openPglite(freshDataDir())
  try {
    const store = await RoomStore.open(sql, TIMING, new RelayMetrics(), log)
    // Two clients overwriting one key in turn, each seeing the other's edit first; these client
    // ids and values make an order by digest one that Yjs cannot integrate in one transaction.
    const a = new Y.Doc()
    const b = new Y.Doc()
    a.clientID = 1
    b.clientID = 2
    const arrived: Uint8Array[] = []
    a.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === 'peer') return
      arrived.push(update)
      Y.applyUpdate(b, update, 'peer')
    })
    b.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === 'peer') return
      arrived.push(update)
      Y.applyUpdate(a, update, 'peer')
    })
    for (let i = 0; i < 6; i++) ((i + 35) % 2 === 0 ? a : b).getMap('m').set('k', `v${i}-35`)
    expect(arrived).toHaveLength(6)
    for (const update of arrived) store.append('fleet-s/shared', update)
    await store.flush()

    // Loaded as the relay loads a room: the rows applied in their order, each on its own.
    const doc = loaded(await store.load('fleet-s/shared'))
    expect(doc.store.pendingStructs).toBeNull()
    expect(doc.getMap('m').get('k')).toBe('v5-35')
  } finally {
    await sql.close()
  }
})
