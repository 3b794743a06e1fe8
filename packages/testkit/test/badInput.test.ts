/**
 * The bad-input catalogue (docs/bad-input.md): one test per
 * row. Every row feeds the engine one kind of bad input and checks the answer (an anomaly
 * with its reason, or a typed error), that the engine still serves afterwards, and that
 * nothing it had accepted was lost. Rows count the individual cases they try; the total is
 * printed at the end.
 */
import 'fake-indexeddb/auto'
import { seededRandom } from '@tidemark/seeded-random'
import { IDBFactory, IDBObjectStore as FakeObjectStore } from 'fake-indexeddb'
import { wrap } from 'idb'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import * as Y from 'yjs'
import {
  afterProcessingTime,
  ANOMALY_REASONS,
  type AnomalyReason,
  type CellGroup,
  defineAggregate,
  distinct,
  groupCellEntries,
  histogram,
  latest,
  packCellGroup,
  quantiles,
  boundedOutOfOrderness,
  type CellEntry,
  createEngine,
  type Engine,
  type EngineOptions,
  manual,
  MAX_ABS_TS,
  MAX_NAME_LENGTH,
  session,
  sliding,
  type StreamEvent,
  type TidemarkEngine,
  tumbling,
} from '@tidemark/engine'
import {
  decodeCheckpoint,
  decodeEngineCheckpoint,
  decodeWalRecord,
  encodeCheckpoint,
  encodeEngineCheckpoint,
  encodeWalRecord,
  indexedDbPersistence,
  isQuotaError,
  openEngine,
  QuotaError,
  recoveryReport,
} from '@tidemark/idb'
import { applyPeerUpdate } from '@tidemark/yjs'
import { bindDoc } from '@tidemark/yjs'
import { isConfigurationMismatchError } from '@tidemark/yjs'
import { DOC_SCHEMA, META_NAME, replicaArrayName, writeGroupEntry } from '@tidemark/yjs'
import { readFileSync } from 'node:fs'
import { createOrderedStream, type OrderedStream } from '@tidemark/engine/ordered'

let cases = 0
let rows = 0
const ROW_IDS: string[] = []

/** One catalogue row: `run` returns how many cases it tried. */
function row(id: string, input: string, run: () => number | Promise<number>, timeout?: number): void {
  ROW_IDS.push(id)
  it(
    `${id} ${input}`,
    async () => {
      const tried = await run()
      expect(tried).toBeGreaterThan(0)
      cases += tried
      rows++
    },
    timeout,
  )
}

afterAll(() => {
  console.log(`bad-input catalogue: ${rows} rows, ${cases} cases tried`)
})

afterEach(() => {
  vi.restoreAllMocks()
  vi.useRealTimers()
})

const clock = { now: 0 }
const WINDOWS = [tumbling(10), sliding(20, 5), session(5)]

function engineFor(options: Partial<EngineOptions> = {}): TidemarkEngine {
  return createEngine({ windows: WINDOWS, watermark: manual(), replicaId: 'me', now: () => clock.now, ...options }) as TidemarkEngine
}

const CANARY: StreamEvent = { id: 'canary#1', source: 'canary', seq: 1, ts: 3, key: 'canary', value: 7 }

/** An engine that already accepted the canary event. */
function withCanary(options: Partial<EngineOptions> = {}): TidemarkEngine {
  const engine = engineFor(options)
  expect(engine.ingest([CANARY]).accepted).toBe(1)
  return engine
}

let freshCount = 0
/** Nothing accepted was lost (the canary's window), and a fresh valid event is accepted and shown. */
function expectServing(engine: Engine, ts = 4): void {
  expect(engine.results({ window: 'tumbling:10', key: 'canary' })).toMatchObject([{ start: 0, count: 1, sum: 7 }])
  const n = ++freshCount
  const receipt = engine.ingest([{ id: `fresh#${n}`, source: `fresh-${n}`, seq: 1, ts, key: `fresh-${n}`, value: 1 }])
  expect(receipt).toMatchObject({ accepted: 1, rejected: 0 })
  expect(engine.results({ window: 'tumbling:10', key: `fresh-${n}` })).toMatchObject([{ count: 1 }])
}

/** Ingests `inputs` as one batch; every one must be rejected with `reason` at its own index. */
function expectRejected(engine: Engine, inputs: readonly unknown[], reason: AnomalyReason): number {
  const before = engine.stats().anomalies[reason]
  const receipt = engine.ingest(inputs as StreamEvent[])
  expect(receipt.accepted + receipt.duplicates + receipt.beyondLateness + receipt.rejected).toBe(inputs.length)
  expect(receipt.rejected).toBe(inputs.length)
  expect(receipt.anomalies.map((a) => a.reason)).toEqual(inputs.map(() => reason))
  expect(receipt.anomalies.map((a) => a.index)).toEqual(inputs.map((_, i) => i))
  for (const a of receipt.anomalies) expect(a.detail).toEqual(expect.any(String))
  expect(engine.stats().anomalies[reason]).toBe(before + inputs.length)
  return inputs.length
}

const base = { id: 'x', source: 'd1', ts: 5, value: 1 }

describe('bad-input catalogue: malformed events', () => {
  row('B01', 'null and undefined instead of an event', () => {
    const engine = withCanary()
    const n = expectRejected(engine, [null, undefined], 'invalid_event')
    expectServing(engine)
    return n
  })

  row('B02', 'primitives, functions and symbols instead of an event', () => {
    const engine = withCanary()
    const n = expectRejected(engine, [0, 42, Number.NaN, '', 'event', true, false, 7n, Symbol('e'), () => base], 'invalid_event')
    expectServing(engine)
    return n
  })

  row('B03', 'arrays and empty objects', () => {
    const engine = withCanary()
    const n = expectRejected(engine, [[], [base], { length: 3 }, {}, new Map(Object.entries(base))], 'missing_id')
    expectServing(engine)
    return n
  })

  row('B04', 'each required field missing', () => {
    const engine = withCanary()
    const without = (field: keyof typeof base) => {
      const copy: Record<string, unknown> = { ...base }
      delete copy[field]
      return copy
    }
    let n = expectRejected(engine, [without('id')], 'missing_id')
    n += expectRejected(engine, [without('source')], 'missing_source')
    n += expectRejected(engine, [without('ts')], 'invalid_ts')
    n += expectRejected(engine, [without('value')], 'invalid_value')
    expectServing(engine)
    return n
  })

  row('B05', 'fields of the wrong type', () => {
    const engine = withCanary()
    let n = expectRejected(engine, [7, null, {}, ['a'], true, ''].map((id) => ({ ...base, id })), 'missing_id')
    n += expectRejected(engine, [3, null, {}, false, ''].map((source) => ({ ...base, source })), 'missing_source')
    n += expectRejected(engine, ['5', null, 5n, new Date(5), {}, [5]].map((ts) => ({ ...base, ts })), 'invalid_ts')
    n += expectRejected(engine, ['3', null, 3n, true, {}].map((value) => ({ ...base, value })), 'invalid_value')
    n += expectRejected(engine, ['2', null, 2n, {}, true].map((seq) => ({ ...base, seq })), 'invalid_seq')
    n += expectRejected(engine, [7, null, {}, ['k'], false].map((key) => ({ ...base, key })), 'invalid_key')
    expectServing(engine)
    return n
  })

  row('B06', 'extra fields on a valid event', () => {
    const engine = withCanary()
    engine.advanceWatermark(100)
    const extra = { ...base, id: 'extra', extra: 'x', nested: { deep: [1] }, seqNo: 9, toJSON: () => 'hijack' }
    const on = engine.ingest([{ ...extra, ts: 150, id: 'extra-on-time' } as StreamEvent])
    const late = engine.ingest([extra as StreamEvent])
    expect(on.accepted).toBe(1)
    expect(late.beyondLateness).toBe(1)
    // Only the contract's fields are kept: the late lane holds a clean copy.
    expect(engine.lateEvents().at(-1)?.event).toEqual({ id: 'extra', source: 'd1', ts: 5, value: 1 })
    expectServing(engine, 160)
    return 2
  })

  row('B07', 'null-prototype, frozen and class-instance events', () => {
    const engine = withCanary()
    const bare = Object.assign(Object.create(null) as object, { ...base, id: 'bare' })
    const frozen = Object.freeze({ ...base, id: 'frozen' })
    class Reading {
      get id() {
        return 'instance'
      }
      readonly source = 'd1'
      readonly ts = 6
      readonly value = 2
    }
    const receipt = engine.ingest([bare, frozen, new Reading()] as StreamEvent[])
    expect(receipt).toMatchObject({ accepted: 3, rejected: 0 })
    expect(engine.results({ window: 'tumbling:10', key: '' })).toMatchObject([{ count: 3, sum: 4 }])
    expectServing(engine)
    return 3
  })

  row('B08', 'an event whose fields throw when read (revoked proxy, throwing getter)', () => {
    const engine = withCanary()
    const { proxy, revoke } = Proxy.revocable({ ...base }, {})
    revoke()
    const throwing = {
      ...base,
      get ts(): number {
        throw new Error('sensor detached')
      },
    }
    // Unreadable input is refused as invalid_event with a reason, and nothing else in the batch is half-applied.
    const appliedBefore = engine.stats().applied
    const receipt = engine.ingest([{ ...base, id: 'before', seq: 1 }, proxy as StreamEvent, throwing, { ...base, id: 'after', seq: 2 }])
    expect(receipt).toMatchObject({ accepted: 2, rejected: 2 })
    expect(receipt.anomalies.map((a) => [a.reason, a.index])).toEqual([
      ['invalid_event', 1],
      ['invalid_event', 2],
    ])
    expect(receipt.anomalies[0]?.detail).toMatch(/could not be read/)
    expect(engine.stats().applied - appliedBefore).toBe(2)
    expectServing(engine)
    return 2
  })

  row('B09', 'a batch that is not an array, or has holes', () => {
    const engine = withCanary()
    const notArrays = [null, undefined, base, 'events', { length: 1, 0: base }, new Set([base])]
    for (const batch of notArrays) expect(() => engine.ingest(batch as unknown as StreamEvent[])).toThrow(TypeError)
    // biome-ignore lint/suspicious/noSparseArray: a batch with a hole is the input under test
    const holey = [, { ...base, id: 'after-hole' }] as StreamEvent[]
    const receipt = engine.ingest(holey)
    expect(receipt).toMatchObject({ accepted: 1, rejected: 1 })
    expect(receipt.anomalies).toMatchObject([{ reason: 'invalid_event', index: 0 }])
    expectServing(engine)
    return notArrays.length + 1
  })

  row('B10', 'an empty batch', () => {
    const engine = withCanary()
    const before = engine.stats()
    expect(engine.ingest([])).toMatchObject({ accepted: 0, duplicates: 0, beyondLateness: 0, rejected: 0, anomalies: [] })
    expect(engine.stats().applied).toBe(before.applied)
    expectServing(engine)
    return 1
  })
})

