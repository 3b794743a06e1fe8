/**
 * Compaction: a room's update rows folded into its snapshot, in one transaction.
 *
 * Read back (`compactFromRows`): the room's snapshot and rows are read, applied to a fresh
 * Y.Doc (superseded entries are garbage-collected there) and its state replaces the snapshot;
 * exactly the rows read are deleted, under the snapshot's version. Relays sharing one
 * PostgreSQL compact this way: a row another relay wrote may not have reached this relay's
 * document yet, and is folded only once read.
 *
 * From the room as held (`compactFromState`): on a store this relay alone writes (a PGlite data
 * directory, locked to it), every row of a loaded room was applied to the room's document before
 * it was written (its clients' updates, those relayed to it, those read at its load). The
 * document's state then holds every row stored up to the last one the relay saw written, and
 * replaces the snapshot without a read; the rows up to that one are deleted, later ones stay.
 * Reading back a room's rows (tens of kilobytes, decoded and applied again) was most of a
 * compaction's cost.
 */
import * as Y from 'yjs'
import type { SqlClient } from './sqlClient.ts'
import { applyStoredParts, moveAside, readStoredParts, type SetAsidePart } from './storedParts.ts'

/** What a compaction did. */
export interface Compaction {
  /** Bytes of the new snapshot. */
  readonly snapshotBytes: number
  /** Update rows that left the room's rows (folded into the snapshot, or set aside), and their bytes. */
  readonly rows: number
  readonly rowBytes: number
  /** Bytes of the snapshot it replaced. */
  readonly replacedBytes: number
  /** Parts Yjs could not use, moved to `tidemark_relay_set_aside` (read back only). */
  readonly aside: readonly SetAsidePart[]
  /** The read-back document kept structs pending (rows of a client missing in between). */
  readonly incomplete: boolean
}

/**
 * Folds the room's rows into its snapshot by reading both back. Resolves with null when the room
 * has no rows, or another relay compacted it since the read (its snapshot holds them).
 *
 * @example
 * const done = await compactFromRows(sql, 'fleet-a/d07')
 * if (done !== null) console.log(`${done.rows} rows folded into ${done.snapshotBytes} bytes`)
 */
export async function compactFromRows(sql: SqlClient, room: string): Promise<Compaction | null> {
  const parts = await readStoredParts(sql, room)
  const updates = parts.filter((part) => part.seq !== null)
  if (updates.length === 0) return null
  const previous = parts.find((part) => part.seq === null)
  const version = previous?.version ?? null
  const doc = new Y.Doc()
  const aside = applyStoredParts(doc, parts, null)
  // A gap (rows of one client missing in between) leaves structs pending: the state encoding
  // keeps them as they are, and garbage-collects everything else.
  const incomplete = doc.store.pendingStructs !== null || doc.store.pendingDs !== null
  const snapshot = Y.encodeStateAsUpdate(doc)
  doc.destroy()
  // The rows set aside leave with their move; the rest are folded into the snapshot.
  const movedAside = new Set(aside.map(({ part }) => part.seq))
  const seqs = updates.map((part) => part.seq as string).filter((seq) => !movedAside.has(seq))
  const written = await sql.transaction(async (tx) => {
    const result =
      version === null
        ? await tx.query('insert into tidemark_relay_snapshots (room, version, bytes) values ($1, 1, $2) on conflict (room) do nothing', [room, snapshot])
        : await tx.query('update tidemark_relay_snapshots set version = version + 1, bytes = $2 where room = $1 and version = $3', [room, snapshot, version])
    // Another relay compacted this room since the read: its snapshot holds these rows.
    if (result.affected !== 1) return false
    await moveAside(tx, room, aside)
    await tx.query('delete from tidemark_relay_updates where room = $1 and seq = any($2::bigint[])', [room, seqs])
    return true
  })
  if (!written) return null
  return {
    snapshotBytes: snapshot.byteLength,
    rows: updates.length,
    rowBytes: updates.reduce((n, part) => n + part.bytes.byteLength, 0),
    replacedBytes: previous?.bytes.byteLength ?? 0,
    aside,
    incomplete,
  }
}

/** Rows deleted by a compaction from the room as held: how many, and their bytes. */
const DELETE_FOLDED = `with folded as (delete from tidemark_relay_updates where room = $1 and seq <= $2 returning octet_length(bytes) as size)
  select count(*)::int as rows, coalesce(sum(size), 0)::float8 as bytes from folded`

/**
 * Folds the room's rows up to `upTo` (the last this relay saw written) into a snapshot of
 * `state`, the room's document as this relay holds it: for a store this relay alone writes
 * (module comment). `replacedBytes`: the size of the snapshot it replaces, as the relay knows it.
 *
 * @example
 * const done = await compactFromState(sql, 'fleet-a/d07', Y.encodeStateAsUpdate(doc), 4096n, 1130)
 */
export async function compactFromState(sql: SqlClient, room: string, state: Uint8Array, upTo: bigint, replacedBytes: number): Promise<Compaction> {
  const folded = await sql.transaction(async (tx) => {
    await tx.query('insert into tidemark_relay_snapshots (room, version, bytes) values ($1, 1, $2) on conflict (room) do update set version = tidemark_relay_snapshots.version + 1, bytes = excluded.bytes', [
      room,
      state,
    ])
    const { rows } = await tx.query<{ rows: number; bytes: number }>(DELETE_FOLDED, [room, upTo.toString()])
    return rows[0] ?? { rows: 0, bytes: 0 }
  })
  return { snapshotBytes: state.byteLength, rows: folded.rows, rowBytes: Number(folded.bytes), replacedBytes, aside: [], incomplete: false }
}
