import type { SessionIndexSnapshot, SliceIndexSnapshot } from '../recovery/engineCheckpoint.ts'
import { type AggregateSet, groupStates, type States } from '../aggregates/aggregateSet.ts'
import type { StreamEvent } from '../core/event.ts'
import { absorbCell, addToCell, type Cell, compareCells, emptyCell, tombstone } from '../lattice/cell.ts'
import { type CellGroup, groupCell } from '../lattice/cellGroup.ts'
import type { CellEntry } from '../lattice/cellEntry.ts'
import {
  ADMITTED_LATE,
  type BatchFrontiers,
  type ExpiredCell,
  type MergeCounts,
  ON_TIME,
  type PlacementSource,
  REFUSED,
  type RemoteCell,
  type RemoteFrontiers,
  type WindowTracker,
  type WindowIndex,
} from './windowIndex.ts'
import { type SessionFragment, WindowState } from './windowState.ts'

/**
 * Session windows per key: `[minTs, maxTs + gap)`, two events in one session when
 * their times differ by less than `gap`. Each source's events form its own
 * fragments (single-writer cells); a global session is a connected run of
 * overlapping fragments. Sessions of a key are kept disjoint and sorted by start.
 */
export class SessionWindowIndex implements WindowIndex {
  readonly id: string
  readonly maxNewPerEvent = 1
  discarding = false
  aggregates: AggregateSet | null = null
  readonly #gap: number
  readonly #byKey = new Map<string, WindowState[]>()
  /**
   * Per key, the largest end of a final session that left live state: an event before it
   * would have joined that session, so it is beyond lateness even after the session is gone.
   */
  readonly #sealed = new Map<string, number>()
  /**
   * Peers' tombstones per key: an absorbed fragment's cell key with its newest version, so an
   * older copy of that fragment arriving later is recognised as stale rather than counted again.
   */
  readonly #tombstones = new Map<string, Map<string, SessionFragment>>()
  #count = 0

  constructor(id: string, gap: number) {
    this.id = id
    this.#gap = gap
  }

  get size(): number {
    return this.#count
  }

