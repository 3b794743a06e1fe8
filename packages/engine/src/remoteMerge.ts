import type { Frontiers } from './frontiers.ts'
import type { CellGroup } from './cellGroup.ts'
import type { ClockEntry, MergeReport } from './replicaPort.ts'
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

/** Routes peers' cell groups to the index of their window spec; cells of an unknown spec are invalid. */
export function mergeRemoteGroups(
  indexes: readonly WindowIndex[],
  groups: readonly CellGroup[],
  frontiers: RemoteFrontiers,
  hooks: WindowHooks,
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
    const index = indexes.find((i) => i.id === id)
    if (index === undefined) {
      for (const group of list) total.invalid += group.keys.length
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
