/**
 * docs/bounds.md, limit by limit: each test drives the engine (or the ordered stream) to a bound
 * and checks what the doc says happens at it and past it (the anomaly and its detail, the
 * counters, the gauge the doc names), that what was accepted before still counts, and that the
 * engine keeps serving once room returns. Two seeded properties run random tiny limits against
 * random traffic: every gauge stays within its limit after every operation, every input is
 * counted once (docs/semantics.md: accepted + duplicates + beyondLateness + rejected = inputs),
 * and, for one tumbling spec, every live window holds exactly the events accepted for it.
 * (anomalies.test.ts, options.test.ts and the ordered stream's tests cover the basic refusals.)
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { loggedEngine } from './loggedEngine.ts'
import { assertFreshSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import {
  type AnomalyReason,
  boundedOutOfOrderness,
  createEngine,
  type Engine,
  isOverflowError,
  type EngineStats,
  manual,
  session,
  sliding,
  type StreamEvent,
  TidemarkEngine,
  tumbling,
  type WindowSpec,
} from '../src/index.ts'
import { createOrderedStream } from '../src/ordered.ts'
import { reading, recordChanges } from '../src/testing/index.ts'

const FILE = 'packages/engine/test/boundsContract.test.ts'

/** Reasons that are not refusals: counted elsewhere (`duplicates`, `beyondLateness`) or not inputs. */
const NOT_REJECTED: ReadonlySet<AnomalyReason> = new Set(['duplicate', 'conflicting_duplicate', 'beyond_lateness', 'invalid_remote_cell', 'corrupt_record'])

function rejectedTotal(stats: EngineStats): number {
  let n = 0
  for (const [reason, count] of Object.entries(stats.anomalies) as [AnomalyReason, number][]) if (!NOT_REJECTED.has(reason)) n += count
  return n
}

/** Every input counted once: docs/semantics.md "What becomes of each input", over the engine's life. */
function expectCountedOnce(engine: Engine): void {
  const s = engine.stats()
  expect(s.ingested).toBe(s.applied + s.duplicates + s.beyondLateness + rejectedTotal(s))
  expect(s.anomalies.duplicate).toBe(s.duplicates)
  expect(s.anomalies.beyond_lateness).toBe(s.beyondLateness)
}

const counts = (engine: Engine, window = 'tumbling:10') =>
  engine.results({ window }).map((r) => [r.key, r.start, r.count, r.sum])

describe('limits.maxBatch', () => {
  it('at the bound a batch is taken; one past it is refused whole, each event with overflow naming the limit, logged as counts', async () => {
    const options = { windows: tumbling(10), watermark: manual(), replicaId: 'r', now: () => 0, limits: { maxBatch: 3 } }
    const { engine, ops } = loggedEngine(options)
    expect(engine.ingest([reading('a', 1, 1, 1), reading('a', 2, 2, 2), reading('a', 3, 12, 4)])).toMatchObject({ accepted: 3, rejected: 0 })

    const refused = engine.ingest([reading('a', 4, 3, 8), reading('b', 1, 3, 8), { id: 'bad' } as StreamEvent, reading('a', 5, 13, 8)])
    expect(refused).toMatchObject({ accepted: 0, duplicates: 0, beyondLateness: 0, rejected: 4 })
    // Each names its input's id and source where they can be read (the third has no source).
    const detail = 'batch of 4 exceeds limits.maxBatch'
    expect(refused.anomalies).toEqual([
      { reason: 'overflow', index: 0, detail, id: 'a#4', source: 'a' },
      { reason: 'overflow', index: 1, detail, id: 'b#1', source: 'b' },
      { reason: 'overflow', index: 2, detail, id: 'bad' },
      { reason: 'overflow', index: 3, detail, id: 'a#5', source: 'a' },
    ])
    await expect(refused.durable).resolves.toBeUndefined()
    // Nothing applied: no clock for b, a's seq not consumed, the windows as before.
    expect(engine.nextSeq('a')).toBe(4)
    expect(engine.stats()).toMatchObject({ ingested: 7, applied: 3, sources: 1, dedupEntries: 0 })
    expect(engine.stats().anomalies).toMatchObject({ overflow: 4, missing_source: 0 })
    expect(counts(engine)).toEqual([
      ['', 0, 2, 3],
      ['', 10, 1, 4],
    ])
    expect(ops.at(-1)).toEqual({ kind: 'refuse', rejected: { overflow: 4 } })

    // It keeps serving: the same events, in batches within the bound, are all taken.
    expect(engine.ingest([reading('a', 4, 3, 8), reading('b', 1, 3, 8), reading('a', 5, 13, 8)])).toMatchObject({ accepted: 3 })
    expect(engine.ingest([])).toMatchObject({ accepted: 0, rejected: 0 })
    expect(counts(engine)).toEqual([
      ['', 0, 4, 19],
      ['', 10, 2, 12],
    ])
    expectCountedOnce(engine)

    // Recovery shows the refusal too.
    const replayed = new TidemarkEngine(options)
    for (const op of ops) replayed.replay(op)
    expect(replayed.stats()).toMatchObject({ ingested: 10, applied: 6 })
    expect(replayed.stats().anomalies).toEqual(engine.stats().anomalies)
    expect(counts(replayed)).toEqual(counts(engine))
  })
})