  /** Index of the first session of `sessions` whose end is above `t`. */
  #firstEndingAfter(sessions: readonly WindowState[], t: number): number {
    let lo = 0
    let hi = sessions.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if ((sessions[mid] as WindowState).end > t) hi = mid
      else lo = mid + 1
    }
    return lo
  }

  /** Range `[from, to)` of sessions overlapping `[ts, ts + gap)`. */
  #overlapping(sessions: readonly WindowState[], ts: number): [number, number] {
    const from = this.#firstEndingAfter(sessions, ts)
    let to = from
    while (to < sessions.length && (sessions[to] as WindowState).start < ts + this.#gap) to++
    return [from, to]
  }

  missingWindows(key: string, ts: number, _frontiers: BatchFrontiers): number {
    const sessions = this.#byKey.get(key)
    if (sessions === undefined) return 1
    const [from, to] = this.#overlapping(sessions, ts)
    return from === to ? 1 : 0
  }

  place(
    key: string,
    source: PlacementSource,
    ts: number,
    value: number,
    version: number,
    frontiers: BatchFrontiers,
    tracker: WindowTracker,
    event: StreamEvent,
    inputs: readonly unknown[] | null,
  ): number {
    const gap = this.#gap
    const sealed = this.#sealed.get(key)
    if (sealed !== undefined && ts < sealed) return REFUSED
    // Lateness is judged on the event's own proto-window [ts, ts + gap), as in Beam: which
    // sessions other events of the same batch opened cannot change whether it is admitted.
    if (ts + gap + frontiers.lateness <= frontiers.watermark) return REFUSED
    let sessions = this.#byKey.get(key)
    if (sessions === undefined) {
      sessions = []
      this.#byKey.set(key, sessions)
    }
    const [from, to] = this.#overlapping(sessions, ts)
    let start = ts
    let end = ts + gap
    for (let i = from; i < to; i++) {
      const s = sessions[i] as WindowState
      // A final session never changes again: the event is late for it.
      if (s.final) return REFUSED
      if (s.start < start) start = s.start
      if (s.end > end) end = s.end
    }
    const target = this.#join(key, sessions, from, to, start, end, frontiers, tracker)
    this.#addToFragment(target, source.name, ts, value, version, tracker, event, inputs)
    if (this.discarding) {
      target.pending ??= emptyCell()
      addToCell(target.pending, ts, value, 0)
      if (inputs !== null && this.aggregates !== null) {
        target.pendingStates ??= this.aggregates.init()
        this.aggregates.add(target.pendingStates, inputs, event)
      }
    }
    if (target.touchedIn !== frontiers.batch) {
      target.touchedIn = frontiers.batch
      tracker.touched(target)
    }
    return target.fired ? ADMITTED_LATE : ON_TIME
  }

  /**
   * Makes `sessions[from, to)` one session `[start, end)`, or opens a new one at `from` when
   * the range is empty. Keeps the first session's object (its identity moves if its start
   * does) and retracts the others. Fired if any part was, or if the firing frontier passed `end`.
   */
  #join(
    key: string,
    sessions: WindowState[],
    from: number,
    to: number,
    start: number,
    end: number,
    frontiers: BatchFrontiers,
    tracker: WindowTracker,
  ): WindowState {
    let fired = end <= frontiers.firing
    let revision = -1
    for (let i = from; i < to; i++) {
      const s = sessions[i] as WindowState
      if (s.fired) fired = true
      if (s.revision > revision) revision = s.revision
    }
    if (from === to) {
      const created = new WindowState(this.id, key, start, end)
      created.fired = fired
      sessions.splice(from, 0, created)
      this.#count++
      tracker.created(created)
      return created
    }
    const target = sessions[from] as WindowState
    if (target.start !== start) {
      // The session's identity (its start) changes: retract what was shown under the old one.
      tracker.swallowed(target, false)
      target.emitted = null
      target.start = start
      tracker.replaced(target)
    }
    for (let i = from + 1; i < to; i++) {
      const swallowed = sessions[i] as WindowState
      tracker.swallowed(swallowed, true)
      tracker.replaced(target)
      target.fragments = [...target.fragments, ...swallowed.fragments]
      swallowed.fragments = []
      swallowed.live = false
      if (swallowed.final) target.final = true
    }
    if (to - from > 1) {
      sessions.splice(from + 1, to - from - 1)
      this.#count -= to - from - 1
    }
    target.fired = fired
    target.revision = revision
    if (end !== target.end) {
      target.end = end
      tracker.grown(target)
    }
    return target
  }

  /**
   * Adds the event to `source`'s fragment of the session. A source keeps one fragment per
   * session: its fragments in the session (an earlier stretch of its activity, or the fragments
   * of two sessions this event joined) fold into one cell. Without that, a session that never
   * ends (other sources keep it alive) would keep one fragment per stretch of this source's
   * activity, without bound. Folding changes no result: the session is the same connected run,
   * its extremes are the fragments' extremes, and its totals add the same cells.
   */
  #addToFragment(
    session: WindowState,
    source: string,
    ts: number,
    value: number,
    version: number,
    tracker: WindowTracker,
    event: StreamEvent,
    inputs: readonly unknown[] | null,
  ): void {
    const aggregates = this.aggregates
    let only: SessionFragment | null = null
    let own = 0
    for (const f of session.fragments) {
      if (f.source === source && f.cell.count > 0) {
        only = f
        own++
      }
    }
    if (own === 1 && only !== null && only.start <= ts) {
      addToCell(only.cell, ts, value, version)
      if (inputs !== null && aggregates !== null) aggregates.add(only.states as States, inputs, event)
      tracker.written(this.id, session.key, only.start, source, only.cell, only.states)
      return
    }
    // A new fragment start: the source's fragments fold into one new cell, the others' keys become tombstones.
    const cell = emptyCell()
    let states: States | null = null
    let start = ts
    const kept: SessionFragment[] = []
    const absorbed: SessionFragment[] = []
    for (const f of session.fragments) {
      if (f.source === source && f.cell.count > 0) {
        absorbCell(cell, f.cell)
        // Into new states: the absorbed fragment's own stay as its tombstone's history, unread.
        if (aggregates !== null && f.states !== null) states = aggregates.mergeInto(states, f.states)
        absorbed.push(f)
        if (f.start < start) start = f.start
      } else {
        kept.push(f)
      }
    }
    addToCell(cell, ts, value, version)
    if (aggregates !== null) {
      states ??= aggregates.init()
      if (inputs !== null) aggregates.add(states, inputs, event)
    }
    kept.push({ source, start, cell, states })
    session.fragments = kept
    for (const f of absorbed) {
      if (f.start === start) continue
      const dead = tombstone(f.cell, version)
      // Kept, so a full-state exchange (anti-entropy) carries the deletion too, not just the live cells.
      this.#keepTombstone(session.key, { source, start: f.start, cell: dead, states: null })
      tracker.written(this.id, session.key, f.start, source, dead, null)
    }
    tracker.written(this.id, session.key, start, source, cell, states)
  }

  /** Lattice order of a fragment held here against a peer's cell of it: by `compareCells`, then by the states' encodings. */
  #order(mine: SessionFragment, cell: Cell, bytes: readonly Uint8Array[] | undefined): number {
    const order = compareCells(mine.cell, cell)
    const aggregates = this.aggregates
    if (order !== 0 || aggregates === null || bytes === undefined) return order
    return aggregates.compare(aggregates.encode(mine.states), bytes)
  }

  #keepTombstone(key: string, fragment: SessionFragment): void {
    let dead = this.#tombstones.get(key)
    if (dead === undefined) {
      dead = new Map()
      this.#tombstones.set(key, dead)
    }
    dead.set(fragmentId(fragment.source, fragment.start), fragment)
  }

  /** Tombstones of absorbed fragments (own and peers'), for a full-state exchange. */
  *tombstones(): IterableIterator<[string, SessionFragment]> {
    for (const [key, dead] of this.#tombstones) for (const f of dead.values()) yield [key, f]
  }

  mergeRemote(groups: readonly CellGroup[], frontiers: RemoteFrontiers, tracker: WindowTracker): MergeCounts {
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
        const states = cell.count === 0 ? null : (decoded?.[i] ?? this.aggregates?.init() ?? null)
        list.push({ start: group.start, source: group.source, cell, states, bytes: group.aggregates?.[i] })
      }
    }
    for (const [key, list] of byKey) {
      const c = this.#mergeKey(key, list, frontiers, tracker)
      counts.applied += c.applied
      counts.stale += c.stale
      counts.expired += c.expired
      counts.finalityViolations += c.finalityViolations
      counts.invalid += c.invalid
    }
    return counts
  }

  #mergeKey(key: string, entries: readonly RemoteCell[], frontiers: RemoteFrontiers, tracker: WindowTracker): MergeCounts {
    const counts: MergeCounts = { applied: 0, stale: 0, expired: 0, finalityViolations: 0, invalid: 0 }
    const gap = this.#gap
    const sessions = this.#byKey.get(key) ?? []
    const owner = new Map<string, WindowState>()
    const fragments = new Map<string, SessionFragment>()
    for (const s of sessions) {
      for (const f of s.fragments) {
        const id = fragmentId(f.source, f.start)
        owner.set(id, s)
        fragments.set(id, f)
      }
    }
    const horizon = frontiers.watermark - frontiers.lateness - frontiers.retention
    const tombstones = this.#tombstones.get(key)
    if (tombstones !== undefined) {
      for (const [id, f] of tombstones) {
        if (Math.max(f.start, f.cell.maxTs) + gap <= horizon) tombstones.delete(id)
        else fragments.set(id, f)
      }
    }
    const changed = new Set<string>()
    const sealed = this.#sealed.get(key) ?? Number.NEGATIVE_INFINITY
    for (const { start, source, cell, states, bytes } of entries) {
      if (!(cell.maxTs >= start) && cell.count > 0) {
        counts.invalid++
        continue
      }
      const reachEnd = Math.max(start, cell.maxTs) + gap
      if (start < sealed || reachEnd + frontiers.lateness + frontiers.retention <= frontiers.watermark) {
        counts.expired++
        continue
      }
      const id = fragmentId(source, start)
      const mine = fragments.get(id)
      if (mine !== undefined && this.#order(mine, cell, bytes) >= 0) {
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
    if (dead.size > 0) this.#tombstones.set(key, dead)
    else this.#tombstones.delete(key)
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
      const target = this.#join(key, olds, 0, olds.length, start, end, frontiers, tracker)
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
      this.#count--
    }
    if (next.length === 0) this.#byKey.delete(key)
    else this.#byKey.set(key, next)
    return counts
  }

  adopt(window: WindowState): void {
    let sessions = this.#byKey.get(window.key)
    if (sessions === undefined) {
      sessions = []
      this.#byKey.set(window.key, sessions)
    }
    const at = this.#firstEndingAfter(sessions, window.start)
    sessions.splice(at, 0, window)
    this.#count++
  }

  snapshot(): SessionIndexSnapshot {
    return {
      window: this.id,
      sealed: [...this.#sealed],
      tombstones: [...this.#tombstones].map(([key, dead]) => [key, [...dead.values()].map((f) => [f.source, f.start, { ...f.cell }] as const)] as const),
    }
  }

  restore(snapshot: SessionIndexSnapshot | SliceIndexSnapshot): void {
    if (!('sealed' in snapshot)) return
    for (const [key, end] of snapshot.sealed) this.#sealed.set(key, end)
    for (const [key, dead] of snapshot.tombstones) {
      this.#tombstones.set(key, new Map(dead.map(([source, start, cell]) => [fragmentId(source, start), { source, start, cell: { ...cell }, states: null }])))
    }
  }

  find(key: string, start: number): WindowState | undefined {
    const sessions = this.#byKey.get(key)
    if (sessions === undefined) return undefined
    const i = this.#firstEndingAfter(sessions, start)
    const s = sessions[i]
    return s !== undefined && s.start === start ? s : undefined
  }

  remove(window: WindowState, expired: ExpiredCell): void {
    const sessions = this.#byKey.get(window.key)
    if (sessions === undefined) return
    const i = sessions.indexOf(window)
    if (i < 0) return
    for (const f of window.fragments) expired(this.id, window.key, f.start, f.source)
    sessions.splice(i, 1)
    if (sessions.length === 0) this.#byKey.delete(window.key)
    if (window.end > (this.#sealed.get(window.key) ?? Number.NEGATIVE_INFINITY)) this.#sealed.set(window.key, window.end)
    // Copies of fragments below a sealed end are refused as expired: their tombstones can go.
    const dead = this.#tombstones.get(window.key)
    if (dead !== undefined) {
      for (const [id, f] of dead) if (f.start < window.end) dead.delete(id)
      if (dead.size === 0) this.#tombstones.delete(window.key)
    }
    window.live = false
    this.#count--
  }

  *windows(): IterableIterator<WindowState> {
    for (const sessions of this.#byKey.values()) yield* sessions
  }

  windowsOf(key: string): Iterable<WindowState> {
    return this.#byKey.get(key) ?? []
  }

  horizon(frontiers: BatchFrontiers): number {
    return frontiers.watermark - frontiers.lateness - this.#gap
  }

  takes(window: string): boolean {
    return window === this.id
  }

  gauges(): { cells: number; pending: number } {
    let cells = 0
    let pending = 0
    for (const w of this.windows()) {
      cells += w.fragments.length
      if (!w.fired) pending += w.count()
    }
    return { cells, pending }
  }

  liveCells(out: CellEntry[]): void {
    const aggregates = this.aggregates
    const entry = (key: string, f: SessionFragment): CellEntry => {
      const address = { window: this.id, key, start: f.start, source: f.source }
      return aggregates === null ? { address, cell: f.cell } : { address, cell: f.cell, aggregates: aggregates.encode(f.states) }
    }
    for (const w of this.windows()) for (const f of w.fragments) out.push(entry(w.key, f))
    for (const [key, f] of this.tombstones()) out.push(entry(key, f))
  }
}

function fragmentId(source: string, start: number): string {
  return `${start}\u0000${source}`
}
