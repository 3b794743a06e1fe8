import type { ResultQuery, WindowChange, WindowChangeType, WindowResult } from '@tidemark/engine'
import type { MirroredOptions } from '../protocol/messages.ts'
import { forEachRow, type RowKind, type WindowRows } from '../protocol/windowRows.ts'
import { AddressMap } from '../common/addressMap.ts'
import { addressOf, isSessionSpec, positionOf, sharesStart, specSize, type WindowAddress } from '../common/windowAddress.ts'
import { ExpiryQueue } from './expiryQueue.ts'
import { KeyWindows } from './keyWindows.ts'

/**
 * The latest end a window at `address` can have, as far as its address tells: a cumulating
 * window's end, a fixed-size window's start plus its size, a session's start (it holds an event
 * at its start, and one at that time is beyond lateness once the watermark passed it).
 */
function lastEnd(address: WindowAddress): number {
  if (sharesStart(address.window)) return positionOf(address)
  const size = specSize(address.window)
  return Number.isNaN(size) ? address.start : address.start + size
}

/** The change type a snapshot row stands for, given what the mirror held before. */
function snapshotType(previous: WindowResult | undefined, next: WindowResult): WindowChangeType {
  // A `final` change repeats the window's last pane; a pane that is final already is a new pane.
  if (previous !== undefined && !previous.final && next.final && previous.revision === next.revision && previous.status === next.status && previous.pane.index === next.pane.index) {
    return 'final'
  }
  return next.status === 'provisional' ? 'provisional' : next.status === 'on_time' ? 'on_time' : 'correction'
}

/** A session window's spec and key, as one map key. */
function sessionGroup(result: WindowAddress): string {
  return `${result.window}\u0000${result.key}`
}

/** The session windows of `results`, by spec and key. */
function sessionsOf(results: AddressMap<WindowResult>): Map<string, WindowResult[]> {
  const groups = new Map<string, WindowResult[]>()
  results.forEach((result) => {
    if (!isSessionSpec(result.window)) return
    const group = sessionGroup(result)
    const sessions = groups.get(group)
    if (sessions === undefined) groups.set(group, [result])
    else sessions.push(result)
  })
  return groups
}

/** Two results show the same thing. */
function sameResult(a: WindowResult, b: WindowResult): boolean {
  return (
    a.end === b.end &&
    a.revision === b.revision &&
    a.status === b.status &&
    a.final === b.final &&
    a.basis === b.basis &&
    a.pane.timing === b.pane.timing &&
    a.pane.index === b.pane.index &&
    a.pane.onTimeIndex === b.pane.onTimeIndex &&
    Object.is(a.count, b.count) &&
    Object.is(a.sum, b.sum) &&
    Object.is(a.min, b.min) &&
    Object.is(a.max, b.max) &&
    Object.is(a.mean, b.mean) &&
    sameAggregates((a as { aggregates?: unknown }).aggregates, (b as { aggregates?: unknown }).aggregates)
  )
}

/** Two results' `aggregates` show the same values (a user aggregate's object result: the same object). */
function sameAggregates(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b
  const x = a as Readonly<Record<string, unknown>>
  const y = b as Readonly<Record<string, unknown>>
  const names = Object.keys(x)
  return names.length === Object.keys(y).length && names.every((name) => Object.hasOwn(y, name) && sameValue(x[name], y[name]))
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => Object.is(v, b[i]))
  return Object.is(a, b)
}

/**
 * The page's copy of the host engine's live windows, kept in step by frames, so `results()`
 * answers synchronously with the engine's order (spec id, key, start, end) and the same
 * windows: changed windows arrive as rows; final windows leave at the watermark the engine
 * drops them at; the history of a window is kept once the page asked for it.
 */
