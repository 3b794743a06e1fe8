/**
 * The rows of accepted updates: their tables, and how a write inserts them. A row is keyed by
 * its room and the SHA-256 of its bytes: relays sharing a database each write the updates their
 * rooms take, and the first write of an update stores it, the others none. A write holds its
 * rooms' write locks, so two relays writing the same rows wait for each other in turn.
 */
import { createHash } from 'node:crypto'
import type { SqlQueryable } from './sqlClient.ts'

const SCHEMA = [
  // Two relays starting at once on one PostgreSQL must not race on `create table`.
  'select pg_advisory_xact_lock(7315041)',
  'create table if not exists tidemark_relay_updates (seq bigint generated always as identity primary key, room text not null, bytes bytea not null)',
  'create index if not exists tidemark_relay_updates_room on tidemark_relay_updates (room, seq)',
  'create table if not exists tidemark_relay_snapshots (room text primary key, version bigint not null, bytes bytea not null)',
  // Stored parts of a room that Yjs could not use, kept for whoever looks into them (storedParts.ts).
  'create table if not exists tidemark_relay_set_aside (room text not null, seq bigint, version bigint, bytes bytea not null, reason text not null, set_aside_at timestamptz not null default now())',
]

/** Whether the update rows have their digest and its unique index yet (read first: altering a table locks out its readers). */
const DIGEST_SCHEMA = `select
  exists (select 1 from pg_attribute where attrelid = 'tidemark_relay_updates'::regclass and attname = 'digest' and not attisdropped) as "column",
  to_regclass('tidemark_relay_updates_digest') is not null as "index"`

/** Rows written before the digest existed keep a null one: null digests never collide. */
const ADD_DIGEST = 'alter table tidemark_relay_updates add column if not exists digest bytea'
const INDEX_DIGEST = 'create unique index if not exists tidemark_relay_updates_digest on tidemark_relay_updates (room, digest)'

/** The advisory lock space of writes (the two-number form; the schema's lock is of the one-number form). */
const WRITE_LOCKS = 7315042
/** Write locks: a room's is its hash modulo this. */
const WRITE_LOCK_PARTS = 1024

/**
 * Takes the write locks of `rooms`, in ascending order in one statement. Two relays sharing a
 * database write the same updates (a room held by both), and a row one of them inserted but has
 * not committed makes the other's insert of it wait: taken in their own orders (a room's updates
 * reach two relays in different orders when both have writers in it), such waits could form a
 * cycle, which PostgreSQL breaks by failing a write. Under these locks a write meets no
 * uncommitted row of its rooms, and the locks themselves are taken in one order everywhere.
 */
const LOCK_WRITES = `select pg_advisory_xact_lock(${WRITE_LOCKS}, part) from unnest($1::int[]) as part order by part`

const ROWS_PER_INSERT = 50

/** One update row to write: its room, bytes and their digest. */
export interface UpdateRow {
  readonly room: string
  readonly bytes: Uint8Array
  readonly digest: Buffer
}

/** What an insert stored: the room, seq and size of each row new to the store. */
export interface StoredRow {
  readonly room: string
  /** A number from PGlite, a string from pg (int8). */
  readonly seq: number | string
  readonly size: number
}

/** FNV-1a of a room's name: where it falls among rooms, for spreading and for write locks. */
export function roomHash(room: string): number {
  let hash = 2166136261
  for (let i = 0; i < room.length; i++) hash = Math.imul(hash ^ room.charCodeAt(i), 16777619)
  return hash >>> 0
}

/**
 * Creates the tables when missing, and the digest column and its index when a store written
 * before them lacks them (inside the caller's transaction).
 *
 * @example
 * await sql.transaction(createUpdateTables)
 */
export async function createUpdateTables(tx: SqlQueryable): Promise<void> {
  for (const statement of SCHEMA) await tx.query(statement)
  const { rows } = await tx.query<{ column: boolean; index: boolean }>(DIGEST_SCHEMA)
  if (rows[0]?.column !== true) await tx.query(ADD_DIGEST)
  if (rows[0]?.index !== true) await tx.query(INDEX_DIGEST)
}

/**
 * The rows of a write, each room's in the order they arrived: Yjs applies a room's updates in
 * one transaction when it loads, yet an update that comes before one it depends on can stay
 * pending there (a few percent of the orders of several clients' edits of one type do).
 *
 * @example
 * const rows = updateRows([['fleet-a/d07', [update]]])
 */
export function updateRows(batch: readonly (readonly [string, readonly Uint8Array[]])[]): UpdateRow[] {
  return batch.flatMap(([room, updates]) => updates.map((bytes) => ({ room, bytes, digest: createHash('sha256').update(bytes).digest() })))
}

/**
 * Inserts `rows` under their rooms' write locks (inside the caller's transaction); returns the
 * rows new to the store. An update another relay (or this one, before a retry) stored already is
 * left as it is.
 *
 * @example
 * const stored = await sql.transaction((tx) => insertUpdates(tx, updateRows(batch)))
 */
export async function insertUpdates(tx: SqlQueryable, rows: readonly UpdateRow[]): Promise<StoredRow[]> {
  const locks = [...new Set(rows.map((row) => roomHash(row.room) % WRITE_LOCK_PARTS))].sort((a, b) => a - b)
  await tx.query(LOCK_WRITES, [locks])
  const stored: StoredRow[] = []
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    const chunk = rows.slice(i, i + ROWS_PER_INSERT)
    const values = chunk.map((_, j) => `($${3 * j + 1}, $${3 * j + 2}, $${3 * j + 3})`).join(', ')
    const params = chunk.flatMap((row) => [row.room, row.bytes, row.digest])
    const result = await tx.query<StoredRow>(
      `insert into tidemark_relay_updates (room, bytes, digest) values ${values} on conflict (room, digest) do nothing returning room, seq, octet_length(bytes) as size`,
      params,
    )
    stored.push(...result.rows)
  }
  return stored
}