describe('limits.maxSources', () => {
  it('a new source past the bound is refused (no clock, no hold on the watermark); known ones go on; sources are never forgotten', () => {
    const options = { windows: tumbling(10), watermark: boundedOutOfOrderness(0), allowedLateness: 0, retention: 0, now: () => 0 }
    const engine = createEngine({ ...options, limits: { maxSources: 2 } })
    // The same traffic without source c.
    const twin = createEngine(options)
    const both = (events: StreamEvent[]) => {
      twin.ingest(events.filter((e) => e.source !== 'c'))
      return engine.ingest(events)
    }
    expect(both([reading('a', 1, 5, 1), reading('b', 1, 5, 1)])).toMatchObject({ accepted: 2 })
    const receipt = both([reading('c', 1, 50, 1), reading('a', 2, 50, 1), reading('b', 2, 50, 1)])
    expect(receipt).toMatchObject({ accepted: 2, rejected: 1 })
    expect(receipt.anomalies).toEqual([
      expect.objectContaining({ reason: 'overflow', index: 0, id: 'c#1', source: 'c', detail: 'limits.maxSources (2) reached' }),
    ])
    expect(engine.stats().sources).toBe(2)
    expect(engine.nextSeq('c')).toBe(1)
    expect(engine.watermark()).toBe(twin.watermark())
    expect(engine.watermark()).toBeGreaterThan(Number.NEGATIVE_INFINITY)

    // Every window of a and b leaves live state; c is still refused: sources are never forgotten.
    both([reading('a', 3, 1_000, 1), reading('b', 3, 1_000, 1)])
    expect(engine.stats().openWindows).toBe(1)
    expect(engine.ingest([reading('c', 1, 1_001, 1)]).anomalies).toMatchObject([{ reason: 'overflow', detail: 'limits.maxSources (2) reached' }])
    expect(engine.stats()).toMatchObject({ sources: 2, applied: 6, ingested: 8 })
    expect(engine.results()).toEqual(twin.results())
    expectCountedOnce(engine)
  })
})

describe('limits.maxWindows', () => {
  it('counts windows over all specs and keys; an event needing one more is refused from every spec; room returns through retention', () => {
    const engine = createEngine({
      windows: [tumbling(10), sliding(20, 10)],
      watermark: manual(),
      allowedLateness: 0,
      retention: 0,
      now: () => 0,
      limits: { maxWindows: 4 },
    })
    const changes = recordChanges(engine)
    // Three windows: tumbling [0,10), sliding [-10,10) and [0,20).
    expect(engine.ingest([reading('a', 1, 5, 1, 'k')])).toMatchObject({ accepted: 1 })
    expect(engine.stats().openWindows).toBe(3)

    const receipt = engine.ingest([
      reading('a', 2, 15, 2, 'k'), // needs tumbling [10,20) and sliding [10,30): 5 > 4
      reading('a', 3, 7, 4, 'k'), // only windows that exist
      reading('a', 4, 5, 8, 'other'), // another key: three new windows
    ])
    expect(receipt).toMatchObject({ accepted: 1, rejected: 2 })
    expect(receipt.anomalies).toEqual([
      expect.objectContaining({ reason: 'overflow', index: 0, id: 'a#2', detail: 'limits.maxWindows (4) reached' }),
      expect.objectContaining({ reason: 'overflow', index: 2, id: 'a#4', detail: 'limits.maxWindows (4) reached' }),
    ])
    expect(engine.stats().openWindows).toBe(3)
    // The refused event left no trace in the sliding window it shared with an open one.
    expect(engine.results({ window: 'sliding:20:10' }).map((r) => [r.start, r.count, r.sum])).toEqual([
      [-10, 2, 5],
      [0, 2, 5],
    ])
    // A refused seq is not consumed: a#2 can come again.
    expect(engine.nextSeq('a')).toBe(4)

    // The windows become final and leave; what was accepted is in their final results.
    engine.advanceWatermark(20)
    expect(engine.stats().openWindows).toBe(0)
    const finals = changes
      .take()
      .filter((c) => c.result.final)
      .map((c) => [c.result.window, c.result.start, c.result.count, c.result.sum])
    expect(finals).toEqual(
      expect.arrayContaining([
        ['tumbling:10', 0, 2, 5],
        ['sliding:20:10', -10, 2, 5],
        ['sliding:20:10', 0, 2, 5],
      ]),
    )
    // Room again: an event needing three new windows is taken.
    expect(engine.ingest([reading('a', 2, 25, 2, 'k')])).toMatchObject({ accepted: 1, rejected: 0 })
    expect(engine.stats().openWindows).toBe(3)
    expect(engine.stats().anomalies.overflow).toBe(2)
    expectCountedOnce(engine)
  })

  it('an event beyond lateness needs no window: it goes to the late lane even with the bound reached', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), retention: 1_000, now: () => 0, limits: { maxWindows: 1 } })
    engine.ingest([reading('a', 1, 25, 1)])
    engine.advanceWatermark(40)
    expect(engine.stats().openWindows).toBe(1)
    expect(engine.ingest([reading('a', 2, 5, 1)])).toMatchObject({ beyondLateness: 1, rejected: 0 })
    expect(engine.ingest([reading('a', 3, 45, 1)]).anomalies).toMatchObject([{ reason: 'overflow', detail: 'limits.maxWindows (1) reached' }])
    expect(engine.stats()).toMatchObject({ openWindows: 1, lateLane: 1, beyondLateness: 1 })
    expectCountedOnce(engine)
  })
})

