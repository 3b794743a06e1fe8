import type { Anomaly, AnomalyReason } from '../input/anomaly.ts'
import type { DedupMemory } from './dedupMemory.ts'
import type { LateEventSink, PlacementOptions, WriteOutbox } from './placementPorts.ts'
import { copyStreamEvent, type StreamEvent, streamEventOf } from '../input/event.ts'
import { invalidReason } from '../input/eventValidation.ts'
import { PlacementOrder } from '../input/eventOrder.ts'
import { type FutureSources, latestAdmittedTs } from '../input/futureSources.ts'
import type { Frontiers } from '../time/frontiers.ts'
import { finishedDetail } from '../time/sourceFinish.ts'
import type { SourceClock } from '../time/sourceClock.ts'
import { elementOrUnreadable, rejectInput, safeInvalidFields, UNREADABLE } from '../input/inputRejection.ts'
import {
  ADMITTED_LATE,
  type BatchFrontiers,
  ON_TIME,
  REFUSED,
  type WindowTracker,
  type WindowIndex,
} from './windowIndex.ts'

/** What placing one batch did, beyond the anomalies it recorded. */
export interface PlacementTally {
  readonly accepted: number
  readonly late: number
  readonly duplicates: number
  /** The part of `duplicates` whose content provably differs from the first delivery (each has an anomaly). */
  readonly conflicting: number
  readonly beyond: number
}

/** What placement reads and writes: the engine's state, shared. */
export interface PlacementState {
  readonly options: PlacementOptions
  readonly replicaId: string
  readonly indexes: readonly WindowIndex[]
  readonly frontiers: Frontiers
  readonly lateLane: LateEventSink
  readonly outbox: WriteOutbox
  readonly dedup: DedupMemory
  readonly anomalies: Record<AnomalyReason, number>
  readonly tracker: WindowTracker
  readonly futureSources: FutureSources
}

/**
 * The ingest hot path: validates, deduplicates and bounds each event of a batch, then places
 * it in every window spec against the frontiers as they stood before the batch (docs/semantics.md: frontiers move between batches).
 * The engine around it counts, logs, advances the frontiers and settles.
 */
export class BatchPlacement {
  readonly #state: PlacementState
  /** Most windows one event can create, over all specs. */
  readonly #maxNewPerEvent: number
  /** Per event of the batch being placed: why it is invalid, or null. */
  readonly #reasons: (AnomalyReason | null)[] = []
  /** Per event of the batch being placed that is not a plain object: its fields, read once (else a hole). */
  readonly #copies: (StreamEvent | undefined)[] = []
  #copied = false
  /**
   * The batch had an element that throws when read (a Proxy over an array): every element was
   * read once into `#copies` (`UNREADABLE` for those), which placement reads instead of the batch.
   */
  #detached = false
  /** The aggregates' inputs of the event being placed (reused: placement reads them at once). */
  readonly #inputs: unknown[] = []
  /** The positions of the specs that refused the event being placed (beyond their lateness). */
  readonly #refusedBy: number[] = []
  /** By source slot: the batch that last handed the source's clock to the outbox (once per batch is enough). */
  readonly #clockPublished: number[] = []
  /** With session specs, puts each batch in event order: which session an event joins depends on those placed before it. */
  readonly #order: PlacementOrder | null
  /**
   * With aggregates, every event is placed from a copy of its six fields, as replay places it
   * from the log: an aggregate's `of` (or `add`) that read another field would otherwise count
   * an event live that the log cannot give it again, and the event would vanish after a crash.
   */
  #placeCopies = false
  /** The clock of the last event placed (with many sources: see `#clockAfterLast`); clocks are never replaced. */
  #last: SourceClock | null = null

  constructor(state: PlacementState) {
    this.#state = state
    this.#maxNewPerEvent = state.indexes.reduce((n, index) => n + index.maxNewPerEvent, 0)
    this.#order = state.options.specs.some((spec) => spec.kind === 'session') ? new PlacementOrder() : null
  }

