/**
 * The store's upkeep, against a database that records what it is asked: stored bytes read at
 * most once a minute and counted in between; PGlite vacuumed every 100 compactions and
 * checkpointed every 16 MiB written; a PostgreSQL server left to its own autovacuum and
 * checkpointer.
 */
import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import type { SqlClient, SqlResult } from '../src/store/sqlClient.ts'
import { StoreUpkeep } from '../src/store/storeUpkeep.ts'

interface RecordingSql extends SqlClient {
  readonly statements: string[]
  /** What the size query answers next; an Error rejects it. */
  size: number | Error
}

function recordingSql(kind: 'pglite' | 'postgres'): RecordingSql {
  const sql: RecordingSql = {
    kind,
    statements: [],
    size: 0,
    async query<T>(text: string): Promise<SqlResult<T>> {
      sql.statements.push(text.trim().split(/\s+/).slice(0, 2).join(' '))
      if (!text.includes('octet_length')) return { rows: [], affected: 0 }
      if (sql.size instanceof Error) throw sql.size
      return { rows: [{ n: sql.size } as T], affected: 0 }
    },
    transaction: (work) => work(sql),
    close: async () => undefined,
  }
  return sql
}

function upkeepOn(kind: 'pglite' | 'postgres'): { sql: RecordingSql; upkeep: StoreUpkeep; warnings: string[] } {
  const sql = recordingSql(kind)
  const warnings: string[] = []
  const upkeep = new StoreUpkeep(sql, (_op, work) => work(), (_level, message) => warnings.push(message))
  return { sql, upkeep, warnings }
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_700_000_000_000 })
})

afterEach(() => {
  vi.useRealTimers()
})

it('reads stored bytes once, counts writes and removals until a minute has passed, then reads again', async () => {
  const { sql, upkeep } = upkeepOn('postgres')
  sql.size = 10_000
  expect(await upkeep.storedBytes()).toBe(10_000)
  upkeep.wrote(500)
  upkeep.removed(2_000)
  vi.advanceTimersByTime(59_999)
  expect(await upkeep.storedBytes()).toBe(8_500)
  expect(sql.statements.filter((s) => s === 'select (')).toHaveLength(1)
  sql.size = 9_000
  vi.advanceTimersByTime(1)
  // The count stands while the new read is under way; the read's answer replaces it.
  expect(await upkeep.storedBytes()).toBe(8_500)
  await vi.waitFor(async () => expect(await upkeep.storedBytes()).toBe(9_000))
  expect(sql.statements.filter((s) => s === 'select (')).toHaveLength(2)
})

it('a read that fails behind a standing count is logged once and the count answered', async () => {
  const { sql, upkeep, warnings } = upkeepOn('postgres')
  sql.size = 4_096
  expect(await upkeep.storedBytes()).toBe(4_096)
  sql.size = new Error('connection terminated')
  vi.advanceTimersByTime(60_000)
  expect(await upkeep.storedBytes()).toBe(4_096)
  expect(await upkeep.storedBytes()).toBe(4_096)
  await vi.waitFor(() => expect(warnings).toEqual(["reading the store's size failed (the count since the last read stands): connection terminated"]))
})

it('the first read that fails rejects to its caller', async () => {
  const { sql, upkeep, warnings } = upkeepOn('postgres')
  sql.size = new Error('connection refused')
  await expect(upkeep.storedBytes()).rejects.toThrow('connection refused')
  expect(warnings).toEqual([])
})

it('PGlite is vacuumed every 100 compactions and checkpointed every 16 MiB written and before it closes', async () => {
  const { sql, upkeep } = upkeepOn('pglite')
  for (let i = 0; i < 99; i++) await upkeep.compacted()
  expect(sql.statements).toEqual([])
  await upkeep.compacted()
  expect(sql.statements).toEqual(['vacuum tidemark_relay_updates', 'vacuum tidemark_relay_snapshots'])
  sql.statements.length = 0
  upkeep.wrote((16 << 20) - 1)
  expect(sql.statements).toEqual([])
  upkeep.wrote(1)
  expect(sql.statements).toEqual(['checkpoint'])
  upkeep.wrote(8 << 20)
  expect(sql.statements).toEqual(['checkpoint'])
  await upkeep.beforeClose()
  expect(sql.statements).toEqual(['checkpoint', 'checkpoint'])
})

it('a PostgreSQL server is left to its own autovacuum and checkpointer', async () => {
  const { sql, upkeep } = upkeepOn('postgres')
  for (let i = 0; i < 200; i++) await upkeep.compacted()
  upkeep.wrote(64 << 20)
  await upkeep.beforeClose()
  expect(sql.statements).toEqual([])
})