describe('limits.maxWindows with a session spec', () => {
  it('an event beyond lateness needs no session: it goes to the late lane even with the bound reached', () => {
    const engine = createEngine({ windows: session(5), watermark: manual(), retention: 1_000, now: () => 0, limits: { maxWindows: 1 } })
    engine.ingest([reading('a', 1, 100, 1, 'k')])
    engine.advanceWatermark(200)
    expect(engine.ingest([reading('a', 2, 1, 1, 'other')])).toMatchObject({ beyondLateness: 1, rejected: 0 })
    expect(engine.ingest([reading('a', 3, 300, 1, 'other')]).anomalies).toMatchObject([{ reason: 'overflow', detail: 'limits.maxWindows (1) reached' }])
    expect(engine.stats()).toMatchObject({ openWindows: 1, lateLane: 1 })
    expectCountedOnce(engine)
  })
})

describe('limits.maxDedupEntries', () => {
  it('full: releases behind the horizon first, else refuses what would add an entry; in-order seqs go on; the gauge never passes the bound', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), allowedLateness: 0, retention: 0, now: () => 0, limits: { maxDedupEntries: 3 } })
    expect(engine.ingest([reading('a', undefined, 1, 1), reading('a', undefined, 2, 1), reading('a', undefined, 3, 1)])).toMatchObject({ accepted: 3 })
    expect(engine.stats().dedupEntries).toBe(3)

    // No horizon yet (W = -Infinity): nothing to release.
    const full = engine.ingest([reading('a', undefined, 4, 1), reading('s', 1, 4, 1), reading('s', 2, 5, 1), reading('s', 4, 6, 1)])
    expect(full).toMatchObject({ accepted: 2, rejected: 2 })
    expect(full.anomalies).toEqual([
      expect.objectContaining({ reason: 'overflow', index: 0, id: 'a@4', detail: 'limits.maxDedupEntries (3) reached' }),
      expect.objectContaining({ reason: 'overflow', index: 3, id: 's#4', detail: 'limits.maxDedupEntries (3) reached' }),
    ])
    expect(engine.stats()).toMatchObject({ dedupEntries: 3, applied: 5 })
    expect(engine.nextSeq('s')).toBe(3)

    // W = 20: the horizon is 20 - 0 - 10 = 10, and every remembered id lies behind it.
    engine.advanceWatermark(20)
    expect(engine.stats().dedupEntries).toBeLessThanOrEqual(3)
    const later = engine.ingest([reading('a', undefined, 25, 1), reading('s', 4, 26, 1), reading('a', undefined, 27, 1)])
    expect(later).toMatchObject({ accepted: 3, rejected: 0 })
    expect(engine.stats().dedupEntries).toBe(3)
    // A re-sent released event is beyond lateness, never counted twice.
    const copy = engine.ingest([reading('a', undefined, 1, 1)])
    expect(copy).toMatchObject({ accepted: 0, duplicates: 0 })
    expect(copy.beyondLateness + copy.rejected).toBe(1)
    expect(engine.stats().dedupEntries).toBeLessThanOrEqual(3)
    expect(engine.results().map((r) => [r.start, r.count])).toEqual([[20, 3]])
    expect(engine.stats().applied).toBe(8)
    expectCountedOnce(engine)
  })
})

describe('limits.maxLateEvents', () => {
  it('counts late-lane entries (one per spec that refused the event), keeps the newest, and never trims a count', () => {
    const engine = createEngine({
      windows: [tumbling(10), sliding(20, 10)],
      watermark: manual(),
      allowedLateness: 5,
      now: () => 0,
      limits: { maxLateEvents: 3 },
    })
    engine.advanceWatermark(100)
    // ts 85: tumbling [80,90) refuses it (90 + 5 <= 100), sliding [80,100) admits it late.
    expect(engine.ingest([reading('a', 1, 85, 1)])).toMatchObject({ accepted: 1, late: 1, beyondLateness: 0 })
    // One entry per spec that refused it: tumbling, and the sliding window [70,90).
    expect(engine.lateEvents().map((l) => [l.event.id, l.window])).toEqual([
      ['a#1', 'tumbling:10'],
      ['a#1', 'sliding:20:10'],
    ])
    // Refused by every window: two entries each, the lane keeps the newest three.
    expect(engine.ingest([reading('a', 2, 1, 1), reading('a', 3, 2, 1)])).toMatchObject({ accepted: 0, beyondLateness: 2 })
    expect(engine.lateEvents().map((l) => [l.event.id, l.window])).toEqual([
      ['a#2', 'sliding:20:10'],
      ['a#3', 'tumbling:10'],
      ['a#3', 'sliding:20:10'],
    ])
    expect(engine.stats()).toMatchObject({ lateLane: 3, lateLaneTrimmed: 3, beyondLateness: 2, lateAdmitted: 1 })
    expect(engine.stats().anomalies.beyond_lateness).toBe(2)
    // Still serving on time.
    expect(engine.ingest([reading('a', 4, 100, 1)])).toMatchObject({ accepted: 1, late: 0 })
    expectCountedOnce(engine)
  })
  it('a checkpoint restored into a smaller bound counts the entries it drops as trimmed', () => {
    const options = { windows: tumbling(10), watermark: manual(), replicaId: 'r', now: () => 0 }
    const before = new TidemarkEngine({ ...options, limits: { maxLateEvents: 5 } })
    before.advanceWatermark(100)
    before.ingest([1, 2, 3, 4, 5].map((ts) => reading('s', ts, ts, 1)))
    for (const [limit, kept] of [
      [2, [4, 5]],
      [0, []],
      [9, [1, 2, 3, 4, 5]],
    ] as const) {
      const after = new TidemarkEngine({ ...options, limits: { maxLateEvents: limit } })
      after.restore(before.checkpoint())
      expect(after.lateEvents().map((l) => l.event.ts)).toEqual(kept)
      expect(after.stats().lateLane + after.stats().lateLaneTrimmed).toBe(5)
    }
  })
})

