/**
 * Triggers and accumulation, as the figures of chapter 2 of Streaming Systems show them, with a
 * stream of our own: nine scores in two-minute windows, arriving over a few minutes of processing
 * time, one of them late. Early panes, the on-time pane and a late pane; the same panes
 * accumulating, discarding, and as an accumulating-and-retracting consumer reads them; timers
 * measured on `now()` and fired by `tick()`. docs/semantics.md (Triggers and accumulation) walks
 * through the same stream.
 */
import { describe, expect, it } from 'vitest'
import {
  type Accumulation,
  afterProcessingTime,
  alignedProcessingTime,
  createEngine,
  type Engine,
  everyElement,
  manual,
  never,
  session,
  type StreamEvent,
  type Trigger,
  tumbling,
  type WindowChange,
} from '../src/index.ts'
import type { TidemarkEngine } from '../src/core/engine.ts'

const SECOND = 1_000
const TWO_MINUTES = 120_000

/** A score: event time and value, and the processing time it reaches the engine. */
interface Score {
  readonly id: string
  readonly at: number
  readonly ts: number
  readonly value: number
}

/**
 * The stream. Window [0, 2 min) gets 4, 6, 2 on time and 7 late; window [2, 4 min) gets 3, 8, 5,
 * 1, 9. Processing time runs from 0 to 5 min; the watermark passes 2 min at 2:30 and 4 min at 4:30.
 */
const SCORES: readonly Score[] = [
  { id: 'a1', at: 30, ts: 20, value: 4 },
  { id: 'a2', at: 80, ts: 70, value: 6 },
  { id: 'b1', at: 125, ts: 125, value: 3 },
  { id: 'a3', at: 130, ts: 100, value: 2 },
  { id: 'b2', at: 170, ts: 165, value: 8 },
  { id: 'a4', at: 200, ts: 50, value: 7 },
  { id: 'b3', at: 210, ts: 140, value: 5 },
  { id: 'b4', at: 240, ts: 230, value: 1 },
  { id: 'b5', at: 260, ts: 200, value: 9 },
]

/** Watermark moves, by processing time (s): W passes each window's end half a minute after it. */
const WATERMARK: readonly (readonly [number, number])[] = [
  [150, TWO_MINUTES],
  [270, 2 * TWO_MINUTES],
]

interface Run {
  readonly engine: Engine
  /** Every change, with the processing time (s) of the operation that emitted it. */
  readonly changes: { at: number; change: WindowChange }[]
}

/** Runs the stream second by second: each score as its own batch, the watermark moves, a tick every 10 s. */
function play(early: Trigger, late: Trigger, accumulation: Accumulation = 'accumulating', allowedLateness = 5 * 60_000): Run {
  const clock = { now: 0 }
  const engine = createEngine({ windows: tumbling(TWO_MINUTES), watermark: manual(), allowedLateness, trigger: { early, late }, accumulation, now: () => clock.now })
  const changes: { at: number; change: WindowChange }[] = []
  engine.subscribe((batch) => {
    for (const change of batch) changes.push({ at: clock.now / SECOND, change })
  })
  for (let at = 0; at <= 300; at++) {
    clock.now = at * SECOND
    for (const s of SCORES) {
      if (s.at === at) engine.ingest([{ id: s.id, source: 'team', ts: s.ts * SECOND, key: 'score', value: s.value } satisfies StreamEvent])
    }
    for (const [when, to] of WATERMARK) if (when === at) engine.advanceWatermark(to)
    if (at % 10 === 0) engine.tick()
  }
  return { engine, changes }
}

/** The panes of one window as `type@time=sum`, with the pane's timing and indexes. */
function panes(run: Run, start: number): string[] {
  return run.changes
    .filter(({ change }) => change.result.start === start && change.type !== 'final')
    .map(({ at, change: { type, result, pane } }) => `${type}@${at}=${result.sum} ${pane.timing}#${pane.index}/${pane.onTimeIndex}`)
}