describe('bad-input catalogue: timestamps and clocks', () => {
  row('B11', 'non-finite timestamps', () => {
    const engine = withCanary()
    const n = expectRejected(engine, [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY].map((ts) => ({ ...base, ts })), 'invalid_ts')
    expectServing(engine)
    return n
  })

  row('B12', 'absurd timestamps, and the largest accepted ones', () => {
    const engine = withCanary({ maxFutureSkew: Number.POSITIVE_INFINITY })
    const absurd = [MAX_ABS_TS + 1, -MAX_ABS_TS - 1, 1e300, -1e300, Number.MAX_VALUE, 2 ** 60]
    const n = expectRejected(engine, absurd.map((ts) => ({ ...base, ts })), 'invalid_ts')
    // ±MAX_ABS_TS is accepted (the upper edge only with the future-skew check off) and window arithmetic stays exact there.
    const edges = engine.ingest([
      { ...base, id: 'max', ts: MAX_ABS_TS, key: 'edge' },
      { ...base, id: 'min', ts: -MAX_ABS_TS, key: 'edge' },
    ])
    expect(edges.accepted).toBe(2)
    const edgeWindows = engine.results({ window: 'tumbling:10', key: 'edge' })
    // One window each: the multiple of 10 at or below each edge.
    expect(edgeWindows.map((r) => r.start)).toEqual([-MAX_ABS_TS, MAX_ABS_TS].map((ts) => Math.floor(ts / 10) * 10))
    for (const r of edgeWindows) {
      expect(r.end - r.start).toBe(10)
      expect(r.start % 10 === 0).toBe(true)
    }
    // With the default maxFutureSkew the upper edge is far ahead of any clock: future_ts.
    const skewed = withCanary()
    expect(skewed.ingest([{ ...base, id: 'max', ts: MAX_ABS_TS }]).anomalies.map((a) => a.reason)).toEqual(['future_ts'])
    expectServing(engine)
    expectServing(skewed)
    return n + 3
  })

  row('B13', 'negative zero and fractional timestamps', () => {
    const engine = withCanary()
    const receipt = engine.ingest([0.5, -0, 1e-9, 9.999].map((ts, i) => ({ ...base, id: `f${i}`, ts, key: 'frac' })))
    expect(receipt.accepted).toBe(4)
    expect(engine.results({ window: 'tumbling:10', key: 'frac' })).toMatchObject([{ start: 0, end: 10, count: 4 }])
    expectServing(engine)
    return 4
  })

  row('B14', 'one source jumps far into the future while it is the only active source', () => {
    clock.now = 0
    const options = { watermark: boundedOutOfOrderness(10), allowedLateness: 100, retention: Number.POSITIVE_INFINITY }
    const engine = withCanary(options)
    const wBefore = engine.watermark()
    const future = Date.UTC(2200, 0, 1)
    const event = { id: 'j', source: 'canary', seq: 2, ts: future, value: 1 }
    const jump = engine.ingest([event])
    // More than maxFutureSkew (a day) ahead of now(): refused with the event, and nothing moves.
    expect(jump).toMatchObject({ accepted: 0, rejected: 1 })
    expect(jump.anomalies).toEqual([expect.objectContaining({ reason: 'future_ts', index: 0, id: 'j', source: 'canary', event })])
    expect(engine.watermark()).toBe(wBefore)
    expect(engine.nextSeq('canary')).toBe(2)
    expect(engine.stats().futureSources).toEqual([{ source: 'canary', count: 1, lastTs: future }])
    // The lag is the out-of-orderness alone: the jump is not part of it.
    expect(engine.stats().watermarkLag).toBe(10)
    // The present goes on as before: on time, in the canary's window.
    const present = engine.ingest([{ id: 'p', source: 'other', seq: 1, ts: 5, value: 1 }])
    expect(present).toMatchObject({ accepted: 1, late: 0, beyondLateness: 0 })
    expect(engine.stats().openWindows).toBeLessThanOrEqual(2 * 6)
    expectServing(engine)

    // With the check off (maxFutureSkew: Infinity) the jump is taken and W follows the lone source:
    // every earlier window turns final, and the present goes to the late lane for good.
    const poisoned = withCanary({ ...options, maxFutureSkew: Number.POSITIVE_INFINITY })
    expect(poisoned.ingest([event]).accepted).toBe(1)
    expect(poisoned.watermark()).toBe(future - 10)
    expect(poisoned.results({ window: 'tumbling:10', key: 'canary' })).toMatchObject([{ start: 0, count: 1, sum: 7, final: true }])
    expect(poisoned.ingest([{ id: 'p', source: 'other', seq: 1, ts: 50, value: 1 }])).toMatchObject({ accepted: 0, beyondLateness: 1 })
    // Only the windows of the two accepted events exist (tumbling 1 + sliding 4 + session 1 each): none in between.
    expect(poisoned.stats().openWindows).toBe(2 * 6)
    return 5
  })

  row('B15', 'one source jumps far into the future while others are active', () => {
    clock.now = 0
    const engine = withCanary({ watermark: boundedOutOfOrderness(10) })
    engine.ingest([{ id: 'o1', source: 'other', seq: 1, ts: 40, value: 1 }])
    const future = Date.UTC(2200, 0, 1)
    expect(engine.ingest([{ id: 'j', source: 'canary', seq: 2, ts: future, value: 1 }]).anomalies.map((a) => a.reason)).toEqual(['future_ts'])
    // W stays the minimum over active sources, and nothing of the jump is held pending.
    const w = engine.watermark()
    expect(w).toBe(CANARY.ts - 10)
    expect(engine.stats().watermarkLag).toBe(40 - w)
    // Within maxFutureSkew of the clock the same jump is taken: W stays with the others, the future window waits.
    const within = withCanary({ watermark: boundedOutOfOrderness(10), maxFutureSkew: Number.POSITIVE_INFINITY })
    within.ingest([{ id: 'o1', source: 'other', seq: 1, ts: 40, value: 1 }])
    expect(within.ingest([{ id: 'j', source: 'canary', seq: 2, ts: future, value: 1 }]).accepted).toBe(1)
    expect(within.watermark()).toBe(30)
    expect(within.stats().watermarkLag).toBe(future - 30)
    const more = within.ingest([{ id: 'o2', source: 'other', seq: 2, ts: 60, value: 1 }])
    expect(more.accepted).toBe(1)
    expect(within.results({ window: 'tumbling:10', key: '' }).find((r) => r.start === future - (future % 10))).toMatchObject({
      status: 'provisional',
    })
    expectServing(engine, 41)
    expectServing(within, 61)
    return 4
  })

  row('B16', 'a source jumps far into the past', () => {
    clock.now = 0
    const engine = engineFor({ watermark: boundedOutOfOrderness(0), windows: tumbling(10) })
    engine.ingest([1, 2, 3].map((seq) => ({ id: `s${seq}`, source: 's', seq, ts: seq * 10, value: 1 })))
    expect(engine.results()[0]).toMatchObject({ start: 10, basis: 'proven' })
    const past = engine.ingest([{ id: 's4', source: 's', seq: 4, ts: -1e9, value: 1 }])
    // Beyond lateness: on the late lane; the clock keeps its max, but the source can no longer prove completeness.
    expect(past).toMatchObject({ accepted: 0, beyondLateness: 1 })
    expect(engine.stats().proofFrontier).toBe(Number.NEGATIVE_INFINITY)
    engine.ingest([{ id: 's5', source: 's', seq: 5, ts: 50, value: 1 }])
    expect(engine.results().find((r) => r.start === 30)).toMatchObject({ status: 'on_time', basis: 'derived' })
    expect(engine.watermark()).toBe(50)
    return 1
  })

  row('B17', 'the processing-time clock jumps forward, backward, or reads NaN or an infinity', () => {
    clock.now = 1000
    const engine = withCanary({ watermark: boundedOutOfOrderness(0), idleTimeout: 100 })
    engine.ingest([{ id: 'b1', source: 'busy', seq: 1, ts: 40, value: 1 }])
    expect(engine.watermark()).toBe(3)
    for (const now of [Number.NaN, -1e12, 999]) {
      clock.now = now
      engine.tick()
      // Nobody goes idle on a clock that reads NaN or went back.
      expect(engine.watermark()).toBe(3)
    }
    clock.now = 1e12
    engine.tick()
    // Far forward: both sources idle; W never moves back, nothing is lost.
    expect(engine.watermark()).toBe(3)
    engine.ingest([{ id: 'b2', source: 'busy', seq: 2, ts: 60, value: 1 }])
    expect(engine.watermark()).toBe(60)
    expect(engine.results({ window: 'tumbling:10', key: 'canary' })).toMatchObject([{ count: 1, final: true, basis: 'fallback' }])
    // A source whose only reading came while the clock read NaN or an infinity counts as heard at the
    // clock's next finite reading: it turns idle from there, and stops holding W back. Its event is
    // taken: a clock that reads no finite time judges no event ahead of it (maxFutureSkew).
    for (const reading of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      clock.now = 1000
      const held = withCanary({ watermark: boundedOutOfOrderness(0), idleTimeout: 100 })
      clock.now = reading
      expect(held.ingest([{ id: 'q1', source: 'quiet', seq: 1, ts: 5, value: 1 }]), String(reading)).toMatchObject({ accepted: 1, rejected: 0 })
      clock.now = 1050
      held.ingest([{ id: 'b1', source: 'busy', seq: 1, ts: 40, value: 1 }])
      for (const now of [1100, 1151, 1300]) {
        clock.now = now
        held.ingest([{ id: `b${now}`, source: 'busy', seq: now, ts: 40 + now, value: 1 }])
      }
      expect(held.stats()).toMatchObject({ idleSources: 2, watermarkHeldBy: 'busy' })
      expect(held.watermark()).toBe(1340)
      // The ordered stream judges its pushes the same way.
      const stream = createOrderedStream({ now: () => reading, maxFutureSkew: 0 })
      expect(stream.push([{ id: 'q1', source: 'quiet', seq: 1, ts: 5, value: 1 }]), String(reading)).toMatchObject({ accepted: 1, rejected: 0 })
      // A window changed then arms its processing-time trigger at the next finite reading.
      clock.now = reading
      const timed = engineFor({ trigger: { early: afterProcessingTime(100) } })
      timed.ingest([{ id: 't1', source: 'timed', seq: 1, ts: 5, value: 1 }])
      expect(timed.nextTickAt(), String(reading)).toBe(Number.POSITIVE_INFINITY)
      clock.now = 1000
      timed.tick()
      expect(timed.nextTickAt(), String(reading)).toBe(1100)
    }
    return 12
  })
})

