/**
 * Reads of loading rooms, gathered: a room asked for alone is read at once; rooms asked for
 * while `READS_AT_ONCE` reads are under way wait, and the next read takes up to
 * `ROOMS_PER_READ` of them, in the order asked. A failed read fails its own rooms' loads only.
 * On PGlite, one statement answers each room its snapshot first, then its rows in order.
 */
import { afterAll, expect, it } from 'vitest'
import { openPglite } from '../src/index.ts'
import { READS_AT_ONCE, ROOMS_PER_READ, RoomReads } from '../src/store/roomReads.ts'
import type { SqlQueryable, SqlResult } from '../src/store/sqlClient.ts'
import { createUpdateTables } from '../src/store/updateRows.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'

afterAll(() => removeDataDirs())

interface PendingRead {
  readonly rooms: readonly string[]
  answer(rows: Record<string, unknown>[]): void
  fail(error: Error): void
}

/** A database whose reads wait until the test answers them, one by one. */
function heldSql(): SqlQueryable & { readonly reads: PendingRead[] } {
  const reads: PendingRead[] = []
  return {
    reads,
    query<T>(_text: string, params?: readonly unknown[]): Promise<SqlResult<T>> {
      return new Promise((resolve, reject) => {
        reads.push({
          rooms: params?.[0] as string[],
          answer: (rows) => resolve({ rows: rows as T[], affected: 0 }),
          fail: reject,
        })
      })
    },
  }
}

/** The rows a read answers for `rooms`: a snapshot and one update row each. */
function rowsOf(rooms: readonly string[]): Record<string, unknown>[] {
  return rooms.flatMap((room, i) => [
    { room, part: 0, version: '1', seq: null, bytes: new Uint8Array([i]) },
    { room, part: 1, version: null, seq: 10 + i, bytes: new Uint8Array([i, i]) },
  ])
}

/** Lets every settled promise's reactions run. */
async function settled(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve()
}

it('reads a room asked for alone at once, and the rooms asked for while reads are under way together, up to ROOMS_PER_READ a read', async () => {
  const sql = heldSql()
  let timed = 0
  const reads = new RoomReads(sql, (work) => {
    timed++
    return work()
  })
  const rooms = Array.from({ length: READS_AT_ONCE + ROOMS_PER_READ + 7 }, (_, i) => `fleet-a/d${i}`)
  const loads = rooms.map((room) => reads.read(room))
  await settled()
  // The first READS_AT_ONCE rooms went alone, as each found a read free; the rest wait.
  expect(sql.reads.map((read) => read.rooms)).toEqual(rooms.slice(0, READS_AT_ONCE).map((room) => [room]))
  expect(reads.waiting).toBe(ROOMS_PER_READ + 7)

  sql.reads[0]?.answer(rowsOf(sql.reads[0].rooms))
  await settled()
  // The read that ended makes way for the next ROOMS_PER_READ rooms, in the order they were asked for.
  expect(sql.reads[2]?.rooms).toEqual(rooms.slice(READS_AT_ONCE, READS_AT_ONCE + ROOMS_PER_READ))
  sql.reads[1]?.answer(rowsOf(sql.reads[1].rooms))
  await settled()
  expect(sql.reads[3]?.rooms).toEqual(rooms.slice(READS_AT_ONCE + ROOMS_PER_READ))
  expect(reads.waiting).toBe(0)
  sql.reads[2]?.answer(rowsOf(sql.reads[2].rooms))
  // A room the database holds nothing of loads empty.
  sql.reads[3]?.answer(rowsOf(sql.reads[3].rooms.slice(1)))

  const parts = await Promise.all(loads)
  expect(sql.reads).toHaveLength(4)
  expect(timed).toBe(4)
  expect(parts[0]).toEqual([
    { seq: null, version: '1', bytes: new Uint8Array([0]) },
    { seq: '10', version: null, bytes: new Uint8Array([0, 0]) },
  ])
  // Each room gets its own rows, found by name in the read that carried it.
  expect(parts[READS_AT_ONCE + 3]?.[1]).toEqual({ seq: '13', version: null, bytes: new Uint8Array([3, 3]) })
  expect(parts[READS_AT_ONCE + ROOMS_PER_READ]).toEqual([])
  expect(parts[READS_AT_ONCE + ROOMS_PER_READ + 6]?.map((part) => part.seq)).toEqual([null, '15'])
})