describe('the nine scores (Streaming Systems, chapter 2)', () => {
  it('watermark only: one on-time pane per window, the late score as a late pane (early: never)', () => {
    const run = play(never(), everyElement())
    expect(panes(run, 0)).toEqual(['on_time@150=12 on_time#0/0', 'correction@200=19 late#1/1'])
    expect(panes(run, TWO_MINUTES)).toEqual(['on_time@270=26 on_time#0/0'])
  })

  it('every element: a pane for each score (the default)', () => {
    const run = play(everyElement(), everyElement())
    expect(panes(run, 0)).toEqual([
      'provisional@30=4 early#0/-1',
      'provisional@80=10 early#1/-1',
      'provisional@130=12 early#2/-1',
      'on_time@150=12 on_time#3/0',
      'correction@200=19 late#4/1',
    ])
  })

  it('early panes every minute of processing time, on time at the watermark, late for each late score', () => {
    const run = play(alignedProcessingTime(60 * SECOND), everyElement())
    // 4 by 1:00, 10 by 2:00; the 2 at 2:10 starts a timer for 3:00 that the on-time pane at 2:30 cancels.
    expect(panes(run, 0)).toEqual([
      'provisional@60=4 early#0/-1',
      'provisional@120=10 early#1/-1',
      'on_time@150=12 on_time#2/0',
      'correction@200=19 late#3/1',
    ])
    expect(panes(run, TWO_MINUTES)).toEqual(['provisional@180=11 early#0/-1', 'provisional@240=17 early#1/-1', 'on_time@270=26 on_time#2/0'])
    expect(run.engine.stats().timers).toBe(0)
  })

  it('early panes a minute after the first score since the last pane (unaligned delays)', () => {
    const run = play(afterProcessingTime(60 * SECOND), everyElement())
    // 4 at 0:30 starts a minute: due 1:30, fired by the tick at 1:30; the 2 at 2:10 starts another, which the on-time pane cancels.
    expect(panes(run, 0)).toEqual(['provisional@90=10 early#0/-1', 'on_time@150=12 on_time#1/0', 'correction@200=19 late#2/1'])
    // 3 at 2:05 → due 3:05, fired at 3:10 (ticks are every 10 s); 5 at 3:30 → due 4:30, cancelled by the on-time pane at 4:30.
    expect(panes(run, TWO_MINUTES)).toEqual(['provisional@190=11 early#0/-1', 'on_time@270=26 on_time#1/0'])
  })

  it('late panes held back: the late score shows in a delayed late pane, or, with none, when the window turns final', () => {
    const delayed = play(never(), afterProcessingTime(30 * SECOND))
    expect(panes(delayed, 0)).toEqual(['on_time@150=12 on_time#0/0', 'correction@230=19 late#1/1'])
    // No late trigger, allowed lateness 1 min: [0, 2 min) turns final when W passes 3 min (at 4:30, W = 4 min).
    const atFinality = play(never(), never(), 'accumulating', 60_000)
    const finalPanes = atFinality.changes.filter(({ change }) => change.result.start === 0)
    expect(finalPanes.map(({ at, change }) => `${change.type}@${at}=${change.result.sum}${change.result.final ? ' final' : ''}`)).toEqual([
      'on_time@150=12',
      'correction@270=19 final',
      'final@270=19 final',
    ])
  })
})

describe('accumulation modes on the same panes', () => {
  const early = alignedProcessingTime(60 * SECOND)

  it('accumulating: every pane carries the whole window; a late pane carries the pane it replaces', () => {
    const run = play(early, everyElement(), 'accumulating')
    const sums = run.changes.filter(({ change }) => change.result.start === 0 && change.type !== 'final').map(({ change }) => change.result.sum)
    expect(sums).toEqual([4, 10, 12, 19])
    const late = run.changes.find(({ change }) => change.type === 'correction')?.change
    expect(late?.previous?.sum).toBe(12)
  })

  it('discarding: each pane carries what arrived since the last one; the panes add up to the window', () => {
    const run = play(early, everyElement(), 'discarding')
    const ofA = run.changes.filter(({ change }) => change.result.start === 0 && change.type !== 'final').map(({ change }) => change)
    expect(ofA.map((c) => c.result.sum)).toEqual([4, 6, 2, 7])
    expect(ofA.map((c) => c.result.count)).toEqual([1, 1, 1, 1])
    // As in Beam, nothing is retracted: no pane carries `previous`.
    expect(ofA.every((c) => c.previous === undefined)).toBe(true)
    expect(ofA.reduce((n, c) => n + c.result.sum, 0)).toBe(19)
    // Window [2, 4 min): 3+8 by 3:00, 5+1 by 4:00, then the 9 at 4:20, in the on-time pane.
    const ofB = run.changes.filter(({ change }) => change.result.start === TWO_MINUTES).map(({ change }) => change.result.sum)
    expect(ofB).toEqual([11, 6, 9])
  })

  it('an on-time pane fires when nothing arrived since the last pane: empty, in discarding mode', () => {
    // Every score of [0, 2 min) has been shown by an early pane before the watermark passes 2 min.
    const run = play(everyElement(), everyElement(), 'discarding')
    const onTime = run.changes.find(({ change }) => change.type === 'on_time' && change.result.start === 0)?.change
    expect(onTime?.result).toMatchObject({ count: 0, sum: 0, min: 0, max: 0, mean: 0, status: 'on_time', pane: { timing: 'on_time', index: 3, onTimeIndex: 0 } })
  })

  it('accumulating and retracting: a consumer replacing each pane and subtracting `previous` keeps the total', () => {
    const run = play(early, everyElement(), 'accumulating')
    // A running total over windows: add each pane's value, take back the value it replaces.
    const shown = new Map<number, number>()
    let total = 0
    const log: string[] = []
    for (const { change } of run.changes) {
      if (change.type === 'final' || change.type === 'retract') continue
      const before = change.previous?.sum ?? shown.get(change.result.start) ?? 0
      total += change.result.sum - before
      shown.set(change.result.start, change.result.sum)
      if (change.result.start === 0) log.push(`${change.result.sum} (-${before})`)
    }
    expect(log).toEqual(['4 (-0)', '10 (-4)', '12 (-10)', '19 (-12)'])
    expect(total).toBe(19 + 26)
  })
})

