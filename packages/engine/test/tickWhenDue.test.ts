/**
 * `nextTickAt()` says when `tick()` next has work (an armed processing-time trigger, a source
 * turning idle), and `tickWhenDue` ticks only then. The property at the end holds it to the
 * strongest form: an engine ticked only when due emits exactly what an engine ticked at every
 * millisecond emits, at the same times.
 */
import { assertSeeded } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  afterProcessingTime,
  alignedProcessingTime,
  boundedOutOfOrderness,
  createEngine,
  type Engine,
  type EngineOptions,
  everyElement,
  manual,
  never,
  sliding,
  type Trigger,
  tickWhenDue,
  TidemarkEngine,
  tumbling,
  type WalOp,
  type WindowChange,
} from '../src/index.ts'
import { fakeClock, ManualTimers } from '../src/testing/index.ts'

const FILE = 'packages/engine/test/tickWhenDue.test.ts'

function reading(source: string, seq: number, ts: number, value = 1) {
  return { id: `${source}-${seq}`, source, seq, ts, key: 'k', value }
}

describe('nextTickAt', () => {
  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])(
    'names no time for a source heard while the clock read %s (it counts as heard at the next finite reading), then the time it turns idle',
    (noTime) => {
      const clock = fakeClock(noTime)
      const engine = createEngine({ windows: tumbling(60_000), idleTimeout: 100, now: clock.read })
      expect(engine.ingest([reading('d1', 1, 1_000)]).accepted).toBe(1)
      // Not a time already past: a scheduler waiting `nextTickAt() - now` would tick at once, over and over.
      expect(engine.nextTickAt()).toBe(Number.POSITIVE_INFINITY)
      clock.now = 1_000
      engine.tick()
      expect(engine.nextTickAt()).toBe(1_101)
    },
  )

  it('is Infinity while no trigger is armed and sources never turn idle', () => {
    const clock = fakeClock(1_000)
    const engine = createEngine({ windows: tumbling(60_000), now: clock.read })
    expect(engine.nextTickAt()).toBe(Number.POSITIVE_INFINITY)
    engine.ingest([reading('d1', 1, 1_000)])
    expect(engine.nextTickAt()).toBe(Number.POSITIVE_INFINITY)
  })

  it("is an early trigger's deadline; a tick before it fires nothing, a tick at it fires the pane", () => {
    const clock = fakeClock(1_000)
    const engine = createEngine({ windows: tumbling(60_000), trigger: { early: afterProcessingTime(5_000) }, now: clock.read })
    const changes: WindowChange[] = []
    engine.subscribe((batch) => changes.push(...batch))
    engine.ingest([reading('d1', 1, 1_000)])
    expect(engine.nextTickAt()).toBe(6_000)
    clock.now = 5_999
    engine.tick()
    expect(changes).toEqual([])
    expect(engine.nextTickAt()).toBe(6_000)
    clock.now = 6_000
    engine.tick()
    expect(changes.map((c) => [c.type, c.result.count])).toEqual([['provisional', 1]])
    expect(engine.nextTickAt()).toBe(Number.POSITIVE_INFINITY)
  })

  it('skips a timer the on-time pane cancelled', () => {
    const clock = fakeClock(0)
    const engine = createEngine({ windows: tumbling(60_000), trigger: { early: afterProcessingTime(5_000) }, now: clock.read })
    engine.ingest([reading('d1', 1, 1_000)])
    expect(engine.nextTickAt()).toBe(5_000)
    engine.advanceWatermark(60_000) // fires on time: the early timer is cancelled
    expect(engine.stats().timers).toBe(0)
    expect(engine.nextTickAt()).toBe(Number.POSITIVE_INFINITY)
  })

  it('is the earliest of several deadlines, and an aligned trigger’s next boundary', () => {
    const clock = fakeClock(1_000)
    const engine = createEngine({ windows: tumbling(60_000), trigger: { early: alignedProcessingTime(10_000, 2_500) }, now: clock.read })
    engine.ingest([reading('d1', 1, 1_000)])
    expect(engine.nextTickAt()).toBe(2_500)
    clock.now = 2_500
    engine.tick()
    clock.now = 3_000
    engine.ingest([reading('d1', 2, 61_000)])
    expect(engine.nextTickAt()).toBe(12_500)
  })

  it('is the moment the first silent source turns idle: 1 ms after its idleTimeout runs out', () => {
    const clock = fakeClock(1_000)
    const engine = createEngine({ windows: tumbling(60_000), idleTimeout: 30_000, now: clock.read })
    engine.ingest([reading('d1', 1, 1_000)])
    clock.now = 4_000
    engine.ingest([reading('d2', 1, 2_000)])
    expect(engine.watermark()).toBe(1_000) // d1 holds it
    expect(engine.nextTickAt()).toBe(31_001)
    clock.now = 31_000
    engine.tick()
    expect(engine.watermark()).toBe(1_000)
    clock.now = 31_001
    engine.tick()
    expect(engine.watermark()).toBe(2_000) // d1 idle: d2 holds it
    expect(engine.nextTickAt()).toBe(34_001)
    clock.now = 34_001
    engine.tick()
    expect(engine.nextTickAt()).toBe(Number.POSITIVE_INFINITY)
    clock.now = 40_000
    engine.ingest([reading('d1', 2, 3_000)]) // back: it can turn idle again
    expect(engine.nextTickAt()).toBe(70_001)
  })

  it('throws once the engine is closed, as every call does', async () => {
    const engine = createEngine({ windows: tumbling(60_000) })
    await engine.close()
    expect(() => engine.nextTickAt()).toThrow('engine is closed')
  })
})

