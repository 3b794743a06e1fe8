import type { Anomaly, AnomalyReason } from './anomaly.ts'
import type { DedupLedger } from './dedupLedger.ts'
import type { ResolvedOptions } from './engineOptions.ts'
import { copyStreamEvent, type StreamEvent } from './event.ts'
import { placementOrder } from './eventOrder.ts'
import type { Frontiers } from './frontiers.ts'
import { rejectInput, safeInvalidReason } from './inputRejection.ts'
import type { LateLane } from './lateLane.ts'
import type { ReplicationOutbox } from './replicationOutbox.ts'
import type { SourceClock } from './sourceClock.ts'
import { ADMITTED_LATE, type BatchFrontiers, ON_TIME, REFUSED, type WindowHooks, type WindowIndex } from './windowIndex.ts'

/** What placing one batch did, beyond the anomalies it recorded. */
export interface PlacementTally {
  readonly accepted: number
  readonly late: number
  readonly duplicates: number
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
  readonly dedup: DedupLedger
  readonly anomalies: Record<AnomalyReason, number>
  readonly hooks: WindowHooks
}

/**
 * The ingest hot path: validates, deduplicates and bounds each event of a batch, then places
 * it in every window spec against the frontiers as they stood before the batch (DESIGN §2).
 * The engine around it counts, logs, advances the frontiers and settles.
 */
export class BatchPlacement {
  readonly #state: PlacementState
  /** Most windows one event can create, over all specs. */
  readonly #maxNewPerEvent: number
  /** Session placement depends on the order of events in a batch, so batches are placed in event order. */
  readonly #hasSessions: boolean

  constructor(state: PlacementState) {
    this.#state = state
    this.#maxNewPerEvent = state.indexes.reduce((n, index) => n + index.maxNewPerEvent, 0)
    this.#hasSessions = state.options.specs.some((spec) => spec.kind === 'session')
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
    const { options, replicaId, indexes, lateLane, outbox, dedup, hooks } = this.#state
    const counts = this.#state.anomalies
    const limits = options.limits
    const sources = this.#state.frontiers.sources
    const n = events.length
    let accepted = 0
    let late = 0
    let duplicates = 0
    let beyond = 0
    let lastClock: SourceClock | undefined
    const order = this.#hasSessions ? placementOrder(events) : null
    for (let k = 0; k < n; k++) {
      const i = order === null ? k : (order[k] as number)
      const event = events[i] as StreamEvent
      const reason = safeInvalidReason(event)
      if (reason !== null) {
        rejectInput(anomalies, counts, reason, event, i)
        if (logged !== null) invalid[reason] = (invalid[reason] ?? 0) + 1
        continue
      }
      logged?.push(event)
      const { id, seq, ts, value } = event
      let clock = lastClock !== undefined && lastClock.name === event.source ? lastClock : sources.get(event.source)
      if (clock !== undefined && clock.writer !== replicaId) {
        rejectInput(anomalies, counts, 'source_conflict', event, i, `source '${event.source}' is written by replica '${clock.writer}'`)
        continue
      }
      if (clock?.seen(seq, id)) {
        duplicates++
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
      if (this.windowCount() + this.#maxNewPerEvent > limits.maxWindows && !this.#roomFor(key, ts, frontiers)) {
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
      let outcome = 0
      for (let s = 0; s < indexes.length; s++) {
        const index = indexes[s] as WindowIndex
        const placed = index.place(key, clock, ts, value, version, frontiers, hooks)
        if (placed & REFUSED) lateLane.push({ event: copyStreamEvent(event), window: index.id, reason: 'beyond_lateness' })
        outcome |= placed
      }
      const before = clock.ahead.size + clock.ids.size
      clock.remember(seq, id, ts, now)
      outbox.clock(clock)
      dedup.entries += clock.ahead.size + clock.ids.size - before
      if (outcome & (ON_TIME | ADMITTED_LATE)) {
        accepted++
        if (outcome & ADMITTED_LATE) late++
      } else {
        beyond++
      }
    }
    return { accepted, late, duplicates, beyond }
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
