/**
 * Peers' session fragments merged into a session index. A key's sessions are rebuilt from all
 * its fragments (its own, its peers' and its tombstones): sessions are the connected runs of
 * live fragments `[start, maxTs + gap)`, and a peer's newer cell of a fragment replaces the one
 * held here (a lattice join), while an older or equal one is stale.
 */
import { type AggregateSet, groupStates } from '../aggregates/aggregateSet.ts'
import { type Cell, compareCells } from '../lattice/cell.ts'
import { type CellGroup, groupCell } from '../lattice/cellGroup.ts'
import { addMergeCounts, type MergeCounts, type RemoteCell, type RemoteFrontiers, type WindowTracker } from './windowIndex.ts'
import { fragmentId, type SessionFragment, type WindowState } from './windowState.ts'

/** What merging reaches of a session index. */
export interface SessionHost {
  /** The session spec's id. */
  readonly id: string
  readonly gap: number
  /** The index's aggregates now (set after construction). */
  aggregates(): AggregateSet | null
  /** Sessions per key, disjoint and sorted by start. */
  readonly byKey: Map<string, WindowState[]>
  /** Per key, the largest end of a final session that left live state. */
  readonly sealed: ReadonlyMap<string, number>
  /** Per key, absorbed fragments by `fragmentId`, with their newest version. */
  readonly tombstones: Map<string, Map<string, SessionFragment>>
  /** Makes `sessions` (sorted, of one key) one session `[start, end)`, or opens one when empty. */
  join(key: string, sessions: WindowState[], start: number, end: number, frontiers: RemoteFrontiers, tracker: WindowTracker): WindowState
  /** A session left live state with no live fragment. */
  dropped(): void
}

/**
 * Merges peers' groups into a session index, key by key.
 *
 * @example
 * const counts = mergeSessionGroups(host, groups, frontiers, tracker)
 * counts.stale // cells this replica already held at a newer or equal version
 */
export function mergeSessionGroups(host: SessionHost, groups: readonly CellGroup[], frontiers: RemoteFrontiers, tracker: WindowTracker): MergeCounts {
  const counts: MergeCounts = { applied: 0, stale: 0, expired: 0, finalityViolations: 0, invalid: 0 }
  // Sessions of a key are rebuilt from all its fragments, so peers' cells are taken key by key.
  const byKey = new Map<string, RemoteCell[]>()
  for (const group of groups) {
    const decoded = groupStates.get(group)
    for (let i = 0; i < group.keys.length; i++) {
      const key = group.keys[i] as string
      let list = byKey.get(key)
      if (list === undefined) {
        list = []
        byKey.set(key, list)
      }
      const cell = groupCell(group, i)
      const states = cell.count === 0 ? null : (decoded?.[i] ?? host.aggregates()?.init() ?? null)
      list.push({ start: group.start, source: group.source, cell, states, bytes: group.aggregates?.[i] })
    }
  }
  for (const [key, list] of byKey) {
    addMergeCounts(counts, mergeKey(host, key, list, frontiers, tracker))
  }
  return counts
}