it('a room asked for twice while it waits is read once, and each load gets a list of its own', async () => {
  const sql = heldSql()
  const reads = new RoomReads(sql, (work) => work())
  const busy = [reads.read('fleet-a/x'), reads.read('fleet-a/y')]
  const twice = [reads.read('fleet-a/d1'), reads.read('fleet-a/d1')]
  await settled()
  expect(reads.waiting).toBe(1)
  sql.reads[0]?.answer([])
  await settled()
  expect(sql.reads[2]?.rooms).toEqual(['fleet-a/d1'])
  sql.reads[1]?.answer([])
  sql.reads[2]?.answer(rowsOf(['fleet-a/d1']))
  const [first, second] = await Promise.all(twice)
  expect(first).toEqual(second)
  expect(first).not.toBe(second)
  expect(await Promise.all(busy)).toEqual([[], []])
})

it("a read that fails rejects its own rooms' loads with its error; the rooms waiting are read next", async () => {
  const sql = heldSql()
  const reads = new RoomReads(sql, (work) => work())
  const outcomes = ['fleet-a/d0', 'fleet-a/d1', 'fleet-a/d2', 'fleet-a/d3'].map((room) =>
    reads.read(room).then(
      (parts) => parts.length,
      (error: unknown) => (error as Error).message,
    ),
  )
  await settled()
  sql.reads[0]?.fail(new Error('connection terminated'))
  await settled()
  // d2 and d3 waited: they go together once a read is free.
  expect(sql.reads[2]?.rooms).toEqual(['fleet-a/d2', 'fleet-a/d3'])
  sql.reads[1]?.answer(rowsOf(['fleet-a/d1']))
  sql.reads[2]?.answer(rowsOf(['fleet-a/d2', 'fleet-a/d3']))
  expect(await Promise.all(outcomes)).toEqual(['connection terminated', 2, 2, 2])
})

it('on PGlite, one statement answers each room its snapshot first, then its update rows in order', async () => {
  const sql = await openPglite(freshDataDir())
  try {
    await sql.transaction(createUpdateTables)
    await sql.query('insert into tidemark_relay_snapshots (room, version, bytes) values ($1, 3, $2)', ['fleet-a/d1', new Uint8Array([1])])
    for (const [room, byte] of [
      ['fleet-a/d2', 20],
      ['fleet-a/d1', 10],
      ['fleet-a/d2', 21],
      ['fleet-a/d1', 11],
    ] as const) {
      await sql.query('insert into tidemark_relay_updates (room, bytes) values ($1, $2)', [room, new Uint8Array([byte])])
    }
    const reads = new RoomReads(sql, (work) => work())
    // Three rooms asked for at once: two reads start, the third waits for one of them.
    const [d1, d2, d3] = await Promise.all(['fleet-a/d1', 'fleet-a/d2', 'fleet-a/d3'].map((room) => reads.read(room)))
    expect(d1?.map((part) => [part.seq === null ? 'snapshot' : 'row', part.version, [...part.bytes]])).toEqual([
      ['snapshot', '3', [1]],
      ['row', null, [10]],
      ['row', null, [11]],
    ])
    expect(d2?.map((part) => [...part.bytes])).toEqual([[20], [21]])
    expect(Number(d2?.[0]?.seq)).toBeLessThan(Number(d2?.[1]?.seq))
    expect(d3).toEqual([])
  } finally {
    await sql.close()
  }
})
