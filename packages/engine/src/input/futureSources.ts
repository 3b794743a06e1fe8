import type { Anomaly, AnomalyReason } from './anomaly.ts'
import { durationOption } from '../options/durationOption.ts'
import { copyStreamEvent, type StreamEvent } from './event.ts'
import { invalidAnomaly } from './eventValidation.ts'

/**
 * One source that sent events stamped too far ahead of the engine's clock (`future_ts`).
 *
 * @example
 * const [worst] = engine.stats().futureSources // { source: 'd7', count: 12, lastTs: 1_731_000_000_000 }
 */
export interface FutureSource {
  /** The source named by the refused events. */
  readonly source: string
  /** How many of its events were refused as `future_ts`. */
  readonly count: number
  /** Event time of the last one refused. */
  readonly lastTs: number
}

/** Most sources `stats().futureSources` names; the least recently seen leaves first. */
export const FUTURE_SOURCES_KEPT = 20

/** `maxFutureSkew` when not given: a day of processing time, which only stops the absurd (docs/semantics.md, clock skew). */
export const DEFAULT_MAX_FUTURE_SKEW = 86_400_000

/**
 * `maxFutureSkew` as `createEngine` and `createOrderedStream` take it: ms >= 0, Infinity turning
 * the check off, the default when absent; a RangeError otherwise.
 *
 * @example
 * maxFutureSkewOf(undefined) // 86400000
 * maxFutureSkewOf(-1) // RangeError: maxFutureSkew must be a number >= 0 (Infinity: no event is refused for being ahead of the clock) of ms, got -1
 */
export function maxFutureSkewOf(value: unknown): number {
  return durationOption('maxFutureSkew', value, DEFAULT_MAX_FUTURE_SKEW, 'no event is refused for being ahead of the clock')
}

/**
 * The latest `ts` an event may carry at processing time `now` under `skew` (ms), read once per
 * batch so the check per event is one comparison: `now + skew`, or +Infinity while the clock reads
 * no finite time (`NaN`, an infinity), by which no event can be judged ahead of it (docs/bad-input.md,
 * B17); a -Infinity reading would otherwise refuse every event.
 *
 * @example
 * latestAdmittedTs(1_000, 100) // 1100: an event stamped 1100.5 is future_ts
 * latestAdmittedTs(Number.NEGATIVE_INFINITY, 100) // Infinity: nothing is refused
 */
export function latestAdmittedTs(now: number, skew: number): number {
  return Number.isFinite(now) ? now + skew : Number.POSITIVE_INFINITY
}

/**
 * The sources whose events were refused as `future_ts`, with counts: bounded to the
 * `FUTURE_SOURCES_KEPT` most recently seen (a Map keeps insertion order, so re-inserting on
 * every hit keeps the least recent first). The total stays in `stats().anomalies.future_ts`.
 */
export class FutureSources {
  readonly #bySource = new Map<string, { count: number; lastTs: number }>()

  /**
   * Refuses a valid event stamped later than `now + skew` (input `index` of its batch): counted
   * under `future_ts` in `counts`, its source noted, and its anomaly returned, with a copy of the
   * event to send again once the clock that stamped it is fixed or real time caught up. The
   * caller leaves every other trace out: no clock, frontier or dedup memory moves for it.
   *
   * @example
   * if (event.ts > now + skew) anomalies.push(futureSources.refuse(event, i, now, skew, counts))
   */
  refuse(event: StreamEvent, index: number, now: number, skew: number, counts: Record<AnomalyReason, number>): Anomaly {
    const { ts, source } = event
    counts.future_ts++
    this.note(source, ts)
    const detail = `ts ${ts} is ${ts - now} ms ahead of now (${now}); maxFutureSkew is ${skew} ms`
    return { ...invalidAnomaly('future_ts', event, index), detail, event: copyStreamEvent(event) }
  }

  note(source: string, ts: number): void {
    const entry = this.#bySource.get(source)
    if (entry !== undefined) this.#bySource.delete(source)
    else if (this.#bySource.size >= FUTURE_SOURCES_KEPT) this.#bySource.delete(this.#bySource.keys().next().value as string)
    this.#bySource.set(source, { count: (entry?.count ?? 0) + 1, lastTs: ts })
  }

  /** Least recently seen first. */
  list(): FutureSource[] {
    return [...this.#bySource].map(([source, { count, lastTs }]) => ({ source, count, lastTs }))
  }

  /** The list a checkpoint kept, the most recent `FUTURE_SOURCES_KEPT` of it (a hand-made one may hold more). */
  restore(entries: readonly FutureSource[]): void {
    this.#bySource.clear()
    for (const { source, count, lastTs } of entries.slice(-FUTURE_SOURCES_KEPT)) this.#bySource.set(source, { count, lastTs })
  }
}
