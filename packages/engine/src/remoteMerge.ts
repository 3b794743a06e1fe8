import type { Frontiers } from './frontiers.ts'
import type { CellEntry, ClockEntry, MergeReport } from './replicaPort.ts'
import type { MergeCounts, RemoteFrontiers, WindowHooks, WindowIndex } from './windowIndex.ts'

/**
 * Takes peers' source clocks. A source is single-writer: a peer's clock for a source this
 * replica writes is a `source_conflict`, resolved the same way on every replica (the smaller
 * replica id keeps the source). Returns how many conflicts were seen.
 */
export function mergeRemoteClocks(
  frontiers: Frontiers,
  clocks: readonly ClockEntry[],
  replicaId: string,
  maxSources: number,
  now: number,
): number {
  let conflicts = 0
  for (const entry of clocks) {
    const clock = frontiers.sources.get(entry.source)
    if (clock !== undefined && clock.writer === replicaId && entry.writer !== replicaId) {
      conflicts++
      if (entry.writer < replicaId) clock.adopt(entry, now)
      continue
    }
    if (clock === undefined) {
      if (frontiers.sources.size < maxSources) frontiers.source(entry.source, now).adopt(entry, now)
    } else if (entry.version > clock.version || (entry.version === clock.version && entry.writer < clock.writer)) {
      clock.adopt(entry, now)
    }
  }
  return conflicts
}

/** Routes peers' cells to the index of their window spec. */
export function mergeRemoteCells(
  indexes: readonly WindowIndex[],
  cells: readonly CellEntry[],
  frontiers: RemoteFrontiers,
  hooks: WindowHooks,
): Omit<MergeReport, 'conflicts'> & { invalid: number } {
  const total: MergeCounts = { applied: 0, stale: 0, expired: 0, finalityViolations: 0, invalid: 0 }
  // One spec (the common case): no partitioning at all.
  const only = indexes.length === 1 ? (indexes[0] as WindowIndex) : null
  const bySpec = new Map<string, CellEntry[]>()
  let matching = only === null ? null : ([] as CellEntry[])
  for (const entry of cells) {
    const id = entry.address.window
    if (only !== null) {
      if (id === only.id) (matching as CellEntry[]).push(entry)
      // The binding refuses peers with another configuration; a stray window id is invalid.
      else total.invalid++
      continue
    }
    let list = bySpec.get(id)
    if (list === undefined) {
      list = []
      bySpec.set(id, list)
    }
    list.push(entry)
  }
  if (only !== null && matching !== null) bySpec.set(only.id, matching)
  matching = null
  for (const [id, list] of bySpec) {
    const index = indexes.find((i) => i.id === id)
    if (index === undefined) {
      total.invalid += list.length
      continue
    }
    const counts = index.mergeRemote(list, frontiers, hooks)
    total.applied += counts.applied
    total.stale += counts.stale
    total.expired += counts.expired
    total.finalityViolations += counts.finalityViolations
    total.invalid += counts.invalid
  }
  return total
}
