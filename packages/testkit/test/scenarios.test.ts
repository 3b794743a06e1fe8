/**
 * Named event-time scenarios (docs/semantics.md): lateness, watermarks, idle
 * sources, completeness basis, sessions, retention. Fake clocks only.
 * Anomalies and stream interop have their own files.
 */
import { describe, expect, it } from 'vitest'
import { boundedOutOfOrderness, createEngine, manual, session, sliding, tumbling } from '@tidemark/engine'
import { brief, fakeClock, reading, recordChanges } from '@tidemark/engine/testing'
import { ChangeFold } from '../src/model/changeFold.ts'

describe('lateness', () => {
  it('correction within lateness carries previous, revision +1 and status corrected', () => {
    const engine = createEngine({ windows: tumbling(10), allowedLateness: 20 })
    const log = recordChanges(engine)
    engine.ingest([reading('d1', undefined, 1, 5)])
    engine.ingest([reading('d1', undefined, 12, 1)])
    const onTime = log.take().find((c) => c.type === 'on_time')
    expect(onTime?.result).toMatchObject({ start: 0, end: 10, count: 1, sum: 5, status: 'on_time', revision: 0, final: false, basis: 'derived' })

    const receipt = engine.ingest([reading('d1', undefined, 3, 7)])
    expect(receipt).toMatchObject({ accepted: 1, late: 1, beyondLateness: 0 })
    const [correction] = log.take()
    expect(correction?.type).toBe('correction')
    expect(correction?.previous).toEqual(onTime?.result)
    expect(correction?.result).toMatchObject({ start: 0, count: 2, sum: 12, min: 5, max: 7, mean: 6, status: 'corrected', revision: 1 })

    engine.ingest([reading('d1', undefined, 4, 1)])
    const [second] = log.take()
    expect(second?.previous).toEqual(correction?.result)
    expect(second?.result).toMatchObject({ count: 3, sum: 13, revision: 2, status: 'corrected' })
    expect(engine.results({ from: 0, to: 1 })).toEqual([second?.result])

    engine.ingest([reading('d1', undefined, 30, 0)])
    expect(log.take().filter((c) => c.type === 'final').map(brief)).toEqual(['final [0,10) n=3 corrected r2 final derived'])
    expect(engine.stats()).toMatchObject({ lateAdmitted: 2, corrections: 2 })
  })

  it('beyond lateness goes to the late lane with window id and reason', () => {
    const engine = createEngine({ windows: tumbling(10), allowedLateness: 20 })
    engine.ingest([reading('d1', undefined, 1, 5)])
    engine.ingest([reading('d1', undefined, 40, 1)])
    const before = engine.results()
    const log = recordChanges(engine)
    const late = reading('d1', undefined, 5, 9)
    const receipt = engine.ingest([late])
    expect(receipt).toMatchObject({ accepted: 0, late: 0, beyondLateness: 1, rejected: 0, anomalies: [] })
    expect(engine.lateEvents()).toEqual([{ event: late, window: 'tumbling:10', reason: 'beyond_lateness' }])
    expect(engine.results()).toEqual(before)
    expect(log.take()).toEqual([])
    expect(engine.stats()).toMatchObject({ beyondLateness: 1, lateLane: 1 })
    expect(engine.stats().anomalies.beyond_lateness).toBe(1)
  })

  it('a sliding event can be refused by one window and on time for another', () => {
    const engine = createEngine({ windows: sliding(20, 10) })
    engine.ingest([reading('d1', undefined, 20, 0)])
    const receipt = engine.ingest([reading('d1', undefined, 15, 4)])
    expect(receipt).toMatchObject({ accepted: 1, late: 0, beyondLateness: 0 })
    expect(engine.lateEvents().map((l) => [l.window, l.reason, l.event.ts])).toEqual([['sliding:20:10', 'beyond_lateness', 15]])
    expect(engine.results().map((r) => [r.start, r.count])).toEqual([
      [10, 2],
      [20, 1],
    ])
  })

  it('late in the receipt counts an event admitted late by at least one window', () => {
    const engine = createEngine({ windows: sliding(20, 10), allowedLateness: 10 })
    engine.ingest([reading('d1', undefined, 20, 0)])
    const receipt = engine.ingest([reading('d1', undefined, 15, 4)])
    expect(receipt).toMatchObject({ accepted: 1, late: 1, beyondLateness: 0 })
    expect(engine.results().map((r) => [r.start, r.count, r.status])).toEqual([
      [0, 1, 'corrected'],
      [10, 2, 'provisional'],
      [20, 1, 'provisional'],
    ])
  })

  it('a window born past the firing frontier emits a correction with revision 1 and no previous', () => {
    const engine = createEngine({ windows: tumbling(10), allowedLateness: 20 })
    engine.ingest([reading('d1', undefined, 25, 0)])
    const log = recordChanges(engine)
    const receipt = engine.ingest([reading('d1', undefined, 5, 3)])
    expect(receipt.late).toBe(1)
    const [change] = log.take()
    expect(change?.type).toBe('correction')
    expect(change?.previous).toBeUndefined()
    expect(change?.result).toMatchObject({ start: 0, count: 1, status: 'corrected', revision: 1, basis: 'derived' })
  })

  it('a window that fires already final emits only on_time with final: true', () => {
    const engine = createEngine({ windows: tumbling(10) })
    engine.ingest([reading('d1', undefined, 5, 1)])
    const log = recordChanges(engine)
    engine.ingest([reading('d1', undefined, 30, 1)])
    expect(log.take().map(brief)).toEqual(['on_time [0,10) n=1 on_time r0 final derived', 'provisional [30,40) n=1 provisional r0 unknown'])
  })
})