export class WindowMirror {
  readonly #specs = new Map<string, Map<string, KeyWindows>>()
  #sortedSpecs: string[] | null = null
  readonly #sortedKeys = new Map<string, string[]>()
  readonly #histories = new AddressMap<WindowResult[]>()
  readonly #expiry = new ExpiryQueue()
  #options: MirroredOptions = { allowedLateness: 0, retention: 60_000, accumulation: 'accumulating', aggregates: [] }
  #size = 0
  /** The watermark of the last sweep for watched windows that can no longer be. */
  #sweptAt = Number.NEGATIVE_INFINITY
  /** Keys of all specs together, for the bound of `#names`. */
  #keys = 0
  /** One copy of each window id and key: a frame's strings are fresh copies, and 10,000 results would hold 20,000 of them. */
  #names = new Map<string, string>()

  #intern = (text: string): string => {
    const kept = this.#names.get(text)
    if (kept !== undefined) return kept
    // Bounded by the live keys: names of keys that left are dropped with the rest now and then.
    if (this.#names.size > 2 * (this.#keys + this.#specs.size) + 256) this.#names = new Map()
    this.#names.set(text, text)
    return text
  }

  /** Live windows held. */
  get size(): number {
    return this.#size
  }

  set options(options: MirroredOptions) {
    this.#options = options
  }

  get(address: WindowAddress): WindowResult | undefined {
    return this.#specs.get(address.window)?.get(address.key)?.get(address.start, positionOf(address))
  }