/** An engine whose ticks are counted, for `tickWhenDue`. */
function counted(engine: Engine): { engine: Engine; ticks: () => number } {
  let ticks = 0
  const tick = engine.tick.bind(engine)
  engine.tick = () => {
    ticks++
    tick()
  }
  return { engine, ticks: () => ticks }
}

describe('tickWhenDue', () => {
  it('fires each early pane at its deadline with one tick per deadline, not one per second', () => {
    const clock = new ManualTimers(0)
    const { engine, ticks } = counted(createEngine({ windows: tumbling(60_000), trigger: { early: afterProcessingTime(5_000) }, now: clock.read }))
    const panes: number[] = []
    engine.subscribe((batch) => {
      for (const change of batch) if (change.type === 'provisional') panes.push(clock.now)
    })
    const stop = tickWhenDue(engine, { now: clock.read, timers: clock })
    clock.advance(1_000)
    engine.ingest([reading('d1', 1, 1_000)])
    clock.advance(3_000)
    engine.ingest([reading('d1', 2, 2_000)]) // joins the pane the first one armed
    clock.advance(10_000)
    engine.ingest([reading('d1', 3, 3_000)])
    clock.advance(600_000)
    expect(panes).toEqual([6_000, 19_000])
    expect(ticks()).toBe(2)
    expect(clock.pending).toEqual([])
    stop()
  })

  it('lets a silent source stop holding the watermark on time', () => {
    const clock = new ManualTimers(0)
    const engine = createEngine({ windows: tumbling(10_000), idleTimeout: 30_000, now: clock.read })
    tickWhenDue(engine, { now: clock.read, timers: clock })
    engine.ingest([reading('slow', 1, 0), reading('fast', 1, 0)])
    clock.advance(1_000)
    engine.ingest([reading('fast', 2, 20_000)])
    expect(engine.watermark()).toBe(0)
    clock.advance(29_000) // 'slow' was last seen at 0: idle after 30 s, at 30,001
    expect(engine.watermark()).toBe(0)
    clock.advance(1)
    expect(engine.watermark()).toBe(20_000)
  })

  it('arms no timer for a deadline that is not a time (NaN, from a hand-made checkpoint): one of NaN ms would run at once, for ever', () => {
    const clock = new ManualTimers(0)
    const engine = createEngine({ windows: tumbling(1_000), now: clock.read })
    const stop = tickWhenDue({ tick: () => engine.tick(), nextTickAt: () => Number.NaN, subscribe: (listener) => engine.subscribe(listener), replica: engine.replica }, { now: clock.read, timers: clock })
    expect(clock.pending).toEqual([])
    engine.ingest([reading('d1', 1, 100)])
    expect(clock.pending).toEqual([])
    stop()
  })

  it("hears an operation a subscriber made while a notification without window change was heard: it arms that operation's deadline", () => {
    const clock = new ManualTimers(0)
    const engine = createEngine({ windows: tumbling(60_000), trigger: { early: afterProcessingTime(500) }, now: clock.read })
    const panes: string[] = []
    const views: number[] = []
    // A view of the stats, subscribed before the bridge: it hears of the bridge's batch too.
    engine.subscribe((batch) => {
      views.push(engine.stats().ingested)
      for (const change of batch) panes.push(`${clock.now} ${change.type} ${change.result.count}`)
    })
    tickWhenDue(engine, { now: clock.read, timers: clock })
    // A bridge that hands the engine what it received elsewhere, on its next notification.
    const received = [reading('d1', 1, 1_000)]
    engine.subscribe(() => {
      const next = received.shift()
      if (next !== undefined) engine.ingest([next])
    })
    clock.advance(10)
    engine.tick() // nothing due: a notification without window change, in which the bridge ingests (no window change either)
    expect(views).toEqual([0, 1])
    expect(engine.nextTickAt()).toBe(510)
    clock.advance(5_000)
    expect(panes).toEqual(['510 provisional 1'])
  })

  it('stays armed through a delivery that a runaway subscriber made too long (B52): reading nextTickAt changes nothing, so it is not refused', () => {
    const clock = new ManualTimers(0)
    const engine = createEngine({ windows: tumbling(10), watermark: boundedOutOfOrderness(0), idleTimeout: 1_000, allowedLateness: 100_000, now: clock.read })
    // From 500 on, a subscriber that ingests an event on every notification, cut short by the engine after 1,000.
    let calls = 0
    let refused = 0
    engine.subscribe(() => {
      if (clock.now < 500) return
      try {
        engine.ingest([reading('loop', ++calls, 5)])
      } catch {
        refused++
      }
    })
    const reported: unknown[] = []
    tickWhenDue(engine, { now: clock.read, timers: clock, onError: (error) => reported.push(error) })
    engine.ingest([reading('slow', 1, 0)])
    clock.advance(500)
    engine.ingest([reading('fast', 1, 50)])
    expect([calls, refused, engine.watermark()]).toEqual([1_001, 1, 0])
    // 'slow', heard at 0, turns idle at 1,001: the tick then lets W go to 5 ('loop').
    expect(clock.pending).toEqual([501])
    clock.advance(501)
    expect(engine.watermark()).toBe(5)
    expect(reported).toEqual([])
  })

  it('waits a second between ticks while its now reads NaN: a timer of NaN ms ran at once, over and over', () => {
    const clock = new ManualTimers(0)
    let broken = false
    const read = () => (broken ? Number.NaN : clock.now)
    const { engine, ticks } = counted(createEngine({ windows: tumbling(1_000), idleTimeout: 100, now: read }))
    engine.ingest([reading('d1', 1, 5)])
    broken = true
    const waits: number[] = []
    tickWhenDue(engine, {
      now: read,
      timers: {
        setTimeout: (run, ms) => {
          waits.push(ms)
          // Node runs a timer of NaN ms after 1 ms.
          return clock.setTimeout(run, Number.isNaN(ms) ? 1 : ms)
        },
        clearTimeout: (handle) => clock.clearTimeout(handle),
      },
    })
    clock.advance(5_000)
    expect(ticks()).toBe(5)
    expect(waits.every((ms) => ms === 1_000)).toBe(true)
  })

  it('stops when told, and when the engine closes', async () => {
    const clock = new ManualTimers(0)
    const options: EngineOptions = { windows: tumbling(60_000), idleTimeout: 5_000, now: clock.read }
    const first = createEngine(options)
    first.ingest([reading('d1', 1, 0)])
    const stop = tickWhenDue(first, { now: clock.read, timers: clock })
    expect(clock.pending).toEqual([5_001])
    stop()
    expect(clock.pending).toEqual([])
    first.ingest([reading('d1', 2, 1)])
    expect(clock.pending).toEqual([])

    const second = createEngine(options)
    second.ingest([reading('d1', 1, 0)])
    tickWhenDue(second, { now: clock.read, timers: clock })
    expect(clock.pending).toEqual([5_001])
    await second.close()
    expect(clock.pending).toEqual([])
    expect(() => tickWhenDue(second, { now: clock.read, timers: clock })).toThrow('tickWhenDue: the engine is closed')
  })

  it('fires a pane at its deadline though the timer fired a millisecond early', () => {
    const clock = new ManualTimers(0)
    const engine = createEngine({ windows: tumbling(60_000), trigger: { early: afterProcessingTime(5_000) }, now: clock.read })
    const panes: number[] = []
    engine.subscribe((batch) => {
      for (const change of batch) if (change.type === 'provisional') panes.push(clock.now)
    })
    // The first timer fires 1 ms early (Node's timers may, as `Date.now` reads them); the others on time.
    let early = true
    const timers = {
      setTimeout: (run: () => void, ms: number) => {
        const handle = clock.setTimeout(run, early && ms > 0 ? ms - 1 : ms)
        if (ms > 0) early = false
        return handle
      },
      clearTimeout: (handle: unknown) => clock.clearTimeout(handle),
    }
    tickWhenDue(engine, { now: clock.read, timers })
    engine.ingest([reading('d1', 1, 1_000)])
    clock.advance(10_000)
    expect(panes).toEqual([5_000])
  })

  it('cuts a wait longer than a timer takes into parts, and ticks once at the end', () => {
    const DAY = 86_400_000
    const clock = new ManualTimers(0)
    const { engine, ticks } = counted(createEngine({ windows: tumbling(60_000), idleTimeout: 30 * DAY, now: clock.read }))
    tickWhenDue(engine, { now: clock.read, timers: clock })
    engine.ingest([reading('d1', 1, 0)])
    expect(clock.pending).toEqual([2 ** 31 - 1])
    clock.advance(30 * DAY + 1)
    expect(ticks()).toBe(2) // the cut, finding nothing due, and the idle deadline
    expect(engine.nextTickAt()).toBe(Number.POSITIVE_INFINITY)
  })

  it('waits a second between ticks while its clock runs ahead of the engine’s', () => {
    const clock = new ManualTimers(0)
    const { engine, ticks } = counted(createEngine({ windows: tumbling(60_000), trigger: { early: afterProcessingTime(60_000) }, now: clock.read }))
    engine.ingest([reading('d1', 1, 0)])
    // 50 s ahead: it thinks the deadline (60 s) is 10 s away.
    tickWhenDue(engine, { now: () => clock.now + 50_000, timers: clock })
    clock.advance(70_000)
    // Due on the engine's clock at 60 s: ticks at 10 s, then once a second until 60 s.
    expect(ticks()).toBe(51)
    expect(engine.stats().timers).toBe(0)
  })
})

