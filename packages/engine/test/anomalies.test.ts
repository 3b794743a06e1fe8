/**
 * Every input is applied, a duplicate, on the late lane, or rejected with a
 * reason (docs/semantics.md, docs/bounds.md): each ingest-reachable reason, hostile names, bounded
 * buffers refusing with `overflow`, and dedup memory released behind the horizon.
 */
import { describe, expect, it } from 'vitest'
import { loggedEngine } from './loggedEngine.ts'
import {
  ANOMALY_REASONS,
  type LateEvent,
  type AnomalyReason,
  createEngine,
  distinct,
  quantiles,
  TidemarkEngine,
  MAX_ABS_TS,
  MAX_NAME_LENGTH,
  manual,
  type StreamEvent,
  session,
  sliding,
  tumbling,
} from '../src/index.ts'
import { createOrderedStream, orderEvents } from '../src/ordered.ts'
import { reading } from '../src/testing/index.ts'

const valid = { id: 'x', source: 'd1', ts: 5, value: 1 }
const long = 'n'.repeat(MAX_NAME_LENGTH + 1)

/** One input per row with exactly one fault, and the reason it must be refused with. */
const INVALID: readonly [string, unknown, AnomalyReason][] = [
  ['null', null, 'invalid_event'],
  ['a number', 42, 'invalid_event'],
  ['a string', 'event', 'invalid_event'],
  ['undefined', undefined, 'invalid_event'],
  ['no id', { source: 'd1', ts: 5, value: 1 }, 'missing_id'],
  ['an empty id', { ...valid, id: '' }, 'missing_id'],
  ['a numeric id', { ...valid, id: 7 }, 'missing_id'],
  ['an over-long id', { ...valid, id: long }, 'invalid_id'],
  ['no source', { id: 'x', ts: 5, value: 1 }, 'missing_source'],
  ['an empty source', { ...valid, source: '' }, 'missing_source'],
  ['an over-long source', { ...valid, source: long }, 'invalid_source'],
  ['NaN ts', { ...valid, ts: Number.NaN }, 'invalid_ts'],
  ['infinite ts', { ...valid, ts: Number.NEGATIVE_INFINITY }, 'invalid_ts'],
  ['string ts', { ...valid, ts: '5' }, 'invalid_ts'],
  ['ts beyond the representable range', { ...valid, ts: MAX_ABS_TS * 2 }, 'invalid_ts'],
  ['no value', { id: 'x', source: 'd1', ts: 5 }, 'invalid_value'],
  ['NaN value', { ...valid, value: Number.NaN }, 'invalid_value'],
  ['infinite value', { ...valid, value: Number.POSITIVE_INFINITY }, 'invalid_value'],
  ['seq 0', { ...valid, seq: 0 }, 'invalid_seq'],
  ['negative seq', { ...valid, seq: -1 }, 'invalid_seq'],
  ['fractional seq', { ...valid, seq: 1.5 }, 'invalid_seq'],
  ['string seq', { ...valid, seq: '1' }, 'invalid_seq'],
  ['unsafe seq', { ...valid, seq: 2 ** 53 }, 'invalid_seq'],
  ['numeric key', { ...valid, key: 7 }, 'invalid_key'],
  ['null key', { ...valid, key: null }, 'invalid_key'],
  ['over-long key', { ...valid, key: long }, 'invalid_key'],
]