describe('history per window', () => {
  it('keeps 64 results: from the 64th correction on, [0] is no longer the on-time result; the window itself loses nothing', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), allowedLateness: 1_000, now: () => 0 })
    engine.ingest([reading('a', 1, 1, 1)])
    engine.advanceWatermark(10)
    for (let seq = 2; seq <= 64; seq++) engine.ingest([reading('a', seq, 1, 1)])
    const full = engine.history('tumbling:10', '', 0)
    expect(full).toHaveLength(64)
    expect(full[0]).toMatchObject({ status: 'on_time', count: 1 })
    engine.ingest([reading('a', 65, 1, 1)])
    const trimmed = engine.history('tumbling:10', '', 0)
    expect(trimmed).toHaveLength(64)
    expect(trimmed[0]).toMatchObject({ status: 'corrected', count: 2 })
    expect(trimmed.at(-1)).toMatchObject({ status: 'corrected', count: 65 })
    expect(engine.results()[0]?.count).toBe(65)
    expect(engine.stats().corrections).toBe(64)
  })
})

describe('changes() stream', () => {
  it('holds 1,024 unread batches; the next one errors it with OverflowError; a new changes() starts fresh and the engine goes on', async () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), now: () => 0 })
    const full = engine.changes().getReader()
    const over = engine.changes().getReader()
    for (let seq = 1; seq <= 1_024; seq++) engine.ingest([reading('a', seq, 1, 1)])
    // At the bound: every batch is there, in order.
    for (let seq = 1; seq <= 1_024; seq++) {
      const { value } = await full.read()
      expect(value?.[0]?.result.count).toBe(seq)
    }
    engine.ingest([reading('a', 1_025, 1, 1)])
    await expect(over.read()).rejects.toSatisfy(isOverflowError)
    expect((await full.read()).value?.[0]?.result.count).toBe(1_025)
    const fresh = engine.changes().getReader()
    expect(engine.ingest([reading('a', 1_026, 1, 1)])).toMatchObject({ accepted: 1 })
    expect((await fresh.read()).value?.[0]?.result.count).toBe(1_026)
    expect(engine.stats().applied).toBe(1_026)
  })
})

describe('maxFutureSkew and replicaId', () => {
  it('an event exactly maxFutureSkew ahead is taken; one ms more is refused with future_ts and moves nothing', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: boundedOutOfOrderness(0), now: () => 1_000, maxFutureSkew: 100 })
    engine.ingest([reading('a', 1, 1_000, 1)])
    const w = engine.watermark()
    const receipt = engine.ingest([reading('a', 2, 1_101, 1)])
    expect(receipt).toMatchObject({ accepted: 0, rejected: 1 })
    expect(receipt.anomalies[0]).toMatchObject({ reason: 'future_ts', index: 0, detail: expect.stringContaining('maxFutureSkew is 100 ms') })
    expect(engine.watermark()).toBe(w)
    expect(engine.nextSeq('a')).toBe(2)
    expect(engine.ingest([reading('a', 2, 1_100, 1)])).toMatchObject({ accepted: 1 })
    expectCountedOnce(engine)
  })

  it('replicaId: 1 to 128 characters, else a RangeError', () => {
    expect(new TidemarkEngine({ windows: tumbling(10), replicaId: 'r'.repeat(128) }).replicaId).toBe('r'.repeat(128))
    expect(new TidemarkEngine({ windows: tumbling(10), replicaId: 'r' }).replicaId).toBe('r')
    expect(() => createEngine({ windows: tumbling(10), replicaId: 'r'.repeat(129) })).toThrow(RangeError)
    expect(() => createEngine({ windows: tumbling(10), replicaId: '' })).toThrow(RangeError)
  })

  it('limits are integers: maxLateEvents >= 0, the others >= 1; anything else is a RangeError naming the limit', () => {
    const engineWith = (limits: Record<string, unknown>) => () => createEngine({ windows: tumbling(10), limits })
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '3']) expect(engineWith({ maxLateEvents: bad })).toThrow(/limits\.maxLateEvents/)
    for (const name of ['maxBatch', 'maxSources', 'maxWindows', 'maxDedupEntries']) {
      for (const bad of [-1, 2.5, Number.NaN, '3']) expect(engineWith({ [name]: bad })).toThrow(new RegExp(`limits\\.${name}`))
      expect(engineWith({ [name]: 1 })).not.toThrow()
    }
    const streamWith = (options: Record<string, unknown>) => () => createOrderedStream(options)
    for (const name of ['maxPending', 'batchSize', 'maxDedupEntries', 'maxSources']) {
      for (const bad of [0, 1.5, Number.POSITIVE_INFINITY]) expect(streamWith({ [name]: bad })).toThrow(RangeError)
      expect(streamWith({ [name]: 1 })).not.toThrow()
    }
    expect(streamWith({ maxLateEvents: -1 })).toThrow(/maxLateEvents/)
  })
})

