/**
 * A tick that `tickWhenDue`'s timer runs and that throws (an aggregate's bug stops the engine):
 * its error goes to `onError`, or is reported as uncaught, and never leaves the timer, so other
 * engines on the same timers, and the process, go on.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { afterProcessingTime, createEngine, defineAggregate, tickWhenDue, tumbling } from '../src/index.ts'
import { ManualTimers } from '../src/testing/index.ts'

function reading(source: string, seq: number, ts: number, value = 1) {
  return { id: `${source}-${seq}`, source, seq, ts, key: 'k', value }
}

describe('a tick that stops its engine', () => {
  /** Sums, and throws making a result once the sum passes 10 (an aggregate's bug). */
  const brittle = defineAggregate({
    name: 'brittle',
    init: () => 0,
    add: (n: number, x: number) => n + x,
    merge: (a: number, b: number) => a + b,
    result: (n: number) => {
      if (n > 10) throw new Error('too large')
      return n
    },
    encode: (n: number) => new Uint8Array([n]),
    decode: (bytes: Uint8Array) => bytes[0] ?? 0,
    configuration: 'brittle-1',
  })
  const early = { early: afterProcessingTime(1_000) }

  afterEach(() => {
    vi.unstubAllGlobals()
  })

  it.each([
    ['onError', true],
    ['the platform reportError, by default', false],
  ])('hands its error to %s; the ticks stop with the engine, and another engine on the same timers goes on', (_, given) => {
    const clock = new ManualTimers(0)
    const errors: unknown[] = []
    if (!given) vi.stubGlobal('reportError', (error: unknown) => errors.push(error))
    const onError = given ? { onError: (error: unknown) => errors.push(error) } : {}
    const broken = createEngine({ windows: tumbling(60_000), trigger: early, aggregates: { brittle }, now: clock.read })
    const healthy = createEngine({ windows: tumbling(60_000), trigger: early, now: clock.read })
    tickWhenDue(broken, { now: clock.read, timers: clock, ...onError })
    tickWhenDue(healthy, { now: clock.read, timers: clock })
    const panes: number[] = []
    healthy.subscribe((batch) => {
      for (const change of batch) if (change.type === 'provisional') panes.push(clock.now)
    })
    broken.ingest([reading('d1', 1, 1_000, 20)])
    healthy.ingest([reading('d1', 1, 1_000, 20)])
    clock.advance(1_000)
    expect(errors).toHaveLength(1)
    expect(String(errors[0])).toMatch(/^Error: engine stopped: aggregate "brittle" \(brittle\): result threw too large/)
    expect(() => broken.ingest([reading('d1', 2, 2_000)])).toThrow(/engine stopped/)
    healthy.ingest([reading('d1', 2, 2_000)])
    clock.advance(1_000)
    expect(panes).toEqual([1_000, 2_000])
    expect(clock.pending).toEqual([])
    expect(errors).toHaveLength(1)
  })
})