describe('validation', () => {
  it.each(INVALID)('%s is rejected as %s, with its index, and its neighbours still apply', (_, input, reason) => {
    const engine = createEngine({ windows: tumbling(10) })
    const batch = [reading('d1', 1, 1, 1), input, reading('d1', 2, 2, 1)] as StreamEvent[]
    const receipt = engine.ingest(batch)
    expect(receipt).toMatchObject({ accepted: 2, duplicates: 0, beyondLateness: 0, rejected: 1 })
    const [anomaly] = receipt.anomalies
    expect(anomaly).toMatchObject({ reason, index: 1 })
    expect(typeof anomaly?.detail).toBe('string')
    const id = (input as { id?: unknown } | null)?.id
    if (typeof id === 'string' && id !== '' && id.length <= MAX_NAME_LENGTH) expect(anomaly?.id).toBe(id)
    else if (id === undefined || id === '') expect(anomaly?.id).toBeUndefined()
    expect(engine.stats().anomalies[reason]).toBe(1)
    expect(engine.stats().sources).toBe(1)
    expect(engine.results()[0]?.count).toBe(2)
  })

  it('a detail names the refused value as String() writes it, also when a batch repeats or alternates values', () => {
    const engine = createEngine({ windows: tumbling(10) })
    const values: unknown[] = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5, 2.25, 1.5, 1.5, -0, 1e21, '42', Symbol('s'), null]
    const prefix = {
      ts: `ts must be a finite number within ±${MAX_ABS_TS} ms, got `,
      value: 'value must be a finite number, got ',
      seq: 'seq must be a safe integer >= 1, got ',
    }
    const fields = Object.keys(prefix) as (keyof typeof prefix)[]
    const batch = values.flatMap((v, i) => fields.map((field) => ({ ...valid, id: `${field}-${i}`, [field]: v })))
    const receipt = engine.ingest(batch as StreamEvent[])
    const refused = receipt.anomalies.map((a) => {
      const field = fields[(a.index as number) % fields.length] as keyof typeof prefix
      return [a.id, a.detail, `${prefix[field]}${String(values[Math.floor((a.index as number) / fields.length)])}`]
    })
    // NaN, ±Infinity, the string, the symbol and null as any field; 1e21 as a ts or seq; each fraction and -0 as a seq.
    expect(refused).toHaveLength(3 * 3 + 1 + 5 + 1 + 3 * 3)
    for (const [id, detail, expected] of refused) expect(`${id}: ${detail}`).toBe(`${id}: ${expected}`)
  })

  it('accepts the edges of every valid range', () => {
    // A ts at the far edge is also far ahead of any clock: only with the skew check off.
    const engine = createEngine({ windows: tumbling(10), maxFutureSkew: Number.POSITIVE_INFINITY })
    const edges: StreamEvent[] = [
      { id: 'i'.repeat(MAX_NAME_LENGTH), source: 's'.repeat(MAX_NAME_LENGTH), ts: MAX_ABS_TS - 10, value: -1e300, key: 'k'.repeat(MAX_NAME_LENGTH) },
      { id: 'neg', source: 'd1', ts: -MAX_ABS_TS, value: 0, seq: Number.MAX_SAFE_INTEGER },
      { id: 'empty-key', source: 'd1', ts: 0, value: -0, key: '', seq: 1 },
    ]
    expect(engine.ingest(edges)).toMatchObject({ accepted: 3, rejected: 0 })
  })
})

describe('duplicates', () => {
  it('the same (source, seq), or (source, id) without seq, counts once, in the same and later batches', () => {
    const engine = createEngine({ windows: tumbling(10) })
    const first = engine.ingest([
      reading('d1', 1, 1, 5),
      { ...reading('d1', 1, 1, 5), id: 'another-id' }, // same (source, seq): a duplicate whatever its id
      reading('d2', undefined, 2, 7),
      reading('d2', undefined, 2, 7),
    ])
    expect(first).toMatchObject({ accepted: 2, duplicates: 2, rejected: 0, anomalies: [] })
    const again = engine.ingest([reading('d1', 1, 1, 5), reading('d2', undefined, 2, 7)])
    expect(again).toMatchObject({ accepted: 0, duplicates: 2, anomalies: [] })
    // One id with two seqs is two events; one seq from two sources is two events.
    const distinct = engine.ingest([{ ...reading('d1', 2, 3, 1), id: 'd1#1' }, reading('d3', 1, 4, 1)])
    expect(distinct).toMatchObject({ accepted: 2, duplicates: 0 })
    expect(engine.results()[0]).toMatchObject({ count: 4, sum: 14 })
    expect(engine.stats()).toMatchObject({ duplicates: 4, applied: 4, ingested: 8 })
    expect(engine.stats().anomalies.duplicate).toBe(4)
  })
})

