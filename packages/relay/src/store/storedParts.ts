/**
 * A room's stored parts (its snapshot and update rows) applied to a document one by one, so that
 * one damaged or foreign part does not take the others with it: a part Yjs cannot read, or one
 * that reads as an empty update though it has bytes (not a Yjs v1 update: a v2 one, zeros), is
 * set aside with the reason, and the room opens with the rest. What it lacked then comes back
 * with its devices' next sync, as for anything the store lost.
 */
import * as Y from 'yjs'
import { describeError } from '../relayLog.ts'
import type { SqlQueryable } from './sqlClient.ts'

/** One stored part of a room: its snapshot (`seq` null, with its `version`) or an update row. */
export interface StoredPart {
  readonly seq: string | null
  readonly version: string | null
  readonly bytes: Uint8Array
}

/** A part left out of its room, and why. */
export interface SetAsidePart {
  readonly part: StoredPart
  readonly reason: string
}

/**
 * Snapshots and update rows of rooms, read in one statement: one consistent view of both, for
 * every room asked (a reconnect storm loads hundreds of rooms at once: one statement each kept
 * a pool's connections, or PGlite's one thread, busy with hundreds).
 */
const READ_ROOMS = `
  select room, 0 as part, version::text as version, null::bigint as seq, bytes from tidemark_relay_snapshots where room = any($1::text[])
  union all
  select room, 1, null, seq, bytes from tidemark_relay_updates where room = any($1::text[])
  order by room, part, seq`

interface RoomRow {
  readonly room: string
  readonly part: number
  readonly version: string | null
  /** A number from PGlite, a string from pg (int8). */
  readonly seq: number | string | null
  readonly bytes: Uint8Array
}

/**
 * The stored parts of each of `rooms`, by room: its snapshot first (if it has one), then its
 * update rows in order. A room with nothing stored is absent.
 *
 * @example
 * const parts = await readRoomsParts(sql, ['fleet-a/d07', 'fleet-a/d08'])
 * parts.get('fleet-a/d07') // [{ seq: null, version: '3', bytes }, { seq: '41', version: null, bytes }]
 */
export async function readRoomsParts(sql: SqlQueryable, rooms: readonly string[]): Promise<Map<string, StoredPart[]>> {
  const { rows } = await sql.query<RoomRow>(READ_ROOMS, [rooms])
  const parts = new Map<string, StoredPart[]>()
  for (const row of rows) {
    let list = parts.get(row.room)
    if (list === undefined) {
      list = []
      parts.set(row.room, list)
    }
    list.push({ seq: row.seq === null ? null : String(row.seq), version: row.version, bytes: row.bytes })
  }
  return parts
}

/**
 * A room's stored parts: its snapshot first (if it has one), then its update rows in order.
 *
 * @example
 * const parts = await readStoredParts(sql, 'fleet-a/d07') // [{ seq: null, version: '3', bytes }, { seq: '41', version: null, bytes }]
 */
export async function readStoredParts(sql: SqlQueryable, room: string): Promise<StoredPart[]> {
  return (await readRoomsParts(sql, [room])).get(room) ?? []
}

/** The bytes of an empty update (no structs, no deletions). */
const EMPTY_UPDATE_BYTES = 2

/**
 * Applies `parts` to `doc` in order, each in its own transaction of `origin`; returns the ones
 * set aside. A part that changes nothing is not set aside for that alone (an update written
 * again after a compaction folded it changes nothing either), only when it reads as empty.
 *
 * @example
 * const aside = applyStoredParts(doc, await store.load(room), LOAD_ORIGIN)
 * if (aside.length > 0) await store.setAside(room, aside)
 */
export function applyStoredParts(doc: Y.Doc, parts: readonly StoredPart[], origin: unknown): SetAsidePart[] {
  const aside: SetAsidePart[] = []
  let changed = false
  const onUpdate = (): void => {
    changed = true
  }
  doc.on('update', onUpdate)
  try {
    for (const part of parts) {
      changed = false
      try {
        Y.applyUpdate(doc, part.bytes, origin)
      } catch (error) {
        aside.push({ part, reason: `Yjs cannot read it: ${describeError(error)}` })
        continue
      }
      // Changing nothing is no fault (an update written again, one held for what it depends on),
      // reading as nothing while having bytes is.
      if (changed || part.bytes.byteLength <= EMPTY_UPDATE_BYTES) continue
      if (readsEmpty(part.bytes)) aside.push({ part, reason: `${part.bytes.byteLength} bytes that read as an empty update (not a Yjs v1 update)` })
    }
  } finally {
    doc.off('update', onUpdate)
  }
  return aside
}

/** Whether `bytes` decode as an update with no structs and no deletions (or do not decode at all). */
function readsEmpty(bytes: Uint8Array): boolean {
  try {
    const read = Y.decodeUpdate(bytes)
    return read.structs.length === 0 && read.ds.clients.size === 0
  } catch {
    // Applying them did not throw, decoding them whole did: they are not an update either.
    return true
  }
}

/**
 * Copies set-aside parts into `tidemark_relay_set_aside` and deletes the update rows among them
 * (a set-aside snapshot's removal is the caller's: it knows the version it read).
 *
 * @example
 * await sql.transaction((tx) => moveAside(tx, room, aside))
 */
export async function moveAside(tx: SqlQueryable, room: string, aside: readonly SetAsidePart[]): Promise<void> {
  for (const { part, reason } of aside) {
    // A reason may quote the part's own bytes (JSON.parse's error quotes its text): PostgreSQL
    // text cannot hold a NUL, and the insert failing would refuse the room at every load.
    const text = reason.replaceAll('\0', '\\0')
    await tx.query('insert into tidemark_relay_set_aside (room, seq, version, bytes, reason) values ($1, $2, $3, $4, $5)', [room, part.seq, part.version, part.bytes, text])
    if (part.seq !== null) await tx.query('delete from tidemark_relay_updates where room = $1 and seq = $2', [room, part.seq])
  }
}
