import type { CellAddress } from '../lattice/cellAddress.ts'
import type { CellEntry } from '../lattice/cellEntry.ts'
import type { CellGroup } from '../lattice/cellGroup.ts'
import type { ClockEntry } from '../time/sourceClock.ts'
import type { SyncStatus } from './syncStatus.ts'

export type { ClockEntry } from '../time/sourceClock.ts'

/**
 * The seam between an engine and whatever replicates its lattice state (Yjs today).
 * Everything here is plain data; the engine never sees the transport.
 */

/**
 * What one local batch wrote: to be published to peers in one transaction. The cells are the
 * engine's live state: read or copy them during the listener call, do not keep references.
 */
export interface LocalWrite {
  readonly cells: readonly CellEntry[]
  readonly clocks: readonly ClockEntry[]
  /** Cells that left live state (retention) and may leave the shared document. */
  readonly expired: readonly CellAddress[]
}

/** A replica's whole state: every live cell and known clock. */
export interface ReplicaState {
  readonly cells: readonly CellEntry[]
  readonly clocks: readonly ClockEntry[]
}

/** Which part of a replica's state an export takes. */
export interface ExportOptions {
  /**
   * Only the sources this replica writes: their clocks, and their cells and session tombstones.
   * A transport that publishes what its replica writes asks for its own id; the cells of other
   * writers are then never copied out (a replica joined to many peers holds mostly theirs).
   */
  readonly writer?: string
}

/** What merging a peer's state did. */
export interface MergeReport {
  /** Cells that changed local state. */
  readonly applied: number
  /** Cells equal to or older than what this replica had. */
  readonly stale: number
  /** Cells for windows already past retention here: nothing to change. */
  readonly expired: number
  /** Cells that changed a window this replica had already declared final. */
  readonly finalityViolations: number
  /** Clocks of sources this replica also writes (`source_conflict`). */
  readonly conflicts: number
}

/**
 * The replication side of an engine: what a Yjs binding (or any other transport) needs.
 *
 * @example
 * const stop = port.onLocalWrite((write) => doc.transact(() => publish(write), origin))
 * port.mergeRemoteGroups(groupsFromPeer, clocksFromPeer)
 */
export interface ReplicaPort {
  /** This replica's id (the `writer` of the clocks it publishes). */
  readonly replicaId: string
  /** Fingerprint of the window configuration; replicas with different ones must not merge. */
  readonly configuration: string
  /**
   * Called synchronously after every local batch that wrote cells or clocks; returns the unsubscribe function.
   *
   * @example
   * const stop = engine.replica.onLocalWrite((write) => console.log(write.cells.length, 'cells to publish'))
   */
  onLocalWrite(listener: (write: LocalWrite) => void): () => void
  /**
   * Merges peers' cells and clocks; emits the resulting changes in one notification. Every cell
   * and clock is validated first: invalid ones are counted as `invalid_remote_cell` and skipped
   * (an engine with a write-ahead log logs that count with the merge, so recovery counts them too).
   *
   * @example
   * const peer = other.replica.exportState()
   * engine.replica.mergeRemote(peer.cells, peer.clocks).applied // cells that changed something here
   */
  mergeRemote(cells: readonly CellEntry[], clocks: readonly ClockEntry[]): MergeReport
  /**
   * As `mergeRemote`, with the cells packed in groups (what the Yjs binding reads from the doc).
   *
   * @example
   * const peer = other.replica.exportState()
   * engine.replica.mergeRemoteGroups(groupCellEntries(peer.cells), peer.clocks)
   */
  mergeRemoteGroups(groups: readonly CellGroup[], clocks: readonly ClockEntry[]): MergeReport
  /**
   * Every live cell and known clock, as they stand now: with a write-ahead log (`openEngine`)
   * this can include batches not yet durable. To publish it to peers, use `exportDurableState`.
   * With `writer`, only the sources that replica writes (see `ExportOptions`).
   *
   * @example
   * const { cells, clocks } = engine.replica.exportState()
   * const mine = engine.replica.exportState({ writer: engine.replica.replicaId })
   */
  exportState(options?: ExportOptions): ReplicaState
  /**
   * Every live cell and known clock as they stand now, handed to `deliver` once every operation
   * they reflect is durable (at once for an engine without a write-ahead log), and before any
   * later `onLocalWrite`. The cells are copies. A transport's first publish goes through here, so
   * a crash cannot leave peers holding state this replica lost. With `writer`, only the sources
   * that replica writes (see `ExportOptions`).
   *
   * @example
   * port.exportDurableState((state) => doc.transact(() => publishAll(state), origin), { writer: port.replicaId })
   */
  exportDurableState(deliver: (state: ReplicaState) => void, options?: ExportOptions): void
  /**
   * Records an anomaly found while reading peers' state (`invalid_remote_cell`, `source_conflict`).
   * An engine with a write-ahead log logs its count, so recovery counts it too (not its detail).
   *
   * @example
   * engine.replica.reportAnomaly('invalid_remote_cell', 'replica r2: cell with count -1')
   * engine.stats().remoteAnomalies.at(-1) // the entry just recorded (the last 20 are kept)
   */
  reportAnomaly(reason: 'invalid_remote_cell' | 'source_conflict', detail: string): void
  /**
   * Records a replication error the transport caught (a peer with another window
   * configuration, an update it could not apply): `stats().replicationError` shows the last one.
   * Anything without a text `message` throws a `TypeError` and leaves the last one as it was.
   *
   * @example
   * engine.replica.reportError(new Error('peer r2 runs tumbling:30000'))
   * engine.stats().replicationError // 'peer r2 runs tumbling:30000'
   */
  reportError(error: Error): void
  /**
   * Calls `listener` once when the engine closes (at once if it already has), so a transport
   * bound to it detaches. Returns the function that removes the listener.
   *
   * @example
   * const stop = engine.replica.onClose(() => provider.destroy())
   */
  onClose(listener: () => void): () => void
  /**
   * Lets the transport report sync status and document size into `syncStatus()` / `stats()`.
   * A status that is not one (an unknown `state`, a count that is not whole and non-negative, a
   * `docBytes` that is not a count) throws a `TypeError` naming the field; the last one stays.
   *
   * @example
   * engine.replica.setSyncStatus({ state: 'connected', lastSync: Date.now(), pendingLocalUpdates: 0, peers: 2, refusal: null }, Y.encodeStateAsUpdate(doc).byteLength)
   */
  setSyncStatus(status: SyncStatus, docBytes: number): void
}
