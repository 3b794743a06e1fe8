import type { SourceClock } from '../time/sourceClock.ts'
import { liveCells } from '../windows/liveWindows.ts'
import type { WindowIndex } from '../windows/windowIndex.ts'
import type { ReplicaState } from './replicaPort.ts'

/**
 * A replica's state as `exportState` hands it out: every live cell and known clock, or with
 * `writer` only the sources that replica writes (their clocks, cells and session tombstones).
 * The cells of other writers are never made into entries.
 *
 * @example
 * exportReplicaState(indexes, frontiers.sources.values(), undefined) // everything
 * exportReplicaState(indexes, frontiers.sources.values(), 'tab-1') // what replica tab-1 writes
 */
export function exportReplicaState(indexes: readonly WindowIndex[], known: Iterable<SourceClock>, writer: string | undefined): ReplicaState {
  const clocks = [...known].filter((clock) => writer === undefined || clock.writer === writer).map((clock) => clock.entry())
  if (writer === undefined) return { cells: liveCells(indexes, null), clocks }
  const sources = new Set(clocks.map((clock) => clock.source))
  return { cells: sources.size === 0 ? [] : liveCells(indexes, sources), clocks }
}
