import type { AggregateDefinitions } from '../aggregates/aggregate.ts'
import type { Engine } from '../core/engineApi.ts'
import type { StreamEvent } from '../input/event.ts'
import type { NoAggregates, WindowChange } from '../windows/windowResult.ts'

/**
 * A processing-time clock the test moves by hand: set `now`, pass `read` as the engine's `now`.
 *
 * @example
 * const clock = fakeClock()
 * const engine = createEngine({ windows: tumbling(1_000), idleTimeout: 5_000, now: clock.read })
 * clock.now += 6_000
 * engine.tick() // silent sources are idle now
 */
export function fakeClock(start = 0): {
  /** The processing time the test sets. */
  now: number
  /** The current `now`: pass it as the engine's `now` option. */
  read: () => number
} {
  const clock = {
    now: start,
    read: () => clock.now,
  }
  return clock
}

/**
 * An event with an id derived from source and seq (or ts when there is no seq).
 *
 * @example
 * reading('d1', 3, 1_500, 21.5, 'temp') // { id: 'd1#3', source: 'd1', ts: 1500, value: 21.5, seq: 3, key: 'temp' }
 */
export function reading(source: string, seq: number | undefined, ts: number, value: number, key?: string): StreamEvent {
  return {
    id: seq === undefined ? `${source}@${ts}` : `${source}#${seq}`,
    source,
    ts,
    value,
    ...(seq === undefined ? {} : { seq }),
    ...(key === undefined ? {} : { key }),
  }
}

/**
 * Every change the engine publishes, batch by batch; `take()` returns and forgets them.
 *
 * @example
 * const changes = recordChanges(engine)
 * engine.advanceWatermark(1_000)
 * changes.take().map(brief) // ['on_time [0,1000) n=1 on_time r0 final derived']
 */
export function recordChanges<A extends AggregateDefinitions = NoAggregates>(
  engine: Engine<A>,
): {
  /** Every notification's changes, one array per notification. */
  batches: (readonly WindowChange<A>[])[]
  /** Every change recorded since the last `take()`, in order. */
  take: () => WindowChange<A>[]
} {
  const batches: (readonly WindowChange<A>[])[] = []
  engine.subscribe((changes) => batches.push(changes))
  return {
    batches,
    take: () => batches.splice(0).flat(),
  }
}

/**
 * A compact view of a change for assertions: type, window start/end, count, status, revision, final, basis.
 *
 * @example
 * expect(changes.take().map(brief)).toEqual(['correction temp [0,60000) n=3 corrected r1 derived'])
 */
export function brief(change: WindowChange): string {
  const r = change.result
  return `${change.type} ${r.key === '' ? '' : `${r.key} `}[${r.start},${r.end}) n=${r.count} ${r.status} r${r.revision}${r.final ? ' final' : ''} ${r.basis}`
}