describe('ordered stream bounds', () => {
  const ev = (source: string, seq: number | undefined, ts: number, id = `${source}-${seq ?? ts}`): StreamEvent =>
    seq === undefined ? { id, source, ts, value: ts } : { id, source, seq, ts, value: ts }

  it('maxPending counts held events and pending corrections; the refused event leaves no trace and is taken once room returns', () => {
    const stream = createOrderedStream({ watermark: manual(), allowedLateness: 10, maxPending: 2, batchSize: 1, now: () => 0 })
    expect(stream.push([ev('a', 1, 50)]).accepted).toBe(1)
    stream.advanceWatermark(45)
    const receipt = stream.push([ev('a', 3, 40), ev('a', 4, 60)])
    expect(receipt).toMatchObject({ accepted: 1, late: 1, rejected: 1 })
    expect(receipt.anomalies).toEqual([expect.objectContaining({ reason: 'overflow', index: 1, id: 'a-4', detail: 'maxPending (2) reached' })])
    expect(stream.stats()).toMatchObject({ pending: 1, pendingCorrections: 1, peakPending: 2, dedupEntries: 1 })
    expect(stream.flushReady().map((b) => [b.kind, b.events.map((e) => e.id)])).toEqual([['correction', ['a-3']]])
    expect(stream.push([ev('a', 4, 60)])).toMatchObject({ accepted: 1, duplicates: 0 })
    stream.advanceWatermark(100)
    // batchSize 1: one event per batch.
    expect(stream.flushReady().map((b) => b.events.map((e) => e.id))).toEqual([['a-1'], ['a-4']])
    const s = stream.stats()
    expect(s.pushed).toBe(s.accepted + s.duplicates + s.beyondLateness + s.rejected)
    expect(s).toMatchObject({ pushed: 4, accepted: 3, rejected: 1, readyEmitted: 2, correctionsEmitted: 1 })
  })

  it('maxDedupEntries and maxSources name their option in the detail', () => {
    const stream = createOrderedStream({ watermark: manual(), maxDedupEntries: 1, maxSources: 1, now: () => 0 })
    const receipt = stream.push([ev('a', undefined, 1), ev('a', undefined, 2), ev('b', 1, 3), ev('a', 3, 4)])
    expect(receipt.anomalies.map((a) => [a.index, a.detail])).toEqual([
      [1, 'maxDedupEntries (1) reached'],
      [2, 'maxSources (1) reached'],
      [3, 'maxDedupEntries (1) reached'],
    ])
    expect(stream.stats()).toMatchObject({ dedupEntries: 1, sources: 1 })
  })
})

// ---------------------------------------------------------------------------------------------
// Seeded properties: random tiny limits, random traffic.

/** One event drawn before the run: its time is relative to the watermark when it is sent. */
interface Draw {
  readonly source: string
  readonly seq: number | undefined
  readonly n: number
  readonly offset: number
  readonly key: string
  readonly value: number
}

type Op = { readonly kind: 'batch'; readonly events: readonly Draw[] } | { readonly kind: 'advance'; readonly by: number } | { readonly kind: 'flush' }

const draw: fc.Arbitrary<Draw> = fc.record({
  source: fc.constantFrom('a', 'b', 'c', 'd'),
  seq: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined, freq: 2 }),
  n: fc.integer({ min: 0, max: 5 }),
  offset: fc.integer({ min: -25, max: 35 }),
  key: fc.constantFrom('k', 'j'),
  value: fc.integer({ min: -3, max: 9 }),
})

const ops: fc.Arbitrary<Op[]> = fc.array(
  fc.oneof(
    { weight: 5, arbitrary: fc.array(draw, { maxLength: 7 }).map((events): Op => ({ kind: 'batch', events })) },
    { weight: 2, arbitrary: fc.integer({ min: -5, max: 30 }).map((by): Op => ({ kind: 'advance', by })) },
    { weight: 1, arbitrary: fc.constant<Op>({ kind: 'flush' }) },
  ),
  { minLength: 1, maxLength: 25 },
)

/**
 * Turns draws into events. A copy (the same `(source, seq)`, or `(source, id)` without seq) is
 * always a true re-send, the event of the first draw again: docs/semantics.md lets a copy of a
 * released event stamped with a later time count as new, which is not what is checked here, and
 * with identical copies the totals do not depend on which copy a batch placed first.
 */
