/**
 * The reference model's sources: which events each source delivered (identity, seq and ts, in
 * lists rather than ring buffers), which sources their writer finished, what their frontiers are
 * recomputed to, and which sources sent events stamped too far ahead of the clock.
 */
import type { StreamEvent } from '@tidemark/engine'
import { type Delivery, proofOf } from './modelTime.ts'

/**
 * What taking an event did: first delivery, a copy, a copy that provably differs from the first,
 * or an event of a finished source that it had not sent before (refused, and not remembered).
 */
export type Taken = 'first' | 'duplicate' | 'conflicting' | 'finished'

/** The frontiers the deliveries so far give at processing time `now`. */
export interface SourceFrontiers {
  /** P: the least proof over the sources not finished (-Infinity with no source; +Infinity when every one finished). */
  readonly proof: number
  /** The least max ts over sources neither finished nor idle (NaN when there is none). */
  readonly activeMaxTs: number
  /** The least max ts over every source not finished, idle or not (NaN with none). */
  readonly allMaxTs: number
}

/** Sources `stats().futureSources` names at most (the engine's bound). */
const FUTURE_SOURCES = 20

/**
 * Every source's deliveries, for the reference model: dedup by identity, the conflicting-copy
 * rule, finished sources, the frontiers recomputed from the lists, and the `future_ts` sources.
 *
 * @example
 * const sources = new ModelSources()
 * sources.take(event) // 'first'
 * sources.delivered(event, now)
 * sources.finish(event.source)
 * sources.take(event) // 'duplicate'
 * sources.take({ ...event, id: 'other', seq: 99 }) // 'finished'
 */
export class ModelSources {
  /** Identity of every event taken, with the ts of its first delivery. */
  readonly #seen = new Map<string, number>()
  /** Per source, the ts of each seq taken. */
  readonly #seqTs = new Map<string, Map<number, number>>()
  readonly #deliveries: Delivery[] = []
  readonly #future = new Map<string, { count: number; lastTs: number }>()
  /** Sources their writer finished: they send nothing more. */
  readonly #finished = new Set<string>()

  /**
   * Takes a valid event: a first delivery is recorded, a copy is judged. A copy of what a finished
   * source sent is still a copy; anything else from it is refused and leaves no trace.
   */
  take(event: StreamEvent): Taken {
    const identity = JSON.stringify(event.seq === undefined ? [event.source, 'id', event.id] : [event.source, 'seq', event.seq])
    const first = this.#seen.get(identity)
    if (first !== undefined) return this.#conflicts(event, first) ? 'conflicting' : 'duplicate'
    if (this.#finished.has(event.source)) return 'finished'
    this.#seen.set(identity, event.ts)
    if (event.seq !== undefined) {
      const seqs = this.#seqTs.get(event.source) ?? new Map<number, number>()
      this.#seqTs.set(event.source, seqs.set(event.seq, event.ts))
    }
    return 'first'
  }

  /** A taken event was placed (in some window or the late lane): it counts for its source's frontiers. */
  delivered(event: StreamEvent, now: number): void {
    this.#deliveries.push({ source: event.source, seq: event.seq, ts: event.ts, now })
  }

  /** An event refused as `future_ts`: its source is named, most recent last, at most 20. */
  noteFuture(event: StreamEvent): void {
    const named = this.#future.get(event.source)
    this.#future.delete(event.source)
    this.#future.set(event.source, { count: (named?.count ?? 0) + 1, lastTs: event.ts })
    if (this.#future.size > FUTURE_SOURCES) this.#future.delete(this.#future.keys().next().value as string)
  }

  /**
   * The writer's promise that `source` sends nothing more (known or not). Returns false when it
   * was finished already (nothing changes then).
   */
  finish(source: string): boolean {
    if (this.#finished.has(source)) return false
    this.#finished.add(source)
    return true
  }

  /**
   * Recomputed from every delivery so far: P, and the max ts that bound the watermark, at `now`.
   * A finished source counts in none of them: nothing unseen can come from it.
   */
  frontiers(now: number, idleTimeout: number): SourceFrontiers {
    const names = [...new Set(this.#deliveries.map((d) => d.source))].filter((name) => !this.#finished.has(name))
    const clocks = names.map((name) => {
      const mine = this.#deliveries.filter((d) => d.source === name)
      const seen = Math.max(...mine.map((d) => d.now))
      return { maxTs: Math.max(...mine.map((d) => d.ts)), seen, idle: now - seen > idleTimeout, proof: proofOf(mine) }
    })
    const active = clocks.filter((c) => !c.idle)
    // With every source still counting idle (or none), W may go as far as a finished source that
    // delivered reached, or as far as the sources heard from last held it before they turned idle.
    const lastSeen = Math.max(...clocks.map((c) => c.seen))
    const heardLast = clocks.filter((c) => c.seen === lastSeen).map((c) => c.maxTs)
    const finishedMaxTs = this.#deliveries.filter((d) => this.#finished.has(d.source)).map((d) => d.ts)
    if (heardLast.length > 0) finishedMaxTs.push(Math.min(...heardLast))
    // Known sources are those that delivered and those finished; with every one of them finished, all input is in.
    const known = this.count > 0
    return {
      proof: !known ? Number.NEGATIVE_INFINITY : clocks.length === 0 ? Number.POSITIVE_INFINITY : Math.min(...clocks.map((c) => c.proof)),
      activeMaxTs: active.length > 0 ? Math.min(...active.map((c) => c.maxTs)) : finishedMaxTs.length > 0 ? Math.max(...finishedMaxTs) : Number.NaN,
      allMaxTs: clocks.length === 0 ? Number.NaN : Math.min(...clocks.map((c) => c.maxTs)),
    }
  }

  /** Sources that delivered or were finished (finishing an unknown source makes it known). */
  get count(): number {
    return new Set([...this.#deliveries.map((d) => d.source), ...this.#finished]).size
  }

  /** `stats().futureSources`. */
  futureSources(): { source: string; count: number; lastTs: number }[] {
    return [...this.#future].map(([source, { count, lastTs }]) => ({ source, count, lastTs }))
  }

  /**
   * Whether a copy of an event already taken provably differs from its first delivery
   * (`conflicting_duplicate`). Only event times are compared: the first delivery's ts must be
   * equal for an event without seq and for a seq at or above the end of the source's gap-free
   * prefix; a seq inside the prefix is caught only by a ts later than every ts of the prefix.
   */
  #conflicts(event: StreamEvent, firstTs: number): boolean {
    if (event.seq === undefined) return event.ts !== firstTs
    const seqs = this.#seqTs.get(event.source) ?? new Map<number, number>()
    let prefix = 0
    let prefixTs = Number.NEGATIVE_INFINITY
    while (seqs.has(prefix + 1)) {
      prefix++
      prefixTs = Math.max(prefixTs, seqs.get(prefix) as number)
    }
    if (event.seq >= prefix) return event.ts !== firstTs
    return event.ts > prefixTs
  }
}
