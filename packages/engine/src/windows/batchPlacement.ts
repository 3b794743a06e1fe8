import type { Anomaly, AnomalyReason } from '../core/anomaly.ts'
import type { DedupMemory } from '../core/dedupMemory.ts'
import type { ResolvedOptions } from '../core/engineOptions.ts'
import { copyStreamEvent, invalidAnomaly, type StreamEvent } from '../core/event.ts'
import { placementOrder } from '../ordered/eventOrder.ts'
import type { FutureSources } from '../core/futureSources.ts'
import type { Frontiers } from '../time/frontiers.ts'
import { rejectInput, safeInvalidReason } from '../core/inputRejection.ts'
import type { LateLane } from '../core/lateLane.ts'
import { LARGE_BATCH, type PaneRun, PaneRuns } from './paneRuns.ts'
import type { ReplicationOutbox } from '../replica/replicationOutbox.ts'
import type { SourceClock } from '../time/sourceClock.ts'
import {
  ADMITTED_LATE,
  type BatchFrontiers,
  ON_TIME,
  REFUSED,
  type WindowTracker,
  type WindowIndex,
} from './windowIndex.ts'

/** An index that places whole runs (fixed specs): every window start and end is a multiple of `unit`. */
export interface RunIndex extends WindowIndex {
  readonly unit: number
  placeRun(run: PaneRun, values: Float64Array, next: Int32Array, frontiers: BatchFrontiers, tracker: WindowTracker): number
}

function placesRuns(index: WindowIndex): index is RunIndex {
  return 'placeRun' in index
}

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
  readonly options: ResolvedOptions
  readonly replicaId: string
  readonly indexes: readonly WindowIndex[]
  readonly frontiers: Frontiers
  readonly lateLane: LateLane
  readonly outbox: ReplicationOutbox
  readonly dedup: DedupMemory
  readonly anomalies: Record<AnomalyReason, number>
  readonly tracker: WindowTracker
  readonly futureSources: FutureSources
}

/**
 * Tests only: engines created while `placeEach` is true place every event on its own, the
 * reference that placement by pane runs is checked against.
 */
export const placementReference = { placeEach: false }

/**
 * The ingest hot path: validates, deduplicates and bounds each event of a batch, then places
 * it in every window spec against the frontiers as they stood before the batch (docs/semantics.md: frontiers move between batches).
 * The engine around it counts, logs, advances the frontiers and settles.
 */
export class BatchPlacement {
  readonly #state: PlacementState
  /** Most windows one event can create, over all specs. */
  readonly #maxNewPerEvent: number
  /** Session placement depends on the order of events in a batch, so batches are placed in event order. */
  readonly #hasSessions: boolean
  /** With fixed specs only: the batch's events grouped into runs per source, key and pane (null: place each event). */
  readonly #runs: PaneRuns | null
  readonly #fixed: readonly RunIndex[]
  /** Per event of the batch being placed: why it is invalid, or null. */
  readonly #reasons: (AnomalyReason | null)[] = []