class Traffic {
  readonly #sent = new Map<string, StreamEvent>()
  events(draws: readonly Draw[], w: number): StreamEvent[] {
    const base = Number.isFinite(w) ? w : 0
    return draws.map((d) => {
      const id = d.seq === undefined ? `${d.source}-${d.n}` : `${d.source}#${d.seq}`
      const dedupKey = keyOf(d.source, d.seq, id)
      let event = this.#sent.get(dedupKey)
      if (event === undefined) {
        const ts = base + d.offset
        event = d.seq === undefined ? { id, source: d.source, ts, key: d.key, value: d.value } : { id, source: d.source, seq: d.seq, ts, key: d.key, value: d.value }
        this.#sent.set(dedupKey, event)
      }
      return { ...event }
    })
  }
}

function keyOf(source: string, seq: number | undefined, id: string): string {
  return seq === undefined ? `${source}\u0000id\u0000${id}` : `${source}\u0000seq\u0000${seq}`
}

type ValueOf<T> = T extends fc.Arbitrary<infer V> ? V : never

interface ModelWindow {
  key: string
  start: number
  count: number
  sum: number
}

/**
 * A source's dedup memory as docs/semantics.md describes it: seqs up to the gap-free prefix, seqs
 * ahead of a gap and ids without seq, each with its time; released behind a horizon, after which
 * the prefix stops below a released seq.
 */
class ModelClock {
  prefix = 0
  readonly ahead = new Map<number, number>()
  readonly ids = new Map<string, number>()
  seen(e: StreamEvent): boolean {
    return e.seq === undefined ? this.ids.has(e.id) : e.seq <= this.prefix || this.ahead.has(e.seq)
  }
  record(e: StreamEvent): void {
    if (e.seq === undefined) this.ids.set(e.id, e.ts)
    else if (e.seq !== this.prefix + 1) this.ahead.set(e.seq, e.ts)
    else {
      this.prefix = e.seq
      while (this.ahead.delete(this.prefix + 1)) this.prefix++
    }
  }
  forgetBefore(horizon: number): void {
    for (const [id, ts] of this.ids) if (ts < horizon) this.ids.delete(id)
    for (const [seq, ts] of this.ahead) if (ts < horizon) this.ahead.delete(seq)
  }
}

const engineSetup = fc.record({
  maxBatch: fc.integer({ min: 1, max: 6 }),
  maxSources: fc.integer({ min: 1, max: 4 }),
  maxWindows: fc.integer({ min: 1, max: 5 }),
  maxDedupEntries: fc.integer({ min: 1, max: 5 }),
  maxLateEvents: fc.integer({ min: 0, max: 3 }),
  allowedLateness: fc.constantFrom(0, 5, 15),
  retention: fc.constantFrom(0, 10, 30),
  specs: fc.constantFrom('tumbling', 'tumbling+sliding', 'tumbling+session'),
})

const OVERFLOW_DETAIL = /^(batch of \d+ exceeds limits\.maxBatch|limits\.(maxSources|maxWindows|maxDedupEntries) \(\d+\) reached)$/

/**
 * Checks one engine run against a model of the tumbling spec: an input is new unless its dedup
 * key was recorded before (accepted or beyond lateness); a new one lands in its tumbling window
 * unless `end + L <= W`; a window holds what landed in it until `W >= end + L + retention`. With
 * one spec the model also gives each receipt's `accepted`, the live windows and when a bound may
 * refuse (the engine places a batch in index order then; with a session spec it does not).
 */