describe('watermark', () => {
  it('delayed reconnect backlog: held while catching up, corrections within lateness, late lane beyond it, nothing lost', () => {
    const clock = fakeClock()
    const engine = createEngine({ windows: tumbling(1000), allowedLateness: 5000, idleTimeout: 10_000, now: clock.read })
    const log = recordChanges(engine)
    engine.ingest([reading('d1', 1, 500, 1), reading('d2', 1, 600, 1)])
    for (let s = 2; s <= 10; s++) {
      clock.now = s * 1000
      engine.ingest([reading('d1', s, s * 1000 - 500, 1)])
      // d2 is offline but not yet idle: it holds the watermark.
      expect(engine.watermark()).toBe(600)
    }
    clock.now = 20_000
    engine.tick()
    expect(engine.watermark()).toBe(9500)
    // The nine windows ending by W = 9500 fired, each on a fallback basis (d2 was declared idle, not proven).
    expect(engine.results().filter((r) => r.status === 'on_time').map((r) => r.basis)).toEqual(Array(9).fill('fallback'))

    // Reconnect: first part of the backlog. Windows ending by 4500 are beyond lateness (W = 9500).
    clock.now = 21_000
    const first = engine.ingest([2, 3, 4, 5].map((s) => reading('d2', s, s * 1000 - 400, 10)))
    expect(first).toMatchObject({ accepted: 1, late: 1, beyondLateness: 3 })
    expect(engine.lateEvents().map((l) => [l.event.source, l.event.ts, l.window, l.reason])).toEqual([
      ['d2', 1600, 'tumbling:1000', 'beyond_lateness'],
      ['d2', 2600, 'tumbling:1000', 'beyond_lateness'],
      ['d2', 3600, 'tumbling:1000', 'beyond_lateness'],
    ])
    // d2 is active again and behind: d1 moving on does not move the watermark.
    engine.ingest([reading('d1', 11, 10_500, 1)])
    expect(engine.watermark()).toBe(9500)
    expect(engine.results({ from: 9000, to: 9001 })[0]?.status).toBe('provisional')

    const second = engine.ingest([6, 7, 8, 9, 10, 11].map((s) => reading('d2', s, s * 1000 - 400, 10)))
    expect(second).toMatchObject({ accepted: 6, late: 4, beyondLateness: 0 })
    expect(engine.watermark()).toBe(10_500)
    expect(engine.results({ from: 9000, to: 9001 })[0]).toMatchObject({ count: 2, status: 'on_time', basis: 'proven' })
    for (const start of [4000, 5000, 6000, 7000, 8000]) {
      expect(engine.results({ from: start, to: start + 1 })[0]).toMatchObject({ count: 2, sum: 11, status: 'corrected', revision: 1 })
    }
    // Nothing lost, nothing counted twice: 22 events, 3 on the late lane, 19 in windows.
    const counted = engine.results().reduce((n, r) => n + r.count, 0)
    expect(counted + engine.lateEvents().length).toBe(22)
    const fold = new ChangeFold()
    fold.apply(log.take())
    expect(fold.results()).toEqual(engine.results())
  })

  it('a lagging source holds the watermark', () => {
    const engine = createEngine({ windows: tumbling(10) })
    engine.ingest([reading('fast', undefined, 5, 1), reading('slow', undefined, 5, 1)])
    engine.ingest([reading('fast', undefined, 50, 1)])
    expect(engine.watermark()).toBe(5)
    expect(engine.stats().watermarkLag).toBe(45)
    expect(engine.results().every((r) => r.status === 'provisional')).toBe(true)
    engine.ingest([reading('slow', undefined, 25, 1)])
    expect(engine.watermark()).toBe(25)
    expect(engine.results().map((r) => [r.start, r.status])).toEqual([
      [0, 'on_time'],
      [20, 'provisional'],
      [50, 'provisional'],
    ])
  })

  it('an idle source stops holding the watermark: fallback, then derived once it is back', () => {
    const clock = fakeClock()
    const engine = createEngine({ windows: tumbling(10), idleTimeout: 1000, now: clock.read })
    const log = recordChanges(engine)
    engine.ingest([reading('d1', undefined, 5, 1), reading('d2', undefined, 5, 1)])
    clock.now = 500
    engine.ingest([reading('d1', undefined, 15, 1), reading('d1', undefined, 25, 1)])
    expect(engine.watermark()).toBe(5)
    log.take()

    clock.now = 1500
    engine.tick()
    expect(engine.watermark()).toBe(25)
    expect(log.take().map(brief)).toEqual(['on_time [0,10) n=2 on_time r0 final fallback', 'on_time [10,20) n=1 on_time r0 final fallback'])

    // It speaks again: active again, and its old events are late.
    clock.now = 1500
    const receipt = engine.ingest([reading('d2', undefined, 7, 1), reading('d2', undefined, 30, 1)])
    expect(receipt).toMatchObject({ accepted: 1, beyondLateness: 1 })
    expect(engine.watermark()).toBe(25)
    clock.now = 1700
    engine.ingest([reading('d1', undefined, 45, 1)])
    expect(engine.watermark()).toBe(30)
    expect(engine.results({ from: 20, to: 21 })[0]).toMatchObject({ status: 'on_time', basis: 'derived' })
  })

  it('tick() without an idle source changes nothing', () => {
    const clock = fakeClock()
    const engine = createEngine({ windows: tumbling(10), idleTimeout: 1000, now: clock.read })
    engine.ingest([reading('d1', undefined, 5, 1), reading('d2', undefined, 50, 1)])
    const log = recordChanges(engine)
    clock.now = 1000
    engine.tick()
    expect(engine.watermark()).toBe(5)
    expect(log.take()).toEqual([])
  })

  it('the watermark never goes backwards: a new lagging source, an idle source back, a lower manual advance', () => {
    const clock = fakeClock()
    const engine = createEngine({ windows: tumbling(10), idleTimeout: 100, now: clock.read })
    engine.ingest([reading('d1', undefined, 100, 1)])
    expect(engine.watermark()).toBe(100)
    engine.ingest([reading('d2', undefined, 10, 1)])
    expect(engine.watermark()).toBe(100)
    clock.now = 1000
    engine.tick()
    engine.ingest([reading('d1', undefined, 0, 1)])
    expect(engine.watermark()).toBe(100)
    engine.advanceWatermark(50)
    expect(engine.watermark()).toBe(100)
    engine.advanceWatermark(120)
    expect(engine.watermark()).toBe(120)
  })

  it('manual(): events never move the watermark, advanceWatermark does', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual() })
    const log = recordChanges(engine)
    engine.ingest([reading('d1', undefined, 5, 2), reading('d1', undefined, 95, 2)])
    expect(engine.watermark()).toBe(Number.NEGATIVE_INFINITY)
    expect(engine.results().every((r) => r.status === 'provisional')).toBe(true)
    log.take()
    engine.advanceWatermark(10)
    expect(engine.watermark()).toBe(10)
    expect(log.take().map(brief)).toEqual(['on_time [0,10) n=1 on_time r0 final derived'])
    engine.advanceWatermark(5)
    expect(log.take()).toEqual([])
    expect(() => engine.advanceWatermark(Number.NaN)).toThrow(RangeError)
  })
})

