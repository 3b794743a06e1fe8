/**
 * What the engine's README promises and no topical test pins: the defaults of its options table,
 * the window spec rules, `windowStart` for cumulating specs, and the engine after `close()`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { afterProcessingTime, createEngine, cumulating, type EngineOptions, latest, manual, never, session, sliding, tickWhenDue, tumbling, windowStart } from '../src/index.ts'
import { createOrderedStream } from '../src/ordered.ts'
import { reading } from '../src/testing/index.ts'
import * as adapterEntry from '../src/adapter.ts'
import * as mainEntry from '../src/index.ts'
import * as orderedEntry from '../src/ordered.ts'
import * as testingEntry from '../src/testing/index.ts'

describe('options defaults (README, Options)', () => {
  it('retention defaults to 60000: a final window stays in results() for 60 s of event time, then leaves', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), now: () => 0 })
    engine.ingest([reading('d1', 1, 5, 1)])
    engine.advanceWatermark(10)
    expect(engine.results()).toMatchObject([{ start: 0, status: 'on_time', final: true }])
    engine.advanceWatermark(10 + 60_000 - 1)
    expect(engine.results()).toHaveLength(1)
    engine.advanceWatermark(10 + 60_000)
    expect(engine.results()).toEqual([])
  })

  it('allowedLateness defaults to 0: a window is final when it fires, and a later event for it is beyond lateness', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), now: () => 0 })
    engine.ingest([reading('d1', 1, 5, 1)])
    engine.advanceWatermark(10)
    expect(engine.results()).toMatchObject([{ status: 'on_time', final: true }])
    expect(engine.ingest([reading('d1', 2, 6, 1)])).toMatchObject({ accepted: 0, beyondLateness: 1 })
  })

  it('watermark defaults to boundedOutOfOrderness(0): W is the newest ts of the slowest source', () => {
    const engine = createEngine({ windows: tumbling(10), now: () => 0 })
    engine.ingest([reading('d1', 1, 25, 1), reading('d2', 1, 17, 1)])
    expect(engine.watermark()).toBe(17)
  })

  it('idleTimeout defaults to Infinity: a silent source never turns idle and holds W', () => {
    let now = 0
    const engine = createEngine({ windows: tumbling(10), now: () => now })
    engine.ingest([reading('d1', 1, 25, 1), reading('d2', 1, 17, 1)])
    expect(engine.nextTickAt()).toBe(Number.POSITIVE_INFINITY)
    now = 1e12
    engine.ingest([reading('d1', 2, 90, 1)])
    engine.tick()
    expect(engine.watermark()).toBe(17)
    expect(engine.stats().idleSources).toBe(0)
  })

  afterEach(() => {
    vi.unstubAllGlobals()
  })

  it('replicaId defaults to another random id where crypto.randomUUID is missing (an insecure origin)', () => {
    vi.stubGlobal('crypto', {})
    const [a, b] = [createEngine({ windows: tumbling(10) }), createEngine({ windows: tumbling(10) })]
    expect(a.replica.replicaId).toMatch(/^r-[0-9a-z]+$/)
    expect(a.replica.replicaId.length).toBeLessThanOrEqual(128)
    expect(a.replica.replicaId).not.toBe(b.replica.replicaId)
  })

  it('replicaId defaults to a random UUID, another per engine', () => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
    const [a, b] = [createEngine({ windows: tumbling(10) }), createEngine({ windows: tumbling(10) })]
    expect(a.replica.replicaId).toMatch(uuid)
    expect(b.replica.replicaId).toMatch(uuid)
    expect(a.replica.replicaId).not.toBe(b.replica.replicaId)
    expect(() => createEngine({ windows: tumbling(10), replicaId: '' })).toThrow(/replicaId/)
    expect(createEngine({ windows: tumbling(10), replicaId: 'r'.repeat(128) }).replica.replicaId).toBe('r'.repeat(128))
  })
})

describe('window specs (README, Options: windows)', () => {
  it('sliding: size a multiple of slide, at most 1,000 slides per window', () => {
    expect(() => sliding(100, 30)).toThrow('sliding size 100 must be a multiple of slide 30')
    expect(() => sliding(10_010, 10)).toThrow('sliding size/slide must be at most 1000, got 1001')
    expect(sliding(10_000, 10).id).toBe('sliding:10000:10')
  })

  it('sizes, slides, steps and gaps are positive integers of ms', () => {
    for (const make of [() => tumbling(0), () => tumbling(1.5), () => sliding(10, 0), () => sliding(-10, 5), () => cumulating(10, 2.5), () => session(0), () => session(Number.NaN)]) {
      expect(make).toThrow(/must be a positive integer of ms/)
    }
  })

  it('windowStart gives a cumulating spec its period start, epoch-aligned', () => {
    const day = cumulating(86_400_000, 3_600_000)
    expect(windowStart(day, Date.parse('2026-01-01T10:15:42Z'))).toBe(Date.parse('2026-01-01T00:00:00Z'))
    expect(windowStart(cumulating(100, 10), 250)).toBe(200)
    expect(windowStart(cumulating(100, 10), -1)).toBe(-100)
  })
})

describe('close() (README, The engine)', () => {
  it('then ingest, advanceWatermark, finishSource, tick and nextTickAt throw engine is closed; the reads answer from the state it closed with; another close() resolves', async () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual(), allowedLateness: 100, now: () => 0 })
    engine.ingest([reading('d1', 1, 5, 1), reading('d1', 2, 12, 2)])
    engine.advanceWatermark(10)
    await engine.finishSource('d1')
    // Everything a closed engine still answers.
    const reads = () => ({
      results: engine.results(),
      history: engine.history('tumbling:10', engine.results()[0]?.key ?? '', 0),
      watermark: engine.watermark(),
      lateEvents: engine.lateEvents(),
      nextSeq: engine.nextSeq('d1'),
      isFinished: engine.isFinished('d1'),
      syncStatus: engine.syncStatus(),
    })
    const before = reads()
    await engine.close()
    expect(() => engine.ingest([reading('d2', 1, 5, 1)])).toThrow('engine is closed')
    expect(() => engine.advanceWatermark(50)).toThrow('engine is closed')
    expect(() => engine.finishSource('d2')).toThrow('engine is closed')
    expect(() => engine.tick()).toThrow('engine is closed')
    expect(() => engine.nextTickAt()).toThrow('engine is closed')
    expect(reads()).toEqual(before)
    expect(before.results).toHaveLength(2)
    expect(before.history).toHaveLength(1)
    expect(engine.stats().applied).toBe(2)
    await expect(engine.close()).resolves.toBeUndefined()
  })
})

describe('history (README, The engine)', () => {
  it('end names one window of a cumulating spec, whose windows share their start', () => {
    const spec = cumulating(30, 10)
    const engine = createEngine({ windows: spec, watermark: manual(), allowedLateness: 100, now: () => 0 })
    engine.ingest([reading('d1', 1, 5, 1), reading('d1', 2, 15, 2)])
    engine.advanceWatermark(30)
    expect(engine.history(spec.id, '', 0, 10).map((r) => [r.end, r.sum])).toEqual([[10, 1]])
    expect(engine.history(spec.id, '', 0, 20).map((r) => [r.end, r.sum])).toEqual([[20, 3]])
    engine.ingest([reading('d1', 3, 25, 4)])
    expect(engine.history(spec.id, '', 0, 30).map((r) => [r.end, r.sum, r.status])).toEqual([
      [30, 3, 'on_time'],
      [30, 7, 'corrected'],
    ])
  })
})

describe('ordered stream defaults (README, Ordered event stream)', () => {
  it('batchSize defaults to 1,000 and onLate to emit_correction', () => {
    const stream = createOrderedStream({ watermark: manual(), allowedLateness: 100, now: () => 0 })
    stream.push(Array.from({ length: 2_500 }, (_, i) => ({ id: `a${i}`, source: 'a', seq: i + 1, ts: i, value: 1 })))
    stream.advanceWatermark(2_500)
    expect(stream.flushReady().map((batch) => [batch.kind, batch.events.length])).toEqual([
      ['ready', 1_000],
      ['ready', 1_000],
      ['ready', 500],
    ])
    stream.push([{ id: 'late', source: 'b', ts: 2_450, value: 1 }])
    expect(stream.flushReady().map((batch) => [batch.kind, batch.events.map((e) => e.id)])).toEqual([['correction', ['late']]])
  })
})

describe('the configuration (recipe: changing the configuration)', () => {
  it('is the window specs, the allowed lateness and the aggregates; every other option is the replica’s own choice', () => {
    const base = { windows: [tumbling(10), sliding(20, 5)], allowedLateness: 100 }
    const configuration = (options: EngineOptions) => createEngine(options).replica.configuration
    const shared = configuration(base)
    const local: Partial<EngineOptions>[] = [
      { watermark: manual() },
      { idleTimeout: 5 },
      { retention: 0 },
      { limits: { maxWindows: 5, maxLateEvents: 0 } },
      { trigger: { early: never(), late: afterProcessingTime(5) } },
      { accumulation: 'discarding' },
      { maxFutureSkew: 0 },
      { replicaId: 'other' },
      { now: () => 5 },
      { windows: [sliding(20, 5), tumbling(10)] },
    ]
    for (const option of local) expect(configuration({ ...base, ...option }), JSON.stringify(Object.keys(option))).toBe(shared)
    const other: Partial<EngineOptions>[] = [{ windows: tumbling(10) }, { allowedLateness: 101 }, { aggregates: { last: latest() } }]
    for (const option of other) expect(configuration({ ...base, ...option }), JSON.stringify(Object.keys(option))).not.toBe(shared)
  })
})

describe('aggregates (README, Aggregates)', () => {
  it('without the option, results have no aggregates field', () => {
    const engine = createEngine({ windows: tumbling(10), now: () => 0 })
    engine.ingest([reading('d1', 1, 5, 1)])
    expect(engine.results()).toHaveLength(1)
    expect('aggregates' in (engine.results()[0] as object)).toBe(false)
  })
})

describe('stats() (README, The engine)', () => {
  it('has the counters, gauges and frontiers the README lists, and no others', () => {
    const listed = [
      ...['ingested', 'applied', 'duplicates', 'anomalies', 'lateAdmitted', 'beyondLateness', 'corrections', 'finalityViolations'],
      ...['pending', 'openWindows', 'cells', 'sources', 'finishedSources', 'idleSources', 'dedupEntries', 'lateLane', 'lateLaneTrimmed', 'timers'],
      ...['watermark', 'proofFrontier', 'watermarkLag', 'proofHeldBy', 'watermarkHeldBy', 'futureSources'],
      ...['docBytes', 'walRecords', 'walBytes', 'persistenceError', 'replicationError', 'remoteAnomalies'],
    ]
    expect(Object.keys(createEngine({ windows: tumbling(10) }).stats()).sort()).toEqual(listed.sort())
  })

  it('pending sums the counts of the windows not fired yet: an event in several of them counts in each', () => {
    const engine = createEngine({ windows: [tumbling(10), sliding(20, 10)], watermark: manual(), now: () => 0 })
    engine.ingest([reading('d1', 1, 15, 1), reading('d1', 2, 16, 1)])
    // [10, 20) tumbling, [0, 20) and [10, 30) sliding: 3 windows of 2 events.
    expect(engine.stats()).toMatchObject({ pending: 6, openWindows: 3 })
    engine.advanceWatermark(20)
    expect(engine.stats().pending).toBe(2)
  })
})

describe('entries (README, Entries)', () => {
  it('each entry exports what the README lists for it', () => {
    const listed: [Record<string, unknown>, string[]][] = [
      [
        mainEntry,
        [
          ...['createEngine', 'tumbling', 'sliding', 'cumulating', 'session', 'windowStart', 'boundedOutOfOrderness', 'manual', 'tickWhenDue'],
          ...['everyElement', 'afterProcessingTime', 'alignedProcessingTime', 'never', 'OverflowError', 'isOverflowError'],
          ...['quantiles', 'distinct', 'latest', 'histogram', 'defineAggregate'],
          ...['EngineFeed', 'EngineObserver', 'createFrameScheduler', 'createManualScheduler', 'shallowEqual'],
          ...['windowsSlice', 'windowSlice', 'windowHistorySlice', 'lateEventsSlice', 'statsSlice', 'syncStatusSlice', 'watermarkSlice'],
          ...['emptyCell', 'addToCell', 'mergeCell', 'compareCells', 'mergeCellMaps', 'cellKey', 'parseCellKey', 'packCellGroup', 'groupCell', 'groupCellEntries'],
        ],
      ],
      [orderedEntry, ['createOrderedStream', 'orderEvents', 'compareEventOrder']],
      [adapterEntry, ['encodeAggregateColumn', 'readAggregateColumn']],
      [testingEntry, ['fakeClock', 'reading', 'recordChanges', 'brief', 'FakeEngine', 'visibleState', 'whenDurable', 'createPerWindowEngine']],
    ]
    for (const [entry, names] of listed) expect(names.filter((name) => entry[name] === undefined)).toEqual([])
  })
})

describe('tickWhenDue defaults (README, The engine)', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('arms the global timers, unref’d so that they do not hold a Node process open', () => {
    const unref = vi.fn()
    const armed: number[] = []
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((_run: () => void, ms: number) => {
      armed.push(ms)
      return { unref } as unknown as ReturnType<typeof setTimeout>
    }) as typeof setTimeout)
    vi.spyOn(globalThis, 'clearTimeout').mockImplementation(() => {})
    const engine = createEngine({ windows: tumbling(10), idleTimeout: 5_000 })
    const stop = tickWhenDue(engine)
    engine.ingest([reading('d1', 1, Date.now(), 1)])
    stop()
    expect(armed.length).toBeGreaterThan(0)
    expect(armed.at(-1)).toBeGreaterThan(4_000)
    expect(unref).toHaveBeenCalledTimes(armed.length)
  })
})
