/**
 * PostgreSQL as the store (DATABASE_URL), on a PostgreSQL server started here (the newest one installed): a relay
 * process stores and compacts rooms there, and a relay started again serves them.
 */
import { execFileSync } from 'node:child_process'
import { afterAll, expect, it } from 'vitest'
import * as Y from 'yjs'
import { openPostgres } from '../src/index.ts'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import { RoomStore } from '../src/store/roomStore.ts'
import { killRelays, spawnRelay } from './support/relayProcess.ts'
import { type PostgresServer, startPostgres } from '../scripts/postgresServer.ts'
import { clockEntry, dashboardToken, deviceToken, deviceUpdates, groupEntry, metric, openRoom, relaySocket, replicaLog, SECRET_TEXT, waitFor, waitUntil } from './support/roomClients.ts'

let postgres: PostgresServer | undefined
const sockets: ReturnType<typeof relaySocket>[] = []

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await killRelays()
  await postgres?.stop()
})

function socketTo(url: string): ReturnType<typeof relaySocket> {
  const socket = relaySocket(url)
  sockets.push(socket)
  return socket
}

function entries(doc: Y.Doc): string {
  return JSON.stringify(replicaLog(doc, 'd1').toJSON(), (_key, value: unknown) => (value instanceof Uint8Array ? [...value] : value))
}

it('a relay on PostgreSQL stores, compacts and serves rooms across a restart', async () => {
  postgres = await startPostgres()
  const env = { DATABASE_URL: postgres.url, TIDEMARK_AUTH_SECRET: SECRET_TEXT, TIDEMARK_STORE_DEBOUNCE_MS: '50', TIDEMARK_IDLE_ROOM_MS: '200' }
  const first = await spawnRelay(env)
  expect((await fetch(`${first.httpUrl}/healthz`)).status).toBe(200)
  const deviceDoc = new Y.Doc()
  const device = openRoom(socketTo(first.url), 'fleet-p/d1', await deviceToken('fleet-p', 'd1'), deviceDoc)
  await waitFor(() => device.synced(), 'synced')
  deviceDoc.getMap('tidemark:meta').set('d1', [2, 'cfg'])
  const log = replicaLog(deviceDoc, 'd1')
  for (let i = 0; i < 300; i++) {
    deviceDoc.transact(() => {
      if (log.length >= 10) log.delete(0, 2)
      log.push([groupEntry('d1-temp', i * 60_000, i % 256), clockEntry('d1-temp', 'd1', i)])
    })
  }
  await waitFor(() => !device.provider.hasUnsyncedChanges, 'acknowledged')
  device.destroy()
  // Unloading the idle room stores and compacts it.
  await waitUntil(async () => (await metric(first.httpUrl, 'tidemark_relay_rooms_loaded')) === 0, 'the room unloaded')
  expect(await metric(first.httpUrl, 'tidemark_relay_store_seconds_count{op="compact"}')).toBeGreaterThan(0)
  expect(await metric(first.httpUrl, 'tidemark_relay_stored_bytes')).toBeLessThan(8000)
  expect(await first.stop('SIGTERM')).toEqual({ code: 0, signal: null })

  const second = await spawnRelay(env)
  const dashboard = openRoom(socketTo(second.url), 'fleet-p/d1', await dashboardToken('fleet-p'))
  await waitFor(() => dashboard.synced(), 'the dashboard synced')
  expect(entries(dashboard.doc)).toEqual(entries(deviceDoc))
  expect(dashboard.doc.getMap('tidemark:meta').toJSON()).toEqual({ d1: [2, 'cfg'] })
  expect(await second.stop('SIGTERM')).toEqual({ code: 0, signal: null })
})

it('statements run with a 30 s statement_timeout, set on every connection of the pool by default', async () => {
  postgres ??= await startPostgres()
  const sql = await openPostgres(postgres.url, () => undefined)
  try {
    // Several at once: each on a connection of its own.
    const settings = await Promise.all(Array.from({ length: 3 }, () => sql.transaction((tx) => tx.query<{ statement_timeout: string }>('show statement_timeout'))))
    expect(settings.map((result) => result.rows)).toEqual(Array.from({ length: 3 }, () => [{ statement_timeout: '30s' }]))
  } finally {
    await sql.close()
  }
})

it('a statement the server never answers (a stalled network) fails after the query timeout, and the pool serves again afterwards', async () => {
  postgres ??= await startPostgres()
  const errors: Error[] = []
  const sql = await openPostgres(postgres.url, (error) => errors.push(error), { connectMs: 2000, queryMs: 500 })
  const server = postgres.pid
  // The server and its backends stop answering, their sockets open: what a silent network looks like.
  const stopped = [server, ...execFileSync('pgrep', ['-P', String(server)]).toString().trim().split('\n').map(Number)]
  for (const pid of stopped) process.kill(pid, 'SIGSTOP')
  try {
    const started = performance.now()
    await expect(sql.query('select 1')).rejects.toThrow('Query read timeout')
    await expect(sql.transaction((tx) => tx.query('select 1'))).rejects.toThrow(/timeout/)
    expect(performance.now() - started).toBeLessThan(10_000)
  } finally {
    for (const pid of stopped) process.kill(pid, 'SIGCONT')
  }
  expect((await sql.query<{ n: number }>('select 1 as n')).rows).toEqual([{ n: 1 }])
  await sql.close()
})

