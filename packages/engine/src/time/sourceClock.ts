import type { StreamEvent } from '../input/event.ts'
import type { ClockChanges } from './clockChanges.ts'
import { SeqRing } from './seqRing.ts'

/** What a source clock remembers of an event: its seq, id and event time. */
export type EventStamp = Pick<StreamEvent, 'seq' | 'id' | 'ts'>

/** A source's clock as replicated: single-writer, newer `version` wins. */
export interface ClockEntry {
  readonly source: string
  /** Replica that writes this source. */
  readonly writer: string
  readonly maxTs: number
  /** Highest seq with 1..prefix all seen. */
  readonly prefix: number
  /** Largest ts in the gap-free prefix. */
  readonly prefixTs: number
  /** False once the source can prove nothing (ts went backwards along seq, or no seq). */
  readonly provable: boolean
  /** True once its writer finished the source (`engine.finishSource`); absent from peers that predate it. */
  readonly finished?: boolean
  readonly version: number
}

/**
 * One source's clock as a checkpoint keeps it (an entry of `FrontiersSnapshot.sources`): what
 * `SourceClock.snapshot()` gives and `SourceClock.restore` takes.
 */
export interface SourceClockSnapshot {
  readonly name: string
  readonly writer: string
  readonly version: number
  readonly maxTs: number
  readonly lastSeen: number
  readonly prefix: number
  /** Highest seq remembered, also above a gap whose dedup memory was released (what `engine.nextSeq` counts from). */
  readonly highestSeq: number
  readonly prefixTs: number
  readonly lastPrefixTs: number
  readonly provable: boolean
  /** The source was finished (absent from checkpoints that predate finishing). */
  readonly finished?: boolean
  /** [seq, ts] seen above a gap. */
  readonly ahead: readonly (readonly [number, number])[]
  /** [id, ts] of events without seq. */
  readonly ids: readonly (readonly [string, number])[]
}

/**
 * Per-source clock and dedup memory (docs/semantics.md: duplicates, the proof frontier).
 *
 * With `seq`, dedup costs one comparison on the in-order path: every seq at or
 * below the gap-free prefix is a duplicate, and only seqs that arrive ahead of
 * a gap are remembered individually. Without `seq`, ids are remembered with
 * their event time so that memory can be released behind the lateness horizon.
 */