function engineRun(setup: ValueOf<typeof engineSetup>, program: readonly Op[]): void {
  const { allowedLateness: lateness, retention } = setup
  const limits = { maxBatch: setup.maxBatch, maxSources: setup.maxSources, maxWindows: setup.maxWindows, maxDedupEntries: setup.maxDedupEntries, maxLateEvents: setup.maxLateEvents }
  const specs: WindowSpec[] = [tumbling(10)]
  if (setup.specs === 'tumbling+sliding') specs.push(sliding(20, 10))
  if (setup.specs === 'tumbling+session') specs.push(session(7))
  const exact = specs.length === 1
  const engine = createEngine({ windows: specs, watermark: manual(), allowedLateness: lateness, retention, now: () => 0, limits })
  const traffic = new Traffic()
  let w = Number.NEGATIVE_INFINITY
  const recorded = new Set<string>()
  const clocks = new Map<string, ModelClock>()
  const dedupEntries = () => [...clocks.values()].reduce((n, c) => n + c.ids.size + c.ahead.size, 0)
  const windows = new Map<string, ModelWindow>()
  const live = () => [...windows.values()].filter((x) => !(w >= x.start + 10 + lateness + retention))
  let totals = { n: 0, accepted: 0, duplicates: 0, beyond: 0, rejected: 0 }

  for (const [step, op] of program.entries()) {
    const at = `op ${step} (${op.kind})`
    if (op.kind === 'advance') {
      engine.advanceWatermark((Number.isFinite(w) ? w : 0) + op.by)
      w = Math.max(w, (Number.isFinite(w) ? w : 0) + op.by)
    } else if (op.kind === 'flush') {
      engine.tick()
    } else {
      const events = traffic.events(op.events, w)
      const receipt = engine.ingest(events)
      const n = events.length
      expect(receipt.accepted + receipt.duplicates + receipt.beyondLateness + receipt.rejected, at).toBe(n)
      expect(receipt.anomalies.length, at).toBe(receipt.rejected)
      for (const a of receipt.anomalies) {
        expect(a.reason, at).toBe('overflow')
        expect(a.detail, at).toMatch(OVERFLOW_DETAIL)
      }
      // A batch past maxBatch is refused whole, and only such a batch names maxBatch.
      const whole = receipt.anomalies.filter((a) => a.detail === `batch of ${n} exceeds limits.maxBatch`).length
      expect(whole, at).toBe(n > setup.maxBatch ? n : 0)
      totals = {
        n: totals.n + n,
        accepted: totals.accepted + receipt.accepted,
        duplicates: totals.duplicates + receipt.duplicates,
        beyond: totals.beyond + receipt.beyondLateness,
        rejected: totals.rejected + receipt.rejected,
      }
      const refused = new Map(receipt.anomalies.map((a) => [a.index as number, a.detail as string]))
      if (exact) {
        // One spec: the engine places the batch in index order, and the model predicts every outcome.
        const predicted = new Map<number, string>()
        let accepted = 0
        let duplicates = 0
        let beyond = 0
        for (const [i, e] of events.entries()) {
          if (n > setup.maxBatch) break
          const clock = clocks.get(e.source)
          if (clock?.seen(e)) {
            duplicates++
            continue
          }
          if (clock === undefined && clocks.size >= setup.maxSources) {
            predicted.set(i, `limits.maxSources (${setup.maxSources}) reached`)
            continue
          }
          if ((e.seq === undefined || e.seq !== (clock?.prefix ?? 0) + 1) && dedupEntries() >= setup.maxDedupEntries) {
            // Released behind the horizon of the frontiers before the batch: W - L - size.
            if (w > Number.NEGATIVE_INFINITY) for (const c of clocks.values()) c.forgetBefore(w - lateness - 10)
            if (dedupEntries() >= setup.maxDedupEntries) {
              predicted.set(i, `limits.maxDedupEntries (${setup.maxDedupEntries}) reached`)
              continue
            }
          }
          const start = Math.floor(e.ts / 10) * 10
          const wkey = `${e.key}\u0000${start}`
          const admits = !(start + 10 + lateness <= w)
          const exists = live().includes(windows.get(wkey) as ModelWindow)
          if (admits && !exists && live().length >= setup.maxWindows) {
            predicted.set(i, `limits.maxWindows (${setup.maxWindows}) reached`)
            continue
          }
          let c = clock
          if (c === undefined) {
            c = new ModelClock()
            clocks.set(e.source, c)
          }
          c.record(e)
          if (!admits) beyond++
          else {
            accepted++
            const x = windows.get(wkey) ?? { key: e.key ?? '', start, count: 0, sum: 0 }
            x.count++
            x.sum += e.value
            windows.set(wkey, x)
          }
        }
        if (n > setup.maxBatch) for (let i = 0; i < n; i++) predicted.set(i, `batch of ${n} exceeds limits.maxBatch`)
        expect([...refused], `${at}: refusals`).toEqual([...predicted])
        expect([receipt.accepted, receipt.duplicates, receipt.beyondLateness], `${at}: accepted, duplicates, beyond`).toEqual([accepted, duplicates, beyond])
        expect(engine.stats().dedupEntries, `${at}: dedupEntries`).toBe(dedupEntries())
      } else {
        // With a session spec the batch is placed in event-time order: only the tumbling windows are predicted.
        let fresh = 0
        for (const [i, e] of events.entries()) {
          if (refused.has(i)) continue
          const k = keyOf(e.source, e.seq, e.id)
          const start = Math.floor(e.ts / 10) * 10
          const wkey = `${e.key}\u0000${start}`
          if (!recorded.has(k)) {
            fresh++
            if (!(start + 10 + lateness <= w)) {
              const x = windows.get(wkey) ?? { key: e.key ?? '', start, count: 0, sum: 0 }
              x.count++
              x.sum += e.value
              windows.set(wkey, x)
            }
          }
          recorded.add(k)
          if (!clocks.has(e.source)) clocks.set(e.source, new ModelClock())
        }
        // A copy of an event counted before (accepted or beyond lateness) is never accepted again, by any spec.
        expect(receipt.accepted, `${at}: accepted <= new events`).toBeLessThanOrEqual(fresh)
      }
    }
    const s = engine.stats()
    // Every gauge within its bound, after every operation.
    expect(s.openWindows, `${at}: openWindows`).toBeLessThanOrEqual(setup.maxWindows)
    expect(s.sources, `${at}: sources`).toBeLessThanOrEqual(setup.maxSources)
    expect(s.dedupEntries, `${at}: dedupEntries`).toBeLessThanOrEqual(setup.maxDedupEntries)
    expect(s.lateLane, `${at}: lateLane`).toBeLessThanOrEqual(setup.maxLateEvents)
    expect(s.timers, `${at}: timers`).toBeLessThanOrEqual(s.openWindows)
    expect(engine.lateEvents().length, at).toBe(s.lateLane)
    // Every input counted once.
    expect([s.ingested, s.applied, s.duplicates, s.beyondLateness, rejectedTotal(s)], `${at}: counters`).toEqual([
      totals.n,
      totals.accepted,
      totals.duplicates,
      totals.beyond,
      totals.rejected,
    ])
    expect(s.anomalies.duplicate, at).toBe(s.duplicates)
    expect(s.sources, `${at}: sources`).toBe(clocks.size)
    // Nothing accepted is lost, nothing counted twice: each live tumbling window holds what was accepted for it.
    const model = live()
        .map((x) => [x.key, x.start, x.count, x.sum])
        .sort((p, q) => String(p[0]).localeCompare(String(q[0])) || (p[1] as number) - (q[1] as number))
    const shown = engine
      .results({ window: 'tumbling:10' })
      .map((r) => [r.key, r.start, r.count, r.sum])
      .sort((p, q) => String(p[0]).localeCompare(String(q[0])) || (p[1] as number) - (q[1] as number))
    expect(shown, `${at}: tumbling windows`).toEqual(model)
    if (exact) {
      expect(s.openWindows, `${at}: openWindows`).toBe(model.length)
      expect(s.lateLane + s.lateLaneTrimmed, `${at}: late-lane entries`).toBe(s.beyondLateness)
    }
  }
}