/** One step of a timeline: the clock moves by `after` ms, then a source sends a reading (or nothing). */
interface Step {
  readonly after: number
  readonly source: number | null
  readonly ts: number
}

const TRIGGERS: readonly (() => Trigger)[] = [everyElement, never, () => afterProcessingTime(700), () => afterProcessingTime(1_300), () => alignedProcessingTime(1_000, 250)]
const LATE: readonly (() => Trigger)[] = [everyElement, never, () => afterProcessingTime(900)]

/** Every change of a run, with the processing time it was emitted at. */
function runTimeline(steps: readonly Step[], options: EngineOptions, ticking: 'every-ms' | 'when-due'): string[] {
  const clock = new ManualTimers(0)
  const engine = createEngine({ ...options, now: clock.read })
  const out: string[] = []
  engine.subscribe((batch) => {
    for (const c of batch) out.push(`${clock.now} ${c.type} ${c.result.start} ${c.result.count} ${c.result.sum} ${c.pane.timing}#${c.pane.index}`)
  })
  if (ticking === 'when-due') tickWhenDue(engine, { now: clock.read, timers: clock })
  const seqs = new Map<number, number>()
  const move = (ms: number) => {
    if (ticking === 'when-due') clock.advance(ms)
    else
      for (let i = 0; i < ms; i++) {
        clock.advance(1)
        engine.tick()
      }
  }
  for (const step of steps) {
    move(step.after)
    if (step.source === null) continue
    const seq = (seqs.get(step.source) ?? 0) + 1
    seqs.set(step.source, seq)
    engine.ingest([reading(`d${step.source}`, seq, step.ts, seq)])
  }
  move(6_000)
  return out
}

