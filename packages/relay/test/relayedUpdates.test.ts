/**
 * Other relays' changes held until their relay says it stored them (`RelayedUpdates`): dropped
 * only when a write that began after them succeeded, written here otherwise, each exactly once.
 */
import { assertSeeded } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import type { RelayTimers } from '../src/relayOptions.ts'
import { MAX_TIMER_MS } from '../src/relayOptions.ts'
import { RelayedUpdates, relayedHoldMs } from '../src/store/relayedUpdates.ts'

const FILE = 'packages/relay/test/relayedUpdates.test.ts'
const HOLD = 5_000

/** Timers run by hand on a clock of their own. */
function handClock(): { now: () => number; timers: RelayTimers; advance(ms: number): void } {
  let time = 0
  const due = new Map<number, { at: number; run: () => void }>()
  let next = 0
  return {
    now: () => time,
    timers: {
      setTimeout(run, ms) {
        const id = next++
        due.set(id, { at: time + ms, run })
        return id
      },
      clearTimeout: (handle) => void due.delete(handle as number),
    },
    advance(ms) {
      const end = time + ms
      for (;;) {
        const [id, timer] = [...due].filter(([, t]) => t.at <= end).sort(([, a], [, b]) => a.at - b.at)[0] ?? []
        if (id === undefined || timer === undefined) break
        due.delete(id)
        time = timer.at
        timer.run()
      }
      time = end
    },
  }
}

function relayed(maxBytes?: number): { held: RelayedUpdates; written: string[]; metrics: RelayMetrics; clock: ReturnType<typeof handClock> } {
  const clock = handClock()
  const metrics = new RelayMetrics()
  const written: string[] = []
  const sink = { append: (room: string, update: Uint8Array) => void written.push(`${room}:${new TextDecoder().decode(update)}`) }
  const held = new RelayedUpdates(sink, { holdMs: HOLD, now: clock.now, timers: clock.timers, metrics, ...(maxBytes === undefined ? {} : { maxBytes }) })
  return { held, written, metrics, clock }
}

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