const orderedSetup = fc.record({
  maxPending: fc.integer({ min: 1, max: 4 }),
  maxSources: fc.integer({ min: 1, max: 3 }),
  maxDedupEntries: fc.integer({ min: 1, max: 4 }),
  maxLateEvents: fc.integer({ min: 0, max: 3 }),
  batchSize: fc.integer({ min: 1, max: 3 }),
  allowedLateness: fc.constantFrom(0, 10),
  onLate: fc.constantFrom('emit_correction' as const, 'drop' as const),
})

/** Checks one ordered-stream run: gauges within bounds, every push counted once, every accepted event emitted exactly once. */
function orderedRun(setup: ValueOf<typeof orderedSetup>, program: readonly Op[]): void {
  const stream = createOrderedStream({ ...setup, watermark: manual(), now: () => 0 })
  const traffic = new Traffic()
  const emitted: string[] = []
  const collect = () => {
    for (const batch of stream.flushReady()) {
      expect(batch.events.length).toBeGreaterThan(0)
      expect(batch.events.length).toBeLessThanOrEqual(setup.batchSize)
      for (const e of batch.events) emitted.push(keyOf(e.source, e.seq, e.id))
    }
  }
  for (const [step, op] of program.entries()) {
    const at = `op ${step} (${op.kind})`
    const w = stream.watermark()
    if (op.kind === 'advance') stream.advanceWatermark((Number.isFinite(w) ? w : 0) + op.by)
    else if (op.kind === 'flush') collect()
    else {
      const events = traffic.events(op.events, w)
      const receipt = stream.push(events)
      expect(receipt.accepted + receipt.duplicates + receipt.beyondLateness + receipt.rejected, at).toBe(events.length)
      for (const a of receipt.anomalies) {
        expect(a.reason, at).toBe('overflow')
        expect(a.detail, at).toMatch(/^max(Pending|Sources|DedupEntries) \(\d+\) reached$/)
      }
    }
    const s = stream.stats()
    expect(s.pending + s.pendingCorrections, `${at}: held`).toBeLessThanOrEqual(setup.maxPending)
    expect(s.peakPending, `${at}: peakPending`).toBeLessThanOrEqual(setup.maxPending)
    expect(s.dedupEntries, `${at}: dedupEntries`).toBeLessThanOrEqual(setup.maxDedupEntries)
    expect(s.lateLane, `${at}: lateLane`).toBeLessThanOrEqual(setup.maxLateEvents)
    expect(s.sources, `${at}: sources`).toBeLessThanOrEqual(setup.maxSources)
    expect(s.lateLane + s.lateLaneTrimmed, `${at}: late-lane entries`).toBe(s.beyondLateness)
    expect(s.pushed, `${at}: counted once`).toBe(s.accepted + s.duplicates + s.beyondLateness + s.rejected)
    expect(s.anomalies.overflow, at).toBe(s.rejected)
  }
  stream.advanceWatermark(Number.POSITIVE_INFINITY)
  collect()
  expect(stream.pending()).toBe(0)
  expect(emitted.length, 'every accepted event emitted').toBe(stream.stats().accepted)
  expect(new Set(emitted).size, 'no event emitted twice').toBe(emitted.length)
}

describe('bounds under random traffic (seeded)', () => {
  it(
    'engine: gauges within their limits after every operation, every input counted once, live windows hold exactly what was accepted',
    () => assertFreshSeeded(fc.property(engineSetup, ops, engineRun), FILE, 300),
    PROPERTY_TIMEOUT,
  )

  it(
    'ordered stream: held, dedup, late lane and sources within their limits; every push counted once; every accepted event emitted once',
    () => assertFreshSeeded(fc.property(orderedSetup, ops, orderedRun), FILE, 600),
    PROPERTY_TIMEOUT,
  )
})