describe('bad-input catalogue: names, values and sequence numbers', () => {
  row('B18', 'huge ids, sources and keys', () => {
    const engine = withCanary()
    const longest = 'n'.repeat(MAX_NAME_LENGTH)
    const over = 'o'.repeat(MAX_NAME_LENGTH + 1)
    const huge = 'h'.repeat(1 << 20)
    expect(engine.ingest([{ ...base, id: longest, source: longest, key: longest }]).accepted).toBe(1)
    let n = 1 + expectRejected(engine, [{ ...base, id: over }, { ...base, id: huge }], 'invalid_id')
    n += expectRejected(engine, [{ ...base, source: over }, { ...base, source: huge }], 'invalid_source')
    n += expectRejected(engine, [{ ...base, key: over }, { ...base, key: huge }], 'invalid_key')
    // Anomalies never echo a huge string back.
    const receipt = engine.ingest([{ ...base, id: huge }])
    expect(receipt.anomalies[0]?.id?.length).toBe(MAX_NAME_LENGTH)
    expectServing(engine)
    return n + 1
  })

  row('B19', 'huge and tiny values', () => {
    const engine = withCanary()
    const values = [Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, -0, 2 ** 53 + 2]
    const receipt = engine.ingest(values.map((value, i) => ({ ...base, id: `v${i}`, key: `v${i}`, value })))
    expect(receipt.accepted).toBe(values.length)
    values.forEach((value, i) => {
      expect(engine.results({ window: 'tumbling:10', key: `v${i}` })).toMatchObject([{ count: 1, sum: 0 + value, min: value, max: value }])
    })
    // Two finite values whose sum overflows: count, min and max stay exact; the sum is ±Infinity.
    engine.ingest([1, 2].map((i) => ({ ...base, id: `big${i}`, key: 'big', value: Number.MAX_VALUE })))
    expect(engine.results({ window: 'tumbling:10', key: 'big' })).toMatchObject([{ count: 2, max: Number.MAX_VALUE, sum: Number.POSITIVE_INFINITY }])
    // A peer takes the overflowed cell as it is: the replicas agree.
    const peer = engineFor({ replicaId: 'peer-of-b19' })
    const state = engine.replica.exportState()
    expect(peer.replica.mergeRemote(state.cells, state.clocks)).toMatchObject({ applied: state.cells.length })
    expect(peer.stats().anomalies.invalid_remote_cell).toBe(0)
    expect(peer.results()).toEqual(engine.results())
    expectServing(engine)
    return values.length + 2
  })

  row('B20', 'prototype names as ids, sources and keys; own __proto__ fields', () => {
    const engine = withCanary()
    const names = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__']
    const events = names.flatMap((name, i) => [
      { id: name, source: name, seq: 1, ts: 5, key: name, value: i },
      { id: `${name}-2`, source: 'd1', seq: i + 1, ts: 6, key: name, value: 10 },
    ])
    const ownProto = JSON.parse('{"id":"own","source":"d2","ts":5,"value":1,"__proto__":{"ts":"poison","polluted":true}}') as StreamEvent
    const receipt = engine.ingest([...events, ownProto])
    expect(receipt).toMatchObject({ accepted: events.length + 1, rejected: 0 })
    names.forEach((name, i) => {
      expect(engine.results({ window: 'tumbling:10', key: name })).toMatchObject([{ key: name, count: 2, sum: i + 10 }])
    })
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(Object.keys(engine.stats().anomalies).sort()).toEqual([...ANOMALY_REASONS].sort())
    expect(engine.stats().sources).toBe(names.length + 3)
    expectServing(engine)
    return events.length + 1
  })

  row('B21', 'sequence gaps', () => {
    const engine = engineFor({ windows: tumbling(10), watermark: manual() })
    const at = (seq: number) => ({ id: `g${seq}`, source: 'g', seq, ts: seq * 10, value: 1 })
    expect(engine.ingest([at(1), at(2), at(5)]).accepted).toBe(3)
    // P stops at the gap; the seq above it is remembered for dedup.
    expect(engine.stats()).toMatchObject({ proofFrontier: 20, dedupEntries: 1 })
    expect(engine.ingest([at(5)]).duplicates).toBe(1)
    expect(engine.ingest([at(3), at(4)]).accepted).toBe(2)
    expect(engine.stats()).toMatchObject({ proofFrontier: 50, dedupEntries: 0 })
    return 6
  })

  row('B22', 'a seq reused with other content', () => {
    const engine = withCanary()
    const first = { id: 'r1', source: 'r', seq: 1, ts: 5, key: 'reuse', value: 1 }
    engine.ingest([first])
    const impostors = [
      { ...first, id: 'r1-other' },
      { ...first, ts: 7 },
      { ...first, value: 999 },
      { ...first, key: 'elsewhere' },
      { ...first, ts: 500, value: -5 },
    ]
    const receipt = engine.ingest(impostors)
    // Counted once: the first delivery of (source, seq) wins. A copy whose ts differs is flagged.
    expect(receipt).toMatchObject({ accepted: 0, duplicates: impostors.length, rejected: 0 })
    expect(receipt.anomalies).toEqual([
      { reason: 'conflicting_duplicate', index: 1, id: 'r1', source: 'r', detail: "seq 1 of source 'r' was first taken with ts 5; this copy has ts 7 (the first delivery wins)" },
      { reason: 'conflicting_duplicate', index: 4, id: 'r1', source: 'r', detail: "seq 1 of source 'r' was first taken with ts 5; this copy has ts 500 (the first delivery wins)" },
    ])
    expect(engine.results({ window: 'tumbling:10', key: 'reuse' })).toMatchObject([{ count: 1, sum: 1 }])
    expect(engine.results({ key: 'elsewhere' })).toEqual([])
    expect(engine.stats().anomalies).toMatchObject({ duplicate: impostors.length, conflicting_duplicate: 2 })
    expect(engine.stats().duplicates).toBe(impostors.length)
    // A producer that restarted its numbering: inside the gap-free prefix a later ts is caught,
    // an earlier one cannot be told from the first delivery (only the prefix's latest ts is known).
    engine.ingest([{ ...first, seq: 2, ts: 6 }, { ...first, seq: 3, ts: 8 }, { ...first, seq: 5, ts: 9 }])
    const restarted = engine.ingest([
      { ...first, seq: 1, ts: 9 },
      { ...first, seq: 2, ts: 4 },
      { ...first, seq: 3, ts: 8 },
      { ...first, seq: 5, ts: 10 },
    ])
    expect(restarted.duplicates).toBe(4)
    expect(restarted.anomalies.map((a) => [a.index, a.detail])).toEqual([
      [0, "seq 1 of source 'r' was first taken at or before ts 8; this copy has ts 9 (the first delivery wins)"],
      [3, "seq 5 of source 'r' was first taken with ts 9; this copy has ts 10 (the first delivery wins)"],
    ])
    expect(engine.stats().anomalies.conflicting_duplicate).toBe(4)
    expectServing(engine)
    return impostors.length + 4
  })

  row('B23', 'an id reused without seq, with other content', () => {
    const engine = withCanary()
    engine.ingest([{ id: 'same', source: 'n', ts: 5, key: 'ids', value: 1 }])
    const receipt = engine.ingest([
      { id: 'same', source: 'n', ts: 8, key: 'ids', value: 50 },
      { id: 'same', source: 'other', ts: 8, key: 'ids', value: 2 },
      { id: 'same', source: 'n', ts: 5, key: 'ids', value: 70 },
    ])
    // Identity is (source, id): the same id from another source is another event.
    expect(receipt).toMatchObject({ accepted: 1, duplicates: 2, rejected: 0 })
    expect(receipt.anomalies).toMatchObject([{ reason: 'conflicting_duplicate', index: 0, id: 'same', source: 'n' }])
    expect(engine.results({ window: 'tumbling:10', key: 'ids' })).toMatchObject([{ count: 2, sum: 3 }])
    expectServing(engine)
    return 3
  })

  row('B24', 'seq overflow and other impossible seqs', () => {
    const engine = withCanary()
    const bad = [2 ** 53, 2 ** 53 + 2, 1e300, Number.POSITIVE_INFINITY, Number.NaN, 0, -1, 1.5, -0.5]
    const n = expectRejected(engine, bad.map((seq, i) => ({ ...base, id: `o${i}`, seq })), 'invalid_seq')
    // The largest safe seq is valid: a gap, remembered, proves nothing.
    const receipt = engine.ingest([{ ...base, id: 'maxseq', source: 'big', seq: Number.MAX_SAFE_INTEGER }])
    expect(receipt.accepted).toBe(1)
    expect(engine.ingest([{ ...base, id: 'maxseq-again', source: 'big', seq: Number.MAX_SAFE_INTEGER }]).duplicates).toBe(1)
    expectServing(engine)
    return n + 2
  })

  row('B25', 'one source mixing events with and without seq', () => {
    const engine = engineFor({ windows: tumbling(10) })
    const receipt = engine.ingest([
      { id: 'm1', source: 'm', seq: 1, ts: 5, value: 1 },
      { id: 'm-free', source: 'm', ts: 6, value: 1 },
      { id: 'm2', source: 'm', seq: 2, ts: 7, value: 1 },
    ])
    expect(receipt.accepted).toBe(3)
    // A source that sends any event without seq can prove nothing.
    expect(engine.stats().proofFrontier).toBe(Number.NEGATIVE_INFINITY)
    expect(engine.ingest([{ id: 'm-free', source: 'm', ts: 6, value: 1 }]).duplicates).toBe(1)
    return 4
  })
})

/** A doc in which replica `id` wrote `entries` raw, as a hostile or buggy peer could. */
function peerDoc(id: string, entries: unknown[], configuration: string): Y.Doc {
  const doc = new Y.Doc()
  doc.transact(() => {
    doc.getMap(META_NAME).set(id, [DOC_SCHEMA, configuration])
    doc.getArray(replicaArrayName(id)).push(entries)
  })
  return doc
}

function sync(from: Y.Doc, to: Y.Doc): boolean {
  return applyPeerUpdate(to, Y.encodeStateAsUpdate(from, Y.encodeStateVector(to)), 'peer')
}

/** A peer's group entry of one cell, as its binding writes it (values unchecked, so hostile ones too). */
const cellEntry = (start: number, count: number, sum = 1, min = 1, max = 1, maxTs = start + 1, version = 1): unknown[] => [
  ...writeGroupEntry(packCellGroup('tumbling:10', start, 'peer-src', ['k'], [{ count, sum, min, max, maxTs, version }])),
]

/** `entry` with field `at` replaced. */
const withField = (entry: readonly unknown[], at: number, value: unknown): unknown[] => entry.map((field, i) => (i === at ? value : field))

