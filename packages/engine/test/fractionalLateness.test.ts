/**
 * Lateness at a fractional watermark, for the windows that share slices. A window is final once
 * `W >= end + allowedLateness` (docs/semantics.md, Allowed lateness, corrections and finality):
 * until then an event for it is admitted late, whatever else shares its slice. The watermark is
 * fractional as soon as an event's `ts` is (`maxTs - outOfOrderness`), and `W - allowedLateness`
 * rounds where it crosses a power of two: near the epoch, and before 1970 near every power of
 * two ms. Those are the times tried here, against the per-window placement (which compares as
 * the window lifecycle does) and against the rule itself.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  boundedOutOfOrderness,
  createEngine,
  cumulating,
  type Engine,
  type EngineOptions,
  manual,
  sliding,
  type StreamEvent,
  tumbling,
  type WindowSpec,
} from '../src/index.ts'
import { createPerWindowEngine } from '../src/testing/perWindowEngine.ts'
import { assertFreshSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/fractionalLateness.test.ts'

type FixedSpec = Exclude<WindowSpec, { kind: 'session' }>

/** The double `steps` representable values above (`steps` > 0) or below `x`. */
function nudge(x: number, steps: number): number {
  const view = new DataView(new ArrayBuffer(8))
  let y = x
  for (let i = 0; i < Math.abs(steps); i++) {
    if (y === 0) {
      // From zero, either way: the smallest subnormal.
      y = steps > 0 ? Number.MIN_VALUE : -Number.MIN_VALUE
      continue
    }
    view.setFloat64(0, y)
    const bits = view.getBigUint64(0)
    // Away from zero adds one to the magnitude's bits, towards zero takes one.
    const away = steps > 0 === y > 0
    view.setBigUint64(0, away ? bits + 1n : bits - 1n)
    y = view.getFloat64(0)
  }
  return y
}

/** What a user sees of one ingest: the receipt's counts, the late lane, and the windows. */
function seen(engine: Engine, events: readonly StreamEvent[]): unknown {
  const { accepted, late, beyondLateness, rejected } = engine.ingest(events)
  const windows = engine.results().map(({ window, start, end, count, status, revision, final }) => ({ window, start, end, count, status, revision, final }))
  return { accepted, late, beyondLateness, rejected, lane: engine.lateEvents().map((l) => [l.window, l.event.id]), windows }
}

describe('lateness at a fractional watermark', () => {
  it('admits an event for a window the watermark has not made final, in 1900 with a sub-millisecond reading', () => {
    // W = end + lateness − 2^-12 ms: the window [end − 1 s, end) is not final. W − lateness rounds
    // up to `end` (it crosses 2^41 ms), and the event was refused and put on the late lane.
    const end = -2_199_023_256_000
    const lateness = 5_000
    const w = nudge(end + lateness, -1)
    expect(w).toBeLessThan(end + lateness)
    expect(w - lateness).toBe(end)
    for (const windows of [tumbling(1_000), sliding(2_000, 1_000), cumulating(2_000, 1_000)]) {
      const engine = createEngine({ windows, watermark: boundedOutOfOrderness(0), allowedLateness: lateness, maxFutureSkew: Number.POSITIVE_INFINITY })
      engine.ingest([{ id: 'now', source: 'clock', seq: 1, ts: w, value: 0 }])
      expect(engine.watermark()).toBe(w)
      const receipt = engine.ingest([{ id: 'late', source: 'd1', seq: 1, ts: end - 1, value: 7 }])
      expect({ accepted: receipt.accepted, late: receipt.late, beyond: receipt.beyondLateness }, windows.id).toEqual({ accepted: 1, late: 1, beyond: 0 })
      expect(engine.lateEvents(), windows.id).toEqual([])
      const shown = engine.results().find((r) => r.end === end && r.count > 0)
      expect(shown, windows.id).toMatchObject({ count: 1, sum: 7, status: 'corrected', final: false })
    }
  })

  it('admits an event at the epoch for a window one tick of W from final (W just below 0)', () => {
    // W = −5e-324 (an event at −5e-324 ms, placed by its floor in [−10, 0)): W − 20 rounds to −20.
    const engine = createEngine({ windows: cumulating(30, 10), watermark: boundedOutOfOrderness(0), allowedLateness: 20, now: () => 0 })
    engine.ingest([{ id: 'a', source: 'd1', seq: 1, ts: -5e-324, value: 0 }])
    const receipt = engine.ingest([{ id: 'b', source: 'd1', seq: 2, ts: -21, value: 1 }])
    expect([receipt.accepted, receipt.late, engine.lateEvents().length]).toEqual([1, 1, 0])
    expect(engine.results().find((r) => r.end === -20)).toMatchObject({ count: 1, status: 'corrected', final: false })
  })

  it(
    'shows what the per-window placement shows, and admits exactly where W < end + allowedLateness, near every power of two',
    () => {
      const specs = [tumbling(1_000), tumbling(8), sliding(12, 4), sliding(3_000, 1_000), cumulating(30, 10), cumulating(4_096, 1_024)] as FixedSpec[]
      const draft = fc.record({
        spec: fc.constantFrom(...specs),
        lateness: fc.constantFrom(0, 1, 7, 20, 5_000, 60_000),
        /** A window end near −2^power (or +2^power) ms. */
        power: fc.integer({ min: 0, max: 43 }),
        negative: fc.boolean(),
        /** Ends this many units from there. */
        shift: fc.integer({ min: -70, max: 3 }),
        /** W this many representable doubles from `end + lateness` (0: exactly there, final). */
        ticks: fc.integer({ min: -3, max: 3 }),
        value: fc.integer({ min: -9, max: 9 }),
      })
      assertFreshSeeded(
        fc.property(draft, ({ spec, lateness, power, negative, shift, ticks, value }) => {
          const unit = spec.kind === 'sliding' ? spec.slide : spec.kind === 'cumulating' ? spec.step : spec.size
          const edge = (negative ? -1 : 1) * 2 ** power
          const end = (Math.floor(edge / unit) + shift) * unit
          const w = nudge(end + lateness, ticks)
          const options: EngineOptions = { windows: spec, watermark: manual(), allowedLateness: lateness, retention: 0, maxFutureSkew: Number.POSITIVE_INFINITY, now: () => 0 }
          const events: StreamEvent[] = [{ id: 'e', source: 'd1', seq: 1, ts: end - 1, value }]
          const sliced = createEngine(options)
          const reference = createPerWindowEngine(options)
          sliced.advanceWatermark(w)
          reference.advanceWatermark(w)
          expect(seen(sliced, events)).toEqual(seen(reference, events))
          // The window ending at `end` holds the event exactly when the watermark had not made it final.
          const open = w < end + lateness
          const holds = sliced.results().some((r) => r.end === end && r.count === 1)
          expect(holds).toBe(open)
        }),
        FILE,
        2_000,
      )
    },
    PROPERTY_TIMEOUT,
  )
})