  /**
   * Applies a frame's rows; pushes one `WindowChange` per change row to `changes`, and to
   * `unwatched` each watched window the frame retracted (its history is no longer kept: a
   * session withdrawn under this identity has none of its own any more). Returns the watched
   * windows whose whole history arrived.
   */
  apply(rows: WindowRows, changes: WindowChange[], unwatched: WindowAddress[]): WindowAddress[] {
    const resets: WindowAddress[] = []
    const history = this.#historyRows(resets)
    forEachRow(rows, (kind, result, hadPrevious) => {
      if (history(kind, result)) return
      if (kind === 'retract') {
        // What the page showed is what it withdraws: the host folds a window's changes of one
        // frame into its last, so the page may never have been shown the window (a session born
        // and moved within the frame), or shown an earlier result of it.
        const held = this.#delete(result)
        if (this.#histories.delete(result)) unwatched.push(addressOf(result))
        if (held !== undefined) changes.push({ type: 'retract', result: held, pane: held.pane })
        return
      }
      const previous = this.#set(result)
      changes.push(this.#carriesPrevious(kind, hadPrevious) && previous !== undefined ? { type: kind, result, pane: result.pane, previous } : { type: kind, result, pane: result.pane })
    }, this.#intern)
    return resets
  }

  /**
   * Replaces everything with a host's snapshot rows (a first welcome, a new host after a
   * takeover, or the host's whole state after this page lagged too far) and pushes the changes
   * that turn the old content into the new: a change for each window that differs, and for each
   * window the snapshot lacks a retraction, or nothing when the watermark (the snapshot's) has
   * passed its end plus `allowedLateness` and `retention`: it left the host's live state as a
   * final window does, and leaves here as it would at that watermark (unless it is a session a
   * live one of the snapshot covers: that one swallowed it). A snapshot says nothing of
   * the panes between (discarding panes the page never saw are not in it): its changes carry
   * `previous` only where an accumulating correction replaces what the page held. Watched
   * windows' histories in the rows replace the ones held; a watched window that left is no
   * longer watched (pushed to `unwatched`), and with `newHost` neither is one the snapshot lacks
   * (the new host was never asked for it). Returns the watched windows whose whole history arrived.
   */
  replace(rows: WindowRows, changes: WindowChange[], unwatched: WindowAddress[], watermark: number, newHost: boolean): WindowAddress[] {
    const next = new AddressMap<WindowResult>()
    const resets: WindowAddress[] = []
    const history = this.#historyRows(resets)
    forEachRow(
      rows,
      (kind, result) => {
        if (!history(kind, result) && kind !== 'retract') next.set(result, result)
      },
      this.#intern,
    )
    const gone: WindowResult[] = []
    for (const [, byKey] of this.#specs) for (const [, windows] of byKey) for (const result of windows.results) if (!next.has(result)) gone.push(result)
    const expired = (result: WindowResult): boolean => this.#leftBy(result, watermark)
    const successors = gone.some((result) => isSessionSpec(result.window) && expired(result)) ? sessionsOf(next) : null
    for (const result of gone) {
      this.#delete(result)
      if (this.#histories.delete(result)) unwatched.push(addressOf(result))
      // A session the page knew with an end long past may have grown since, then been swallowed
      // by a session that is live: that one covers it, and the page's copy is withdrawn.
      const swallowed = successors !== null && isSessionSpec(result.window) && (successors.get(sessionGroup(result))?.some((s) => s.start <= result.start && s.end >= result.end) ?? false)
      if (!expired(result) || swallowed) changes.push({ type: 'retract', result, pane: result.pane })
    }
    next.forEach((result) => {
      const previous = this.get(result)
      if (previous !== undefined && sameResult(previous, result)) return
      this.#set(result)
      const type = snapshotType(previous, result)
      changes.push(this.#carriesPrevious(type, false) && previous !== undefined ? { type, result, pane: result.pane, previous } : { type, result, pane: result.pane })
    })
    if (newHost) {
      const lacking: WindowAddress[] = []
      this.#histories.forEach((_, address) => {
        if (!next.has(address)) lacking.push(address)
      })
      for (const address of lacking) {
        this.#histories.delete(address)
        unwatched.push(address)
      }
    }
    return resets
  }

  /**
   * Takes a frame's rows one by one and keeps its history rows: a `history-reset` row starts the
   * whole history of a watched window (pushed to `resets`), the `history` rows after it fill
   * it. Says whether the row was one of those.
   */
  #historyRows(resets: WindowAddress[]): (kind: RowKind, result: WindowResult) => kind is 'history' | 'history-reset' {
    /** The history the `history` rows go to: the one the last `history-reset` row started. */
    let history: WindowResult[] | null = null
    return (kind, result): kind is 'history' | 'history-reset' => {
      if (kind === 'history') {
        history?.push(result)
        return true
      }
      history = null
      if (kind !== 'history-reset') return false
      if (this.#histories.has(result)) {
        history = []
        this.#histories.set(result, history)
        resets.push(addressOf(result))
      }
      return true
    }
  }

  /**
   * Whether a change of `type` gets the result the page held as `previous`. Accumulating mode:
   * every correction, as the engine's (the page may have been sent only a window's last change
   * of a frame, and what it replaces is what the page held). Discarding mode, where every pane
   * reaches the page: where the engine's change had one (`hadPrevious`), a pane carrying the whole window.
   */
  #carriesPrevious(type: WindowChangeType, hadPrevious: boolean): boolean {
    return this.#options.accumulation === 'discarding' ? hadPrevious : type === 'correction'
  }

  /**
   * Drops the final windows the watermark has moved past `end + allowedLateness + retention`,
   * and stops watching the windows that are not live and can no longer be (the watermark passed
   * their end plus `allowedLateness`, so every event they could hold is beyond lateness: a
   * window read before it existed, or whose session was withdrawn). Returns the watched ones
   * dropped.
   */
  expire(watermark: number): WindowAddress[] {
    const unwatched: WindowAddress[] = []
    const { allowedLateness } = this.#options
    for (const due of this.#expiry.due(watermark)) {
      const result = this.get(due)
      // A final session a peer grew since it was queued has an entry at its new end's time too.
      if (result === undefined || !result.final || !this.#leftBy(result, watermark)) continue
      this.#delete(result)
      if (this.#histories.delete(result)) unwatched.push(addressOf(result))
    }
    if (watermark > this.#sweptAt && this.#histories.size > 0) {
      this.#sweptAt = watermark
      const never: WindowAddress[] = []
      this.#histories.forEach((_, address) => {
        if (this.get(address) === undefined && lastEnd(address) + allowedLateness < watermark) never.push(address)
      })
      for (const address of never) {
        this.#histories.delete(address)
        unwatched.push(address)
      }
    }
    return unwatched
  }

  /** The live windows matching `query`, in the engine's order. */
  results(query: ResultQuery = {}): WindowResult[] {
    const out: WindowResult[] = []
    const { window, key, from, to } = query
    for (const spec of this.#specIds()) {
      if (window !== undefined && spec !== window) continue
      const byKey = this.#specs.get(spec) as Map<string, KeyWindows>
      const keys = key === undefined ? this.#keysOf(spec, byKey) : byKey.has(key) ? [key] : []
      for (const k of keys) {
        const windows = byKey.get(k) as KeyWindows
        const results = windows.results
        for (let i = from === undefined ? 0 : windows.from(from); i < results.length; i++) {
          const result = results[i] as WindowResult
          if (to !== undefined && result.start >= to) break
          out.push(result)
        }
      }
    }
    return out
  }

  /** The mirrored history of a watched window (`end` names a cumulating one); undefined when it is not watched. */
  history(address: WindowAddress): readonly WindowResult[] | undefined {
    return this.#histories.get(address)
  }

  /** Starts keeping the history of `address` (empty until the host's first rows for it); false when it was kept already. */
  watch(address: WindowAddress): boolean {
    if (this.#histories.has(address)) return false
    this.#histories.set(address, [])
    return true
  }

  /** Every watched address (to ask a new host for them again). */
  watched(): WindowAddress[] {
    const out: WindowAddress[] = []
    this.#histories.forEach((_, address) => {
      out.push(address)
    })
    return out
  }

  #set(result: WindowResult): WindowResult | undefined {
    let byKey = this.#specs.get(result.window)
    if (byKey === undefined) {
      byKey = new Map()
      this.#specs.set(result.window, byKey)
      this.#sortedSpecs = null
    }
    let windows = byKey.get(result.key)
    if (windows === undefined) {
      windows = new KeyWindows(sharesStart(result.window))
      byKey.set(result.key, windows)
      this.#keys++
      this.#sortedKeys.delete(result.window)
    }
    const previous = windows.set(result)
    if (previous === undefined) this.#size++
    // Queued when it turns final, and again when a peer's fragment or tombstone moves a final
    // session's end (it then leaves at its new end's time, as in the engine). With `retention:
    // Infinity` a final window never leaves, not even at the watermark's end.
    const at = this.#leavesAt(result)
    if (result.final && (previous?.final !== true || previous.end !== result.end) && at !== Number.POSITIVE_INFINITY) {
      this.#expiry.push({ at, window: result.window, key: result.key, start: result.start, end: result.end })
    }
    return previous
  }