describe('bad-input catalogue: peers', () => {
  row('B26', 'hostile cells and clocks in a peer’s Yjs log', () => {
    const engine = withCanary({ windows: tumbling(10) })
    const doc = new Y.Doc()
    const errors: Error[] = []
    bindDoc(engine, doc, { onError: (e) => errors.push(e) })
    const hostile: unknown[] = [
      cellEntry(0, Number.NaN),
      cellEntry(0, -3),
      cellEntry(0, 2 ** 41),
      cellEntry(0, 1.5),
      cellEntry(0, 1, Number.POSITIVE_INFINITY),
      cellEntry(0, 1, Number.NaN),
      cellEntry(0, 2, 2, 5, 1),
      cellEntry(0, 1, 1, Number.NaN, 1),
      cellEntry(0, 1, 1, 1, 1, Number.NaN),
      cellEntry(Number.NaN, 1),
      cellEntry(MAX_ABS_TS * 2, 1),
      cellEntry(0, 0, 0, Number.NaN, Number.NaN, 0),
      withField(cellEntry(0, 1), 3, 'x'.repeat(MAX_NAME_LENGTH + 1)),
      withField(cellEntry(0, 1), 2, '0'),
      withField(cellEntry(0, 1), 5, ['1', 1, 1, 1, 1, 1]),
      cellEntry(0, 1, 1, 1, 1, 1, -1),
      ['k', 'peer-src', 'peer', Number.NaN, 1, 1, 1, 1],
      ['k', 'peer-src', 'peer', 1, -1, 1, 1, 1],
      ['k', 'peer-src', 'peer', 1, 1, 1, 4, 1],
      ['z', 1, 2],
      'not an entry',
      42,
      null,
      { c: 1 },
    ]
    const valid = cellEntry(10, 2, 6, 1, 5, 15)
    expect(sync(peerDoc('peer', [...hostile, valid], engine.replica.configuration), doc)).toBe(true)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(hostile.length)
    // The valid entry of the same update is merged; nothing local changed.
    expect(engine.results({ key: 'k' })).toMatchObject([{ start: 10, count: 2, sum: 6, min: 1, max: 5 }])
    expect(errors).toEqual([])
    expectServing(engine)
    return hostile.length + 1
  })

  row('B27', 'hostile cells through ReplicaPort.mergeRemote: unknown windows, misaligned starts', () => {
    const engine = withCanary()
    const cell = { count: 1, sum: 1, min: 1, max: 1, maxTs: 3, version: 1 }
    const entries: CellEntry[] = [
      { address: { window: 'tumbling:999', key: 'k', start: 0, source: 'p' }, cell },
      { address: { window: 'no such window', key: 'k', start: 0, source: 'p' }, cell },
      { address: { window: 'tumbling:10', key: 'k', start: 3, source: 'p' }, cell },
      { address: { window: 'sliding:20:5', key: 'k', start: 7, source: 'p' }, cell },
      { address: { window: 'session:5', key: 'k', start: 10, source: 'p' }, cell: { ...cell, maxTs: 3 } },
    ]
    const report = engine.replica.mergeRemote(entries, [])
    expect(report.applied).toBe(0)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(entries.length)
    expect(engine.results({ key: 'k' })).toEqual([])
    // A null group is one more refused group; arguments that are not arrays are refused whole, nothing counted.
    engine.replica.mergeRemoteGroups([null as unknown as CellGroup], [])
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(entries.length + 1)
    expect(() => engine.replica.mergeRemote(entries, null as unknown as [])).toThrow(new TypeError('mergeRemote needs arrays of cells and clocks'))
    expect(() => engine.replica.mergeRemoteGroups({} as unknown as [], [])).toThrow(TypeError)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(entries.length + 1)
    expectServing(engine)
    return entries.length + 3
  })

  row('B28', 'malformed and truncated Yjs updates', () => {
    const engine = withCanary({ windows: tumbling(10) })
    const doc = new Y.Doc()
    bindDoc(engine, doc, { onError: () => {} })
    const good = Y.encodeStateAsUpdate(peerDoc('peer', [cellEntry(10, 1)], engine.replica.configuration))
    const random = seededRandom(10)
    const garbage = Array.from({ length: 40 }, (_, i) => Uint8Array.from({ length: 1 + i * 7 }, () => Math.floor(random() * 256)))
    const truncated = Array.from({ length: 16 }, (_, i) => good.subarray(0, Math.floor((good.length * i) / 16) + 1))
    const damaged = Array.from({ length: 40 }, (_, i) => {
      const copy = Uint8Array.from(good)
      copy[i % copy.length] = (copy[i % copy.length] as number) ^ 0xa5
      return copy
    })
    let refused = 0
    const inputs = [new Uint8Array(0), ...garbage, ...truncated, ...damaged]
    for (const update of inputs) if (!applyPeerUpdate(doc, update, 'peer')) refused++
    // Every update Yjs cannot apply is reported; none throws into the transport.
    expect(engine.stats().anomalies.invalid_remote_cell).toBeGreaterThanOrEqual(refused)
    expect(refused).toBeGreaterThan(0)
    expect(applyPeerUpdate(doc, good, 'peer')).toBe(true)
    expect(engine.results({ key: 'k' })).toMatchObject([{ start: 10, count: 1 }])
    expectServing(engine)
    return inputs.length + 1
  })

  row('B29', 'a peer claiming a source this replica writes (source_conflict)', () => {
    const engine = withCanary({ replicaId: 'm' })
    const clock = { source: 'canary', writer: 'a', maxTs: 50, prefix: 9, prefixTs: 50, provable: true, version: 99 }
    const report = engine.replica.mergeRemote([], [clock])
    expect(report.conflicts).toBe(1)
    expect(engine.stats().anomalies.source_conflict).toBe(1)
    // 'a' < 'm': the smaller replica id keeps the source; this replica's later events for it are refused, one anomaly each.
    const refused = engine.ingest([2, 3].map((seq) => ({ ...CANARY, id: `canary#${seq}`, seq })))
    expect(refused).toMatchObject({ accepted: 0, rejected: 2 })
    expect(refused.anomalies.map((a) => a.reason)).toEqual(['source_conflict', 'source_conflict'])
    // Two remote replicas writing one source, seen through the binding, are reported too.
    const doc = new Y.Doc()
    bindDoc(engine, doc, { onError: () => {} })
    sync(peerDoc('p1', [['k', 'shared', 'p1', 1, 1, 1, 1, 1]], engine.replica.configuration), doc)
    sync(peerDoc('p2', [['k', 'shared', 'p2', 1, 1, 1, 1, 2]], engine.replica.configuration), doc)
    expect(engine.stats().anomalies.source_conflict).toBe(4)
    expectServing(engine)
    return 4
  })

  row('B30', 'a peer with another window configuration or doc schema; a foreign checkpoint', () => {
    const engine = withCanary({ windows: tumbling(10) })
    const doc = new Y.Doc()
    const errors: Error[] = []
    const binding = bindDoc(engine, doc, { onError: (e) => errors.push(e) })
    sync(peerDoc('other-config', [cellEntry(10, 1)], '{"windows":["tumbling:60000"],"allowedLateness":0}'), doc)
    const schema = new Y.Doc()
    schema.getMap(META_NAME).set('other-schema', [DOC_SCHEMA + 1, engine.replica.configuration])
    sync(schema, doc)
    const malformed = new Y.Doc()
    malformed.getMap(META_NAME).set('malformed', 'not a meta entry')
    sync(malformed, doc)
    expect(errors).toHaveLength(3)
    expect(errors.every(isConfigurationMismatchError)).toBe(true)
    expect(binding.mismatches().map((e) => e.replicaId).sort()).toEqual(['malformed', 'other-config', 'other-schema'])
    // None of their cells were merged.
    expect(engine.results({ key: 'k' })).toEqual([])
    const foreign = engineFor({ windows: tumbling(60) })
    foreign.ingest([{ ...base }])
    expect(() => engineFor({ windows: tumbling(10) }).restore(foreign.checkpoint())).toThrow(/tumbling:60.*tumbling:10/)
    expectServing(engine)
    return 4
  })
})

function walEvents(): StreamEvent[] {
  return [
    { id: '\ud800lone', source: '__proto__', seq: 1, ts: -0, key: 'constructor', value: Number.MAX_VALUE },
    { id: 'b', source: 'd1', ts: MAX_ABS_TS, value: -1 },
    { id: 'c'.repeat(MAX_NAME_LENGTH), source: 'd1', seq: Number.MAX_SAFE_INTEGER, ts: 1.5, key: '', value: 0 },
  ]
}

/** Makes the next write to `storeName` fail like a full disk does in Chromium (the transaction aborts with QuotaExceededError). */
function failNextWrite(storeName: string): void {
  const original = FakeObjectStore.prototype.add
  vi.spyOn(FakeObjectStore.prototype, 'add').mockImplementation(function (this: IDBObjectStore, ...args: [unknown, IDBValidKey?]) {
    if (this.name !== storeName) return original.apply(this, args)
    vi.mocked(FakeObjectStore.prototype.add).mockRestore()
    const request = original.apply(this, args)
    ;(this.transaction as unknown as { _abort(name: string): void })._abort('QuotaExceededError')
    return request
  })
}

describe('bad-input catalogue: storage', () => {
  row('B31', 'corrupt write-ahead-log records (every byte flipped, every truncation, garbage)', () => {
    const record = encodeWalRecord(7, { kind: 'ingest', now: 5, events: walEvents(), rejected: { invalid_ts: 2 } })
    expect(decodeWalRecord(record)).toMatchObject({ ok: true, lsn: 7 })
    let n = 0
    for (let i = 0; i < record.length; i++) {
      const damaged = Uint8Array.from(record)
      damaged[i] = (damaged[i] as number) ^ 0xff
      const result = decodeWalRecord(damaged)
      expect(result.ok, `byte ${i}`).toBe(false)
      if (!result.ok) expect(result.reason).toEqual(expect.any(String))
      n++
    }
    for (let length = 0; length < record.length; length++) {
      expect(decodeWalRecord(record.subarray(0, length)).ok, `truncated to ${length}`).toBe(false)
      n++
    }
    const random = seededRandom(31)
    for (let k = 0; k < 200; k++) {
      const garbage = Uint8Array.from({ length: Math.floor(random() * 400) }, () => Math.floor(random() * 256))
      expect(decodeWalRecord(garbage).ok).toBe(false)
      n++
    }
    return n
  })

  row('B32', 'corrupt checkpoints (every byte flipped, every truncation)', () => {
    const bytes = encodeCheckpoint({ upToLsn: 3, state: Uint8Array.from({ length: 64 }, (_, i) => i) })
    let n = 0
    for (let i = 0; i < bytes.length; i++) {
      const damaged = Uint8Array.from(bytes)
      damaged[i] = (damaged[i] as number) ^ 0x01
      expect(decodeCheckpoint(damaged).ok, `byte ${i}`).toBe(false)
      n++
    }
    for (let length = 0; length < bytes.length; length++) {
      expect(decodeCheckpoint(bytes.subarray(0, length)).ok).toBe(false)
      n++
    }
    return n
  })

  row('B33', 'a corrupt log record found when the engine opens', async () => {
    const factory = new IDBFactory()
    const options = { windows: tumbling(10), watermark: manual(), now: () => clock.now, checkpointOnClose: false }
    const first = await openEngine({ ...options, persistence: indexedDbPersistence({ name: 'b33', indexedDB: factory }) })
    await first.ingest([CANARY]).durable
    await first.ingest([{ id: 'lost', source: 'd', seq: 1, ts: 5, value: 1 }, { id: 'lost2', source: 'd', seq: 2, ts: 6, value: 1 }]).durable
    await first.ingest([{ id: 'kept', source: 'e', seq: 1, ts: 5, value: 1 }]).durable
    await first.close()
    const db = await wrap(factory.open('b33'))
    if (db === undefined) throw new Error('open failed')
    const keys = (await db.getAllKeys('wal')) as number[]
    const damagedKey = keys[1] as number
    const bytes = new Uint8Array((await db.get('wal', damagedKey)) as ArrayBuffer)
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0xff
    await db.put('wal', bytes.buffer, damagedKey)
    db.close()
    const reopened = await openEngine({ ...options, persistence: indexedDbPersistence({ name: 'b33', indexedDB: factory }) })
    const report = recoveryReport(reopened)
    expect(report?.corrupt).toHaveLength(1)
    expect(report).toMatchObject({ lostEvents: 2, lossUnknown: false })
    expect(reopened.stats().anomalies.corrupt_record).toBe(1)
    expect(reopened.stats().persistenceError).toMatch(/corrupt/)
    // The records around the damaged one were recovered; the engine serves.
    expect(reopened.results({ key: 'canary' })).toMatchObject([{ count: 1 }])
    expect(reopened.results({ key: '' })).toMatchObject([{ count: 1 }])
    expectServing(reopened)
    await reopened.close()
    return 1
  })

  row('B34', 'storage quota exhausted under the engine', async () => {
    // The retried checkpoint waits on the fake clock, never on real time.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const factory = new IDBFactory()
    const engine = await openEngine({
      windows: tumbling(10),
      watermark: manual(),
      persistence: indexedDbPersistence({ name: 'b34', indexedDB: factory }),
      writeRetry: { firstMs: 1_000, maxMs: 1_000 },
    })
    await engine.ingest([CANARY]).durable
    failNextWrite('wal')
    const full = engine.ingest([{ id: 'q1', source: 'q', seq: 1, ts: 5, value: 1 }])
    const error = await full.durable.then(
      () => null,
      (e: unknown) => e,
    )
    // A typed error, and backpressure: batches are refused with overflow while the log has a hole.
    expect(error).toBeInstanceOf(QuotaError)
    expect(isQuotaError(error)).toBe(true)
    const refused = engine.ingest([{ id: 'q2', source: 'q', seq: 2, ts: 6, value: 1 }])
    expect(refused.anomalies.map((a) => a.reason)).toEqual(['overflow'])
    await expect(refused.durable).rejects.toBeInstanceOf(QuotaError)
    expect(engine.stats().persistenceError).toMatch(/quota/i)
    // Space comes back: the checkpoint retried a second later covers the hole and ingest resumes.
    await vi.advanceTimersByTimeAsync(1_000)
    await vi.waitFor(() => engine.ingest([]).durable)
    const resumed = engine.ingest([{ id: 'q2', source: 'q', seq: 2, ts: 6, value: 1 }])
    expect(resumed.accepted).toBe(1)
    await resumed.durable
    await engine.close()
    const reopened = await openEngine({ windows: tumbling(10), watermark: manual(), persistence: indexedDbPersistence({ name: 'b34', indexedDB: factory }) })
    // Nothing accepted was lost: the batch whose write failed was applied and is in the checkpoint.
    expect(reopened.results({ key: 'canary' })).toMatchObject([{ count: 1 }])
    expect(reopened.results({ key: '' })).toMatchObject([{ count: 2 }])
    await reopened.close()
    return 3
  })
})

