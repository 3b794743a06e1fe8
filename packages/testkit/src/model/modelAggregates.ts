/**
 * The reference model's aggregates: each window's aggregates recomputed from the events it
 * admitted, without cells, slices or merges. `latest` and `histogram` by a plain exact
 * computation (the greatest event in the documented order; bucket counts by the documented
 * bounds); quantiles, distinct counts and user aggregates by feeding one fresh state the events
 * in event order (ts, source, seq, id), since the sketches are the thing under test only through
 * how the engine combines them. Inputs are read and judged as the engine's contract says: an
 * event whose input an aggregate refuses is refused (`invalid_aggregate_input`).
 */
import type { AggregateDefinitions, AnyAggregate, StreamEvent } from '@tidemark/engine'

/** Names in the engine's order (UTF-16 code units). */
function sortedNames(aggregates: AggregateDefinitions): string[] {
  return Object.keys(aggregates).sort()
}

/** True when every aggregate can take the event's input. */
export function modelAcceptsInputs(aggregates: AggregateDefinitions, event: StreamEvent): boolean {
  return sortedNames(aggregates).every((name) => {
    const a = aggregates[name] as AnyAggregate
    try {
      return a.checkInput(a.read(event)) === null
    } catch {
      return false
    }
  })
}

/** Each aggregate's result over `events`, keyed by name in the engine's order. */
export function modelAggregates(aggregates: AggregateDefinitions, events: readonly StreamEvent[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const name of sortedNames(aggregates)) {
    const a = aggregates[name] as AnyAggregate
    const value = a.name === 'latest' ? latestOf(a, events) : a.name === 'histogram' ? histogramOf(a, events) : fed(a, events)
    Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true })
  }
  return out
}

/** The value of the greatest event by (ts, source, seq (absent = 0), value), -0 as 0; null for none. */
function latestOf(a: AnyAggregate, events: readonly StreamEvent[]): number | null {
  let best: { ts: number; source: string; seq: number; value: number } | null = null
  for (const event of events) {
    const value = (a.read(event) as number) + 0
    const candidate = { ts: event.ts + 0, source: event.source, seq: event.seq ?? 0, value }
    if (best === null) best = candidate
    else {
      const order =
        candidate.ts - best.ts ||
        (candidate.source < best.source ? -1 : candidate.source > best.source ? 1 : 0) ||
        candidate.seq - best.seq ||
        candidate.value - best.value
      if (order > 0) best = candidate
    }
  }
  return best === null ? null : best.value
}

/** Counts per bucket of the bounds in the aggregate's configuration, `histogram(bounds=b1,b2,...)`. */
function histogramOf(a: AnyAggregate, events: readonly StreamEvent[]): number[] {
  const bounds = (/^histogram\(bounds=(.*)\)$/.exec(a.configuration)?.[1] ?? '').split(',').map(Number)
  const counts = new Array<number>(bounds.length + 1).fill(0)
  for (const event of events) {
    const x = a.read(event) as number
    let bucket = bounds.findIndex((bound) => x <= bound)
    if (bucket < 0) bucket = bounds.length
    counts[bucket] = (counts[bucket] as number) + 1
  }
  return counts
}

/** One fresh state fed every event in event order. */
function fed(a: AnyAggregate, events: readonly StreamEvent[]): unknown {
  let state = a.init()
  for (const event of [...events].sort(eventOrder)) state = a.add(state, a.read(event), event)
  return a.result(state)
}

function eventOrder(a: StreamEvent, b: StreamEvent): number {
  const x = [a.ts, a.source, a.seq ?? 0, a.id] as const
  const y = [b.ts, b.source, b.seq ?? 0, b.id] as const
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return (x[i] as number | string) < (y[i] as number | string) ? -1 : 1
  return 0
}
