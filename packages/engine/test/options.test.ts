/**
 * Options are checked, never ignored: an unknown key is named with the closest known one, a
 * value that would make the engine useless (a number as watermark, a zero limit) is refused,
 * and what a message says is allowed is allowed.
 */
import { describe, expect, it } from 'vitest'
import {
  afterProcessingTime,
  alignedProcessingTime,
  boundedOutOfOrderness,
  createEngine,
  cumulating,
  type EngineOptions,
  everyElement,
  manual,
  never,
  sliding,
  tumbling,
} from '../src/index.ts'
import { createOrderedStream, orderEvents, type OrderedStreamOptions } from '../src/ordered.ts'
import { closestName } from '../src/adapter.ts'

const windows = tumbling(10)
const engineWith = (extra: Record<string, unknown>) => () => createEngine({ windows, ...extra } as EngineOptions)
const streamWith = (extra: Record<string, unknown>) => () => createOrderedStream(extra as OrderedStreamOptions)

describe('createEngine options', () => {
  it('refuses an unknown key, naming it and the closest known one', () => {
    expect(engineWith({ allowedLatness: 5_000 })).toThrow(new TypeError("createEngine: unknown option 'allowedLatness' (did you mean 'allowedLateness'?)"))
    expect(engineWith({ watermarks: manual() })).toThrow(/unknown option 'watermarks' \(did you mean 'watermark'\?\)/)
    expect(engineWith({ limits: { maxBatches: 5 } })).toThrow(/createEngine: limits: unknown option 'maxBatches' \(did you mean 'maxBatch'\?\)/)
    // Nothing close: the known keys are listed.
    expect(engineWith({ colour: 'blue' })).toThrow(/unknown option 'colour'; known options: windows, watermark, idleTimeout/)
  })

  it('says where an option moved', () => {
    expect(engineWith({ doc: {} })).toThrow(/option 'doc' is not taken here; bind a Y.Doc with bindDoc\(engine, doc\)/)
  })

  it('refuses a watermark that is not a strategy, saying how to write one', () => {
    expect(engineWith({ watermark: 5000 })).toThrow(
      new TypeError(
        'watermark must be a strategy made by boundedOutOfOrderness(ms) or manual(), got the number 5000; for events up to 5000 ms out of order write watermark: boundedOutOfOrderness(5000)',
      ),
    )
    expect(engineWith({ watermark: 'manual' })).toThrow(/watermark must be a strategy .* got the string 'manual'/)
    expect(engineWith({ watermark: manual })).toThrow(/got a function \(call it/)
    expect(engineWith({ watermark: { kind: 'bounded', outOfOrderness: -1 } })).toThrow(/watermark.outOfOrderness must be a finite number/)
    expect(() => createEngine({ windows, watermark: boundedOutOfOrderness(5) })).not.toThrow()
  })

  it('refuses limits that would refuse every input, and allows 0 late events', () => {
    expect(engineWith({ limits: { maxBatch: 0 } })).toThrow(new RangeError('limits.maxBatch must be an integer >= 1 (with 0 every batch would be refused), got 0'))
    for (const name of ['maxWindows', 'maxSources', 'maxDedupEntries']) expect(engineWith({ limits: { [name]: 0 } })).toThrow(`limits.${name} must be an integer >= 1`)
    expect(engineWith({ limits: { maxWindows: Number.POSITIVE_INFINITY } })).toThrow(RangeError)
    expect(engineWith({ limits: 5 })).toThrow(/limits must be an object/)
    const engine = createEngine({ windows, limits: { maxLateEvents: 0 }, watermark: manual() })
    engine.advanceWatermark(100)
    expect(engine.ingest([{ id: 'a', source: 'd1', ts: 1, value: 1 }]).beyondLateness).toBe(1)
    expect(engine.stats()).toMatchObject({ lateLane: 0, lateLaneTrimmed: 1 })
  })

  it('says the same thing about Infinity as it does: lateness must be finite, idle timeout and retention may be infinite', () => {
    const lateness = engineWith({ allowedLateness: -1 })
    expect(lateness).toThrow(/allowedLateness must be a finite number >= 0 of ms, got -1/)
    expect(engineWith({ allowedLateness: Number.POSITIVE_INFINITY })).toThrow(/allowedLateness must be a finite number >= 0 of ms, got Infinity: a window that never turns final/)
    expect(engineWith({ idleTimeout: -1 })).toThrow(/idleTimeout must be a number >= 0 \(Infinity: sources never turn idle\)/)
    expect(engineWith({ retention: Number.NaN })).toThrow(/retention must be a number >= 0 \(Infinity: final windows stay/)
    expect(engineWith({ idleTimeout: Number.POSITIVE_INFINITY, retention: Number.POSITIVE_INFINITY })).not.toThrow()
  })

  it('refuses window specs not made by the spec functions, and a clock that is not a function', () => {
    expect(() => createEngine({ windows: [tumbling(10), { kind: 'tumbling', id: 'minute', size: 60_000 }] } as EngineOptions)).toThrow(
      /options.windows\[1\] must be a window spec made by tumbling\(size\), sliding\(size, slide\), cumulating\(maxSize, step\) or session\(gap\)/,
    )
    expect(() => createEngine({ windows: 60_000 } as unknown as EngineOptions)).toThrow(/options.windows must be a window spec/)
    // A hole (which forEach skips) is refused by its index, not left for the engine to trip on.
    const holed = [tumbling(10), sliding(20, 5)]
    delete holed[1]
    expect(() => createEngine({ windows: holed })).toThrow(/options.windows\[1\] must be a window spec made by .* got undefined/)
    expect(engineWith({ now: 5 })).toThrow(/now must be a function/)
  })

  it('refuses a time from now() that is not a number, before the operation changes anything, and serves once it is one', async () => {
    const at = 1_700_000_000_000
    let reading: unknown = new Date(at)
    const engine = createEngine({ windows, now: () => reading as number, idleTimeout: 5, trigger: { early: afterProcessingTime(5) } })
    const event = { id: 'a', source: 'd1', seq: 1, ts: at, value: 1 }
    // `now: Date` (the constructor) returns a string; a Date added a skew or a delay as a string.
    for (const bad of [new Date(at), Date(), String(at), undefined, BigInt(at), null]) {
      reading = bad
      expect(() => engine.ingest([event, { ...event, id: 'b', seq: 2, ts: at + 1e11 }])).toThrow(
        new TypeError(`now must be a function returning processing time in ms, got one returning ${typeof bad === 'string' ? `the string '${bad}'` : String(bad)}`),
      )
      expect(() => engine.tick()).toThrow(/now must be a function returning processing time in ms, got one returning/)
      expect(() => engine.finishSource('d9')).toThrow(/now must be a function returning processing time in ms, got one returning/)
    }
    expect(engine.stats()).toMatchObject({ ingested: 0, sources: 0 })
    reading = at
    // The event a day and more ahead is refused as it is with a good clock; the other armed its trigger.
    const receipt = engine.ingest([event, { ...event, id: 'b', seq: 2, ts: at + 1e11 }])
    expect(receipt.anomalies.map((a) => a.reason)).toEqual(['future_ts'])
    expect(engine.nextTickAt()).toBe(at + 5)
    reading = at + 5
    engine.tick()
    expect(engine.results()).toMatchObject([{ count: 1, status: 'provisional' }])
    await engine.finishSource('d1')
    expect(engine.results()).toMatchObject([{ count: 1, status: 'on_time' }])
  })
})

describe('trigger, accumulation and maxFutureSkew', () => {
  it('take the triggers their functions make, and refuse anything else, naming the option', () => {
    expect(engineWith({ trigger: { early: afterProcessingTime(1_000), late: never() } })).not.toThrow()
    expect(engineWith({ trigger: { early: alignedProcessingTime(5_000, 1_000) } })).not.toThrow()
    expect(engineWith({ trigger: {} })).not.toThrow()
    expect(engineWith({ trigger: { eraly: never() } })).toThrow("createEngine: trigger: unknown option 'eraly' (did you mean 'early'?)")
    expect(engineWith({ trigger: { early: 'never' } })).toThrow(/trigger.early must be everyElement\(\), afterProcessingTime\(ms\), alignedProcessingTime\(periodMs, offsetMs\) or never\(\), got the string 'never'/)
    // A maker passed uncalled is named, not printed as its source code.
    expect(engineWith({ trigger: { early: never } })).toThrow(/trigger.early must be .* got a function \(call it\)$/)
    expect(() => createEngine({ windows: tumbling } as unknown as EngineOptions)).toThrow(/options.windows must be a window spec .* got a function \(call it\)$/)
    expect(engineWith({ trigger: { early: { kind: 'after_processing_time', delayMs: -5 } } })).toThrow(/trigger.early must be/)
    // Late panes have no aligned trigger.
    expect(engineWith({ trigger: { late: alignedProcessingTime(5_000) } })).toThrow(/trigger.late must be everyElement\(\), afterProcessingTime\(ms\) or never\(\)/)
    expect(engineWith({ trigger: everyElement() })).toThrow(/unknown option 'kind'/)
    expect(engineWith({ trigger: 5 })).toThrow(/trigger must be an object \{ early\?, late\? \}, got 5/)
    expect(() => afterProcessingTime(-1)).toThrow(/afterProcessingTime needs a finite number of ms >= 0, got -1/)
    expect(() => alignedProcessingTime(0)).toThrow(/alignedProcessingTime needs a period of ms > 0, got 0/)
    expect(() => alignedProcessingTime(1_000, 1_000)).toThrow(/offset in \[0, 1000\) ms, got 1000/)
  })

  it('accumulation is accumulating or discarding; maxFutureSkew a number >= 0 of ms, Infinity turning it off', () => {
    expect(engineWith({ accumulation: 'discarding' })).not.toThrow()
    expect(engineWith({ accumulation: 'retracting' })).toThrow("accumulation must be 'accumulating' or 'discarding', got the string 'retracting'")
    expect(engineWith({ maxFutureSkew: Number.POSITIVE_INFINITY })).not.toThrow()
    expect(engineWith({ maxFutureSkew: 0 })).not.toThrow()
    expect(engineWith({ maxFutureSkew: -1 })).toThrow(/maxFutureSkew must be a number >= 0 \(Infinity: no event is refused for being ahead of the clock\) of ms, got -1/)
    expect(engineWith({ maxFutureSkew: '1d' })).toThrow(/maxFutureSkew must be a number >= 0/)
  })

  it('cumulating windows: maxSize a multiple of step, at most 1,000 steps', () => {
    expect(cumulating(86_400_000, 3_600_000).id).toBe('cumulating:86400000:3600000')
    expect(() => cumulating(100, 30)).toThrow('cumulating maxSize 100 must be a multiple of step 30')
    expect(() => cumulating(100_000, 10)).toThrow('cumulating maxSize/step must be at most 1000, got 10000')
    expect(() => cumulating(0, 10)).toThrow(/cumulating maxSize must be a positive integer of ms, got 0/)
    expect(engineWith({ windows: { kind: 'cumulating', id: 'cumulating:100:10', size: 100, step: 30 } })).toThrow(/options.windows must be a window spec made by/)
  })
})

describe('createOrderedStream and orderEvents options', () => {
  it('refuse unknown keys, non-strategy watermarks and zero limits the same way', () => {
    expect(streamWith({ alowedLateness: 5 })).toThrow(/createOrderedStream: unknown option 'alowedLateness' \(did you mean 'allowedLateness'\?\)/)
    expect(streamWith({ watermark: 5000 })).toThrow(/write watermark: boundedOutOfOrderness\(5000\)/)
    expect(streamWith({ maxPending: 0 })).toThrow(/maxPending must be an integer >= 1/)
    expect(streamWith({ allowedLateness: Number.POSITIVE_INFINITY })).toThrow(/allowedLateness must be a finite number >= 0/)
    expect(streamWith({ maxLateEvents: 0, idleTimeout: Number.POSITIVE_INFINITY })).not.toThrow()
    expect(() => orderEvents([], { maxEvent: 5 } as never)).toThrow(/orderEvents: unknown option 'maxEvent' \(did you mean 'maxEvents'\?\)/)
    expect(() => orderEvents([], { maxEvents: 0 })).toThrow(/maxEvents must be an integer >= 1/)
  })
})

describe('closestName', () => {
  it('finds typos, swaps and case slips, and nothing for an unrelated name', () => {
    const keys = ['windows', 'watermark', 'idleTimeout', 'allowedLateness', 'retention', 'now', 'limits', 'replicaId']
    expect(['allowedLatness', 'alowedLateness', 'allowedlateness', 'idleTimout', 'retnetion', 'replicaID'].map((k) => closestName(k, keys))).toEqual([
      'allowedLateness',
      'allowedLateness',
      'allowedLateness',
      'idleTimeout',
      'retention',
      'replicaId',
    ])
    expect(closestName('doc', keys)).toBe(null)
  })
})
