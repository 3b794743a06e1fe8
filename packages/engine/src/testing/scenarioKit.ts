import type { Engine, StreamEvent, WindowChange } from '../index.ts'

/** A processing-time clock the test moves by hand. */
export function fakeClock(start = 0): { now: number; read: () => number } {
  const clock = {
    now: start,
    read: () => clock.now,
  }
  return clock
}

/** An event with an id derived from source and seq (or ts when there is no seq). */
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

/** Every change the engine publishes, batch by batch; `take()` returns and forgets them. */
export function recordChanges(engine: Engine): { batches: (readonly WindowChange[])[]; take: () => WindowChange[] } {
  const batches: (readonly WindowChange[])[] = []
  engine.subscribe((changes) => batches.push(changes))
  return {
    batches,
    take: () => batches.splice(0).flat(),
  }
}

/** A compact view of a change for assertions: type, window start/end, count, status, revision, final, basis. */
export function brief(change: WindowChange): string {
  const r = change.result
  return `${change.type} ${r.key === '' ? '' : `${r.key} `}[${r.start},${r.end}) n=${r.count} ${r.status} r${r.revision}${r.final ? ' final' : ''} ${r.basis}`
}