describe('conflicting duplicates', () => {
  const reasons = (receipt: { anomalies: readonly { reason: string; index?: number }[] }) => receipt.anomalies.map((a) => `${a.index} ${a.reason}`)

  it('flags a copy whose ts differs from the one remembered, counts it once, and keeps the first delivery', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual() })
    engine.ingest([reading('d1', 1, 1, 5), reading('d1', 2, 2, 5), reading('d1', 4, 4, 5), reading('n', undefined, 3, 5)])
    const receipt = engine.ingest([
      reading('d1', 2, 7, 9), // the last seq of the gap-free prefix, another ts
      reading('d1', 4, 8, 9), // a seq above the gap, another ts
      { ...reading('n', undefined, 3, 5), ts: 6 }, // an id without seq, another ts
      reading('d1', 1, 9, 9), // inside the prefix, later than all of it
      reading('d1', 1, 1, 9), // same ts, another value: cannot be told apart
      { ...reading('d1', 4, 4, 5), key: 'other' }, // same ts, another key: cannot be told apart
    ])
    expect(receipt).toMatchObject({ accepted: 0, duplicates: 6, rejected: 0 })
    expect(reasons(receipt)).toEqual(['0 conflicting_duplicate', '1 conflicting_duplicate', '2 conflicting_duplicate', '3 conflicting_duplicate'])
    expect(receipt.anomalies[0]).toEqual({
      reason: 'conflicting_duplicate',
      index: 0,
      id: 'd1#2',
      source: 'd1',
      detail: "seq 2 of source 'd1' was first taken with ts 2; this copy has ts 7 (the first delivery wins)",
    })
    expect(receipt.anomalies[2]?.detail).toBe("id 'n@3' of source 'n' was first taken with ts 3; this copy has ts 6 (the first delivery wins)")
    expect(engine.stats()).toMatchObject({ duplicates: 6, anomalies: { duplicate: 6, conflicting_duplicate: 4 } })
    expect(engine.results({ window: 'tumbling:10' })).toMatchObject([{ count: 4, sum: 20 }])
  })

  it('cannot tell a copy inside the prefix with an earlier ts, nor one whose first delivery left dedup memory', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual() })
    engine.ingest([reading('d1', 1, 1, 5), reading('d1', 2, 5, 5), reading('d1', 3, 9, 5)])
    expect(engine.ingest([reading('d1', 1, 2, 5)]).anomalies).toEqual([])
    // 5,000 seqs above a gap, released behind the horizon: a copy of one is no duplicate any more but beyond lateness.
    engine.ingest(Array.from({ length: 5000 }, (_, i) => reading('g', i + 2, i, 1)))
    engine.advanceWatermark(1_000_000)
    engine.ingest(Array.from({ length: 5000 }, (_, i) => reading('h', i + 2, 2_000_000, 1)))
    expect(engine.ingest([reading('g', 2, 77, 1)])).toMatchObject({ duplicates: 0, beyondLateness: 1, anomalies: [] })
  })

  it('is reported by an ordered stream too, and by orderEvents for the copy it drops', () => {
    const stream = createOrderedStream({ watermark: manual() })
    stream.push([reading('d1', 1, 1, 5)])
    const receipt = stream.push([reading('d1', 1, 2, 5), reading('d1', 1, 1, 6)])
    expect(receipt).toMatchObject({ duplicates: 2, rejected: 0 })
    expect(reasons(receipt)).toEqual(['0 conflicting_duplicate'])
    expect(stream.stats().anomalies).toMatchObject({ duplicate: 2, conflicting_duplicate: 1 })
    const { anomalies } = orderEvents([reading('d1', 1, 1, 5), reading('d1', 1, 2, 5), reading('d1', 1, 1, 6)])
    expect(reasons({ anomalies })).toEqual(['1 conflicting_duplicate', '2 duplicate'])
  })

  it('comes back with a checkpoint and with a replayed log', () => {
    const options = { windows: tumbling(10), watermark: manual(), replicaId: 'r' }
    const { engine, ops } = loggedEngine(options)
    engine.ingest([reading('d1', 1, 1, 5), reading('d1', 3, 3, 5)])
    const checkpoint = structuredClone(engine.checkpoint())
    engine.ingest([reading('d1', 3, 4, 5), reading('d1', 1, 8, 5)])
    const replayed = new TidemarkEngine(options)
    for (const op of ops) replayed.replay(op)
    const restored = new TidemarkEngine(options)
    restored.restore(checkpoint)
    expect(restored.ingest([reading('d1', 3, 4, 5)]).anomalies.map((a) => a.reason)).toEqual(['conflicting_duplicate'])
    expect(replayed.stats().anomalies).toEqual(engine.stats().anomalies)
    expect(engine.stats().anomalies.conflicting_duplicate).toBe(2)
  })
})