export class SourceClock {
  readonly name: string
  /** Small integer unique among this engine's sources: where window indexes keep per-source caches. */
  readonly slot: number
  /** Largest event time seen from this source (valid, non-duplicate events). */
  maxTs = Number.NEGATIVE_INFINITY
  /** Processing time of the last event. */
  lastSeen: number
  /** Highest seq such that 1..prefix were all seen. */
  prefix = 0
  /** Largest ts in the gap-free prefix. */
  prefixTs = Number.NEGATIVE_INFINITY
  /** False once ts decreased along seq, or an event came without seq: the source can prove nothing. */
  provable = true
  /** Seqs seen above a gap, with their ts. */
  readonly ahead = new SeqRing()
  /**
   * Highest seq ever remembered above the gap-free prefix (0: none). Kept apart from `ahead`,
   * whose entries are released behind the lateness horizon, so `highestSeq()` never goes back;
   * updated on the out-of-order path only, so the in-order path pays nothing for it. Never below
   * a seq held in `ahead`, which `seen()` relies on.
   */
  aheadMax = 0
  /** Ids of events without seq, with their ts: made by the first such event (see `ids`). */
  #ids: Map<string, number> | null = null
  /**
   * The writer promised that the source sends nothing more (`engine.finishSource`): it no longer
   * holds the watermark back, counts as complete for the proof frontier, and any later event of
   * it is refused. Never undone.
   */
  finished = false
  /** Replica that writes this source ('' when not replicated). */
  writer = ''
  /** Bumped on every change, so replicas keep the newest copy of a single-writer clock. */
  version = 0
  /**
   * The clock of the source whose event placement placed next after this one's, last time (null:
   * none yet; learnt only among many sources). Uploads list their sources in much the same order
   * each time (a gateway's devices in turn, a backlog's run of one source), so placement tries it
   * before a lookup by name. Clocks are never replaced, so it is always one of the engine's.
   */
  next: SourceClock | null = null
  /**
   * The look of the frontiers' `ClockChanges` in which this clock last reported a change (-1:
   * never): the frontiers follow the clocks that changed, not every clock.
   */
  changedIn = -1
  /**
   * Ids of events without seq, with their ts. Made on first use: a source that sends seqs never
   * needs one, and an engine following thousands of sources would otherwise make a Map for each.
   *
   * @example
   * clock.remember({ seq: undefined, id: 'a', ts: 60_000 }, now)
   * clock.ids.get('a') // 60000
   */
  get ids(): Map<string, number> {
    if (this.#ids === null) this.#ids = new Map()
    return this.#ids
  }

  /** Ts of the event at `prefix` (NaN when a peer's clock did not say), to detect a clock going backwards along seq. */
  #lastPrefixTs = Number.NEGATIVE_INFINITY
  /** Where the frontiers that own this clock hear of its changes (null: a clock no frontiers follow). */
  readonly #changes: ClockChanges<SourceClock> | null

  constructor(name: string, now: number, slot = 0, changes: ClockChanges<SourceClock> | null = null) {
    this.name = name
    this.lastSeen = now
    this.slot = slot
    this.#changes = changes
  }

  /**
   * Tells the frontiers this clock changed: what `remember`, `adopt` and `finish` do. `record`
   * leaves it to its caller, which on the path of every event lists the clock itself
   * (`ClockChanges.note`, once per clock and batch: a call in `record` kept the optimizer from
   * inlining it), as does a caller that sets `maxTs` itself.
   *
   * @example
   * clock.maxTs = Math.max(clock.maxTs, entry.maxTs)
   * clock.changed()
   */
  changed(): void {
    this.#changes?.note(this)
  }

  /** True when this `(seq)` or `(id)` was already counted. */
  seen(seq: number | undefined, id: string): boolean {
    if (seq === undefined) return this.#ids?.has(id) === true
    // Every seq held in `ahead` is at most `aheadMax`: the next seq of a source with a gap
    // pending (most of a reordered upload) is above it, and needs no lookup.
    return seq <= this.prefix || (seq <= this.aheadMax && this.ahead.has(seq))
  }

  /**
   * For an event `seen()` reported, why its event time proves it is not the event first taken
   * under this `(seq)` or `(id)`, or null when nothing proves it. Called on the duplicate path
   * only. What can be checked is what the clock keeps anyway: the ts of each event remembered
   * individually (ids, seqs above a gap, the seq at the prefix) must be equal, and a seq inside
   * the gap-free prefix cannot have a ts later than the prefix's latest. Keys and values are
   * not kept, so they are not compared. It takes the event, as `remember` does: its ts passed as
   * a number would be boxed on the path of every event, not only of the duplicates.
   *
   * @example
   * clock.remember({ seq: 1, id: 'd1-1', ts: 60_000 }, now)
   * clock.conflict({ seq: 1, id: 'd1-1', ts: 61_000 }) // "seq 1 of source 'd1' was first taken with ts 60000; …"
   */
  conflict(event: EventStamp): string | null {
    const { seq, id, ts } = event
    let first: number | undefined
    if (seq === undefined) first = this.#ids?.get(id)
    else if (seq > this.prefix) first = this.ahead.get(seq)
    else if (seq === this.prefix && !Number.isNaN(this.#lastPrefixTs)) first = this.#lastPrefixTs
    else {
      if (ts <= this.prefixTs) return null
      return `seq ${seq} of source '${this.name}' was first taken at or before ts ${this.prefixTs}; this copy has ts ${ts} (the first delivery wins)`
    }
    if (first === undefined || first === ts) return null
    const what = seq === undefined ? `id '${id}'` : `seq ${seq}`
    return `${what} of source '${this.name}' was first taken with ts ${first}; this copy has ts ${ts} (the first delivery wins)`
  }

  /**
   * Records a valid, non-duplicate event seen at processing time `now`: `lastSeen`, then what
   * `record` records.
   *
   * @example
   * const clock = new SourceClock('d1', now)
   * clock.remember({ seq: 1, id: 'd1-1', ts: 60_000 }, now)
   * clock.prefix // 1
   */
  remember(event: EventStamp, now: number): void {
    this.lastSeen = now
    this.record(event)
    this.changed()
  }

  /**
   * Records a valid, non-duplicate event, leaving `lastSeen` and `changed()` to the caller: advances the version,
   * the largest event time, the seq prefix and the dedup memory. For hot paths that set
   * `lastSeen` themselves: a number passed to a function the optimizer does not inline is boxed,
   * a heap allocation per event, which is also why it takes the event rather than its fields.
   *
   * @example
   * clock.lastSeen = now
   * clock.record({ seq: 2, id: 'd1-2', ts: 61_000 })
   */
  record(event: EventStamp): void {
    const { seq, id, ts } = event
    this.version++
    if (ts > this.maxTs) this.maxTs = ts
    if (seq === undefined) {
      this.ids.set(id, ts)
      this.provable = false
      return
    }
    if (seq !== this.prefix + 1) {
      // Above a gap, earlier than the prefix's end: ts went backwards along seq, whatever fills the gap.
      if (ts < this.#lastPrefixTs) this.provable = false
      // Not seen, so not held.
      this.ahead.add(seq, ts)
      if (seq > this.aheadMax) this.aheadMax = seq
      return
    }
    // The prefix grows by this event, then by each seq held ahead that now joins it. One loop, not
    // a helper taking `ts`: a call the optimizer does not inline would box it, per seq.
    const ahead = this.ahead
    let next = seq
    let nextTs = ts
    for (;;) {
      if (nextTs < this.#lastPrefixTs) this.provable = false
      this.#lastPrefixTs = nextTs
      this.prefix = next
      if (nextTs > this.prefixTs) this.prefixTs = nextTs
      if (ahead.size === 0 || !ahead.holds(next + 1)) break
      next++
      nextTs = ahead.foundTs
    }
    ahead.advanceBase(this.prefix)
  }

  /**
   * Marks the source finished (its writer's promise that nothing more comes): a new version, so
   * every peer that takes it keeps it over any older copy.
   *
   * @example
   * clock.finish()
   * clock.proof() // Infinity
   */
  finish(): void {
    if (this.finished) return
    this.finished = true
    this.version++
    this.changed()
  }

  /** Highest seq this clock has remembered (0 when none): the prefix, or a seq seen above a gap. */
  highestSeq(): number {
    return Math.max(this.prefix, this.aheadMax)
  }

  /** Takes a peer's copy of this clock (the peer writes the source; it has no dedup memory here). */
  adopt(state: ClockEntry, now: number): void {
    this.writer = state.writer
    this.version = state.version
    this.maxTs = Math.max(this.maxTs, state.maxTs)
    this.prefix = state.prefix
    this.prefixTs = state.prefixTs
    // A provable clock's ts never decreased along seq, so its last prefix ts is its largest; otherwise it is unknown here.
    this.#lastPrefixTs = state.provable ? state.prefixTs : Number.NaN
    this.provable = state.provable
    this.finished = state.finished === true
    this.lastSeen = now
    this.changed()
  }

  snapshot(): SourceClockSnapshot {
    return {
      name: this.name,
      writer: this.writer,
      version: this.version,
      maxTs: this.maxTs,
      lastSeen: this.lastSeen,
      prefix: this.prefix,
      highestSeq: this.highestSeq(),
      prefixTs: this.prefixTs,
      lastPrefixTs: this.#lastPrefixTs,
      provable: this.provable,
      finished: this.finished,
      ahead: [...this.ahead],
      ids: this.#ids === null ? [] : [...this.#ids],
    }
  }

  static restore(s: SourceClockSnapshot, slot = 0, changes: ClockChanges<SourceClock> | null = null): SourceClock {
    const clock = new SourceClock(s.name, s.lastSeen, slot, changes)
    clock.writer = s.writer
    clock.version = s.version
    clock.maxTs = s.maxTs
    clock.prefix = s.prefix
    clock.prefixTs = s.prefixTs
    clock.#lastPrefixTs = s.lastPrefixTs
    clock.provable = s.provable
    clock.finished = s.finished === true
    clock.ahead.advanceBase(s.prefix)
    for (const [seq, ts] of s.ahead) clock.ahead.set(seq, ts)
    // A checkpoint without `highestSeq` predates it: the seqs still in dedup memory are the best it knows.
    let highest = typeof s.highestSeq === 'number' ? s.highestSeq : 0
    for (const [seq] of s.ahead) if (seq > highest) highest = seq
    clock.aheadMax = highest > s.prefix ? highest : 0
    for (const [id, ts] of s.ids) clock.ids.set(id, ts)
    return clock
  }

  /** This clock as replicated. */
  entry(): ClockEntry {
    const entry: ClockEntry = {
      source: this.name,
      writer: this.writer,
      maxTs: this.maxTs,
      prefix: this.prefix,
      prefixTs: this.prefixTs,
      provable: this.provable,
      version: this.version,
    }
    // Only a finished clock says so: peers and logs that predate finishing read the rest as before.
    return this.finished ? { ...entry, finished: true } : entry
  }

  /** This source's contribution to the proof frontier P: everything, once finished (nothing unseen can come from it). */
  proof(): number {
    if (this.finished) return Number.POSITIVE_INFINITY
    return this.provable ? this.prefixTs : Number.NEGATIVE_INFINITY
  }

  /** Entries held in dedup memory. */
  dedupEntries(): number {
    return this.ahead.size + (this.#ids?.size ?? 0)
  }

  /**
   * Releases dedup memory for events with `ts < horizon`: any copy of them that
   * arrives later is beyond lateness for every window, so it cannot be counted twice.
   * Returns how many entries were released.
   */
  forgetBefore(horizon: number): number {
    let released = 0
    const ids = this.#ids
    if (ids !== null && ids.size > 0) {
      // `forEach`, not `for…of`: no entry array per id.
      ids.forEach((ts, id) => {
        if (ts < horizon) {
          ids.delete(id)
          released++
        }
      })
    }
    // The prefix stops below a released seq until a copy arrives again (as a late event),
    // which keeps P conservative rather than wrong.
    if (this.ahead.size > 0) released += this.ahead.forgetBefore(horizon)
    return released
  }
}
