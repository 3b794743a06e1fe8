import { absorbCell, addToCell, emptyCell } from './cell.ts'
import { ADMITTED_LATE, type BatchFrontiers, ON_TIME, REFUSED, type WindowHooks, type WindowIndex } from './windowIndex.ts'
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
  readonly #gap: number
  readonly #byKey = new Map<string, WindowState[]>()
  /**
   * Per key, the largest end of a final session that left live state: an event before it
   * would have joined that session, so it is beyond lateness even after the session is gone.
   */
  readonly #sealed = new Map<string, number>()
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

  place(key: string, source: string, ts: number, value: number, frontiers: BatchFrontiers, hooks: WindowHooks): number {
    const gap = this.#gap
    let sessions = this.#byKey.get(key)
    if (sessions === undefined) {
      sessions = []
      this.#byKey.set(key, sessions)
    }
    const sealed = this.#sealed.get(key)
    if (sealed !== undefined && ts < sealed) return REFUSED
    // Lateness is judged on the event's own proto-window [ts, ts + gap), as in Beam: which
    // sessions other events of the same batch opened cannot change whether it is admitted.
    if (ts + gap + frontiers.lateness <= frontiers.watermark) return REFUSED
    const [from, to] = this.#overlapping(sessions, ts)
    let start = ts
    let end = ts + gap
    let fired = false
    let revision = -1
    for (let i = from; i < to; i++) {
      const s = sessions[i] as WindowState
      // A final session never changes again: the event is late for it.
      if (s.final) return REFUSED
      if (s.start < start) start = s.start
      if (s.end > end) end = s.end
      if (s.fired) fired = true
      if (s.revision > revision) revision = s.revision
    }
    if (end <= frontiers.firing) fired = true

    let target: WindowState
    if (from === to) {
      target = new WindowState(this.id, key, start, end)
      target.fired = fired
      sessions.splice(from, 0, target)
      this.#count++
      hooks.created(target)
    } else {
      target = sessions[from] as WindowState
      if (target.start !== start) {
        // The session's identity (its start) changes: retract what was shown under the old one.
        hooks.swallowed(target)
        target.emitted = null
        target.start = start
      }
      for (let i = from + 1; i < to; i++) {
        const swallowed = sessions[i] as WindowState
        hooks.swallowed(swallowed)
        for (const fragment of swallowed.fragments) target.fragments.push(fragment)
        swallowed.fragments = []
        swallowed.live = false
      }
      if (to - from > 1) {
        sessions.splice(from + 1, to - from - 1)
        this.#count -= to - from - 1
      }
      target.fired = target.fired || fired
      target.revision = revision
      if (end !== target.end) {
        target.end = end
        hooks.grown(target)
      }
    }
    target.fired = fired
    this.#addToFragment(target, source, ts, value)
    if (target.touchedIn !== frontiers.batch) {
      target.touchedIn = frontiers.batch
      hooks.touched(target)
    }
    return fired ? ADMITTED_LATE : ON_TIME
  }

  /** Adds the event to `source`'s fragment, merging that source's fragments it bridges. */
  #addToFragment(session: WindowState, source: string, ts: number, value: number): void {
    const gap = this.#gap
    let only: SessionFragment | null = null
    let bridged = 0
    for (const f of session.fragments) {
      if (f.source === source && f.cell.count > 0 && f.start < ts + gap && f.cell.maxTs + gap > ts) {
        only = f
        bridged++
      }
    }
    if (bridged === 1 && only !== null && only.start <= ts) {
      addToCell(only.cell, ts, value)
      return
    }
    // A new fragment start: the old fragments become part of a new cell.
    const cell = emptyCell()
    let start = ts
    const kept: SessionFragment[] = []
    for (const f of session.fragments) {
      if (f.source === source && f.cell.count > 0 && f.start < ts + gap && f.cell.maxTs + gap > ts) {
        absorbCell(cell, f.cell)
        if (f.start < start) start = f.start
      } else {
        kept.push(f)
      }
    }
    addToCell(cell, ts, value)
    kept.push({ source, start, cell })
    session.fragments = kept
  }

  find(key: string, start: number): WindowState | undefined {
    const sessions = this.#byKey.get(key)
    if (sessions === undefined) return undefined
    const i = this.#firstEndingAfter(sessions, start)
    const s = sessions[i]
    return s !== undefined && s.start === start ? s : undefined
  }

  remove(window: WindowState): void {
    const sessions = this.#byKey.get(window.key)
    if (sessions === undefined) return
    const i = sessions.indexOf(window)
    if (i < 0) return
    sessions.splice(i, 1)
    if (sessions.length === 0) this.#byKey.delete(window.key)
    if (window.end > (this.#sealed.get(window.key) ?? Number.NEGATIVE_INFINITY)) this.#sealed.set(window.key, window.end)
    window.live = false
    this.#count--
  }

  *windows(): IterableIterator<WindowState> {
    for (const sessions of this.#byKey.values()) yield* sessions
  }

  horizon(frontiers: BatchFrontiers): number {
    return frontiers.watermark - frontiers.lateness - this.#gap
  }
}
