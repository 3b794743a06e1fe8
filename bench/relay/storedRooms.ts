/**
 * What a relay store holds per room once its relays have stopped: its snapshot (the last
 * compaction) and the update rows accepted since, read with the relay's own client (`openPglite`
 * for a relay's data directory, `openPostgres` for a database the relays share).
 */
import type { SqlClient } from '@tidemark/relay'

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
 * Every room in the store `open` connects to; the client is closed afterwards. A PGlite
 * directory can be opened only once its relay has exited.
 *
 * @example
 * const rooms = await readStoredRooms(() => openPglite(relayADataDir))
 * const shared = await readStoredRooms(() => openPostgres(postgres.url, (error) => console.error(error)))
 */
export async function readStoredRooms(open: () => Promise<SqlClient>): Promise<StoredRoom[]> {
  const sql = await open()
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