describe('bad-input catalogue: limits and misuse', () => {
  row('B35', 'batches and streams beyond the configured bounds', () => {
    const engine = withCanary({ limits: { maxBatch: 4, maxWindows: 12, maxSources: 2 }, windows: tumbling(10) })
    const big = Array.from({ length: 5 }, (_, i) => ({ ...base, id: `big${i}` }))
    let n = expectRejected(engine, big, 'overflow')
    const windows = engine.ingest(Array.from({ length: 4 }, (_, i) => ({ ...base, id: `w${i}`, source: 'd1', key: `k${i}` })))
    expect(windows.accepted).toBe(4)
    const sources = engine.ingest([{ ...base, id: 's', source: 'one-too-many' }])
    expect(sources.anomalies).toMatchObject([{ reason: 'overflow', detail: expect.stringContaining('maxSources') }])
    n += 1
    for (let k = 0; k < 12; k++) engine.ingest([{ ...base, id: `many${k}`, key: `many${k}` }])
    const full = engine.ingest([{ ...base, id: 'no-room', key: 'no-room' }])
    expect(full.anomalies).toMatchObject([{ reason: 'overflow', detail: expect.stringContaining('maxWindows') }])
    expect(engine.stats().openWindows).toBeLessThanOrEqual(12)
    expect(engine.results({ key: 'canary' })).toMatchObject([{ count: 1 }])
    // Room again once the windows are final and past retention.
    engine.advanceWatermark(1e6)
    expect(engine.stats().openWindows).toBe(0)
    expect(engine.ingest([{ ...base, id: 'room', ts: 1e6 + 5, key: 'room' }]).accepted).toBe(1)
    return n + 1
  })

  row('B36', 'API misuse: bad options, bad watermark moves, use after close', async () => {
    const bad: (() => unknown)[] = [
      () => createEngine({ windows: [] }),
      () => createEngine({ windows: [tumbling(10), tumbling(10)] }),
      () => createEngine({ windows: tumbling(10), allowedLateness: -1 }),
      () => createEngine({ windows: tumbling(10), allowedLateness: Number.POSITIVE_INFINITY }),
      () => createEngine({ windows: tumbling(10), idleTimeout: Number.NaN }),
      () => createEngine({ windows: tumbling(10), limits: { maxWindows: 1.5 } }),
      () => createEngine({ windows: tumbling(10), replicaId: '' }),
      () => createEngine(null as unknown as EngineOptions),
      () => tumbling(0),
      () => tumbling(1.5),
      () => sliding(10, 3),
      () => sliding(10_000, 1),
      () => session(-1),
      () => createEngine({ windows: tumbling(10), allowedLatness: 5 } as EngineOptions),
      () => createEngine({ windows: tumbling(10), watermark: 5000 } as unknown as EngineOptions),
      () => createEngine({ windows: tumbling(10), limits: { maxBatch: 0 } }),
      () => createEngine({ windows: tumbling(10), limits: { maxBatches: 5 } } as unknown as EngineOptions),
    ]
    for (const make of bad) expect(make).toThrow(/must|needs|window|same|unknown option/)
    const engine = withCanary()
    expect(() => engine.advanceWatermark(Number.NaN)).toThrow(RangeError)
    expect(() => engine.advanceWatermark('5' as unknown as number)).toThrow(RangeError)
    engine.advanceWatermark(100)
    engine.advanceWatermark(-Number.MAX_VALUE)
    expect(engine.watermark()).toBe(100)
    await engine.close()
    expect(() => engine.ingest([base])).toThrow(/closed/)
    return bad.length + 4
  })

  row('B37', 'a subscriber, a local-write or a close listener that throws', async () => {
    const engine = withCanary()
    const reported: unknown[] = []
    vi.stubGlobal('reportError', (e: unknown) => reported.push(e))
    engine.subscribe(() => {
      throw new Error('render failed')
    })
    let seen = 0
    engine.subscribe((changes) => {
      seen += changes.length
    })
    engine.replica.onLocalWrite(() => {
      throw new Error('transport down')
    })
    let written = 0
    engine.replica.onLocalWrite((write) => {
      written += write.cells.length
    })
    expectServing(engine)
    expect(reported).toEqual([new Error('transport down'), new Error('render failed')])
    expect(seen).toBeGreaterThan(0)
    expect(written).toBeGreaterThan(0)
    engine.replica.onClose(() => {
      throw new Error('already destroyed')
    })
    let closed = 0
    engine.replica.onClose(() => closed++)
    await expect(engine.close()).resolves.toBeUndefined()
    expect(closed).toBe(1)
    expect(reported).toHaveLength(3)
    vi.unstubAllGlobals()
    return 3
  })

  row('B38', 'events mutated by the caller after ingest', () => {
    const engine = withCanary()
    engine.advanceWatermark(100)
    const late = { ...base, id: 'mut-late', key: 'mut' }
    const onTime = { ...base, id: 'mut-on-time', ts: 150, key: 'mut' }
    engine.ingest([late, onTime])
    const before = { results: engine.results(), late: engine.lateEvents() }
    Object.assign(late, { ts: 999, value: -1, key: 'other' })
    Object.assign(onTime, { ts: 999, value: -1, key: 'other', id: 'changed' })
    expect({ results: engine.results(), late: engine.lateEvents() }).toEqual(before)
    // Dedup remembers what was ingested, not the caller's object.
    expect(engine.ingest([{ ...onTime, id: 'mut-on-time', ts: 150 }]).duplicates).toBe(1)
    return 2
  })

  row('B39', 'the same event many times in one batch', () => {
    const engine = withCanary()
    const copies = Array.from({ length: 10_000 }, () => ({ ...base, id: 'flood', source: 'flood', seq: 1, key: 'flood' }))
    const receipt = engine.ingest(copies)
    expect(receipt).toMatchObject({ accepted: 1, duplicates: copies.length - 1 })
    expect(engine.results({ window: 'tumbling:10', key: 'flood' })).toMatchObject([{ count: 1 }])
    expectServing(engine)
    return copies.length
  })
})

/** Aggregates for the rows below: a sketch, a distinct count, the latest value, a histogram (names in the engine's order). */
const AGGREGATES = {
  devices: distinct({ of: (event) => event.source }),
  latency: quantiles({ at: [0.5, 0.99] }),
  reading: latest(),
  spread: histogram({ bounds: [10, 50, 100] }),
}

/** An engine with aggregates that accepted the canary. */
function withAggregates(): Engine<typeof AGGREGATES> {
  const engine = createEngine({ windows: tumbling(10), watermark: manual(), replicaId: 'me', now: () => clock.now, aggregates: AGGREGATES })
  expect(engine.ingest([CANARY]).accepted).toBe(1)
  return engine
}

/** A peer's group entry of three cells (keys a, b, c) with their states, as a peer with the same aggregates writes it. */
function sketchedGroup(start = 0): CellGroup & { aggregates: readonly (readonly Uint8Array[])[] } {
  const peer = createEngine({ windows: tumbling(10), watermark: manual(), replicaId: 'peer', aggregates: AGGREGATES })
  peer.ingest(['a', 'b', 'c'].map((key, i) => ({ id: `p${key}`, source: 'peer-src', ts: start + i, key, value: 20 * (i + 1) })))
  const [group] = groupCellEntries(peer.replica.exportState().cells)
  if (group?.aggregates === undefined) throw new Error('a peer with aggregates exports their states')
  return group as CellGroup & { aggregates: readonly (readonly Uint8Array[])[] }
}