describe('ticking only when due', () => {
  it('emits what ticking every millisecond emits, at the same times', () => {
    const step = fc.record({ after: fc.integer({ min: 0, max: 900 }), source: fc.option(fc.integer({ min: 0, max: 2 })), ts: fc.integer({ min: 0, max: 12_000 }) })
    assertSeeded(
      fc.property(
        fc.array(step, { maxLength: 25 }),
        fc.integer({ min: 0, max: TRIGGERS.length - 1 }),
        fc.integer({ min: 0, max: LATE.length - 1 }),
        fc.constantFrom(Number.POSITIVE_INFINITY, 1_500, 4_000, 1_500.5, 0.25),
        (steps, early, late, idleTimeout) => {
          const options: EngineOptions = {
            windows: tumbling(2_000),
            watermark: boundedOutOfOrderness(500),
            allowedLateness: 3_000,
            idleTimeout,
            trigger: { early: (TRIGGERS[early] as () => Trigger)(), late: (LATE[late] as () => Trigger)() },
          }
          expect(runTimeline(steps, options, 'when-due')).toEqual(runTimeline(steps, options, 'every-ms'))
        },
      ),
      FILE,
      'emits what ticking every millisecond emits, at the same times',
      150,
    )
  })
})

/** An engine whose write-ahead log keeps its ops in memory. */
function logged(options: EngineOptions): { engine: TidemarkEngine; ops: WalOp[] } {
  const engine = new TidemarkEngine(options)
  const ops: WalOp[] = []
  engine.attachLog({
    record: (op) => {
      ops.push(op)
      return Promise.resolve()
    },
    blocked: null,
    stats: () => ({ walRecords: ops.length, walBytes: 0 }),
  })
  return { engine, ops }
}

