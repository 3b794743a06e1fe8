/**
 * The embedded store's client: PGlite on a worker thread. Statements keep their order, a
 * transaction holds the database until it ends and rolls back when its work throws, database
 * errors keep their SQLSTATE, and a thread that cannot open or has stopped is a clear error.
 */
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import * as Y from 'yjs'
import { openPglite } from '../src/index.ts'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import { RoomStore } from '../src/store/roomStore.ts'
import { freshDataDir, removeDataDirs, tempDir } from './support/dataDirs.ts'

afterAll(() => removeDataDirs())

it('runs statements in order off the relay thread: bytea and bigint round-trip, a transaction commits or rolls back whole', async () => {
  const sql = await openPglite(freshDataDir())
  try {
    await sql.query('create table t (id bigint primary key, bytes bytea not null)')
    const bytes = new Uint8Array([0, 1, 254, 255])
    await sql.query('insert into t values ($1, $2)', [1, bytes])
    const { rows } = await sql.query<{ id: number; bytes: Uint8Array }>('select id, bytes from t')
    expect(rows).toEqual([{ id: 1, bytes }])

    // Any size, and a view into a larger buffer: what is stored is the view's bytes. What is read
    // has a buffer of its own (a read value sharing Buffer's pool would carry the pool to the relay's thread).
    const large = Uint8Array.from({ length: 100_000 }, (_, i) => (i * 7919) % 256)
    const backing = new Uint8Array([9, 9, 0, 128, 255, 9])
    const view = backing.subarray(2, 5)
    await sql.query('insert into t values ($1, $2), ($3, $4), ($5, $6)', [10, large, 11, view, 12, new Uint8Array(0)])
    const read = (await sql.query<{ id: number; bytes: Uint8Array }>('select id, bytes from t where id >= 10 order by id')).rows
    expect(read.map((row) => row.bytes)).toEqual([large, new Uint8Array([0, 128, 255]), new Uint8Array(0)])
    expect(read.map((row) => row.bytes.buffer.byteLength)).toEqual([100_000, 3, 0])
    await sql.query('delete from t where id >= 10')

    const committed = await sql.transaction(async (tx) => {
      await tx.query('insert into t values (2, $1)', [bytes])
      return (await tx.query('insert into t values (3, $1)', [bytes])).affected
    })
    expect(committed).toBe(1)

    const failure = new Error('the work failed')
    await expect(
      sql.transaction(async (tx) => {
        await tx.query('insert into t values (4, $1)', [bytes])
        throw failure
      }),
    ).rejects.toBe(failure)
    expect((await sql.query<{ id: number }>('select id from t order by id')).rows.map((row) => row.id)).toEqual([1, 2, 3])
  } finally {
    await sql.close()
  }
})

it('holds a statement sent during a transaction until the transaction ends', async () => {
  const sql = await openPglite(freshDataDir())
  try {
    await sql.query('create table t (n int)')
    let release: () => void = () => undefined
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const order: string[] = []
    const transaction = sql.transaction(async (tx) => {
      await tx.query('insert into t values (1)')
      await held
      await tx.query('insert into t values (2)')
      order.push('transaction')
    })
    const count = sql.query<{ n: number }>('select count(*)::int as n from t').then((result) => {
      order.push('count')
      return result.rows[0]?.n
    })
    // The count is queued behind the transaction: it cannot see a half-written state.
    await new Promise((resolve) => setImmediate(resolve))
    expect(order).toEqual([])
    release()
    await transaction
    expect(await count).toBe(2)
    expect(order).toEqual(['transaction', 'count'])
  } finally {
    await sql.close()
  }
})

it('rejects a failing statement with its SQLSTATE and keeps serving the next one', async () => {
  const sql = await openPglite(freshDataDir())
  try {
    const error = await sql.query('select * from no_such_table').catch((reason: unknown) => reason)
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).message).toMatch(/no_such_table/)
    expect((error as Error & { code?: string }).code).toBe('42P01')
    expect((await sql.query<{ n: number }>('select 1 as n')).rows).toEqual([{ n: 1 }])
  } finally {
    await sql.close()
  }
})