describe('bad-input catalogue: aggregates', () => {
  row('B40', 'hostile aggregate states in a peer’s Yjs log', () => {
    const engine = withAggregates()
    const doc = new Y.Doc()
    const errors: Error[] = []
    bindDoc(engine, doc, { onError: (e) => errors.push(e) })
    const group = sketchedGroup()
    const sketch = group.aggregates[0]?.[1] ?? new Uint8Array(0)
    const at = { devices: 0, latency: 1, reading: 2, spread: 3 }
    // One bad state in cell a (cells b and c of the same entry stay good): each must refuse cell a only.
    const badStates: [keyof typeof at, Uint8Array][] = [
      ['latency', new Uint8Array(0)],
      ['latency', new Uint8Array([0x52, 0, 0, 0])],
      ['latency', new Uint8Array([0x51, 0, 0, 1, 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10])],
      ['latency', new Uint8Array([0x51, 0, 0, 2, 2, 1, 0xff, 0xff, 0x03, 1])],
      ['latency', sketch.subarray(0, 5)],
      ['latency', Uint8Array.from([...sketch, 0])],
      ['devices', new Uint8Array([0x44, 7])],
      ['devices', new Uint8Array([0x44, 0, 2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1])],
      ['devices', new Uint8Array([0x44, 2, ...new Uint8Array(100)])],
      ['reading', new Uint8Array([0x4c, 1, ...new Uint8Array(new Float64Array([1, Number.NaN]).buffer), 0, 1, 65])],
      ['reading', new Uint8Array([0x4c, 1, ...new Uint8Array(new Float64Array([1, -0]).buffer), 0, 1, 65])],
      ['reading', new Uint8Array([0x4c, 2])],
      ['spread', new Uint8Array([0x48, 3, 0, 0, 0])],
      ['spread', new Uint8Array([0x48, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0])],
    ]
    const entries = badStates.map(([name, bytes], i) => {
      // Each entry a window of its own, its cells written there (a cell moved to another window is refused, B54).
      const written = sketchedGroup(10 * (i + 1))
      const states = written.aggregates.map((cell) => [...cell])
      ;(states[0] as Uint8Array[])[at[name]] = bytes
      return writeGroupEntry({ ...written, aggregates: states })
    })
    // Framing the binding refuses whole: states per cell out of range, a length past the end, bytes after the last state, not bytes.
    const framing = [new Uint8Array([0]), new Uint8Array([33]), new Uint8Array([4, 0x7f]), Uint8Array.from([...(writeGroupEntry(group)[6] as Uint8Array), 9]), 'not bytes']
    const framed = framing.map((column, i) => withField(writeGroupEntry(sketchedGroup(500 + 10 * i)), 6, column))
    expect(sync(peerDoc('peer', [...entries, ...framed, writeGroupEntry(sketchedGroup(900))], engine.replica.configuration), doc)).toBe(true)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(badStates.length + framing.length)
    expect(engine.stats().remoteAnomalies.join('\n')).toMatch(/aggregate "latency": quantiles state: /)
    // Every damaged entry's other two cells merged, and the valid entry whole.
    engine.advanceWatermark(2_000)
    const merged = engine.results({ window: 'tumbling:10' }).filter((r) => r.key !== 'canary')
    expect(merged.filter((r) => r.key === 'a').map((r) => r.start)).toEqual([900])
    expect(merged.filter((r) => r.key === 'b')).toHaveLength(badStates.length + 1)
    expect(merged.find((r) => r.key === 'c')?.aggregates).toMatchObject({ devices: 1, reading: 60, spread: [0, 0, 1, 0] })
    expect(errors).toEqual([])
    expectServing(engine, 2_005)
    return badStates.length + framing.length + 1
  })

  row('B41', 'groups whose states do not fit the engine’s aggregates, through ReplicaPort.mergeRemoteGroups', () => {
    const sketched = withAggregates()
    const group = sketchedGroup()
    const plain = withCanary({ windows: tumbling(10) })
    const { aggregates: _states, ...bare } = group
    const wrongCount = { ...group, aggregates: group.aggregates.map((cell) => cell.slice(1)) }
    expect(sketched.replica.mergeRemoteGroups([bare, wrongCount], []).applied).toBe(0)
    expect(plain.replica.mergeRemoteGroups([group], []).applied).toBe(0)
    expect(sketched.stats().anomalies.invalid_remote_cell).toBe(1 + group.keys.length)
    expect(plain.stats().anomalies.invalid_remote_cell).toBe(1)
    expect(sketched.stats().remoteAnomalies).toEqual([
      'invalid_remote_cell: cell group: carries no aggregate states; this engine keeps 4',
      ...group.keys.map((key) => `invalid_remote_cell: cell ["tumbling:10","${key}",0,"peer-src"]: 3 aggregate states, this engine keeps 4`),
    ])
    expect(plain.stats().remoteAnomalies).toEqual(['invalid_remote_cell: cell group: carries aggregate states; this engine has no aggregates'])
    expectServing(plain)
    return 3
  })

  row('B42', 'an aggregate whose `of` throws or gives NaN, Infinity, a string or nothing', () => {
    const refusing = {
      p: quantiles({ at: [0.5], of: (e) => (e.value === 1 ? Number.NaN : e.value === 2 ? Number.POSITIVE_INFINITY : e.value === 3 ? ('7' as unknown as number) : e.value === 4 ? (undefined as unknown as number) : e.value) }),
      who: distinct({
        of: (e) => {
          if (e.value === 5) throw new Error('no identity')
          return e.value === 6 ? (null as unknown as string) : e.source
        },
      }),
      odd: defineAggregate({
        name: 'odd',
        init: () => 0,
        add: (n: number) => n + 1,
        merge: (a: number, b: number) => a + b,
        result: (n: number) => n,
        encode: (n: number) => new Uint8Array([n]),
        decode: (bytes: Uint8Array) => bytes[0] ?? 0,
        checkInput: (x: number) => {
          if (x === 8) throw new Error('checkInput broke')
          return null
        },
      }),
    }
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), aggregates: refusing })
    const inputs = [1, 2, 3, 4, 5, 6, 8].map((value, i) => ({ id: `bad-${i}`, source: 's', seq: i + 1, ts: 1, value }))
    const receipt = engine.ingest([...inputs, { id: 'good', source: 's', seq: 1, ts: 1, value: 40 }])
    expect(receipt).toMatchObject({ accepted: 1, rejected: inputs.length })
    expect(receipt.anomalies.map((a) => [a.reason, a.index, a.detail])).toEqual([
      ['invalid_aggregate_input', 0, 'aggregate "p" (quantiles): expected a finite number, got NaN'],
      ['invalid_aggregate_input', 1, 'aggregate "p" (quantiles): expected a finite number, got Infinity'],
      ['invalid_aggregate_input', 2, 'aggregate "p" (quantiles): expected a finite number, got "7"'],
      ['invalid_aggregate_input', 3, 'aggregate "p" (quantiles): expected a finite number, got undefined'],
      ['invalid_aggregate_input', 4, 'aggregate "who" (distinct): threw no identity'],
      ['invalid_aggregate_input', 5, 'aggregate "who" (distinct): expected a string or a finite number, got null'],
      ['invalid_aggregate_input', 6, 'aggregate "odd" (odd): threw checkInput broke'],
    ])
    // Refused events leave no trace: the good one took seq 1, and nothing else counted.
    expect(engine.nextSeq('s')).toBe(2)
    engine.advanceWatermark(10)
    expect(engine.results()[0]).toMatchObject({ count: 1, aggregates: { p: [40], who: 1, odd: 1 } })
    return inputs.length + 1
  })

  row('B43', 'bad aggregates: options, factories, another replica’s aggregates', () => {
    const bad: [unknown, RegExp][] = [
      ['quantiles', /aggregates must be an object/],
      [[quantiles({ at: [0.5] })], /aggregates must be an object/],
      [{ p: { name: 'p', configuration: 'p' } }, /aggregates\.p must be made by quantiles/],
      [{ p: null }, /aggregates\.p must be made by quantiles/],
      [Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`a${i}`, latest()])), /at most 32/],
      [{ ['n'.repeat(101)]: latest() }, /1 to 100 characters/],
    ]
    for (const [aggregates, message] of bad) expect(() => createEngine({ windows: tumbling(10), aggregates: aggregates as never })).toThrow(message)
    const factories: [() => unknown, RegExp][] = [
      [() => quantiles({ at: [] }), /quantiles: at must list 1 to 100 numbers/],
      [() => quantiles({ at: [1.5] }), /quantiles: at must list/],
      [() => quantiles({ at: [0.5], relativeAccuracy: 0 }), /relativeAccuracy must be a number from 0.0001 to 0.5/],
      [() => quantiles({ at: [0.5], maxBuckets: 8 }), /maxBuckets must be an integer from 16/],
      [() => distinct({ precision: 20 }), /precision must be an integer from 4 to 16/],
      [() => histogram({ bounds: [3, 1] }), /histogram: bounds must list 1 to 1024 finite, strictly increasing numbers/],
      // Holes, which Array.prototype.every skips: at [0.5, hole] broke every later ingest, bounds [10, hole] misplaced values.
      [() => quantiles({ at: holed([0.5, 0.9], 1) }), /quantiles: at must list 1 to 100 numbers from 0 to 1, got 2 item\(s\): \[0\.5,null\]/],
      [() => histogram({ bounds: holed([10, 20], 1) }), /histogram: bounds must list .* got 2 item\(s\): \[10,null\]/],
      [() => latest({ of: 3 as never }), /latest: of must be a function/],
      [() => quantiles({ at: [0.5], atp: 1 } as never), /unknown option 'atp'/],
      [() => defineAggregate({ name: 'x' } as never), /defineAggregate\(x\): init must be a function/],
    ]
    for (const [make, message] of factories) expect(make).toThrow(message)
    // A replica with other aggregates has another configuration: refused whole, as any other configuration.
    const engine = withAggregates()
    const doc = new Y.Doc()
    const errors: Error[] = []
    bindDoc(engine, doc, { onError: (e) => errors.push(e) })
    const other = createEngine({ windows: tumbling(10), aggregates: { latency: quantiles({ at: [0.5], relativeAccuracy: 0.02 }) } })
    sync(peerDoc('other-aggregates', [writeGroupEntry(sketchedGroup(10))], other.replica.configuration), doc)
    expect(errors).toHaveLength(1)
    expect(errors.every(isConfigurationMismatchError)).toBe(true)
    expect(engine.results().filter((r) => r.key !== 'canary')).toEqual([])
    return bad.length + factories.length + 1
  })

  row('B44', 'an aggregate whose add throws partway through a batch', async () => {
    const picky = (broken: boolean) =>
      defineAggregate({
        name: 'picky',
        init: () => 0,
        add: (n: number, x: number) => {
          if (broken && x === 13) throw new Error('unlucky')
          return n + x
        },
        merge: (a: number, b: number) => a + b,
        result: (n: number) => n,
        encode: (n: number) => new Uint8Array([n]),
        decode: (bytes: Uint8Array) => bytes[0] ?? 0,
        configuration: 'picky-1',
      })
    const factory = new IDBFactory()
    const options = (broken: boolean) => ({
      windows: tumbling(10),
      watermark: manual(),
      now: () => clock.now,
      aggregates: { picky: picky(broken) },
      persistence: indexedDbPersistence({ name: 'b44', indexedDB: factory }),
    })
    const engine = await openEngine(options(true))
    await engine.ingest([{ id: 'a', source: 's', seq: 1, ts: 1, value: 1 }]).durable
    const seen: number[] = []
    engine.subscribe((changes) => seen.push(changes.length))
    const stopped = /^engine stopped: aggregate "picky" \(picky\): add threw unlucky\. Its windows were left half updated: fix the cause, then open the engine again from its log$/
    const batch = [13, 2].map((value, i) => ({ id: `b${i}`, source: 's', seq: i + 2, ts: 2, value }))
    expect(() => engine.ingest(batch)).toThrow(stopped)
    // Stopped: every later call says why, and no subscriber hears of the half-applied batch.
    expect(() => engine.ingest([{ id: 'c', source: 's', seq: 4, ts: 3, value: 5 }])).toThrow(stopped)
    expect(() => engine.advanceWatermark(10)).toThrow(stopped)
    expect(seen).toEqual([])
    await expect(engine.close()).resolves.toBeUndefined()
    // The log holds what was recorded, without the half-applied batch: with the aggregate fixed, nothing is counted twice.
    const reopened = await openEngine(options(false))
    expect(reopened.nextSeq('s')).toBe(2)
    reopened.ingest([...batch, CANARY])
    reopened.advanceWatermark(10)
    expect(reopened.results({ key: '' })).toMatchObject([{ count: 3, sum: 16, aggregates: { picky: 16 } }])
    expectServing(reopened, 14)
    await reopened.close()
    // A result that throws while panes are made (after the batch was logged) stops the engine too.
    const shy = createEngine({
      windows: tumbling(10),
      watermark: manual(),
      aggregates: {
        shy: defineAggregate({
          name: 'shy',
          init: () => 0,
          add: (n: number, x: number) => n + x,
          merge: (a: number, b: number) => a + b,
          result: () => {
            throw new Error('camera shy')
          },
          encode: (n: number) => new Uint8Array([n]),
          decode: (bytes: Uint8Array) => bytes[0] ?? 0,
        }),
      },
    })
    expect(() => shy.ingest([{ id: 'a', source: 's', seq: 1, ts: 1, value: 1 }])).toThrow(/^engine stopped: aggregate "shy" \(shy\): result threw camera shy\./)
    expect(() => shy.tick()).toThrow(/^engine stopped: aggregate "shy" \(shy\): result threw camera shy\./)
    // An encode that throws while the batch's cells go to peers stops it too: peers would never get them.
    const mute = createEngine({
      windows: tumbling(10),
      watermark: manual(),
      aggregates: {
        mute: defineAggregate({
          name: 'mute',
          init: () => 0,
          add: (n: number, x: number) => n + x,
          merge: (a: number, b: number) => a + b,
          result: (n: number) => n,
          encode: (n: number) => {
            if (n > 10) throw new Error('too loud')
            return new Uint8Array([n])
          },
          decode: (bytes: Uint8Array) => bytes[0] ?? 0,
        }),
      },
    })
    const written: number[] = []
    mute.replica.onLocalWrite((write) => written.push(write.cells.length))
    const heard: number[] = []
    mute.subscribe((changes) => heard.push(changes.length))
    mute.ingest([{ id: 'a', source: 's', seq: 1, ts: 1, value: 1 }])
    const muted = /^engine stopped: aggregate "mute" \(mute\): encode threw too loud\./
    expect(() => mute.ingest([{ id: 'b', source: 's', seq: 2, ts: 2, value: 20 }])).toThrow(muted)
    expect(() => mute.ingest([{ id: 'c', source: 's', seq: 3, ts: 3, value: 1 }])).toThrow(muted)
    expect({ written, heard }).toEqual({ written: [1], heard: [1] })
    return 4
  })

  row('B45', 'listeners that are not functions; replica.reportAnomaly with an unknown reason', () => {
    const engine = withCanary()
    const calls: (() => unknown)[] = [
      () => engine.subscribe(null as never),
      () => engine.replica.onLocalWrite('publish' as never),
      () => engine.replica.onClose(undefined as never),
      () => engine.replica.reportAnomaly('peer_garbage' as never, 'from plain JavaScript'),
      () => engine.replica.reportAnomaly('invalid_remote_cell', Symbol('detail') as never),
      () => engine.replica.exportState(null as never),
      () => engine.replica.exportDurableState(() => undefined, { writer: 7 } as never),
    ]
    for (const call of calls) expect(call).toThrow(TypeError)
    expect(engine.stats().anomalies).not.toHaveProperty('peer_garbage')
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(0)
    expectServing(engine)
    return calls.length
  })
})

