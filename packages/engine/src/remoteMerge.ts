import type { Frontiers } from './frontiers.ts'
import type { CellEntry, ClockEntry, MergeReport } from './replicaPort.ts'
import type { MergeCounts, RemoteCell, RemoteFrontiers, WindowHooks, WindowIndex } from './windowIndex.ts'

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

/** Routes peers' cells to the index of their window spec, key by key. */
export function mergeRemoteCells(
  indexes: readonly WindowIndex[],
  cells: readonly CellEntry[],
  frontiers: RemoteFrontiers,
  hooks: WindowHooks,
): Omit<MergeReport, 'conflicts'> & { invalid: number } {
  const grouped = new Map<string, Map<string, RemoteCell[]>>()
  for (const { address, cell } of cells) {
    let byKey = grouped.get(address.window)
    if (byKey === undefined) {
      byKey = new Map()
      grouped.set(address.window, byKey)
    }
    let list = byKey.get(address.key)
    if (list === undefined) {
      list = []
      byKey.set(address.key, list)
    }
    list.push({ start: address.start, source: address.source, cell })
  }
  const total: MergeCounts = { applied: 0, stale: 0, expired: 0, finalityViolations: 0, invalid: 0 }
  for (const [window, byKey] of grouped) {
    const index = indexes.find((i) => i.id === window)
    for (const [key, list] of byKey) {
      if (index === undefined) {
        // The binding refuses peers with another configuration; a stray window id is invalid.
        total.invalid += list.length
        continue
      }
      const counts = index.mergeRemote(key, list, frontiers, hooks)
      total.applied += counts.applied
      total.stale += counts.stale
      total.expired += counts.expired
      total.finalityViolations += counts.finalityViolations
      total.invalid += counts.invalid
    }
  }
  return total
}