  /**
   * Places `events` at processing time `now`. Refused inputs go to `anomalies` (and, by reason,
   * to `invalid` when `logged` collects the valid ones for the journal).
   */
  place(
    events: readonly StreamEvent[],
    now: number,
    frontiers: BatchFrontiers,
    anomalies: Anomaly[],
    logged: StreamEvent[] | null,
    invalid: Partial<Record<AnomalyReason, number>>,
  ): PlacementTally {
    const { options, replicaId, indexes, outbox, dedup, tracker } = this.#state
    const counts = this.#state.anomalies
    const limits = options.limits
    const sources = this.#state.frontiers.sources
    const changes = this.#state.frontiers.changes
    const n = events.length
    let accepted = 0
    let late = 0
    let duplicates = 0
    let conflicting = 0
    let beyond = 0
    // Later than this is stamped too far ahead of the clock.
    const future = latestAdmittedTs(now, options.maxFutureSkew)
    const reasons = this.#validate(events)
    // Class instances and proxies are placed, logged and kept from the copy their fields were read into.
    const view = this.#detached ? (this.#copies.slice(0, n) as StreamEvent[]) : this.#copied ? events.map((event, i) => this.#copies[i] ?? event) : events
    const order = this.#order?.of(view, reasons) ?? null
    // Far from `maxWindows`, no event of the batch can reach it: no room to check per event.
    const roomy = this.windowCount() + this.#maxNewPerEvent * n <= limits.maxWindows
    const publish = frontiers.publish === true
    const aggregates = options.aggregates
    const inputs = aggregates === null ? null : this.#inputs
    // Among few sources the map's lookup stays in cache, and costs less than following the order.
    const predict = sources.size >= PREDICTED_SOURCES
    for (let k = 0; k < n; k++) {
      const i = order === null ? k : (order[k] as number)
      const event = view[i] as StreamEvent
      const reason = reasons[i] as AnomalyReason | null
      if (reason !== null) {
        rejectInput(anomalies, counts, reason, event, i)
        if (logged !== null) invalid[reason] = (invalid[reason] ?? 0) + 1
        continue
      }
      logged?.push(event)
      // `ts` is only compared here: the paths that pass it on (the refusals, the conflict check)
      // read it from the event again. A number passed on must be boxed, and the optimizer boxes
      // it once for all its uses, where they part: on the path of every event.
      const { id, seq, ts } = event
      if (ts > future) {
        // Logged with the batch: replay, at the logged `now`, refuses it the same way.
        this.#refuseFuture(event, i, now, anomalies)
        continue
      }
      if (aggregates !== null) {
        // Judged on the event alone, before it leaves any trace (a clock, dedup memory); replay judges it again.
        const problem = aggregates.inputs(event, inputs as unknown[])
        if (problem !== null) {
          rejectInput(anomalies, counts, 'invalid_aggregate_input', event, i, problem)
          continue
        }
      }
      // A lookup per event, or among many sources the clock that followed the last one placed
      // (a shortcut for a source repeating its predecessor's costs a comparison of two names
      // whenever sources interleave, more than the lookup saves when they repeat).
      let clock = predict ? this.#clockAfterLast(event.source) : sources.get(event.source)
      if (clock !== undefined && clock.writer !== replicaId) {
        rejectInput(anomalies, counts, 'source_conflict', event, i, `source '${event.source}' is written by replica '${clock.writer}'`)
        continue
      }
      if (clock?.seen(seq, id)) {
        duplicates++
        // Off the in-order path: only copies pay for the check.
        const conflict = clock.conflict(event)
        if (conflict !== null) {
          anomalies.push({ reason: 'conflicting_duplicate', index: i, id, source: event.source, detail: conflict })
          counts.conflicting_duplicate++
          conflicting++
        }
        continue
      }
      if (clock?.finished === true) {
        rejectInput(anomalies, counts, 'finished_source', event, i, finishedDetail(event.source))
        continue
      }
      if (clock === undefined && sources.size >= limits.maxSources) {
        rejectInput(anomalies, counts, 'overflow', event, i, `limits.maxSources (${limits.maxSources}) reached`)
        continue
      }
      if ((seq === undefined || seq !== (clock?.prefix ?? 0) + 1) && dedup.entries >= limits.maxDedupEntries) {
        dedup.purge(indexes, this.#state.frontiers, frontiers)
        if (dedup.entries >= limits.maxDedupEntries) {
          rejectInput(anomalies, counts, 'overflow', event, i, `limits.maxDedupEntries (${limits.maxDedupEntries}) reached`)
          continue
        }
      }
      const key = event.key ?? ''
      if (!roomy && this.windowCount() + this.#maxNewPerEvent > limits.maxWindows && !this.#roomFor(key, event, frontiers)) {
        rejectInput(anomalies, counts, 'overflow', event, i, `limits.maxWindows (${limits.maxWindows}) reached`)
        continue
      }
      // Created only once the event is accepted for placement: a refused first event
      // must not leave a clock that holds the watermark at -Infinity.
      if (clock === undefined) {
        clock = this.#state.frontiers.source(event.source, now)
        clock.writer = replicaId
      }
      if (predict) this.#follow(clock)
      const version = clock.version + 1
      let outcome = 0
      let refused = 0
      for (let s = 0; s < indexes.length; s++) {
        const placed = (indexes[s] as WindowIndex).place(key, clock, version, frontiers, tracker, event, inputs)
        if (placed & REFUSED) this.#refusedBy[refused++] = s
        outcome |= placed
      }
      // Copied into the late lane after the loop over specs: inside it, V8 boxed the event time
      // the copy reads ahead of the loop, for every event.
      if (refused > 0) this.#toLateLane(event, refused)
      if (outcome & (ON_TIME | ADMITTED_LATE)) {
        accepted++
        if (outcome & ADMITTED_LATE) late++
      } else {
        beyond++
      }
      clock.lastSeen = now
      // Only an event out of seq order, or without seq, can add to dedup memory.
      if (seq !== undefined && seq === clock.prefix + 1 && clock.ahead.size === 0) clock.record(event)
      else {
        const before = clock.dedupEntries()
        clock.record(event)
        dedup.remembered(clock.dedupEntries() - before, ts)
      }
      // Listed once per batch for the frontiers, while they follow the clocks that changed.
      if (changes.listing && clock.changedIn !== changes.look) changes.note(clock)
      if (publish && this.#clockPublished[clock.slot] !== frontiers.batch) {
        this.#clockPublished[clock.slot] = frontiers.batch
        outbox.clock(clock)
      }
    }
    if (n > LARGE_BATCH) reasons.length = 0
    if (this.#copied) {
      this.#copies.length = 0
      this.#copied = false
      this.#detached = false
    }
    return { accepted, late, duplicates, conflicting, beyond }
  }

  /**
   * Why each event of the batch is invalid, or null. Checked in a pass of their own: the batch's
   * objects and strings (scattered in the heap) are then fetched from memory many at a time
   * instead of one event at a time. A method of its own, so the placement loop's optimized code
   * keeps its inlining budget for the per-event calls (the source clock's).
   */
  #validate(events: readonly StreamEvent[]): (AnomalyReason | null)[] {
    const reasons = this.#reasons
    this.#placeCopies = this.#state.options.aggregates !== null
    try {
      for (let i = 0; i < events.length; i++) reasons[i] = this.#check(events[i], i)
    } catch {
      // `#check` throws nothing: reading an element did.
      this.#readApart(events)
    }
    return reasons
  }