describe('bad-input catalogue: finished sources', () => {
  row('B46', 'finishSource of a name that is not one, of a peer-written or one-too-many source; events of a finished source', async () => {
    const engine = withCanary()
    const peer = engineFor({ replicaId: 'peer' })
    peer.replica.onLocalWrite((write) => engine.replica.mergeRemote(write.cells, write.clocks))
    peer.ingest([{ id: 'p#1', source: 'theirs', seq: 1, ts: 2, key: 'p', value: 1 }])
    const calls: [() => unknown, RegExp][] = [
      [() => engine.finishSource(undefined as never), /finishSource needs a source name/],
      [() => engine.finishSource(''), /finishSource needs a source name/],
      [() => engine.finishSource('s'.repeat(MAX_NAME_LENGTH + 1)), /finishSource needs a source name/],
      [() => engine.finishSource('theirs'), /written by replica 'peer': only its writer can finish it/],
    ]
    for (const [call, message] of calls) expect(call).toThrow(message)
    expect(engine.ingest([{ id: 'd#1', source: 'd', seq: 1, ts: 1, key: 'd', value: 5 }]).accepted).toBe(1)
    // One source known where one is allowed: a second cannot even be finished.
    const full = withCanary({ limits: { maxSources: 1 } })
    expect(() => full.finishSource('new')).toThrow(/limits.maxSources \(1\) reached/)
    expect(full.stats().sources).toBe(1)
    await engine.finishSource('d')
    const after = [
      { id: 'd#1', source: 'd', seq: 1, ts: 1, key: 'd', value: 5 },
      { id: 'd#2', source: 'd', seq: 2, ts: 2, key: 'd', value: 6 },
      { id: 'd@3', source: 'd', ts: 3, key: 'd', value: 6 },
    ]
    const receipt = engine.ingest(after)
    expect(receipt).toMatchObject({ accepted: 0, duplicates: 1, rejected: 2 })
    expect(receipt.anomalies.map((a) => [a.reason, a.index])).toEqual([
      ['finished_source', 1],
      ['finished_source', 2],
    ])
    expect(engine.results({ window: 'tumbling:10', key: 'd' })).toMatchObject([{ count: 1, sum: 5 }])
    engine.advanceWatermark(1)
    engine.finishSource('canary')
    expectServing(engine)
    return calls.length + 2 + after.length
  })
})

describe('bad-input catalogue: peers past the bounds', () => {
  row('B47', "peers' clocks of more new sources than limits.maxSources leaves room for (forged source names)", () => {
    const engine = withCanary({ limits: { maxSources: 3 } })
    // 40 forged clocks, each proving 1,000 ms more: every one provable, the first two and every even one finished.
    const clocks = Array.from({ length: 40 }, (_, i) => ({ source: `forged-${i}`, writer: 'peer', maxTs: 1_000 * (i + 1), prefix: i + 1, prefixTs: 1_000 * (i + 1), provable: true, version: i + 1, ...(i < 2 || i % 2 === 0 ? { finished: true } : {}) }))
    engine.replica.mergeRemote([], clocks)
    const stats = engine.stats()
    // Two clocks found room (forged-0 and forged-1, both finished); the other 38 are counted, none is kept.
    expect(stats.sources).toBe(3)
    expect(stats.anomalies.overflow).toBe(38)
    expect(stats.remoteAnomalies.at(-1)).toBe("overflow: 38 clock(s) of new sources, first 'forged-2': limits.maxSources (3) reached; P stays at or below 4000")
    // The canary proves 3. Once it proves more, the lowest unfinished clock left out (forged-3) holds P at 4000.
    expect(stats.proofFrontier).toBe(3)
    expect(engine.ingest([{ ...CANARY, id: 'canary#2', seq: 2, ts: 9_000 }]).accepted).toBe(1)
    expect(engine.stats().proofFrontier).toBe(4_000)
    expect(engine.results({ window: 'tumbling:10', key: 'canary' })).toMatchObject([{ start: 0, count: 1, sum: 7 }, { start: 9_000, count: 1 }])
    return clocks.length
  })
})

describe('bad-input catalogue: subscribers that call the engine', () => {
  row('B48', 'a subscriber that ticks or ingests nothing on every notification', () => {
    const engine = withCanary()
    let ticks = 0
    // Bounded here, so that a loop fails the row instead of hanging it.
    const stopTicking = engine.subscribe(() => {
      if (++ticks < 100) engine.tick()
    })
    expect(engine.ingest([{ id: 'd#1', source: 'd', seq: 1, ts: 1, key: 'd', value: 2 }]).accepted).toBe(1)
    // A tick with nothing due changed nothing: it is not announced, so the subscriber ticks once.
    expect(ticks).toBe(1)
    stopTicking()
    let empties = 0
    const stopEmpty = engine.subscribe(() => {
      if (++empties < 100) engine.ingest([])
    })
    engine.tick()
    expect(empties).toBe(1)
    stopEmpty()
    expect(engine.results({ window: 'tumbling:10', key: 'd' })).toMatchObject([{ count: 1, sum: 2 }])
    expect(engine.stats()).toMatchObject({ ingested: 2, applied: 2 })
    expectServing(engine)
    return 2
  })
})

describe('bad-input catalogue: clocks that do not read a number', () => {
  row('B49', 'a now option reading a Date, a string (now: Date), undefined, null or a bigint', async () => {
    let reading: unknown = 0
    const engine = withCanary({ now: () => reading as number, idleTimeout: 5 })
    const readings = [new Date(0), Date(), '0', undefined, null, 0n]
    for (const bad of readings) {
      reading = bad
      expect(() => engine.ingest([{ id: 'f#1', source: 'f', seq: 1, ts: 1e12, key: 'f', value: 1 }])).toThrow(TypeError)
      expect(() => engine.tick()).toThrow(/now must be a function returning processing time in ms, got one returning/)
      expect(() => engine.finishSource('f')).toThrow(/got one returning/)
      expect(() => engine.replica.mergeRemote([], [])).toThrow(/got one returning/)
    }
    expect(engine.stats()).toMatchObject({ ingested: 1, sources: 1 })
    reading = 0
    // A day and more ahead of a clock that reads a number: refused.
    expect(engine.ingest([{ id: 'f#1', source: 'f', seq: 1, ts: 1e12, key: 'f', value: 1 }]).anomalies.map((a) => a.reason)).toEqual(['future_ts'])
    expectServing(engine)
    return readings.length
  })
})

describe('bad-input catalogue: checkpoints restore cannot read', () => {
  row('B50', "a checkpoint that passes restore's checks but cannot be read to the end: an aggregate's init that throws, for a cell kept without states", () => {
    const median = quantiles({ at: [0.5] })
    const withMedian = { aggregates: { median } } as Partial<EngineOptions>
    const checkpoint = structuredClone(withCanary(withMedian).checkpoint())
    // The canary's tumbling cell without its states (optional: checkpoints before aggregates had none), which restore makes with `init`.
    const slices = checkpoint.slices?.find((s) => s.window === 'tumbling:10')?.slices as unknown as [string, number, [number, unknown[][]][]][]
    const canaryCell = slices.find(([key]) => key === 'canary')?.[2][0]?.[1][0] as unknown[]
    expect(canaryCell).toHaveLength(3)
    canaryCell.length = 2
    const restored = engineFor(withMedian)
    vi.spyOn(median, 'init').mockImplementation(() => {
      throw new Error('no state today')
    })
    expect(() => restored.restore(checkpoint)).toThrow(/^engine stopped: no state today/)
    expect(() => restored.ingest([{ ...CANARY, id: 'canary#2', seq: 2 }])).toThrow(/engine stopped/)
    vi.restoreAllMocks()
    const again = engineFor(withMedian)
    again.restore(checkpoint)
    expectServing(again)
    return 1
  })
})

describe('bad-input catalogue: the engine called from inside its own operation', () => {
  row('B51', "an aggregate's of (or add, merge, result) that calls the engine: ingest, tick, finishSource, checkpoint", () => {
    let engine: TidemarkEngine | null = null
    let call: (() => void) | null = null
    let caught: unknown = null
    const meddling = (catching: boolean) =>
      defineAggregate({
        name: 'meddling',
        init: () => 0,
        add: (n: number, x: number) => n + x,
        merge: (a: number, b: number) => a + b,
        result: (n: number) => n,
        encode: (n: number) => new Uint8Array([n]),
        decode: (bytes: Uint8Array) => bytes[0] ?? 0,
        of: (event) => {
          if (call !== null && event.value === 2) {
            if (!catching) call()
            else
              try {
                call()
              } catch (error) {
                caught = error
              }
          }
          return event.value
        },
      })
    const inside = /engine called from inside its own operation \(by an aggregate\): call it once that returned/
    const calls: (() => void)[] = [
      () => engine?.ingest([{ id: 'inner', source: 'inner', seq: 1, ts: 5, key: 'canary', value: 100 }]),
      () => engine?.tick(),
      () => void engine?.finishSource('s'),
      () => engine?.checkpoint(),
    ]
    for (const inner of calls) {
      // Caught inside: the call changed nothing, and the batch around it counts every event once.
      engine = withCanary({ aggregates: { meddling: meddling(true) } })
      call = inner
      caught = null
      expect(engine.ingest([1, 2, 3].map((value) => ({ id: `e${value}`, source: 's', seq: value, ts: 5, key: 'k', value }))).accepted).toBe(3)
      expect(String(caught)).toMatch(inside)
      call = null
      expect(engine.results({ window: 'tumbling:10', key: 'k' })).toMatchObject([{ count: 3, sum: 6 }])
      expect(engine.stats()).toMatchObject({ sources: 2, finishedSources: 0 })
      expectServing(engine)
      // Not caught in `of`: that event is refused as an input the aggregate cannot take, and the engine serves.
      engine = withCanary({ aggregates: { meddling: meddling(false) } })
      call = inner
      const receipt = engine.ingest([1, 2].map((value) => ({ id: `e${value}`, source: 's', seq: value, ts: 5, key: 'k', value })))
      expect(receipt).toMatchObject({ accepted: 1, rejected: 1 })
      expect(receipt.anomalies).toMatchObject([{ reason: 'invalid_aggregate_input', id: 'e2' }])
      expect(receipt.anomalies[0]?.detail).toMatch(inside)
      call = null
      expectServing(engine)
    }
    return calls.length * 2
  })
})

