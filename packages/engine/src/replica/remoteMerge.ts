import { groupStates, type States } from '../aggregates/aggregateSet.ts'
import { messageOf } from '../errors/errorMessage.ts'
import { cellKey } from '../lattice/cell.ts'
import { type CellGroup, groupCellEntries } from '../lattice/cellGroup.ts'
import { validCellGroups, withoutCells } from '../lattice/cellGroupValidation.ts'
import type { ResolvedOptions } from '../config/engineOptions.ts'
import type { Frontiers } from '../time/frontiers.ts'
import type { SourceClock } from '../time/sourceClock.ts'
import type { RemoteAnomalies } from './remoteAnomalies.ts'
import { cellEntryProblem, clockEntryProblem } from './remoteValidation.ts'
import type { CellEntry } from '../lattice/cellEntry.ts'
import type { ClockEntry, MergeReport } from './replicaPort.ts'
import { addMergeCounts, type MergeCounts, type RemoteFrontiers, type WindowTracker, type WindowIndex } from '../windows/windowIndex.ts'

/** What merging peers' state reads and writes of an engine. */
export interface PeerMergeState {
  readonly options: ResolvedOptions
  readonly replicaId: string
  readonly frontiers: Frontiers
  readonly indexes: readonly WindowIndex[]
  readonly tracker: WindowTracker
  readonly counts: { finalityViolations: number }
  readonly remoteAnomalies: RemoteAnomalies
  /** Publishes a clock of a source written here whose version a conflict raised. */
  readonly publish: (clock: SourceClock) => void
}

/**
 * Merges peers' cells and clocks into an engine's windows, every one checked first: what the
 * engine's replica port and the replay of a logged merge run. Logging and settling stay the
 * engine's.
 */
export class PeerMerge {
  readonly #state: PeerMergeState

  constructor(state: PeerMergeState) {
    this.#state = state
  }

