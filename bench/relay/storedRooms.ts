/**
 * What a relay's store holds per room once the relay has stopped: its snapshot (the last
 * compaction) and the update rows accepted since, read from the relay's PGlite data directory
 * with the relay's own client.
 */
import { openPglite } from '@tidemark/relay'

/**
 * Stored bytes of one room.
 *
 * @example
 * const room: StoredRoom = { room: 'fleet-00/d000', snapshotBytes: 2_310, rows: 12, rowBytes: 3_300 }
 */
export interface StoredRoom {
  readonly room: string
  readonly snapshotBytes: number
  /** Update rows not folded into the snapshot yet, and their bytes. */
  readonly rows: number
  readonly rowBytes: number
}

/**
 * Every room stored in the PGlite data directory `dataDir` (the relay using it must have exited).
 *
 * @example
 * const rooms = await readStoredRooms(relayADataDir)
 */
export async function readStoredRooms(dataDir: string): Promise<StoredRoom[]> {
  const sql = await openPglite(dataDir)
  try {
    const { rows } = await sql.query<{ room: string; snapshot_bytes: number; rows: number; row_bytes: number }>(`
      select room, sum(snapshot_bytes)::float8 as snapshot_bytes, sum(rows)::float8 as rows, sum(row_bytes)::float8 as row_bytes from (
        select room, octet_length(bytes) as snapshot_bytes, 0 as rows, 0 as row_bytes from tidemark_relay_snapshots
        union all
        select room, 0, 1, octet_length(bytes) from tidemark_relay_updates
      ) parts group by room order by room`)
    return rows.map((row) => ({ room: row.room, snapshotBytes: row.snapshot_bytes, rows: row.rows, rowBytes: row.row_bytes }))
  } finally {
    await sql.close()
  }
}