  /** The watermark at which a final `result` leaves: its end plus `allowedLateness` and `retention` (Infinity with `retention: Infinity`: never). */
  #leavesAt(result: WindowResult): number {
    const { allowedLateness, retention } = this.#options
    return retention === Number.POSITIVE_INFINITY ? Number.POSITIVE_INFINITY : result.end + allowedLateness + retention
  }

  /** Whether `watermark` has passed the time a final `result` leaves at (never with `retention: Infinity`, not even at the end of event time). */
  #leftBy(result: WindowResult, watermark: number): boolean {
    const at = this.#leavesAt(result)
    return at !== Number.POSITIVE_INFINITY && at <= watermark
  }

  /** Removes the window at `address`; returns the result the mirror held, or undefined when it held none. */
  #delete(address: WindowAddress): WindowResult | undefined {
    const byKey = this.#specs.get(address.window)
    const windows = byKey?.get(address.key)
    const held = windows?.delete(address.start, positionOf(address))
    if (byKey === undefined || windows === undefined || held === undefined) return undefined
    this.#size--
    if (windows.results.length > 0) return held
    byKey.delete(address.key)
    this.#keys--
    this.#sortedKeys.delete(address.window)
    if (byKey.size > 0) return held
    this.#specs.delete(address.window)
    this.#sortedSpecs = null
    return held
  }

  #specIds(): string[] {
    this.#sortedSpecs ??= [...this.#specs.keys()].sort()
    return this.#sortedSpecs
  }

  #keysOf(spec: string, byKey: Map<string, KeyWindows>): string[] {
    let keys = this.#sortedKeys.get(spec)
    if (keys === undefined) {
      keys = [...byKey.keys()].sort()
      this.#sortedKeys.set(spec, keys)
    }
    return keys
  }
}