describe('every ingest-reachable reason', () => {
  it('each reason outside replication and storage has a test here', () => {
    const replicationOnly: AnomalyReason[] = ['invalid_remote_cell', 'source_conflict', 'corrupt_record']
    const covered = new Set<AnomalyReason>([
      ...INVALID.map(([, , r]) => r),
      'duplicate',
      'conflicting_duplicate',
      'beyond_lateness',
      'overflow',
      'future_ts',
      'invalid_aggregate_input',
      // finishedSources.test.ts
      'finished_source',
    ])
    expect(ANOMALY_REASONS.filter((r) => !replicationOnly.includes(r) && !covered.has(r))).toEqual([])
  })

  it('invalid_aggregate_input: an aggregate whose of throws or gives NaN refuses the event, naming the aggregate, and leaves no trace', () => {
    const engine = createEngine({
      windows: tumbling(10),
      watermark: manual(),
      aggregates: {
        p: quantiles({ at: [0.5], of: (e) => (e.value === 13 ? Number.NaN : e.value) }),
        who: distinct({
          of: (e) => {
            if (e.value === 7) throw new Error('no identity for 7')
            return e.source
          },
        }),
      },
    })
    const receipt = engine.ingest([reading('d1', 1, 1, 5), reading('d1', 2, 2, 13), reading('d1', 3, 3, 7)])
    expect(receipt).toMatchObject({ accepted: 1, rejected: 2 })
    expect(receipt.anomalies).toEqual([
      { reason: 'invalid_aggregate_input', index: 1, id: 'd1#2', source: 'd1', detail: 'aggregate "p" (quantiles): expected a finite number, got NaN' },
      { reason: 'invalid_aggregate_input', index: 2, id: 'd1#3', source: 'd1', detail: 'aggregate "who" (distinct): threw no identity for 7' },
    ])
    expect(engine.stats().anomalies.invalid_aggregate_input).toBe(2)
    // Refused events take no seq: the producer sends them again (fixed) under the same numbers.
    expect(engine.nextSeq('d1')).toBe(2)
    engine.advanceWatermark(10)
    expect(engine.results()[0]).toMatchObject({ count: 1, aggregates: { p: [5], who: 1 } })
  })

  it('invalid_aggregate_input: an aggregate sees the six fields the log keeps, so one reading another field refuses the event live, as replay would', () => {
    const options = {
      windows: tumbling(10),
      watermark: manual(),
      replicaId: 'r',
      // Reads a field the event type does not have (a cast away): the log never keeps it.
      aggregates: { users: distinct({ of: (e) => (e as unknown as { user: string }).user }) },
    }
    const seen: string[][] = []
    const of = (e: StreamEvent): string => {
      seen.push(Object.keys(e))
      return e.source
    }
    const spy = { ...options, aggregates: { users: distinct({ of }) } }
    createEngine(spy).ingest([{ ...reading('d1', 1, 1, 5), key: 'k', user: 'ann' } as StreamEvent])
    expect(seen).toEqual([['id', 'source', 'ts', 'value', 'seq', 'key']])

    const { engine, ops } = loggedEngine(options)
    const receipt = engine.ingest([{ ...reading('d1', 1, 1, 5), user: 'ann' } as StreamEvent, reading('d1', 2, 2, 6)])
    expect(receipt).toMatchObject({ accepted: 0, rejected: 2 })
    expect(receipt.anomalies[0]).toMatchObject({ reason: 'invalid_aggregate_input', detail: 'aggregate "users" (distinct): expected a string or a finite number, got undefined' })
    // What the log holds gives the same engine again: nothing was counted live that replay cannot count.
    const replayed = new TidemarkEngine(options)
    for (const op of ops) replayed.replay(op)
    // (Only the live engine has a log.)
    expect({ ...replayed.stats(), walRecords: ops.length }).toEqual(engine.stats())
    expect(replayed.results()).toEqual(engine.results())
  })

  it('beyond_lateness is counted and the event kept on the late lane', () => {
    const engine = createEngine({ windows: tumbling(10) })
    engine.ingest([reading('d1', undefined, 20, 1)])
    const receipt = engine.ingest([reading('d1', undefined, 3, 1)])
    expect(receipt).toMatchObject({ beyondLateness: 1, rejected: 0, anomalies: [] })
    expect(engine.stats().anomalies.beyond_lateness).toBe(1)
    expect(engine.lateEvents()).toStrictEqual([{ event: reading('d1', undefined, 3, 1), window: 'tumbling:10', reason: 'beyond_lateness' }])
    const late = engine.lateEvents()[0] as LateEvent
    expect(Object.getPrototypeOf(late)).toBe(Object.prototype)
    expect(Object.getPrototypeOf(late.event)).toBe(Object.prototype)
    expect(JSON.stringify(late)).toBe('{"event":{"id":"d1@3","source":"d1","ts":3,"value":1},"window":"tumbling:10","reason":"beyond_lateness"}')
  })
})