describe('bad-input catalogue: subscribers that never settle', () => {
  row('B52', 'a subscriber that changes something on every notification: ingests a new event, reports a new sync status', () => {
    const runaway = /^engine called by its subscribers 1000 times within one notification: a subscriber that calls it on every change never settles$/
    const calls: ((engine: TidemarkEngine, n: number) => void)[] = [
      (engine, n) => engine.ingest([{ id: `r#${n}`, source: 'r', seq: n, ts: 5, key: 'r', value: 1 }]),
      (engine, n) => engine.replica.setSyncStatus({ state: 'connected', lastSync: n, pendingLocalUpdates: 0, peers: 1, refusal: null }, n),
    ]
    for (const call of calls) {
      const engine = withCanary()
      let n = 0
      const refused: unknown[] = []
      let readsAnswered = 0
      const stop = engine.subscribe(() => {
        // Bounded here, so that a loop fails the row instead of hanging it.
        if (n >= 5_000) return
        try {
          call(engine, ++n)
        } catch (error) {
          refused.push(error)
        }
        // Reads still answer past the bound: they change nothing.
        if (engine.nextTickAt() === Number.POSITIVE_INFINITY) readsAnswered++
      })
      engine.tick()
      stop()
      expect(n).toBe(1_001)
      expect(refused.map(String)).toEqual([expect.stringMatching(/engine called by its subscribers 1000 times/)])
      expect((refused[0] as Error).message).toMatch(runaway)
      expect(readsAnswered).toBe(1_001)
      expectServing(engine)
    }
    // The 1,000 events the subscriber's calls ingested before the bound count once each.
    const engine = withCanary()
    let n = 0
    engine.subscribe(() => {
      if (n < 5_000)
        try {
          (calls[0] as (engine: TidemarkEngine, n: number) => void)(engine, ++n)
        } catch {
          // The 1,001st call, refused: counted in n only.
        }
    })
    engine.tick()
    expect(engine.results({ window: 'tumbling:10', key: 'r' })).toMatchObject([{ count: 1_000, sum: 1_000 }])
    return calls.length + 1
  })
})

describe('bad-input catalogue: checkpoints restore cannot trust', () => {
  row('B53', 'a checkpoint edited, truncated or damaged where no checksum sees it: wrong types, values out of range, lists that are not arrays, a window spec the engine does not have, states that do not decode or disagree with their cell, a cell outside its slice', () => {
    const checkpoint = withCanary().checkpoint()
    // biome-ignore lint/suspicious/noExplicitAny: the row writes into any field, however deep, what no type allows.
    type Editable = Record<string, any>
    // An app that keeps checkpoints itself, through the codec openEngine uses: what it reads back is what was written, damage and all.
    const stored = (edit: (c: Editable) => void) => {
      const copy = structuredClone(checkpoint) as Editable
      edit(copy)
      return decodeEngineCheckpoint(encodeEngineCheckpoint(copy as typeof checkpoint))
    }
    const canary = checkpoint.sources.findIndex((s) => s.name === 'canary')
    const cases: [(c: Editable) => void, string][] = [
      [(c) => (c.sources[canary].prefix = -1), `checkpoint.sources[${canary}]: prefix must be a safe integer >= 0: -1`],
      [(c) => (c.counts.applied = Number.NaN), 'checkpoint.counts.applied: expected a whole number >= 0, got NaN'],
      [(c) => (c.dedup.entries = 2.5), 'checkpoint.dedup.entries: expected a whole number >= 0, got 2.5'],
      [(c) => (c.windows[0].revision = '0'), 'checkpoint.windows[0].revision: expected a whole number >= -1, got "0"'],
      [(c) => (c.windows[0].timerAt = Number.POSITIVE_INFINITY), 'checkpoint.windows[0].timerAt: expected a finite time, or NaN for none, got Infinity'],
      [(c) => (c.slices[0].slices[0][2][0][1][0][1].sum = Number.NaN), 'checkpoint.slices[0].slices[0][2][0][1][0][1]: sum must be a number: NaN'],
      // The canary's cell (ts 3) with its last event in the next slice: held to its slice as a peer's is (B54).
      [(c) => (c.slices[0].slices[0][2][0][1][0][1].maxTs = 10), 'checkpoint.slices[0].slices[0][2][0][1][0][1]: expected a cell of the slice [0, 10), got one whose last event is at 10'],
      [(c) => (c.windows[0].window = 'tumbling:5'), 'checkpoint.windows[0].window: expected one of "tumbling:10", "sliding:20:5", "session:5", got "tumbling:5"'],
      [(c) => (c.lateLane.entries = {}), 'checkpoint.lateLane.entries: expected an array, got an object'],
      // Truncated: cut before its frontiers.
      [(c) => delete c.frontiers, 'checkpoint.frontiers: expected an object, got undefined'],
    ]
    for (const [edit, message] of cases) {
      const engine = engineFor()
      const before = engine.stats()
      let refusal: unknown = null
      try {
        engine.restore(stored(edit))
      } catch (error) {
        refusal = error
      }
      expect(refusal, message).toBeInstanceOf(TypeError)
      expect((refusal as Error).message).toBe(message)
      expect(engine.stats()).toEqual(before)
      expect(engine.results()).toEqual([])
      // Nothing changed: the good checkpoint restores, the canary is there, and the engine ingests.
      engine.restore(stored(() => {}))
      expectServing(engine)
    }
    // With aggregates: states that do not decode, or that disagree with their cell as a peer's would
    // (B54: the canary's cell counted one event, the sketch holds two), refused naming the cell's
    // place and the aggregate, before anything changes.
    const median = quantiles({ at: [0.5] })
    const withMedian = { aggregates: { median } } as Partial<EngineOptions>
    const states = withCanary(withMedian).checkpoint()
    const twice = median.encode([7, 7].reduce((s, value) => median.add(s, value, CANARY), median.init()))
    const refusals: [Uint8Array, RegExp | string][] = [
      [Uint8Array.of(255), /^checkpoint\.slices\[0\]\.slices\[0\]\[2\]\[0\]\[1\]\[0\]\[2\]: aggregate "median": /],
      [twice, 'checkpoint.slices[0].slices[0][2][0][1][0][2]: aggregate "median" (quantiles): 2 values in a cell of 1 events'],
    ]
    for (const [bytes, message] of refusals) {
      const bad = structuredClone(states) as Editable
      bad.slices[0].slices[0][2][0][1][0][2] = [bytes]
      const engine = engineFor(withMedian)
      const before = engine.stats()
      expect(() => engine.restore(bad as typeof states)).toThrow(message)
      expect(engine.stats()).toEqual(before)
      engine.restore(states)
      expectServing(engine)
    }
    return cases.length + refusals.length
  })

  row('B54', 'states that decode but disagree with their cell, and a cell outside its window, through ReplicaPort.mergeRemoteGroups', () => {
    const engine = withAggregates()
    const group = sketchedGroup()
    const { latency, reading, spread } = AGGREGATES
    const at = { devices: 0, latency: 1, reading: 2, spread: 3 }
    const sketchOf = (values: readonly number[]) => latency.encode(values.reduce((s, value, i) => latency.add(s, value, { id: `v${i}`, source: 'peer-src', ts: 0, value }), latency.init()))
    // Cells a, b, c hold one event each, at ts 0, 1, 2: a's latest dated far ahead, b's histogram and c's sketch holding two values.
    const forged: [keyof typeof at, Uint8Array][] = [
      ['reading', reading.encode({ ts: 1e12, source: 'peer-src', seq: 0, value: 666 })],
      ['spread', spread.encode([0, 2, 0, 0])],
      ['latency', sketchOf([40, 40])],
    ]
    const states = group.aggregates.map((cell, i) => cell.map((bytes, a) => (forged[i]?.[0] !== undefined && at[forged[i][0]] === a ? forged[i][1] : bytes)))
    // The same cells with their last event (and latest) a day ahead: not the window [0, 10)'s.
    const n = group.keys.length
    const columns = group.columns.slice()
    columns.fill(86_400_000, 4 * n, 5 * n)
    const ahead = reading.encode({ ts: 86_400_000, source: 'peer-src', seq: 0, value: 666 })
    const moved = { ...group, columns, aggregates: group.aggregates.map((cell) => cell.map((bytes, a) => (a === at.reading ? ahead : bytes))) }
    const report = engine.replica.mergeRemoteGroups([{ ...group, aggregates: states }, moved], [])
    expect(report.applied).toBe(0)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(3 + moved.keys.length)
    expect(engine.stats().remoteAnomalies).toEqual([
      `invalid_remote_cell: cell ["tumbling:10","a",0,"peer-src"]: aggregate "reading" (latest): event time 1000000000000 is past the cell's last event time 0`,
      `invalid_remote_cell: cell ["tumbling:10","b",0,"peer-src"]: aggregate "spread" (histogram): 2 values in a cell of 1 events`,
      `invalid_remote_cell: cell ["tumbling:10","c",0,"peer-src"]: aggregate "latency" (quantiles): 2 values in a cell of 1 events`,
      `invalid_remote_cell: ${moved.keys.length} cell(s) fit no window here`,
    ])
    // Nothing of them shows; the honest group merges whole.
    expect(engine.results({ window: 'tumbling:10' }).filter((r) => r.key !== 'canary')).toEqual([])
    expect(engine.replica.mergeRemoteGroups([group], []).applied).toBe(group.keys.length)
    expect(engine.results({ window: 'tumbling:10', key: 'a' })).toMatchObject([{ count: 1, aggregates: { reading: 20, spread: [0, 1, 0, 0] } }])
    expectServing(engine)
    return forged.length + 1
  })

  row('B55', 'an event whose getter calls the ordered stream it is being pushed to: push, flushReady, finishSource, advanceWatermark', () => {
    const calls: Record<string, (stream: OrderedStream) => unknown> = {
      push: (stream) => stream.push([{ id: 'inner', source: 'd2', seq: 1, ts: 5, value: 1 }]),
      flushReady: (stream) => stream.flushReady(),
      finishSource: (stream) => stream.finishSource('d1'),
      advanceWatermark: (stream) => stream.advanceWatermark(1_000),
    }
    for (const [name, call] of Object.entries(calls)) {
      const stream = createOrderedStream({ watermark: manual(), now: () => 0 })
      let thrown: unknown = null
      // A class instance: its fields are read once, from inside push.
      class Meddling {
        readonly id = 'meddler'
        readonly source = 'd1'
        readonly value = 1
        get ts(): number {
          try {
            call(stream)
          } catch (error) {
            thrown = error
            throw error
          }
          return 3
        }
      }
      const receipt = stream.push([{ id: 'a', source: 'd1', seq: 1, ts: 1, value: 1 }, new Meddling() as unknown as StreamEvent, { id: 'b', source: 'd1', seq: 2, ts: 2, value: 1 }])
      expect(String(thrown), name).toMatch(/ordered stream called from inside its own push/)
      expect(receipt.anomalies.map((a) => [a.reason, a.index]), name).toEqual([['invalid_event', 1]])
      // The inner call changed nothing: the watermark did not move, no source was finished, the inner event was not taken.
      expect(receipt.accepted, name).toBe(2)
      expect(stream.watermark(), name).toBe(Number.NEGATIVE_INFINITY)
      const stats = stream.stats()
      expect(stats.pushed, name).toBe(3)
      expect(stats.accepted + stats.duplicates + stats.beyondLateness + stats.rejected, name).toBe(stats.pushed)
      // Served afterwards: the two events come out once, in order.
      stream.advanceWatermark(10)
      expect(stream.flushReady().flatMap((batch) => batch.events.map((e) => e.id)), name).toEqual(['a', 'b'])
    }
    return Object.keys(calls).length
  })
})

describe('bad-input catalogue: documentation', () => {
  it('every row of the docs/bad-input.md table has a test here, and every test a row', () => {
    const catalogue = readFileSync(new URL('../../../docs/bad-input.md', import.meta.url), 'utf8')
    const documented = [...catalogue.matchAll(/^\| (B\d\d) \|/gm)].map((m) => m[1])
    expect(documented).toEqual(ROW_IDS)
  })
})

/** `values` with a hole at `at` (what `[0.5, , 0.9]` writes). */
function holed(values: number[], at: number): number[] {
  const list = [...values]
  delete list[at]
  return list
}