  /**
   * Validates a batch one of whose elements throws when read (a Proxy over an array): each element
   * is read once, again from the first (what an element answers is what is validated and placed,
   * whatever it answered before), into `#copies`; one that throws is `invalid_event`.
   */
  #readApart(events: readonly StreamEvent[]): void {
    const reasons = this.#reasons
    const copies = this.#copies
    for (let i = 0; i < events.length; i++) {
      copies[i] = undefined
      const input = elementOrUnreadable(events, i)
      if (input === UNREADABLE) {
        reasons[i] = 'invalid_event'
        copies[i] = UNREADABLE as unknown as StreamEvent
        continue
      }
      reasons[i] = this.#check(input, i)
      copies[i] ??= input as StreamEvent
    }
    this.#copied = true
    this.#detached = true
  }

  /**
   * Why input `i` is invalid, or null. A plain object (its prototype `Object.prototype` or null:
   * a literal, parsed JSON) is checked as it is: its fields are plain data properties (a Proxy
   * over one looks the same, and its traps must answer alike each time). Any other object (a
   * class instance, or a Proxy over one) is read once, into a plain copy that placement, the late
   * lane and the log then use: read again, a getter could answer otherwise or throw, and the
   * log's structured clone of an instance would drop fields behind getters.
   */
  #check(input: unknown, i: number): AnomalyReason | null {
    if (typeof input !== 'object' || input === null) return 'invalid_event'
    let id: string
    let prototype: unknown
    try {
      // `id` read first: the input's shape is then known here, and asking for its prototype
      // compiles to a comparison instead of a call. The fields are checked outside this block:
      // inside it, each number read would be copied to the heap.
      id = (input as StreamEvent).id
      prototype = Object.getPrototypeOf(input)
    } catch {
      // A getter threw, or a revoked Proxy: the input cannot be read.
      return 'invalid_event'
    }
    if (prototype !== Object.prototype && prototype !== null) return this.#readOnce(input as StreamEvent, id, i)
    // Its id passed on, not read again: every read of an input of many shapes is a lookup.
    const reason = safeInvalidFields(input, id)
    if (reason === null && this.#placeCopies) {
      // A valid plain object's fields are plain data: read again, they answer the same.
      this.#copies[i] = copyStreamEvent(input as StreamEvent)
      this.#copied = true
    }
    return reason
  }

  /** An input that is not a plain object, its `id` read: the rest of its fields read once, into the copy placed instead. */
  #readOnce(input: StreamEvent, id: string, i: number): AnomalyReason | null {
    let copy: StreamEvent
    try {
      const { source, ts, value, seq, key } = input
      copy = streamEventOf(id, source, ts, value, seq, key)
    } catch {
      return 'invalid_event'
    }
    const reason = invalidReason(copy)
    if (reason === null) {
      this.#copies[i] = copy
      this.#copied = true
    }
    return reason
  }

  /**
   * The clock of source `name`: first the one that followed the clock of the last event placed
   * (uploads list their sources in much the same order each time: a gateway's devices in turn,
   * a backlog's run of one source), one comparison of two names where a lookup probes a large
   * map whose lines are often out of cache; else the lookup.
   */
  #clockAfterLast(name: string): SourceClock | undefined {
    const next = this.#last?.next ?? null
    return next !== null && next.name === name ? next : this.#state.frontiers.sources.get(name)
  }

  /** Notes that `clock`'s event was placed after the last one: learnt from the events placed only, as a re-sent copy says nothing of an upload's order. */
  #follow(clock: SourceClock): void {
    const last = this.#last
    if (last !== null && last.next !== clock) last.next = clock
    this.#last = clock
  }

  /** Copies an event beyond every lateness of the first `refused` specs in `#refusedBy` into the late lane, once per spec. */
  #toLateLane(event: StreamEvent, refused: number): void {
    const { indexes, lateLane } = this.#state
    for (let r = 0; r < refused; r++) {
      lateLane.keep(event, (indexes[this.#refusedBy[r] as number] as WindowIndex).id)
    }
  }

  /** Refuses an event stamped later than `now + maxFutureSkew`, and notes its source. */
  #refuseFuture(event: StreamEvent, i: number, now: number, anomalies: Anomaly[]): void {
    const state = this.#state
    anomalies.push(state.futureSources.refuse(event, i, now, state.options.maxFutureSkew, state.anomalies))
  }

  /** Live windows over all specs. */
  windowCount(): number {
    let n = 0
    for (const index of this.#state.indexes) n += index.size
    return n
  }

  #roomFor(key: string, event: StreamEvent, frontiers: BatchFrontiers): boolean {
    let missing = 0
    for (const index of this.#state.indexes) missing += index.missingWindows(key, event.ts, frontiers)
    return this.windowCount() + missing <= this.#state.options.limits.maxWindows
  }
}

/** Sources from which placement follows the order of the uploads (`SourceClock.next`) before looking a clock up. */
const PREDICTED_SOURCES = 128

/** Events per batch above which the per-event buffer is released after the batch. */
const LARGE_BATCH = 1 << 16