describe('completeness basis', () => {
  it('proven through gap-free seq: fires before the watermark would allow', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: boundedOutOfOrderness(1000) })
    const log = recordChanges(engine)
    engine.ingest([reading('d1', 1, 0, 1), reading('d1', 3, 12, 1)])
    // seq 2 is missing: P stops at seq 1.
    expect(engine.stats().proofFrontier).toBe(0)
    expect(log.take().map((c) => c.type)).toEqual(['provisional', 'provisional'])
    engine.ingest([reading('d1', 2, 5, 1)])
    expect(engine.stats().proofFrontier).toBe(12)
    expect(engine.watermark()).toBe(-988)
    expect(log.take().map(brief)).toEqual(['on_time [0,10) n=2 on_time r0 proven'])
  })

  it('proven needs every known source: a seq-less source proves nothing', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: boundedOutOfOrderness(1000) })
    engine.ingest([reading('d1', 1, 0, 1), reading('d1', 2, 12, 1), reading('d2', undefined, 20, 1)])
    expect(engine.stats().proofFrontier).toBe(Number.NEGATIVE_INFINITY)
    expect(engine.results().every((r) => r.status === 'provisional')).toBe(true)
  })

  it('a clock going backwards along seq breaks proven', () => {
    const options = { windows: tumbling(10), watermark: boundedOutOfOrderness(1000), allowedLateness: 1000 }
    const control = createEngine(options)
    const engine = createEngine(options)
    for (const e of [control, engine]) e.ingest([reading('d1', 1, 0, 1), reading('d1', 2, 15, 1)])
    expect(engine.results({ from: 0, to: 1 })[0]).toMatchObject({ status: 'on_time', basis: 'proven' })

    control.ingest([reading('d1', 3, 16, 1)])
    engine.ingest([reading('d1', 3, 5, 1)]) // ts went back from 15 to 5
    expect(engine.stats().proofFrontier).toBe(Number.NEGATIVE_INFINITY)
    control.ingest([reading('d1', 4, 25, 1)])
    engine.ingest([reading('d1', 4, 25, 1)])
    expect(control.results({ from: 10, to: 11 })[0]).toMatchObject({ status: 'on_time', basis: 'proven' })
    expect(engine.results({ from: 10, to: 11 })[0]).toMatchObject({ status: 'provisional', basis: 'unknown' })
  })

  it('a correction is never basis unknown (unknown is for provisional results)', () => {
    // P = 20 fires [10,20) for every key; a new source then lowers P in the batch that
    // brings the first event of key 'other' in that window.
    const engine = createEngine({ windows: tumbling(10), watermark: boundedOutOfOrderness(100), allowedLateness: 1000 })
    engine.ingest([reading('a', 1, 0, 1), reading('a', 2, 10, 1), reading('a', 3, 20, 1)])
    const log = recordChanges(engine)
    engine.ingest([reading('b', 1, 12, 5, 'other')])
    const corrections = log.take().filter((c) => c.type === 'correction')
    expect(corrections.map((c) => c.result.key)).toEqual(['other'])
    expect(corrections[0]?.result.basis).toBe('proven')
  })
})