it('initializes a new data directory, then serves it from a second thread: what is written there is there on the next open', async () => {
  const dir = join(tempDir('new-store'), 'data')
  const first = await openPglite(dir)
  try {
    await first.query('create table kept (n int)')
    await first.query('insert into kept values (7)')
  } finally {
    await first.close()
  }
  const again = await openPglite(dir)
  try {
    expect((await again.query<{ n: number }>('select n from kept')).rows).toEqual([{ n: 7 }])
  } finally {
    await again.close()
  }
})

it('says why it cannot open a data directory, and refuses statements once closed', async () => {
  const file = join(freshDataDir(), 'not-a-directory')
  writeFileSync(file, 'x')
  await expect(openPglite(file)).rejects.toThrow(/PGlite could not open .*not-a-directory/)

  const sql = await openPglite(freshDataDir())
  await sql.close()
  await expect(sql.query('select 1')).rejects.toThrow(/PGlite thread exited/)
})

it('opens a data directory in one process at a time: a live holder is named, a dead one is taken over, close releases it', async () => {
  const dir = freshDataDir()
  const lock = `${dir}.lock`
  const first = await openPglite(dir)
  try {
    expect(readFileSync(lock, 'utf8').split('\n')[0]).toBe(String(process.pid))
    await expect(openPglite(dir)).rejects.toThrow(`the data directory ${dir} is in use by a relay of this process (lock file ${lock}); one relay at a time opens it. If no relay runs there, delete the lock file`)
  } finally {
    await first.close()
  }
  expect(existsSync(lock)).toBe(false)

  // Another live process holds it: refused, naming it.
  const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' })
  try {
    writeFileSync(lock, `${other.pid}\n`)
    await expect(openPglite(dir)).rejects.toThrow(`is in use by process ${other.pid}`)
  } finally {
    other.kill()
    await new Promise((resolve) => other.once('exit', resolve))
  }
  // Its process is gone: the lock is stale, and this open takes it over.
  const second = await openPglite(dir)
  try {
    expect(readFileSync(lock, 'utf8').split('\n')[0]).toBe(String(process.pid))
    expect((await second.query<{ n: number }>('select 1 as n')).rows).toEqual([{ n: 1 }])
  } finally {
    await second.close()
  }
})

it('keeps the write-ahead log of a data directory small: max_wal_size is 64MB from the next open, and the room store checkpoints every 16 MiB it writes', async () => {
  const dir = freshDataDir()
  let sql = await openPglite(dir)
  await sql.close()
  sql = await openPglite(dir)
  const metrics = new RelayMetrics()
  const store = await RoomStore.open(sql, { writeWindowMs: 1_000, compactAfterRows: 1_000, compactAfterBytes: 1 << 30 }, metrics, () => undefined)
  try {
    expect((await sql.query<{ max_wal_size: string }>('show max_wal_size')).rows).toEqual([{ max_wal_size: '64MB' }])
    const doc = new Y.Doc()
    doc.on('update', (update: Uint8Array) => store.append('fleet-w/d1', update))
    const checkpoints = (): string[] =>
      metrics.render({ connections: 0, roomsLoaded: 0, mostRoomsHeldBySubject: 0, storedBytes: 0, pendingBytes: 0, heldUpdates: 0, assemblingBytes: 0, unsharedRooms: 0, redisUnansweredBytes: 0, relayedHeldBytes: 0 }).split('\n').filter((line) => line.startsWith('tidemark_relay_store_seconds_count{op="checkpoint"}'))
    // 1 MiB an update: 15 stay under 16 MiB, the next goes past it.
    for (let i = 0; i < 15; i++) {
      doc.getMap('m').set('k', 'abcdefghijklmnopqrstuvwxyz'.charAt(i).repeat(1 << 20))
      await store.flush()
    }
    expect(checkpoints()).toEqual([])
    for (let i = 15; i < 18; i++) {
      doc.getMap('m').set('k', 'abcdefghijklmnopqrstuvwxyz'.charAt(i).repeat(1 << 20))
      await store.flush()
    }
    await waitForCheckpoint(checkpoints)
    expect(checkpoints()).toEqual(['tidemark_relay_store_seconds_count{op="checkpoint"} 1'])
  } finally {
    await store.close()
  }
})

/** Waits for the checkpoint the store started after a write (it runs behind the write). */
async function waitForCheckpoint(checkpoints: () => string[]): Promise<void> {
  for (let i = 0; i < 200 && checkpoints().length === 0; i++) await new Promise((resolve) => setImmediate(resolve))
}