describe('RelayedUpdates', () => {
  it('drops a change once a write its relay began after it succeeded, and writes nothing', () => {
    const { held, written, metrics, clock } = relayed()
    const update = bytes('u1')
    held.hold('fleet-a/d1', update, 'A')
    expect(held.took(update)).toBe(true)
    expect(held.bytes).toBe(2)
    held.begun('A', 1)
    held.stored('A', 1)
    expect(held.bytes).toBe(0)
    clock.advance(10 * HOLD)
    expect(written).toEqual([])
    expect(metrics.relayedConfirmed).toBe(1)
    expect(metrics.relayedWritten).toBe(0)
  })

  it('keeps a change that arrived after the write began: only a later write covers it', () => {
    const { held, written, clock } = relayed()
    held.begun('A', 1)
    held.hold('fleet-a/d1', bytes('after-begin'), 'A')
    held.stored('A', 1)
    expect(held.bytes).toBe('after-begin'.length)
    held.begun('A', 2)
    held.stored('A', 2)
    expect(held.bytes).toBe(0)
    clock.advance(10 * HOLD)
    expect(written).toEqual([])
  })

  it('writes a change no write of its relay covered within the hold, once, in arrival order', () => {
    const { held, written, metrics, clock } = relayed()
    held.hold('r', bytes('1'), 'A')
    clock.advance(1_000)
    held.hold('r', bytes('2'), 'A')
    // A began a write after both, but never said it succeeded (it died inside it).
    held.begun('A', 7)
    clock.advance(HOLD - 1_000 - 1)
    expect(written).toEqual([])
    clock.advance(1)
    expect(written).toEqual(['r:1'])
    clock.advance(1_000)
    expect(written).toEqual(['r:1', 'r:2'])
    // A stored mark after they were written drops nothing more, and counts nothing.
    held.stored('A', 7)
    clock.advance(10 * HOLD)
    expect(written).toEqual(['r:1', 'r:2'])
    expect(metrics.relayedWritten).toBe(2)
    expect(metrics.relayedConfirmed).toBe(0)
    expect(held.bytes).toBe(0)
  })

  it('does not let a stored mark whose begin was never seen drop what came after the last begin seen', () => {
    const { held, written, clock } = relayed()
    held.hold('r', bytes('before'), 'A')
    held.begun('A', 3)
    // begin 4 was lost (the subscriber reconnected, or the publish was dropped)…
    held.hold('r', bytes('after'), 'A')
    held.stored('A', 4)
    // …so `after` may have been queued after write 4 began: only `before` is dropped.
    expect(held.bytes).toBe('after'.length)
    clock.advance(HOLD)
    expect(written).toEqual(['r:after'])
  })

  it('keeps relays apart: one relay\'s marks drop none of another\'s changes', () => {
    const { held, written, clock } = relayed()
    held.hold('r', bytes('a'), 'A')
    held.hold('r', bytes('b'), 'B')
    held.begun('A', 1)
    held.stored('A', 1)
    held.stored('B', 1)
    clock.advance(HOLD)
    expect(written).toEqual(['r:b'])
  })

  it('writes the oldest held changes at once past its byte bound', () => {
    const { held, written } = relayed(10)
    held.hold('r', bytes('aaaa'), 'A')
    held.hold('r', bytes('bbbb'), 'B')
    expect(written).toEqual([])
    held.hold('r', bytes('cccc'), 'A')
    expect(written).toEqual(['r:aaaa'])
    expect(held.bytes).toBe(8)
  })

  it('writes everything still held when the relay closes, and what comes after at once', () => {
    const { held, written, clock } = relayed()
    held.hold('r', bytes('1'), 'A')
    held.begun('A', 1)
    held.hold('r', bytes('2'), 'A')
    held.releaseAll()
    expect(written).toEqual(['r:1', 'r:2'])
    held.hold('r', bytes('3'), 'A')
    expect(written).toEqual(['r:1', 'r:2', 'r:3'])
    held.stored('A', 1)
    clock.advance(10 * HOLD)
    expect(written).toEqual(['r:1', 'r:2', 'r:3'])
    expect(held.bytes).toBe(0)
  })

  it('holds for four write windows, at least five seconds', () => {
    expect(relayedHoldMs(500)).toBe(5_000)
    expect(relayedHoldMs(2_000)).toBe(8_000)
    // A longer timer would fire at once.
    expect(relayedHoldMs(MAX_TIMER_MS)).toBe(MAX_TIMER_MS)
  })

  /**
   * A relay's messages as published: its changes, the begins and stored marks of its writes
   * (a write's stored mark after its begin, at any later point, or never: the write failed),
   * and time passing. The subscriber receives them in order, any of them possibly lost.
   */
  type Step = { readonly kind: 'change' | 'begin' | 'stored' | 'wait'; readonly lost: boolean; readonly ms: number; readonly relay: 'A' | 'B' }
  const step = fc.record({
    kind: fc.constantFrom('change', 'change', 'begin', 'stored', 'wait'),
    lost: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
    ms: fc.integer({ min: 0, max: 3_000 }),
    relay: fc.constantFrom('A', 'B'),
  }) as fc.Arbitrary<Step>

  const PROPERTY = 'drops a change only when its relay stored a write begun after it, and writes every other change once (seeded)'
  it(PROPERTY, () => {
    assertSeeded(
      fc.property(fc.array(step, { maxLength: 80 }), fc.integer({ min: 1, max: 400 }), (steps, maxBytes) => {
        const { held, written, metrics, clock } = relayed(maxBytes)
        // The publisher's truth: per relay, which writes began after which changes were queued.
        const state = { A: { begun: 0, stored: new Set<number>(), pendingStores: [] as number[] }, B: { begun: 0, stored: new Set<number>(), pendingStores: [] as number[] } }
        const changes: { name: string; relay: 'A' | 'B'; firstBeginAfter: number | undefined; received: boolean }[] = []
        for (const s of steps) {
          const relay = state[s.relay]
          if (s.kind === 'wait') clock.advance(s.ms)
          else if (s.kind === 'change') {
            const change = { name: `c${changes.length}`, relay: s.relay, firstBeginAfter: undefined, received: !s.lost }
            changes.push(change)
            if (change.received) held.hold('r', bytes(change.name), s.relay)
          } else if (s.kind === 'begin') {
            const k = ++relay.begun
            for (const change of changes) if (change.relay === s.relay && change.firstBeginAfter === undefined) change.firstBeginAfter = k
            relay.pendingStores.push(k)
            if (!s.lost) held.begun(s.relay, k)
          } else {
            // The oldest write under way ends: stored (said, or the mark lost), or failed.
            const k = relay.pendingStores.shift()
            if (k === undefined) continue
            if (s.ms % 3 !== 0) {
              relay.stored.add(k)
              if (!s.lost) held.stored(s.relay, k)
            }
          }
        }
        clock.advance(10 * HOLD)
        const received = changes.filter((change) => change.received)
        for (const change of received) {
          const times = written.filter((line) => line === `r:${change.name}`).length
          const storedByRelay = change.firstBeginAfter !== undefined && [...state[change.relay].stored].some((k) => k >= (change.firstBeginAfter as number))
          // Written here at most once, and not written only when its relay stored it.
          expect(times).toBeLessThanOrEqual(1)
          if (times === 0) expect(storedByRelay, `${change.name} dropped though ${change.relay} did not store it`).toBe(true)
        }
        expect(metrics.relayedWritten + metrics.relayedConfirmed).toBe(received.length)
        expect(written.length).toBe(metrics.relayedWritten)
        expect(held.bytes).toBe(0)
      }),
      FILE,
      PROPERTY,
      300,
    )
  })
})