describe('future_ts: events stamped too far ahead of the clock', () => {
  const DAY = 86_400_000

  it('refuses an event more than maxFutureSkew ahead of now, with the event, and moves nothing', () => {
    const clock = { now: 1_000 }
    const engine = createEngine({ windows: tumbling(10), now: () => clock.now })
    engine.ingest([reading('d1', 1, 500, 1)])
    const ahead = { ...reading('d1', 2, 1_000 + DAY + 1, 7), key: 'temp' }
    const receipt = engine.ingest([ahead, reading('d2', 1, 600, 2), { ...reading('d2', 2, 1_000 + DAY, 3) }])
    // Exactly maxFutureSkew ahead is still accepted.
    expect(receipt).toMatchObject({ accepted: 2, rejected: 1, duplicates: 0, beyondLateness: 0 })
    expect(receipt.anomalies).toEqual([
      {
        reason: 'future_ts',
        index: 0,
        id: 'd1#2',
        source: 'd1',
        detail: `ts ${1_000 + DAY + 1} is ${DAY + 1} ms ahead of now (1000); maxFutureSkew is ${DAY} ms`,
        event: ahead,
      },
    ])
    const stats = engine.stats()
    expect(stats.anomalies.future_ts).toBe(1)
    expect(stats.futureSources).toEqual([{ source: 'd1', count: 1, lastTs: 1_000 + DAY + 1 }])
    // Its clock did not move: the watermark follows d1's own 500, and seq 2 is still free.
    expect(engine.watermark()).toBe(500)
    expect(engine.nextSeq('d1')).toBe(2)
    expect(stats.dedupEntries).toBe(0)
    // Once the clock has caught up, the same event is taken.
    clock.now = 2 + DAY
    expect(engine.ingest([ahead])).toMatchObject({ accepted: 1, rejected: 0 })
  })

  it('names at most 20 sources, the least recently seen leaving first, with their counts', () => {
    const engine = createEngine({ windows: tumbling(10), now: () => 0, maxFutureSkew: 0 })
    for (let i = 0; i < 25; i++) engine.ingest([reading(`s${i}`, undefined, 10 + i, 1), reading(`s${i}`, undefined, 20 + i, 1)])
    engine.ingest([reading('s7', undefined, 99, 1)])
    const named = engine.stats().futureSources
    // s0..s4 left when s20..s24 came; s7, seen again, is now the most recent.
    const kept = Array.from({ length: 20 }, (_, i) => `s${i + 5}`).filter((s) => s !== 's7')
    expect(named.map((f) => f.source)).toEqual([...kept, 's7'])
    expect(named.at(-1)).toEqual({ source: 's7', count: 3, lastTs: 99 })
    expect(engine.stats().anomalies.future_ts).toBe(51)
  })

  it('names at most 20 after restoring a hand-made checkpoint that lists more: the most recent', () => {
    const engine = new TidemarkEngine({ windows: tumbling(10), now: () => 0, replicaId: 'r' })
    const listed = Array.from({ length: 30 }, (_, i) => ({ source: `s${i}`, count: 1, lastTs: i }))
    const restored = new TidemarkEngine({ windows: tumbling(10), now: () => 0, replicaId: 'r' })
    restored.restore({ ...engine.checkpoint(), futureSources: listed })
    expect(restored.stats().futureSources).toEqual(listed.slice(10))
  })

  it('comes back the same from a replayed log: the logged events are refused again at their batch’s now', () => {
    const clock = { now: 1_000 }
    const options = { windows: tumbling(10), watermark: manual(), replicaId: 'r', now: () => clock.now, maxFutureSkew: 100 }
    const { engine, ops } = loggedEngine(options)
    engine.ingest([reading('d1', 1, 1_050, 1), reading('d2', 1, 1_200, 2), { id: 'x', source: 'd1', ts: Number.NaN, value: 1 }])
    clock.now = 5_000
    engine.ingest([reading('d2', 1, 1_200, 2)])
    // Replayed with a clock that reads nonsense: each batch is judged at its logged now.
    clock.now = Number.NaN
    const replayed = new TidemarkEngine(options)
    for (const op of ops) replayed.replay(op)
    expect(replayed.stats().anomalies).toEqual(engine.stats().anomalies)
    expect(replayed.stats().futureSources).toEqual([{ source: 'd2', count: 1, lastTs: 1_200 }])
    expect(replayed.stats().ingested).toBe(4)
    expect(replayed.results()).toEqual(engine.results())
    expect(replayed.nextSeq('d2')).toBe(2)
  })

  it('is off with Infinity, and refuses only what is ahead with 0', () => {
    const off = createEngine({ windows: tumbling(10), now: () => 0, maxFutureSkew: Number.POSITIVE_INFINITY })
    expect(off.ingest([reading('d1', 1, 1e12, 1)])).toMatchObject({ accepted: 1 })
    const strict = createEngine({ windows: tumbling(10), now: () => 50, maxFutureSkew: 0 })
    expect(strict.ingest([reading('d1', 1, 50, 1), reading('d1', 2, 51, 1)])).toMatchObject({ accepted: 1, rejected: 1 })
  })
})