describe('sessions', () => {
  it('a bridging event merges two sessions: the swallowed one is retracted, the merged one corrected', () => {
    const engine = createEngine({ windows: session(10), watermark: manual(), allowedLateness: 100 })
    const fold = new ChangeFold()
    const log = recordChanges(engine)
    const take = () => {
      const changes = log.take()
      fold.apply(changes)
      return changes
    }
    engine.ingest([reading('d1', undefined, 0, 1), reading('d1', undefined, 15, 2)])
    engine.advanceWatermark(12)
    const onTime = take().find((c) => c.type === 'on_time')
    expect(onTime?.result).toMatchObject({ start: 0, end: 10, count: 1 })

    const receipt = engine.ingest([reading('d1', undefined, 7, 4)])
    expect(receipt).toMatchObject({ accepted: 1, late: 1 })
    const changes = take()
    expect(changes.map((c) => `${c.type} [${c.result.start},${c.result.end})`)).toEqual(['retract [15,25)', 'correction [0,25)'])
    expect(changes[1]?.previous).toEqual(onTime?.result)
    expect(changes[1]?.result).toMatchObject({ count: 3, sum: 7, status: 'corrected', revision: 1 })

    // An earlier event moves the start: the old identity is retracted.
    engine.ingest([reading('d1', undefined, -5, 8)])
    const moved = take()
    expect(moved.map((c) => `${c.type} [${c.result.start},${c.result.end})`)).toEqual(['retract [0,25)', 'correction [-5,25)'])
    expect(moved[1]?.previous).toBeUndefined()
    expect(moved[1]?.result).toMatchObject({ count: 4, sum: 15, revision: 2 })
    expect(engine.results().map((r) => [r.start, r.end, r.count])).toEqual([[-5, 25, 4]])
    expect(fold.results()).toEqual(engine.results())
  })

  it('an event touching a final session is refused', () => {
    const engine = createEngine({ windows: session(10), watermark: manual(), retention: 1000 })
    engine.ingest([reading('d1', undefined, 0, 1), reading('d1', undefined, 30, 1)])
    engine.advanceWatermark(15)
    // 8 is within the gap of the final session [0,10); on its own, [8,18) would still be open.
    const receipt = engine.ingest([reading('d1', undefined, 8, 1)])
    expect(receipt).toMatchObject({ accepted: 0, beyondLateness: 1 })
    expect(engine.lateEvents()[0]).toMatchObject({ window: 'session:10', reason: 'beyond_lateness' })
  })

  it('the order of events inside a batch never changes a session result', () => {
    const outcome = (order: readonly number[]) => {
      const engine = createEngine({ windows: session(10), watermark: manual() })
      engine.advanceWatermark(105)
      const receipt = engine.ingest(order.map((ts) => reading('d1', undefined, ts, ts)))
      return { accepted: receipt.accepted, beyond: receipt.beyondLateness, results: engine.results() }
    }
    expect(outcome([94, 100])).toEqual(outcome([100, 94]))
  })

  it('with the watermark pinned, splitting a batch does not change which session events are admitted', () => {
    const outcome = (batches: readonly (readonly number[])[]) => {
      const engine = createEngine({ windows: session(15), watermark: manual() })
      engine.advanceWatermark(15)
      const receipts = batches.map((batch) => engine.ingest(batch.map((ts) => reading('d1', undefined, ts, 1))))
      const accepted = receipts.reduce((n, r) => n + r.accepted, 0)
      return { accepted, results: engine.results().map((r) => [r.start, r.end, r.count]) }
    }
    // 0 alone ends at 15 <= W; next to 1 it belongs to the open session [0,16).
    expect(outcome([[1, 0]])).toEqual(outcome([[1], [0]]))
  })

  it('a session born past the firing frontier becomes final and leaves live state', () => {
    const engine = createEngine({ windows: session(5), allowedLateness: 10, retention: 1000 })
    const log = recordChanges(engine)
    engine.ingest([reading('d1', undefined, 20, 1)])
    engine.ingest([reading('d1', undefined, 12, 1)]) // [12,17): already fired, within lateness
    engine.ingest([reading('d1', undefined, 100, 1)]) // W = 100 >= 17 + 10
    expect(engine.results({ from: 12, to: 13 })[0]?.final).toBe(true)
    expect(log.take().some((c) => c.type === 'final' && c.result.start === 12)).toBe(true)
    engine.advanceWatermark(2000) // past 17 + 10 + retention
    expect(engine.results({ from: 12, to: 13 })).toEqual([])
  })

  it('a session grown past the watermark after firing does not claim the watermark passed its end', () => {
    const engine = createEngine({ windows: session(5), allowedLateness: 100 })
    engine.ingest([reading('d1', undefined, 0, 1), reading('d1', undefined, 4, 1)])
    engine.ingest([reading('d1', undefined, 10, 1)])
    expect(engine.results({ from: 0, to: 1 })[0]).toMatchObject({ end: 9, status: 'on_time', basis: 'derived' })
    engine.ingest([reading('d1', undefined, 8, 1)]) // bridges to [10,15): the session is now [0,15), W = 10
    const [merged] = engine.results()
    expect(merged).toMatchObject({ start: 0, end: 15 })
    expect(engine.watermark()).toBeLessThan(15)
    expect(engine.stats().proofFrontier).toBeLessThan(15)
    expect(merged?.basis).toBe('unknown')
  })

  it('a session grown after firing says how it is known complete once it is final', () => {
    const engine = createEngine({ windows: session(5), allowedLateness: 100 })
    const log = recordChanges(engine)
    engine.ingest([reading('d1', undefined, 0, 1), reading('d1', undefined, 4, 1)])
    engine.ingest([reading('d1', undefined, 10, 1)])
    engine.ingest([reading('d1', undefined, 8, 1)]) // [0,9) fired, grows to [0,15)
    engine.ingest([reading('d1', undefined, 500, 1)]) // W = 500 >= 15 + 100
    const final = log.take().filter((c) => c.type === 'final' && c.result.start === 0)
    expect(final.map(brief)).toEqual(['final [0,15) n=4 corrected r1 final derived'])
  })

  it('retention shorter than the gap does not let an event join a final session that left live state', () => {
    const outcome = (retention: number) => {
      const engine = createEngine({ windows: session(100), retention })
      engine.ingest([reading('d1', undefined, 0, 1)])
      engine.ingest([reading('d1', undefined, 100, 1)]) // W = 100: [0,100) final
      const receipt = engine.ingest([reading('d1', undefined, 50, 1)]) // 50 from an event of the final session
      return { accepted: receipt.accepted, beyond: receipt.beyondLateness, open: engine.results({ from: 100 }) }
    }
    expect(outcome(1000)).toMatchObject({ accepted: 0, beyond: 1 })
    expect(outcome(0)).toEqual(outcome(1000))
  })
})

describe('live state', () => {
  it('a window leaves live state after end + allowedLateness + retention', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), allowedLateness: 5, retention: 20 })
    engine.ingest([reading('d1', undefined, 3, 1)])
    engine.advanceWatermark(15)
    expect(engine.results()[0]).toMatchObject({ status: 'on_time', final: true })
    engine.advanceWatermark(34)
    expect(engine.results()).toHaveLength(1)
    expect(engine.stats().openWindows).toBe(1)
    engine.advanceWatermark(35)
    expect(engine.results()).toEqual([])
    expect(engine.stats().openWindows).toBe(0)
    expect(engine.ingest([reading('d1', undefined, 4, 1)]).beyondLateness).toBe(1)
  })
})