/** JSON that keeps infinities, NaN and -0 apart. */
function exact(value: unknown): string {
  return JSON.stringify(value, (_, v) => (typeof v === 'number' && (Object.is(v, -0) || !Number.isFinite(v)) ? `#${String(Object.is(v, -0) ? '-0' : v)}` : v))
}

describe('ticks in the write-ahead log', () => {
  it('logs a tick that turns a source idle on a fractional timeout or clock, as on whole ones', () => {
    for (const [idleTimeout, at] of [
      [999.5, 1_000],
      [1_000, 1_000.5],
      [1_000, 1_001],
    ] as const) {
      const clock = fakeClock(0)
      const { engine, ops } = logged({ windows: tumbling(1_000), idleTimeout, replicaId: 'r1', now: clock.read })
      engine.ingest([reading('a', 1, 100)])
      clock.now = at
      engine.tick()
      expect(ops.map((op) => op.kind)).toEqual(['ingest', 'tick'])
      const replayed = new TidemarkEngine({ windows: tumbling(1_000), idleTimeout, replicaId: 'r1', now: clock.read })
      for (const op of ops) replayed.replay(op)
      expect(exact(replayed.checkpoint())).toBe(exact(engine.checkpoint()))
    }
  })

  it('judges idleness again after a clock that gave no time', () => {
    const clock = fakeClock(0)
    const { engine, ops } = logged({ windows: tumbling(1_000), idleTimeout: 1_000, now: clock.read })
    engine.ingest([reading('a', 1, 100)])
    clock.now = Number.NaN
    engine.tick()
    expect(engine.nextTickAt()).toBe(1_001)
    clock.now = 500
    engine.tick() // nothing due: not logged
    clock.now = 1_001
    engine.tick()
    expect(ops.map((op) => op.kind)).toEqual(['ingest', 'tick', 'tick'])
  })

  it('logs a tick that counts a source heard while the clock gave no time as heard then: replay turns it idle when the engine did', () => {
    const clock = fakeClock(0)
    const options: EngineOptions = { windows: tumbling(10), watermark: boundedOutOfOrderness(0), idleTimeout: 100, replicaId: 'r1', now: clock.read }
    const { engine, ops } = logged(options)
    clock.now = Number.NaN
    engine.ingest([{ id: 'q1', source: 'quiet', seq: 1, ts: 5, value: 1 }])
    clock.now = 10
    engine.tick() // 'quiet' counts as heard at 10 from here: idle after 110
    clock.now = 50
    engine.ingest([{ id: 'b1', source: 'busy', seq: 1, ts: 40, value: 1 }])
    clock.now = 150
    engine.ingest([{ id: 'b2', source: 'busy', seq: 2, ts: 500, value: 1 }])
    expect(engine.watermark()).toBe(500)
    expect(ops.map((op) => op.kind)).toEqual(['ingest', 'tick', 'ingest', 'ingest'])
    const replayed = new TidemarkEngine(options)
    for (const op of ops) replayed.replay(op)
    expect(replayed.watermark()).toBe(500)
    expect(exact(replayed.checkpoint())).toBe(exact(engine.checkpoint()))
  })

  it('logs the tick that arms the timer of a window changed while the clock gave no time; replay and a checkpoint arm it the same', () => {
    const clock = fakeClock(Number.NaN)
    const options: EngineOptions = { windows: tumbling(60_000), trigger: { early: afterProcessingTime(100) }, replicaId: 'r1', now: clock.read }
    const { engine, ops } = logged(options)
    engine.ingest([reading('d1', 1, 1_000)])
    const restored = new TidemarkEngine(options)
    restored.restore(engine.checkpoint())
    clock.now = 1_000
    for (const e of [engine, restored]) e.tick()
    expect(ops.map((op) => op.kind)).toEqual(['ingest', 'tick'])
    const replayed = new TidemarkEngine(options)
    for (const op of ops) replayed.replay(op)
    for (const e of [engine, restored, replayed]) expect(e.nextTickAt()).toBe(1_100)
    expect(exact(replayed.checkpoint())).toBe(exact(engine.checkpoint()))
  })

  it('a window changed while the clock gave no time, then shown by a pane and gone, leaves nothing due: the tick at the next finite reading is not logged', () => {
    const clock = fakeClock(Number.NaN)
    const { engine, ops } = logged({ windows: tumbling(10), watermark: manual(), retention: 0, trigger: { early: afterProcessingTime(100) }, replicaId: 'r1', now: clock.read })
    engine.ingest([reading('d1', 1, 5)])
    // Fired on time and final while the clock still read NaN, then left live state.
    engine.advanceWatermark(100)
    expect(engine.stats().openWindows).toBe(0)
    clock.now = 1_000
    engine.tick()
    expect(ops.map((op) => op.kind)).toEqual(['ingest', 'advance'])
    expect(engine.nextTickAt()).toBe(Number.POSITIVE_INFINITY)
  })

  it('windows changed while the clock gave no time fire their panes in one order live, after a checkpoint restore, and on replay', () => {
    const clock = fakeClock(0)
    const options: EngineOptions = { windows: tumbling(10), watermark: manual(), trigger: { early: afterProcessingTime(100) }, replicaId: 'r1', now: clock.read }
    const { engine, ops } = logged(options)
    engine.ingest([{ ...reading('d1', 1, 5), key: 'a' }])
    engine.ingest([{ ...reading('d1', 2, 5), key: 'b' }])
    clock.now = 100
    engine.tick()
    // Changed again while the clock reads NaN, in the other order than the windows were made in.
    clock.now = Number.NaN
    engine.ingest([{ ...reading('d1', 3, 6), key: 'b' }])
    engine.ingest([{ ...reading('d1', 4, 6), key: 'a' }])
    const restored = new TidemarkEngine(options)
    restored.restore(engine.checkpoint())
    const replayed = new TidemarkEngine(options)
    for (const op of ops) replayed.replay(op)
    const engines = [engine, restored, replayed]
    const seen = engines.map((e) => {
      const lines: string[] = []
      e.subscribe((changes) => {
        for (const c of changes) lines.push(`${c.type} ${c.result.key} ${c.result.count}`)
      })
      return lines
    })
    clock.now = 1_000
    for (const e of engines) e.tick()
    clock.now = 1_100
    for (const e of engines) e.tick()
    expect(seen[0]).toHaveLength(2)
    expect(seen[1]).toEqual(seen[0])
    expect(seen[2]).toEqual(seen[0])
  })

  it('logs a tick only when something was due: a trigger, a source turning idle, a clock gone back', () => {
    const clock = fakeClock(1_000)
    const { engine, ops } = logged({ windows: tumbling(60_000), idleTimeout: 30_000, trigger: { early: afterProcessingTime(5_000) }, now: clock.read })
    const ticksAt = (now: number) => {
      clock.now = now
      engine.tick()
      return ops.filter((op) => op.kind === 'tick').map((op) => (op as { now: number }).now)
    }
    engine.ingest([reading('d1', 1, 1_000)])
    expect(ticksAt(2_000)).toEqual([])
    expect(ticksAt(6_000)).toEqual([6_000]) // the early pane
    expect(ticksAt(20_000)).toEqual([6_000])
    expect(ticksAt(31_001)).toEqual([6_000, 31_001]) // d1 turns idle
    expect(ticksAt(40_000)).toEqual([6_000, 31_001])
    expect(ticksAt(10_000)).toEqual([6_000, 31_001, 10_000]) // the clock went back: d1 is active again
    expect(ticksAt(Number.NaN)).toHaveLength(4)
  })

  it('replays to the same state as the engine that logged it, ticks on any interval included', () => {
    const step = fc.record({
      after: fc.integer({ min: 0, max: 900 }),
      // Quiet steps as often as readings: sources fall silent and turn idle.
      source: fc.option(fc.integer({ min: 0, max: 2 }), { freq: 2 }),
      ts: fc.integer({ min: 0, max: 12_000 }),
      tick: fc.boolean(),
      back: fc.integer({ min: 0, max: 3 }),
    })
    assertSeeded(
      fc.property(
        fc.array(step, { maxLength: 30 }),
        fc.integer({ min: 0, max: TRIGGERS.length - 1 }),
        fc.integer({ min: 0, max: LATE.length - 1 }),
        fc.constantFrom(Number.POSITIVE_INFINITY, 1_500, 1_499.5, 4_000),
        (steps, early, late, idleTimeout) => {
          const clock = fakeClock(0)
          const options: EngineOptions = {
            windows: [tumbling(2_000), sliding(4_000, 1_000)],
            watermark: boundedOutOfOrderness(500),
            allowedLateness: 3_000,
            idleTimeout,
            trigger: { early: (TRIGGERS[early] as () => Trigger)(), late: (LATE[late] as () => Trigger)() },
            replicaId: 'r1',
            now: clock.read,
          }
          const { engine, ops } = logged(options)
          // Recovered after every step: what the log holds so far gives the same state.
          const replayed = new TidemarkEngine(options)
          let applied = 0
          const same = () => {
            for (; applied < ops.length; applied++) replayed.replay(ops[applied] as WalOp)
            expect(exact(replayed.checkpoint())).toBe(exact(engine.checkpoint()))
          }
          const seqs = new Map<number, number>()
          for (const s of steps) {
            // Now and then the clock goes back a little (a corrected device clock).
            clock.now += s.back === 0 ? -1_500 : s.after
            if (s.tick) {
              engine.tick()
              same()
            }
            if (s.source === null) continue
            const seq = (seqs.get(s.source) ?? 0) + 1
            seqs.set(s.source, seq)
            engine.ingest([reading(`d${s.source}`, seq, s.ts, seq)])
            same()
          }
          expect(exact(replayed.results())).toBe(exact(engine.results()))
        },
      ),
      FILE,
      'replays to the same state as the engine that logged it, ticks on any interval included',
      150,
    )
  })
})

