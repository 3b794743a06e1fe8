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

/**
 * The sources whose events were refused as `future_ts`, with counts: bounded to the
 * `FUTURE_SOURCES_KEPT` most recently seen (a Map keeps insertion order, so re-inserting on
 * every hit keeps the least recent first). The total stays in `stats().anomalies.future_ts`.
 */
export class FutureSources {
  readonly #bySource = new Map<string, { count: number; lastTs: number }>()

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