  constructor(state: PlacementState, placeEach = placementReference.placeEach) {
    this.#state = state
    this.#maxNewPerEvent = state.indexes.reduce((n, index) => n + index.maxNewPerEvent, 0)
    this.#hasSessions = state.options.specs.some((spec) => spec.kind === 'session')
    const fixed = state.indexes.filter(placesRuns)
    // Refused specs are a bit mask per run.
    const byRuns = !placeEach && fixed.length === state.indexes.length && fixed.length > 0 && fixed.length <= 30
    this.#fixed = fixed
    this.#runs = byRuns ? new PaneRuns(fixed.reduce((g, index) => gcd(g, index.unit), 0)) : null
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
    const { options, replicaId, indexes, lateLane, outbox, dedup, tracker, futureSources } = this.#state
    const counts = this.#state.anomalies
    const limits = options.limits
    const sources = this.#state.frontiers.sources
    const n = events.length
    let accepted = 0
    let late = 0
    let duplicates = 0
    let conflicting = 0
    let beyond = 0
    let lastClock: SourceClock | undefined
    // Later than this is stamped too far ahead of the clock (NaN when `now` is not a time: then nothing is).
    const future = now + options.maxFutureSkew
    const order = this.#hasSessions ? placementOrder(events) : null
    // Near `maxWindows`, each event's room depends on the windows placed before it: one by one.
    const runs = this.#runs !== null && this.windowCount() + this.#maxNewPerEvent * n <= limits.maxWindows ? this.#runs : null
    runs?.begin(n)
    // Checked in a pass of their own: the batch's objects and strings (scattered in the heap)
    // are then fetched from memory many at a time instead of one event at a time.
    const reasons = this.#reasons
    for (let i = 0; i < n; i++) reasons[i] = safeInvalidReason(events[i])
    for (let k = 0; k < n; k++) {
      const i = order === null ? k : (order[k] as number)
      const event = events[i] as StreamEvent
      const reason = reasons[i] as AnomalyReason | null
      if (reason !== null) {
        rejectInput(anomalies, counts, reason, event, i)
        if (logged !== null) invalid[reason] = (invalid[reason] ?? 0) + 1
        continue
      }
      logged?.push(event)
      const { id, seq, ts, value } = event
      if (ts > future) {
        // Logged with the batch: replay, at the logged `now`, refuses it the same way.
        const detail = `ts ${ts} is ${ts - now} ms ahead of now (${now}); maxFutureSkew is ${options.maxFutureSkew} ms`
        anomalies.push({ ...invalidAnomaly('future_ts', event, i), detail, event: copyStreamEvent(event) })
        counts.future_ts++
        futureSources.note(event.source, ts)
        continue
      }
      let clock = lastClock !== undefined && lastClock.name === event.source ? lastClock : sources.get(event.source)
      if (clock !== undefined && clock.writer !== replicaId) {
        rejectInput(anomalies, counts, 'source_conflict', event, i, `source '${event.source}' is written by replica '${clock.writer}'`)
        continue
      }
      if (clock?.seen(seq, id)) {
        duplicates++
        // Off the in-order path: only copies pay for the check.
        const conflict = clock.conflict(seq, id, ts)
        if (conflict !== null) {
          anomalies.push({ reason: 'conflicting_duplicate', index: i, id, source: event.source, detail: conflict })
          counts.conflicting_duplicate++
          conflicting++
        }
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
      if (runs === null && this.windowCount() + this.#maxNewPerEvent > limits.maxWindows && !this.#roomFor(key, ts, frontiers)) {
        rejectInput(anomalies, counts, 'overflow', event, i, `limits.maxWindows (${limits.maxWindows}) reached`)
        continue
      }
      // Created only once the event is accepted for placement: a refused first event
      // must not leave a clock that holds the watermark at -Infinity.
      if (clock === undefined) {
        clock = this.#state.frontiers.source(event.source, now)
        clock.writer = replicaId
      }
      lastClock = clock
      const version = clock.version + 1
      if (runs !== null) runs.add(clock, key, ts, value, version, i)
      else {
        let outcome = 0
        for (let s = 0; s < indexes.length; s++) {
          const index = indexes[s] as WindowIndex
          const placed = index.place(key, clock, ts, value, version, frontiers, tracker)
          if (placed & REFUSED) lateLane.push({ event: copyStreamEvent(event), window: index.id, reason: 'beyond_lateness' })
          outcome |= placed
        }
        if (outcome & (ON_TIME | ADMITTED_LATE)) {
          accepted++
          if (outcome & ADMITTED_LATE) late++
        } else {
          beyond++
        }
      }
      const before = clock.ahead.size + clock.ids.size
      clock.remember(seq, id, ts, now)
      outbox.clock(clock)
      dedup.entries += clock.ahead.size + clock.ids.size - before
    }
    if (n > LARGE_BATCH) reasons.length = 0
    if (runs === null) return { accepted, late, duplicates, conflicting, beyond }
    const tally = this.#placeRuns(runs, events, frontiers, duplicates, conflicting)
    runs.release()
    return tally
  }

  /**
   * Places the collected runs, in order of their first events, then counts and sends refused
   * events to the late lane in batch order, as placing each event would have.
   */
  #placeRuns(runs: PaneRuns, events: readonly StreamEvent[], frontiers: BatchFrontiers, duplicates: number, conflicting: number): PlacementTally {
    const { lateLane, tracker } = this.#state
    const fixed = this.#fixed
    const { values, next } = runs
    let accepted = 0
    let late = 0
    let beyond = 0
    let anyRefused = 0
    for (let r = 0; r < runs.count; r++) {
      const run = runs.runs[r] as PaneRun
      let outcome = 0
      let refused = 0
      for (let s = 0; s < fixed.length; s++) {
        const placed = (fixed[s] as RunIndex).placeRun(run, values, next, frontiers, tracker)
        if (placed & REFUSED) refused |= 1 << s
        outcome |= placed
      }
      run.refused = refused
      anyRefused |= refused
      if (outcome & (ON_TIME | ADMITTED_LATE)) {
        accepted += run.count
        if (outcome & ADMITTED_LATE) late += run.count
      } else {
        beyond += run.count
      }
    }
    if (anyRefused !== 0) {
      const { runOf, eventAt } = runs
      for (let m = 0; m < runs.placed; m++) {
        const refused = (runs.runs[runOf[m] as number] as PaneRun).refused
        if (refused === 0) continue
        const event = events[eventAt[m] as number] as StreamEvent
        for (let s = 0; s < fixed.length; s++) {
          if (refused & (1 << s)) lateLane.push({ event: copyStreamEvent(event), window: (fixed[s] as RunIndex).id, reason: 'beyond_lateness' })
        }
      }
    }
    return { accepted, late, duplicates, conflicting, beyond }
  }

  /** Live windows over all specs. */
  windowCount(): number {
    let n = 0
    for (const index of this.#state.indexes) n += index.size
    return n
  }

  #roomFor(key: string, ts: number, frontiers: BatchFrontiers): boolean {
    let missing = 0
    for (const index of this.#state.indexes) missing += index.missingWindows(key, ts, frontiers)
    return this.windowCount() + missing <= this.#state.options.limits.maxWindows
  }
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b]
  return a
}
