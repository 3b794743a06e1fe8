import fc from 'fast-check'
import type { StreamEvent } from '../../src/input/event.ts'

/** `__proto__` and `constructor` are ordinary sources here: keys must be safe everywhere. */
export const SOURCES = ['a', 'b', '__proto__', 'constructor'] as const

/** One line per event, for comparing emitted events with the model's. */
export function signature(e: StreamEvent): string {
  return `${e.ts}|${e.source}|${e.seq ?? '-'}|${e.id}|${e.value}|${e.key ?? '-'}`
}

interface RawEvent {
  readonly source: number
  readonly ts: number
  readonly seqless: boolean
  readonly invalid: boolean
}

const rawEvent = fc.record({
  source: fc.nat(SOURCES.length - 1),
  ts: fc.integer({ min: 0, max: 400 }),
  seqless: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  invalid: fc.integer({ min: 0, max: 30 }).map((n) => n === 0),
})

/**
 * Events of a few sources: seqs in generation order; times rise with the position (4 ms a step)
 * plus a jitter of up to 80 ms, so they often go backwards along seq.
 */
function materialize(raw: readonly RawEvent[]): StreamEvent[] {
  const seqs = new Map<string, number>()
  return raw.map((r, i) => {
    const source = SOURCES[r.source] as string
    const seq = (seqs.get(source) ?? 0) + 1
    seqs.set(source, seq)
    const ts = i * 4 + (r.ts % 80)
    if (r.invalid) return { id: `bad-${i}`, source, ts: Number.NaN, value: 1 }
    if (r.seqless) return { id: `${source}-x${i}`, source, ts, value: i }
    return { id: `${source}-${seq}`, source, seq, ts, key: source === 'a' ? 'k' : '', value: i }
  })
}

/**
 * Events in random order, with exact re-sent copies mixed in. The disorder is either bounded
 * (each event delivered up to `reach` positions late, so lateness varies from none to a lot)
 * or a full shuffle.
 */
export const disorderedEvents: fc.Arbitrary<StreamEvent[]> = fc
  .array(rawEvent, { maxLength: 80, size: 'medium' })
  .map(materialize)
  .chain((events) =>
    fc.tuple(
      fc.constant(events),
      fc.oneof(
        fc.shuffledSubarray(events, { minLength: events.length, maxLength: events.length }),
        fc
          .tuple(fc.integer({ min: 0, max: 40 }), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: events.length, maxLength: events.length }))
          .map(([reach, delays]) =>
            events
              .map((e, i) => ({ e, at: i + (delays[i] as number) * reach }))
              .sort((x, y) => x.at - y.at)
              .map((x) => x.e),
          ),
      ),
      fc.array(fc.nat(), { maxLength: events.length === 0 ? 0 : 20 }),
    ),
  )
  .map(([events, delivered, copies]) => {
    const out = [...delivered]
    for (const c of copies) {
      const original = events[c % events.length] as StreamEvent
      out.splice((c * 7919) % (out.length + 1), 0, { ...original })
    }
    return out
  })

/**
 * A reconnect burst: most sources deliver in slightly shuffled order as they go; one source
 * was offline and delivers its whole backlog in one push at a random point (in seq order or
 * reversed).
 */
export const reconnectBurst: fc.Arbitrary<StreamEvent[][]> = fc
  .record({
    online: fc.array(rawEvent, { maxLength: 60, size: 'medium' }),
    offline: fc.array(fc.integer({ min: 0, max: 400 }), { maxLength: 40, size: 'medium' }),
    at: fc.nat(),
    reversed: fc.boolean(),
    chunk: fc.integer({ min: 1, max: 15 }),
  })
  .map(({ online, offline, at, reversed, chunk }) => {
    const live = materialize(online.map((r) => ({ ...r, invalid: false })))
    const backlog: StreamEvent[] = offline.map((ts, i) => ({ id: `off-${i + 1}`, source: 'offline', seq: i + 1, ts, value: i }))
    if (reversed) backlog.reverse()
    const pushes: StreamEvent[][] = []
    for (let i = 0; i < live.length; i += chunk) pushes.push(live.slice(i, i + chunk))
    pushes.splice(at % (pushes.length + 1), 0, backlog)
    return pushes
  })

/** How a run drives the stream between pushes. */
export interface Step {
  readonly size: number
  /** Manual strategy: how far to move the watermark after this push. */
  readonly advance: number
  readonly flush: boolean
}

export const steps = fc.array(
  fc.record({ size: fc.integer({ min: 1, max: 25 }), advance: fc.integer({ min: 0, max: 120 }), flush: fc.boolean() }),
  { minLength: 1, maxLength: 12 },
)

export const streamSetup = fc.record({
  lag: fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 80 })),
  allowedLateness: fc.integer({ min: 0, max: 200 }),
  onLate: fc.constantFrom('emit_correction' as const, 'drop' as const),
  batchSize: fc.integer({ min: 1, max: 9 }),
})

/** Cuts `events` into pushes by the cycling step sizes. */
export function cut(events: readonly StreamEvent[], plan: readonly Step[]): { events: StreamEvent[]; step: Step }[] {
  const out: { events: StreamEvent[]; step: Step }[] = []
  let i = 0
  let s = 0
  while (i < events.length) {
    const step = plan[s % plan.length] as Step
    out.push({ events: events.slice(i, i + step.size), step })
    i += step.size
    s++
  }
  return out
}
