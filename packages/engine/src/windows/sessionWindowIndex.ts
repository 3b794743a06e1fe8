import type { SessionIndexSnapshot, SliceIndexSnapshot } from './windowSnapshot.ts'
import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'
import type { StreamEvent } from '../input/event.ts'
import { absorbCell, addToCell, copyCell, emptyCell, tombstone } from '../lattice/cell.ts'
import type { CellGroup } from '../lattice/cellGroup.ts'
import type { CellEntry } from '../lattice/cellEntry.ts'
import {
  ADMITTED_LATE,
  type BatchFrontiers,
  type ExpiredCell,
  type MergeCounts,
  ON_TIME,
  type PlacementSource,
  REFUSED,
  type RemoteFrontiers,
  type WindowTracker,
  type WindowIndex,
} from './windowIndex.ts'
import { mergeSessionGroups, type SessionHost } from './sessionMerge.ts'
import { fragmentId, type SessionFragment, WindowState } from './windowState.ts'

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
  /** The watermark from which the next merge prunes tombstones (`#pruneTombstones`). */
  #pruneAt = Number.NEGATIVE_INFINITY
  /** The end of the range `#overlapping` found last. */
  #to = 0
  /** What merging peers' fragments reaches of this index. */
  readonly #host: SessionHost

  constructor(id: string, gap: number) {
    this.id = id
    this.#gap = gap
    this.#host = {
      id,
      gap,
      aggregates: () => this.aggregates,
      byKey: this.#byKey,
      sealed: this.#sealed,
      tombstones: this.#tombstones,
      join: (key, sessions, start, end, frontiers, tracker) => this.#join(key, sessions, 0, sessions.length, start, end, frontiers, tracker),
      dropped: () => {
        this.#count--
      },
    }
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

  /**
   * Range `[from, to)` of sessions overlapping `[ts, ts + gap)`: returns `from`, leaves `to` in
   * `#to` (a pair would be an array per event).
   */
  #overlapping(sessions: readonly WindowState[], ts: number): number {
    const from = this.#firstEndingAfter(sessions, ts)
    let to = from
    while (to < sessions.length && (sessions[to] as WindowState).start < ts + this.#gap) to++
    this.#to = to
    return from
  }

  /**
   * True when an event of `key` at (whole) time `ts` is refused: before the end of the key's
   * sealed sessions, or beyond lateness. Lateness is judged on the event's own proto-window
   * [ts, ts + gap), as in Beam: which sessions other events of the same batch opened cannot
   * change whether it is admitted.
   */
  #refuses(key: string, ts: number, frontiers: BatchFrontiers): boolean {
    const sealed = this.#sealed.get(key)
    return (sealed !== undefined && ts < sealed) || ts + this.#gap + frontiers.lateness <= frontiers.watermark
  }

  missingWindows(key: string, ts: number, frontiers: BatchFrontiers): number {
    const t = Math.floor(ts)
    // An event `place` refuses makes no window.
    if (this.#refuses(key, t, frontiers)) return 0
    const sessions = this.#byKey.get(key)
    if (sessions === undefined) return 1
    return this.#overlapping(sessions, t) === this.#to ? 1 : 0
  }

  place(
    key: string,
    source: PlacementSource,
    version: number,
    frontiers: BatchFrontiers,
    tracker: WindowTracker,
    event: StreamEvent,
    inputs: readonly unknown[] | null,
  ): number {
    const { value } = event
    // Placed by its floor, as in every window kind: session bounds are whole milliseconds.
    const ts = Math.floor(event.ts)
    const gap = this.#gap
    if (this.#refuses(key, ts, frontiers)) return REFUSED
    let sessions = this.#byKey.get(key)
    if (sessions === undefined) {
      sessions = []
      this.#byKey.set(key, sessions)
    }
    const from = this.#overlapping(sessions, ts)
    const to = this.#to
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
    // The event, not its time and value: numbers passed to a call are boxed, per event.
    this.#addToFragment(target, source.name, event, version, tracker, frontiers.publish === true, inputs)
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
      const previousEnd = target.end
      target.end = end
      tracker.grown(target, previousEnd)
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
    event: StreamEvent,
    version: number,
    tracker: WindowTracker,
    publish: boolean,
    inputs: readonly unknown[] | null,
  ): void {
    const { value } = event
    const ts = Math.floor(event.ts)
    const aggregates = this.aggregates
    const fragments = session.fragments
    let only: SessionFragment | null = null
    let own = 0
    // Indexed: an iterator here made two objects per event.
    for (let i = 0; i < fragments.length; i++) {
      const f = fragments[i] as SessionFragment
      if (f.source === source && f.cell.count > 0) {
        only = f
        own++
      }
    }
    if (own === 1 && only !== null && only.start <= ts) {
      addToCell(only.cell, ts, value, version)
      if (inputs !== null && aggregates !== null) aggregates.add(only.states as States, inputs, event)
      if (publish) tracker.written(this.id, session.key, only.start, source, only.cell, only.states)
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
      if (publish) tracker.written(this.id, session.key, f.start, source, dead, null)
    }
    if (publish) tracker.written(this.id, session.key, start, source, cell, states)
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

  /**
   * Peers' fragments, key by key: a key's sessions are rebuilt from all its fragments, its own,
   * its peers' and its tombstones.
   */
  mergeRemote(groups: readonly CellGroup[], frontiers: RemoteFrontiers, tracker: WindowTracker): MergeCounts {
    const counts = mergeSessionGroups(this.#host, groups, frontiers, tracker)
    if (frontiers.watermark >= this.#pruneAt) this.#pruneTombstones(frontiers, tracker)
    return counts
  }

  /**
   * Drops the tombstones of keys without a session here once no copy of their fragment could be
   * merged any more (the horizon a merge of the key would apply): otherwise only a later merge of
   * the key, or a session of it leaving, would. Runs in merges (the only way peers' tombstones
   * come), in the first of each `gap` of watermark, against the horizon at that span's start:
   * which tombstones go depends on the watermark alone, so an engine replaying its log (which
   * knows nothing of when the live one pruned last) keeps exactly the same ones.
   */
  #pruneTombstones(frontiers: RemoteFrontiers, tracker: WindowTracker): void {
    const gap = this.#gap
    const span = Math.floor(frontiers.watermark / gap) * gap
    // With retention Infinity no session leaves live state, so no copy of a fragment stops mattering.
    const horizon = frontiers.retention === Number.POSITIVE_INFINITY ? Number.NEGATIVE_INFINITY : span - frontiers.lateness - frontiers.retention
    this.#pruneAt = span + gap
    for (const [key, dead] of this.#tombstones) {
      if (this.#byKey.has(key)) continue
      for (const [id, f] of dead) {
        if (Math.max(f.start, f.cell.maxTs) + gap > horizon) continue
        dead.delete(id)
        tracker.expired(this.id, key, f.start, f.source)
      }
      if (dead.size === 0) this.#tombstones.delete(key)
    }
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
      this.#tombstones.set(key, new Map(dead.map(([source, start, cell]) => [fragmentId(source, start), { source, start, cell: copyCell(cell), states: null }])))
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
    // Copies of fragments below a sealed end are refused as expired: their tombstones can go,
    // from the replicated state too (this replica's own ones: the outbox expires them).
    const dead = this.#tombstones.get(window.key)
    if (dead !== undefined) {
      for (const [id, f] of dead) {
        if (f.start >= window.end) continue
        dead.delete(id)
        expired(this.id, window.key, f.start, f.source)
      }
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

  liveCells(out: CellEntry[], sources: ReadonlySet<string> | null): void {
    const aggregates = this.aggregates
    const add = (key: string, f: SessionFragment): void => {
      if (sources !== null && !sources.has(f.source)) return
      const address = { window: this.id, key, start: f.start, source: f.source }
      out.push(aggregates === null ? { address, cell: f.cell } : { address, cell: f.cell, aggregates: aggregates.encode(f.states) })
    }
    for (const w of this.windows()) for (const f of w.fragments) add(w.key, f)
    for (const [key, f] of this.tombstones()) add(key, f)
  }
}