describe('processing-time triggers', () => {
  it('fire only on tick(), in deadline order, and survive a checkpoint', () => {
    const clock = { now: 0 }
    const options = { windows: tumbling(10), watermark: manual(), trigger: { early: afterProcessingTime(100) }, now: () => clock.now, replicaId: 'r' }
    const engine = createEngine(options) as TidemarkEngine
    const seen: string[] = []
    engine.subscribe((changes) => {
      for (const c of changes) seen.push(`${c.result.key}:${c.result.sum}`)
    })
    engine.ingest([{ id: '1', source: 's', ts: 1, key: 'b', value: 1 }])
    clock.now = 50
    engine.ingest([{ id: '2', source: 's', ts: 2, key: 'a', value: 2 }])
    clock.now = 500
    // Due since 100 and 150, but nothing fires until a tick.
    engine.ingest([{ id: '3', source: 's', ts: 3, key: 'b', value: 3 }])
    expect(seen).toEqual([])
    expect(engine.stats().timers).toBe(2)
    // A checkpoint taken now, restored into a fresh engine: the same timers fire the same panes.
    const copy = new (engine.constructor as typeof TidemarkEngine)(options)
    copy.restore(engine.checkpoint())
    const copied: string[] = []
    copy.subscribe((changes) => {
      for (const c of changes) copied.push(`${c.result.key}:${c.result.sum}`)
    })
    engine.tick()
    copy.tick()
    expect(seen).toEqual(['b:4', 'a:2'])
    expect(copied).toEqual(seen)
    expect(engine.stats().timers).toBe(0)
  })

  it("restored from the checkpoint of an engine with other triggers or another accumulation, shows what its own would: no timer its trigger never arms, a whole pane where no part was kept", () => {
    const clock = { now: 0 }
    const base = { windows: tumbling(100), watermark: manual(), allowedLateness: 1_000, now: () => clock.now, replicaId: 'r' }
    const panes = (engine: Engine): string[] => {
      const seen: string[] = []
      engine.subscribe((changes) => {
        for (const c of changes) seen.push(`${c.type} ${c.pane.timing} ${c.result.count}/${c.result.sum}${c.previous === undefined ? '' : ` after ${c.previous.sum}`}`)
      })
      return seen
    }
    const restored = (from: TidemarkEngine, options: object): TidemarkEngine => {
      const engine = createEngine({ ...base, ...options }) as TidemarkEngine
      engine.restore(from.checkpoint())
      return engine
    }
    // Armed by an early trigger of 10 ms, restored where early panes never come: the timer is dropped, the data shows on time.
    const timed = createEngine({ ...base, trigger: { early: afterProcessingTime(10), late: afterProcessingTime(10) } }) as TidemarkEngine
    timed.ingest([{ id: '1', source: 's', ts: 5, value: 1 }])
    const quiet = restored(timed, { trigger: { early: never(), late: never() } })
    const quietPanes = panes(quiet)
    clock.now = 20
    quiet.tick()
    expect(quietPanes).toEqual([])
    expect(quiet.stats().timers).toBe(0)
    quiet.advanceWatermark(100)
    expect(quietPanes).toEqual(['on_time on_time 1/1'])
    // The same for a late trigger: a late timer armed there, dropped here; the late data shows when the window turns final.
    timed.advanceWatermark(100)
    timed.ingest([{ id: '2', source: 's', ts: 6, value: 2 }])
    expect(timed.stats().timers).toBe(1)
    const lateQuiet = restored(timed, { trigger: { late: never() } })
    const lateQuietPanes = panes(lateQuiet)
    clock.now = 100
    lateQuiet.tick()
    expect(lateQuiet.stats().timers).toBe(0)
    lateQuiet.advanceWatermark(1_100)
    expect(lateQuietPanes).toEqual(['correction late 2/3 after 1', 'final late 2/3'])

    // Accumulating with early panes never: data no pane showed, and no discarding part kept.
    const accumulating = createEngine({ ...base, trigger: { early: never() } }) as TidemarkEngine
    accumulating.ingest([
      { id: '1', source: 's', ts: 5, value: 1 },
      { id: '2', source: 's', ts: 6, value: 2 },
    ])
    const discarding = restored(accumulating, { trigger: { early: never() }, accumulation: 'discarding' })
    const discardingPanes = panes(discarding)
    discarding.ingest([{ id: '3', source: 's', ts: 7, value: 4 }])
    discarding.advanceWatermark(100)
    discarding.ingest([{ id: '4', source: 's', ts: 8, value: 8 }])
    // The on-time pane carries the whole window (not only what came after the restore); the late pane what came since.
    expect(discardingPanes).toEqual(['on_time on_time 3/7', 'correction late 1/8'])

    // And back: a discarding engine's part is dropped, every pane carries the whole window.
    const again = createEngine({ ...base, trigger: { early: never() }, accumulation: 'discarding' }) as TidemarkEngine
    again.ingest([{ id: '1', source: 's', ts: 5, value: 1 }])
    const whole = restored(again, { trigger: { early: never() } })
    const wholePanes = panes(whole)
    whole.ingest([{ id: '2', source: 's', ts: 6, value: 2 }])
    whole.advanceWatermark(100)
    whole.ingest([{ id: '3', source: 's', ts: 7, value: 4 }])
    expect(wholePanes).toEqual(['on_time on_time 2/3', 'correction late 3/7 after 3'])
  })

  it("a peer's cell on a final window shows at once and arms no late trigger; the window leaves at retention", () => {
    let now = 0
    const engine = createEngine({ windows: tumbling(1_000), watermark: manual(), replicaId: 'b', now: () => now, trigger: { late: afterProcessingTime(10_000) } })
    const changes: string[] = []
    engine.subscribe((batch) => changes.push(...batch.map((c) => `${c.type} ${c.result.start} ${c.result.count}`)))
    for (let r = 1; r <= 3; r++) {
      const start = r * 100_000
      engine.ingest([{ id: `x${r}`, source: 'own', ts: start + 10, key: 'k', value: 1 }])
      engine.advanceWatermark(start + 2_000) // final, within retention
      changes.length = 0
      // A peer's cell reaches the final window (a finality violation): its late pane comes now.
      engine.replica.mergeRemote([{ address: { window: 'tumbling:1000', key: 'k', start, source: 'p' }, cell: { count: 1, sum: 1, min: 1, max: 1, maxTs: start, version: 1 } }], [])
      expect(changes).toEqual([`correction ${start} 2`])
      expect(engine.stats().timers).toBe(0)
      engine.advanceWatermark(start + 70_000) // past retention
      expect(engine.stats()).toMatchObject({ timers: 0, openWindows: 0 })
      now += 100
    }
    expect(engine.nextTickAt()).toBe(Number.POSITIVE_INFINITY)
  })

  it("a session whose start a late event moved, its late pane held back, shows no history until that pane names it, as results() shows nothing", () => {
    const engine = createEngine({ windows: session(5), watermark: manual(), allowedLateness: 15, trigger: { late: never() } })
    const named: number[] = []
    engine.subscribe((changes) => named.push(...changes.map((c) => c.result.start)))
    engine.ingest([{ id: 'e1', source: 's', ts: 100, key: 'b', value: 1 }])
    engine.advanceWatermark(110)
    named.length = 0
    engine.ingest([{ id: 'e2', source: 's', ts: 98, key: 'b', value: 2 }])
    // The old start is retracted; nothing names the new one yet.
    expect(named).toEqual([100])
    expect(engine.results()).toEqual([])
    expect(engine.history('session:5', 'b', 98)).toEqual([])
    engine.advanceWatermark(200)
    expect(named).toEqual([100, 98, 98])
    expect(engine.history('session:5', 'b', 98).map((r) => [r.start, r.status])).toEqual([
      [100, 'on_time'],
      [98, 'corrected'],
    ])
  })
})