describe('ticking on an interval', () => {
  /** `W` and the fired windows after each of `ticks` (processing times), sources `d0..` sending at the times given. */
  function run(sends: readonly (readonly [at: number, source: string, ts: number])[], ticks: readonly number[]) {
    const clock = fakeClock(0)
    const engine = createEngine({ windows: tumbling(1_000), watermark: boundedOutOfOrderness(0), idleTimeout: 100, now: clock.read })
    const fired: string[] = []
    engine.subscribe((batch) => {
      for (const c of batch) if (c.type === 'on_time') fired.push(`${clock.now} [${c.result.start},${c.result.end}) ${c.result.count}`)
    })
    const seqs = new Map<string, number>()
    const events = [...sends.map(([at, source, ts]) => ({ at, send: [source, ts] as const })), ...ticks.map((at) => ({ at, send: null }))].sort((x, y) => x.at - y.at || (x.send === null ? 1 : -1))
    for (const { at, send } of events) {
      clock.now = at
      if (send === null) engine.tick()
      else {
        const seq = (seqs.get(send[0]) ?? 0) + 1
        seqs.set(send[0], seq)
        engine.ingest([reading(send[0], seq, send[1])])
      }
    }
    return { watermark: engine.watermark(), fired }
  }
  const everyMs = (until: number) => Array.from({ length: until }, (_, i) => i + 1)

  it('fires what every source held back once all of them fell silent between two ticks, as ticks every millisecond do', () => {
    // d0 falls silent at ts 10, d1 at ts 3000, 50 ms later: ticked every millisecond, d0 turns idle
    // first (at 101) and W goes to d1's 3000 before d1 turns idle too (at 151).
    const sends = [
      [0, 'd0', 10],
      [50, 'd1', 3_000],
    ] as const
    const fine = run(sends, everyMs(600))
    expect(fine.watermark).toBe(3_000)
    expect(fine.fired).toEqual(['101 [0,1000) 1'])
    for (const interval of [200, 500, 5_000]) {
      const coarse = run(sends, [interval, 2 * interval])
      // Both were idle at the first tick: W goes where they held it just before the last turned idle.
      expect(coarse.watermark, `ticked every ${interval} ms`).toBe(3_000)
      expect(coarse.fired, `ticked every ${interval} ms`).toEqual([`${interval} [0,1000) 1`])
    }
  })

  it('goes where the sources heard from last held it, the lowest of them when several were heard at once', () => {
    const sends = [
      ...['d0', 'd1', 'd2', 'd3'].map((d) => [0, d, 100] as const),
      [10, 'd0', 9_000],
      [40, 'd1', 2_500],
      [80, 'd2', 5_000],
      [80, 'd3', 4_000],
    ] as const
    // Every millisecond: d0 idle at 111 (W 2500), d1 at 141 (W 4000), d2 and d3 together at 181.
    expect(run(sends, everyMs(400)).watermark).toBe(4_000)
    expect(run(sends, [1_000]).watermark).toBe(4_000)
    // Two of them idle at the first tick, the other two at the second: the same.
    expect(run(sends, [150, 1_000]).watermark).toBe(4_000)
  })

  it('does not go past what a finished source reached when that is further, nor back', () => {
    const clock = fakeClock(0)
    const engine = createEngine({ windows: tumbling(1_000), watermark: boundedOutOfOrderness(0), idleTimeout: 100, now: clock.read })
    engine.ingest([reading('d0', 1, 10), reading('f', 1, 7_000)])
    void engine.finishSource('f')
    clock.now = 50
    engine.ingest([reading('d1', 1, 3_000)])
    clock.now = 1_000
    engine.tick()
    expect(engine.watermark()).toBe(7_000)
  })
})