describe('bounded buffers refuse with overflow', () => {
  it('maxWindows: an event needing a new window is refused, one for an open window is not', () => {
    const engine = createEngine({ windows: tumbling(10), limits: { maxWindows: 2 } })
    const receipt = engine.ingest([reading('d1', 1, 0, 1), reading('d1', 2, 10, 1), reading('d1', 3, 20, 1), reading('d1', 4, 5, 1)])
    expect(receipt).toMatchObject({ accepted: 3, rejected: 1 })
    expect(receipt.anomalies).toEqual([expect.objectContaining({ reason: 'overflow', index: 2, id: 'd1#3' })])
    expect(engine.stats()).toMatchObject({ openWindows: 2 })
    expect(engine.stats().anomalies.overflow).toBe(1)
  })

  it('maxDedupEntries: seq-less ids fill it, in-order seqs never do', () => {
    const engine = createEngine({ windows: tumbling(10), limits: { maxDedupEntries: 2 } })
    const receipt = engine.ingest([
      reading('ids', undefined, 1, 1),
      reading('ids', undefined, 2, 1),
      reading('ids', undefined, 3, 1),
      ...[1, 2, 3, 4, 5].map((s) => reading('seqs', s, s, 1)),
    ])
    expect(receipt).toMatchObject({ accepted: 7, rejected: 1 })
    expect(receipt.anomalies).toEqual([expect.objectContaining({ reason: 'overflow', index: 2 })])
    expect(engine.stats().dedupEntries).toBe(2)
  })

  it('maxSources: a new source is refused, a known one is not', () => {
    const engine = createEngine({ windows: tumbling(10), limits: { maxSources: 1 } })
    const receipt = engine.ingest([reading('d1', 1, 1, 1), reading('d2', 1, 1, 1), reading('d1', 2, 2, 1)])
    expect(receipt).toMatchObject({ accepted: 2, rejected: 1 })
    expect(receipt.anomalies).toEqual([expect.objectContaining({ reason: 'overflow', index: 1, source: 'd2' })])
    expect(engine.stats().sources).toBe(1)
  })

  it('maxBatch: a batch over the bound is refused whole, and the next one is taken', () => {
    const engine = createEngine({ windows: tumbling(10), limits: { maxBatch: 2 } })
    const receipt = engine.ingest([reading('d1', 1, 1, 1), reading('d1', 2, 2, 1), reading('d1', 3, 3, 1)])
    expect(receipt).toMatchObject({ accepted: 0, rejected: 3 })
    expect(receipt.anomalies.map((a) => [a.reason, a.index])).toEqual([
      ['overflow', 0],
      ['overflow', 1],
      ['overflow', 2],
    ])
    expect(engine.stats()).toMatchObject({ ingested: 3, applied: 0 })
    expect(engine.ingest([reading('d1', 1, 1, 1), reading('d1', 2, 2, 1)]).accepted).toBe(2)
  })

  it('maxLateEvents: the late lane keeps the newest entries and counts what it trimmed', () => {
    const engine = createEngine({ windows: tumbling(10), limits: { maxLateEvents: 2 } })
    engine.ingest([reading('d1', undefined, 100, 1)])
    const receipt = engine.ingest([1, 2, 3].map((ts) => reading('d1', undefined, ts, 1)))
    expect(receipt.beyondLateness).toBe(3)
    expect(engine.lateEvents().map((l) => l.event.ts)).toEqual([2, 3])
    expect(engine.stats()).toMatchObject({ lateLane: 2, lateLaneTrimmed: 1, beyondLateness: 3 })
  })
})