it('two relays writing the same updates of many rooms at once, their rooms in opposite orders, store each once and never deadlock', async () => {
  postgres ??= await startPostgres()
  const errors: Error[] = []
  const logged: string[] = []
  const timing = { writeWindowMs: 60_000, compactAfterRows: 100_000, compactAfterBytes: 1 << 30 }
  const relays = await Promise.all(
    [0, 1].map(async () => {
      const metrics = new RelayMetrics()
      const sql = await openPostgres(postgres?.url as string, (error) => errors.push(error))
      return { sql, metrics, store: await RoomStore.open(sql, timing, metrics, (_level, text) => logged.push(text)) }
    }),
  )
  const [a, b] = relays as [(typeof relays)[0], (typeof relays)[0]]
  const rooms = Array.from({ length: 40 }, (_, r) => `fleet-x/d${r}`)
  const ROUNDS = 8
  const PER_ROOM = 5
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const updates = rooms.map((room, r) => {
        const starts = Array.from({ length: PER_ROOM }, (_, i) => (round * PER_ROOM + i) * 60_000)
        return [room, deviceUpdates(`d${r}`, starts).updates] as const
      })
      // A takes the rooms in one order, B in the other: in arrival order, their writes would
      // each wait for a row the other holds.
      for (const [room, made] of updates) for (const update of made) a.store.append(room, update)
      for (const [room, made] of [...updates].reverse()) for (const update of made) b.store.append(room, update)
      await Promise.all([a.store.flush(), b.store.flush()])
    }
    const { rows } = await a.sql.query<{ n: number }>("select count(*)::int as n from tidemark_relay_updates where room like 'fleet-x/%'")
    expect(rows[0]?.n).toBe(ROUNDS * rooms.length * PER_ROOM)
    expect(a.metrics.updatesStored + b.metrics.updatesStored).toBe(ROUNDS * rooms.length * PER_ROOM)
    expect(a.metrics.updatesAlreadyStored + b.metrics.updatesAlreadyStored).toBe(ROUNDS * rooms.length * PER_ROOM)
    expect(logged).toEqual([])
    expect(errors).toEqual([])
  } finally {
    for (const relay of relays) await relay.store.close()
  }
})

it('a relay starting beside a long read of the store (a dump, a report) opens it without waiting for the read to end', async () => {
  postgres ??= await startPostgres()
  const errors: Error[] = []
  const reader = await openPostgres(postgres.url, (error) => errors.push(error))
  const timing = { writeWindowMs: 60_000, compactAfterRows: 100_000, compactAfterBytes: 1 << 30 }
  // The schema exists (with its digest column) before the read starts, as on any restart.
  await (await RoomStore.open(reader, timing, new RelayMetrics(), () => undefined)).flush()
  let endRead: () => void = () => undefined
  const readEnds = new Promise<void>((resolve) => {
    endRead = resolve
  })
  let readStarted: () => void = () => undefined
  const reading = new Promise<void>((resolve) => {
    readStarted = resolve
  })
  const read = reader.transaction(async (tx) => {
    await tx.query('select count(*) from tidemark_relay_updates')
    readStarted()
    await readEnds
  })
  // The reader holds its lock on the table from here until `endRead()`.
  await reading
  // Statements bounded at 2 s by the server: one waiting for the reader's lock fails the open.
  const sql = await openPostgres(postgres.url, (error) => errors.push(error), { connectMs: 5000, queryMs: 2000 })
  try {
    await expect(RoomStore.open(sql, timing, new RelayMetrics(), () => undefined)).resolves.toBeInstanceOf(RoomStore)
  } finally {
    endRead()
    await read
    await sql.close()
    await reader.close()
  }
  expect(errors).toEqual([])
})

it('three hundred rooms loading at once (a fleet back after a restart) are read together, a few statements in all, each room its own parts', async () => {
  postgres ??= await startPostgres()
  const pool = await openPostgres(postgres.url, () => undefined)
  let reads = 0
  const sql: typeof pool = {
    kind: pool.kind,
    query: (text, params) => {
      if (text.includes('any($1::text[])')) reads++
      return pool.query(text, params)
    },
    transaction: (work) => pool.transaction(work),
    close: () => pool.close(),
  }
  const store = await RoomStore.open(sql, { writeWindowMs: 60_000, compactAfterRows: 100_000, compactAfterBytes: 1 << 30 }, new RelayMetrics(), () => undefined)
  try {
    const rooms = Array.from({ length: 300 }, (_, r) => `fleet-s/d${r}`)
    const docs = rooms.map((room, r) => {
      const { doc, updates } = deviceUpdates(`d${r}`, [0, 60_000, 120_000].slice(0, 1 + (r % 3)))
      for (const update of updates) store.append(room, update)
      return doc
    })
    await store.flush()
    const loaded = await Promise.all(rooms.map((room) => store.load(room)))
    // Two reads start at once; the 298 rooms asked for meanwhile go 50 a read.
    expect(reads).toBe(2 + Math.ceil(298 / 50))
    expect(loaded.map((parts) => parts.length)).toEqual(rooms.map((_, r) => 1 + (r % 3)))
    for (const [r, parts] of loaded.entries()) {
      const doc = new Y.Doc()
      for (const part of parts) Y.applyUpdate(doc, part.bytes)
      expect(replicaLog(doc, `d${r}`).toJSON()).toEqual(replicaLog(docs[r] as Y.Doc, `d${r}`).toJSON())
    }
  } finally {
    await store.close()
  }
})