  /**
   * Peers' loose cells, packed in groups; cells with a bad address, values or states (missing
   * where this engine keeps aggregates, or not a list of bytes) are reported and left out one by
   * one, before packing: a group holding one would be refused whole.
   */
  validCells(cells: readonly CellEntry[]): CellGroup[] {
    const keepsStates = this.#state.options.aggregates !== null
    return groupCellEntries(cells.filter((entry) => this.#accept('cell', cellEntryProblem(entry, keepsStates))))
  }

  /**
   * Peers' groups with every cell whose values are impossible, or whose aggregate states do not
   * decode or disagree with the cell (`AggregateSet.disagreement`), reported and left out (the
   * rest of its group stays). Decoded states go with each group kept (`groupStates`).
   */
  validGroups(groups: readonly CellGroup[]): readonly CellGroup[] {
    const valid = validCellGroups(groups, (what, problem) => this.#accept(what, problem))
    const aggregates = this.#state.options.aggregates
    if (aggregates === null) {
      if (valid.every((group) => group.aggregates === undefined)) return valid
      return valid.filter((group) => group.aggregates === undefined || this.#accept('cell group', 'carries aggregate states; this engine has no aggregates'))
    }
    const out: CellGroup[] = []
    for (const group of valid) {
      const bytes = group.aggregates
      if (bytes === undefined) {
        this.#accept('cell group', `carries no aggregate states; this engine keeps ${aggregates.names.length}`)
        continue
      }
      const states: States[] = []
      let bad: Set<number> | null = null
      const n = group.keys.length
      const columns = group.columns
      for (let i = 0; i < bytes.length; i++) {
        let problem: string
        try {
          const decoded = aggregates.decode(bytes[i] as Uint8Array[])
          const cell = { count: columns[i] as number, start: group.start, maxTs: columns[4 * n + i] as number }
          const disagreement = aggregates.disagreement(decoded, cell)
          if (disagreement === null) {
            states.push(decoded)
            continue
          }
          problem = disagreement
        } catch (error) {
          problem = messageOf(error)
        }
        this.#accept(`cell ${cellKey(group.window, group.keys[i] as string, group.start, group.source)}`, problem)
        bad ??= new Set()
        bad.add(i)
      }
      if (bad !== null && bad.size === bytes.length) continue
      const kept = bad === null ? group : withoutCells(group, bad)
      groupStates.set(kept, states)
      out.push(kept)
    }
    return out
  }

  /** Peers' clocks with every one that is not a valid clock entry reported and left out. */
  validClocks(clocks: readonly ClockEntry[]): ClockEntry[] {
    return clocks.filter((entry) => this.#accept('clock', clockEntryProblem(entry)))
  }

  /**
   * Merges valid groups and valid clocks (`validGroups`, `validClocks`) as batch `batch`.
   * Returns the report and the frontiers the batch was judged against, for the engine to settle.
   */
  merge(groups: readonly CellGroup[], clocks: readonly ClockEntry[], now: number, batch: number): { report: MergeReport; frontiers: RemoteFrontiers } {
    const { options, frontiers } = this.#state
    const maxSources = options.limits.maxSources
    const { conflicts, untracked } = mergeRemoteClocks(frontiers, clocks, this.#state.replicaId, maxSources, now, this.#state.publish)
    if (conflicts > 0) this.#state.remoteAnomalies.report('source_conflict', `${conflicts} clock(s) of sources written here`, conflicts)
    if (untracked !== null) {
      const detail = `${untracked.count} clock(s) of new sources, first '${untracked.source}': limits.maxSources (${maxSources}) reached; P stays at or below ${frontiers.untrackedProof}`
      this.#state.remoteAnomalies.report('overflow', detail, untracked.count)
    }
    const judged: RemoteFrontiers = {
      watermark: frontiers.watermark,
      firing: frontiers.firingFrontier(),
      lateness: options.allowedLateness,
      retention: options.retention,
      batch,
    }
    const { invalid, ...merged } = mergeRemoteGroups(this.#state.indexes, groups, judged, this.#state.tracker)
    if (invalid > 0) {
      // An unknown window spec, a start off its grid, a bad slice part, a session cell ending before it starts.
      this.#state.remoteAnomalies.report('invalid_remote_cell', `${invalid} cell(s) fit no window here`, invalid)
    }
    this.#state.counts.finalityViolations += merged.finalityViolations
    frontiers.advance(now)
    return { report: { ...merged, conflicts }, frontiers: judged }
  }

  #accept(what: string, problem: string | null): boolean {
    if (problem !== null) this.#state.remoteAnomalies.report('invalid_remote_cell', `${what}: ${problem}`)
    return problem === null
  }
}

/**
 * Takes peers' source clocks. A source is single-writer: a peer's clock for a source this
 * replica writes is a `source_conflict`, resolved the same way on every replica (the smaller
 * replica id keeps the source). A replica that keeps it raises its clock's version to the
 * loser's, so its next write outranks every cell the loser wrote and all replicas converge on
 * it; the raised clock goes to `publish` with this merge (unless a smaller writer's clock in it
 * took the source), since a keeper that finished the source writes nothing more, and its finish
 * would otherwise lose to the loser's clock wherever both arrive.
 * A clock's `maxTs` is the largest of every copy heard, kept or not (the keeper's included), so
 * replicas that heard the same copies in any order hold the same clock and the same `W`.
 * An earlier session's finished copy of a clock this replica writes, at a lower version (the
 * version floor a lossy recovery raised outranks it), finishes the source again here; one it
 * takes (of a source it does not hold) is raised to the floor.
 * A clock of a new source past `maxSources` is left out, and bounds `P` from then on
 * (`Frontiers.untrack`): its source's cells still merge, and cannot be proven complete.
 * Returns how many conflicts were seen, and how many clocks were left out (the first one's
 * source named), or null when none was.
 */
export function mergeRemoteClocks(
  frontiers: Frontiers,
  clocks: readonly ClockEntry[],
  replicaId: string,
  maxSources: number,
  now: number,
  publish: (clock: SourceClock) => void,
): { conflicts: number; untracked: { source: string; count: number } | null } {
  let conflicts = 0
  let untracked: { source: string; count: number } | null = null
  let raised: SourceClock[] | null = null
  for (const entry of clocks) {
    const clock = frontiers.sources.get(entry.source)
    if (clock !== undefined && clock.writer === replicaId && entry.writer !== replicaId) {
      conflicts++
      if (entry.writer < replicaId) clock.adopt(entry, now)
      else if (entry.version > clock.version || entry.maxTs > clock.maxTs) {
        clock.version = Math.max(clock.version, entry.version)
        clock.maxTs = Math.max(clock.maxTs, entry.maxTs)
        clock.changed()
        raised ??= []
        raised.push(clock)
      }
      continue
    }
    if (clock === undefined) {
      if (frontiers.sources.size < maxSources) adoptCopy(frontiers, frontiers.source(entry.source, now), entry, replicaId, now, publish)
      else {
        frontiers.untrack(entry)
        if (untracked === null) untracked = { source: entry.source, count: 0 }
        untracked.count++
      }
    } else if (entry.version > clock.version || (entry.version === clock.version && entry.writer < clock.writer)) {
      adoptCopy(frontiers, clock, entry, replicaId, now, publish)
    } else if (entry.finished === true && !clock.finished && clock.writer === replicaId && entry.writer === replicaId) {
      // An earlier session of this replica finished the source, in a record its recovery lost
      // (whose raised version outranks that copy): the promise holds, as a new version of its own.
      clock.finish()
      publish(clock)
    } else if (entry.maxTs > clock.maxTs) {
      // maxTs joins every copy (adopt keeps the larger too): which copy of two writers' arrived first changes nothing.
      clock.maxTs = entry.maxTs
      clock.changed()
    }
  }
  // Published once every clock is in: a later one of a smaller writer takes the source, and a
  // clock naming it in this replica's log would be refused by every peer.
  if (raised !== null) for (const clock of raised) if (clock.writer === replicaId) publish(clock)
  return { conflicts, untracked }
}

/**
 * Takes a peer's copy of a clock. A copy of a source this replica writes is its earlier
 * session's: held at `versionFloor` at least, since that session may have written versions past
 * the copy that other peers hold, and the next write here must outrank them. Raised, it goes to
 * `publish`, as the clocks the floor raised do: peers take it over those copies.
 */
function adoptCopy(frontiers: Frontiers, clock: SourceClock, entry: ClockEntry, replicaId: string, now: number, publish: (clock: SourceClock) => void): void {
  clock.adopt(entry, now)
  if (entry.writer !== replicaId || clock.version >= frontiers.versionFloor) return
  clock.version = frontiers.versionFloor
  publish(clock)
}

/** Routes peers' cell groups to the index of their window spec (or slice part); cells of an unknown spec are invalid. */
export function mergeRemoteGroups(
  indexes: readonly WindowIndex[],
  groups: readonly CellGroup[],
  frontiers: RemoteFrontiers,
  tracker: WindowTracker,
): Omit<MergeReport, 'conflicts'> & { invalid: number } {
  const total: MergeCounts = { applied: 0, stale: 0, expired: 0, finalityViolations: 0, invalid: 0 }
  // One spec (the common case): the groups go through as they are.
  const bySpec = new Map<string, CellGroup[]>()
  const only = indexes.length === 1 ? (indexes[0] as WindowIndex).id : null
  if (only !== null && groups.every((group) => group.window === only)) bySpec.set(only, groups as CellGroup[])
  else {
    for (const group of groups) {
      let list = bySpec.get(group.window)
      if (list === undefined) {
        list = []
        bySpec.set(group.window, list)
      }
      list.push(group)
    }
  }
  for (const [id, list] of bySpec) {
    const index = indexes.find((i) => i.takes(id))
    if (index === undefined) {
      for (const group of list) total.invalid += group.keys.length
      continue
    }
    addMergeCounts(total, index.mergeRemote(list, frontiers, tracker))
  }
  return total
}