function mergeKey(host: SessionHost, key: string, entries: readonly RemoteCell[], frontiers: RemoteFrontiers, tracker: WindowTracker): MergeCounts {
  const counts: MergeCounts = { applied: 0, stale: 0, expired: 0, finalityViolations: 0, invalid: 0 }
  const gap = host.gap
  const sessions = host.byKey.get(key) ?? []
  const owner = new Map<string, WindowState>()
  const fragments = new Map<string, SessionFragment>()
  for (const s of sessions) {
    for (const f of s.fragments) {
      const id = fragmentId(f.source, f.start)
      owner.set(id, s)
      fragments.set(id, f)
    }
  }
  // With retention Infinity nothing leaves live state, a watermark at +Infinity included.
  const keeps = frontiers.retention === Number.POSITIVE_INFINITY
  const horizon = keeps ? Number.NEGATIVE_INFINITY : frontiers.watermark - frontiers.lateness - frontiers.retention
  const tombstones = host.tombstones.get(key)
  if (tombstones !== undefined) {
    for (const [id, f] of tombstones) {
      const reach = Math.max(f.start, f.cell.maxTs) + gap
      if (reach <= horizon && !meets(sessions, f.start, reach)) tombstones.delete(id)
      else fragments.set(id, f)
    }
  }
  const changed = new Set<string>()
  const sealed = host.sealed.get(key) ?? Number.NEGATIVE_INFINITY
  for (const { start, source, cell, states, bytes } of entries) {
    if (!(cell.maxTs >= start) && cell.count > 0) {
      counts.invalid++
      continue
    }
    const reachEnd = Math.max(start, cell.maxTs) + gap
    // A fragment of a session live here is that session's, whatever its own reach: only a dropped session's end expires it.
    if (start < sealed || (!keeps && reachEnd <= horizon && !meets(sessions, start, reachEnd))) {
      counts.expired++
      // Published as expired, as every cell of a window that left live state here: the binding
      // retires it from the document if it is this replica's to retire (its own source).
      tracker.expired(host.id, key, start, source)
      continue
    }
    const id = fragmentId(source, start)
    const mine = fragments.get(id)
    if (mine !== undefined && latticeOrder(mine, cell, bytes, host.aggregates()) >= 0) {
      counts.stale++
      continue
    }
    fragments.set(id, { source, start, cell, states })
    changed.add(id)
    counts.applied++
  }
  if (changed.size === 0) return counts
  // Sessions that held a fragment which changed (also one that became a tombstone) must be re-emitted.
  const changedOwners = new Set<WindowState>()
  for (const id of changed) {
    const s = owner.get(id)
    if (s !== undefined) changedOwners.add(s)
  }

  // Sessions are the connected runs of live fragments [start, maxTs + gap).
  const live: SessionFragment[] = []
  const dead = new Map<string, SessionFragment>()
  for (const [id, f] of fragments) {
    if (f.cell.count > 0) live.push(f)
    else dead.set(id, f)
  }
  live.sort((a, b) => a.start - b.start)
  if (dead.size > 0) host.tombstones.set(key, dead)
  else host.tombstones.delete(key)
  const next: WindowState[] = []
  const kept = new Set<WindowState>()
  let i = 0
  while (i < live.length) {
    const first = live[i] as SessionFragment
    let end = first.cell.maxTs + gap
    let j = i + 1
    while (j < live.length && (live[j] as SessionFragment).start < end) {
      end = Math.max(end, (live[j] as SessionFragment).cell.maxTs + gap)
      j++
    }
    const members = live.slice(i, j)
    const start = first.start
    // A session split by tombstones lends its object to its first part only.
    const olds = [...new Set(members.map((f) => owner.get(fragmentId(f.source, f.start))))].filter(
      (s): s is WindowState => s !== undefined && !kept.has(s),
    )
    olds.sort((a, b) => a.start - b.start)
    // Reuse the old session that already has this start (no identity change) when there is one.
    const same = olds.findIndex((s) => s.start === start)
    if (same > 0) olds.unshift(...olds.splice(same, 1))
    const wasFinal = olds.some((s) => s.final)
    const touched =
      olds.length !== 1 || olds.some((s) => changedOwners.has(s)) || members.some((f) => changed.has(fragmentId(f.source, f.start)))
    const target = host.join(key, olds, start, end, frontiers, tracker)
    target.fragments = members
    kept.add(target)
    next.push(target)
    if (touched) {
      if (wasFinal) counts.finalityViolations++
      tracker.replaced(target)
      if (target.touchedIn !== frontiers.batch) {
        target.touchedIn = frontiers.batch
        tracker.touched(target)
      }
    }
    i = j
  }
  // Sessions left with no live fragment (every one became a tombstone) leave live state.
  for (const s of sessions) {
    if (kept.has(s) || !s.live) continue
    tracker.swallowed(s, true)
    s.live = false
    s.fragments = []
    host.dropped()
  }
  if (next.length === 0) host.byKey.delete(key)
  else host.byKey.set(key, next)
  return counts
}

/** True when `[start, reach)` meets one of `sessions` (of one key, live here). */
function meets(sessions: readonly WindowState[], start: number, reach: number): boolean {
  for (const s of sessions) if (s.start < reach && start < s.end) return true
  return false
}

/** Lattice order of a fragment held here against a peer's cell of it: by `compareCells`, then by the states' encodings. */
function latticeOrder(mine: SessionFragment, cell: Cell, bytes: readonly Uint8Array[] | undefined, aggregates: AggregateSet | null): number {
  const order = compareCells(mine.cell, cell)
  if (order !== 0 || aggregates === null || bytes === undefined) return order
  return aggregates.compare(aggregates.encode(mine.states), bytes)
}