describe('hostile names', () => {
  const NAMES = ['__proto__', 'constructor', 'hasOwnProperty', 'toString'] as const

  it('__proto__, constructor, hasOwnProperty and toString work as key, source and id everywhere', () => {
    const prototypeBefore = Object.getOwnPropertyNames(Object.prototype).sort()
    const engine = createEngine({ windows: [tumbling(10), sliding(20, 10), session(5)], watermark: manual() })
    const events = NAMES.flatMap((name) => [
      { id: name, source: name, ts: 1, key: name, value: 2 },
      { id: `${name}-seq`, source: `${name}-seq`, seq: 1, ts: 2, key: name, value: 3 },
    ])
    expect(engine.ingest(events)).toMatchObject({ accepted: 8, rejected: 0 })
    // Copies: by id for the seq-less sources, by seq for the others.
    expect(engine.ingest(events.map((e) => ({ ...e, value: 99 })))).toMatchObject({ accepted: 0, duplicates: 8 })

    for (const name of NAMES) {
      const mine = engine.results({ key: name })
      expect(mine.map((r) => [r.window, r.start, r.count, r.sum])).toEqual([
        ['session:5', 1, 2, 5],
        ['sliding:20:10', -10, 2, 5],
        ['sliding:20:10', 0, 2, 5],
        ['tumbling:10', 0, 2, 5],
      ])
      expect(engine.history('tumbling:10', name, 0)).toEqual([])
    }
    engine.advanceWatermark(100)
    engine.ingest([{ id: 'hasOwnProperty', source: 'toString', ts: 0, key: '__proto__', value: 1 }])
    expect(engine.lateEvents().map((l) => [l.event.key, l.window])).toEqual([
      ['__proto__', 'tumbling:10'],
      ['__proto__', 'sliding:20:10'],
      ['__proto__', 'session:5'],
    ])
    expect(engine.results({ key: '__proto__', window: 'tumbling:10' })[0]).toMatchObject({ count: 2, status: 'on_time' })
    expect(engine.stats().sources).toBe(8)
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeBefore)
    expect(Object.keys(engine.stats().anomalies).sort()).toEqual([...ANOMALY_REASONS].sort())
  })
})

describe('dedup memory', () => {
  it('is released behind the lateness horizon, and a re-sent old event is not counted twice', () => {
    const engine = createEngine({ windows: tumbling(10), limits: { maxDedupEntries: 4 } })
    engine.ingest([reading('a', undefined, 0, 1), reading('a', undefined, 1, 1), reading('a', undefined, 2, 1)])
    engine.ingest([reading('a', undefined, 100, 1)])
    expect(engine.stats().dedupEntries).toBe(4)
    // Full: the next id forces a purge of ids behind W - allowedLateness - size = 90.
    expect(engine.ingest([reading('a', undefined, 105, 1)]).accepted).toBe(1)
    expect(engine.stats().dedupEntries).toBe(2)

    const resent = engine.ingest([reading('a', undefined, 0, 1)])
    expect(resent).toMatchObject({ accepted: 0, beyondLateness: 1 })
    expect(engine.results({ from: 0, to: 1 })[0]?.count).toBe(3)
    expect(engine.stats().applied).toBe(5)
    // What lies inside the horizon is still remembered.
    expect(engine.ingest([reading('a', undefined, 100, 1)]).duplicates).toBe(1)
  })

  it('seqs held above a gap are released once the gap fills', () => {
    const engine = createEngine({ windows: tumbling(10) })
    engine.ingest([reading('s', 1, 0, 1), reading('s', 3, 2, 1), reading('s', 4, 3, 1)])
    expect(engine.stats().dedupEntries).toBe(2)
    engine.ingest([reading('s', 2, 1, 1)])
    expect(engine.stats().dedupEntries).toBe(0)
    expect(engine.ingest([reading('s', 3, 2, 1), reading('s', 1, 0, 1)]).duplicates).toBe(2)
  })
})
