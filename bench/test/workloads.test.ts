/**
 * bench/README.md, "Profiles": what each profile's workload is (readings, devices, late and
 * re-sent shares, batches, windows, idle timeout), which contenders it runs, and the paragraph
 * under the table: the Tidemark contender's clock starts at the fleet's first reading, no reading
 * is refused as ahead of it, and a script may swap `engineBuild.create` around a run.
 *
 * Each profile's `define()` is read as its contenders see it: the Tidemark contender runs once on
 * an engine swapped in through `engineBuild.create` that records the options it is given, every
 * batch, the processing time of each ingest and the receipts. Nothing is timed.
 */
import { afterProcessingTime, type Anomaly, type StreamEvent, session, sliding, tumbling } from '@tidemark/engine'
import { describe, expect, it } from 'vitest'
import * as aggregatesAccuracy from '../aggregates-accuracy.ts'
import * as anomalyHeavy from '../anomaly-heavy.ts'
import * as correctionChurn from '../correction-churn.ts'
import { NO_PROBE } from '../harness/memory.ts'
import type { ProfileFigures } from '../harness/profile.ts'
import { type BenchRun, reportMarkdown } from '../harness/report.ts'
import { SEPARATE_PROFILES } from '../harness/suite.ts'
import * as manySources from '../many-sources.ts'
import * as orderedStreamFlush from '../ordered-stream-flush.ts'
import { PROCESSING_START } from '../peers/tidemark.ts'
import * as reconnectBurst from '../reconnect-burst.ts'
import * as replication from '../replication.ts'
import * as sessions100k from '../sessions-100k.ts'
import * as sliding1h1m from '../sliding-1h-1m.ts'
import * as streaming100k from '../streaming-100k.ts'
import * as streaming150k from '../streaming-150k-watermark-lag.ts'
import * as streaming250k from '../streaming-250k-watermark-lag.ts'
import { contender, names, type Seen, seenBy, windowIds } from './recordingEngine.ts'

const all = (seen: Seen): StreamEvent[] => seen.batches.flat()
const sum = (seen: Seen, field: 'accepted' | 'late' | 'duplicates' | 'beyondLateness' | 'rejected'): number => seen.receipts.reduce((n, r) => n + r[field], 0)
const anomalies = (seen: Seen): { anomaly: Anomaly; event: StreamEvent }[] =>
  seen.receipts.flatMap((receipt, b) => receipt.anomalies.map((anomaly) => ({ anomaly, event: seen.batches[b]?.[anomaly.index ?? -1] as StreamEvent })))
const sources = (events: readonly StreamEvent[]): Set<string> => new Set(events.map((e) => e.source))
/** Distinct readings: one per (source, seq). */
const readings = (events: readonly StreamEvent[]): number => new Set(events.map((e) => `${e.source}\u0000${e.seq}`)).size
const maxOf = (values: readonly number[]): number => values.reduce((a, b) => Math.max(a, b), Number.NEGATIVE_INFINITY)
const minOf = (values: readonly number[]): number => values.reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY)
const median = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number

/** Readings delivered after a later reading of their own device (held back, then sent), once each. */
function deliveredLate(events: readonly StreamEvent[]): StreamEvent[] {
  const newest = new Map<string, number>()
  const seen = new Set<string>()
  const late: StreamEvent[] = []
  for (const e of events) {
    const id = `${e.source}\u0000${e.seq}`
    if (seen.has(id)) continue
    seen.add(id)
    if ((e.seq as number) < (newest.get(e.source) ?? 0)) late.push(e)
    else newest.set(e.source, e.seq as number)
  }
  return late
}

/**
 * Every Tidemark contender: its clock starts at the fleet's first reading (`behind`: how far the
 * slowest device's readings start before the others'), and no reading is refused as ahead of it.
 */
function expectClockAtFleetStart(seen: Seen, behind = 0): void {
  const first = minOf(all(seen).filter((e) => Number.isFinite(e.ts)).map((e) => e.ts)) + behind
  expect(Math.abs((seen.nows[0] as number) - first)).toBeLessThan(60_000)
  expect(anomalies(seen).filter(({ anomaly }) => anomaly.reason === 'future_ts')).toEqual([])
  expect(seen.engines, 'one engine per run, made by engineBuild.create').toBe(1)
}

const memo = <T>(make: () => T): (() => T) => {
  let value: T | undefined
  return () => {
    value ??= make()
    return value
  }
}
const streaming100kSeen = memo(() => seenBy(contender(streaming100k.define())))
const sliding1h1mDefinition = memo(() => sliding1h1m.define())
const sliding1h1mSeen = memo(() => seenBy(contender(sliding1h1mDefinition())))

// Each test builds a profile's workload (100k–250k readings) and runs its engine once.
describe('bench/README.md, the profiles table', { timeout: 30_000 }, () => {
  it('streaming-100k: 100k readings, 50 devices, 10% late, 2% re-sent, 1-min tumbling', () => {
    const seen = streaming100kSeen()
    const events = all(seen)
    expect(readings(events)).toBe(100_000)
    expect(sources(events).size).toBe(50)
    expect(deliveredLate(events).length / 100_000).toBeCloseTo(0.1, 2)
    expect((events.length - 100_000) / 100_000).toBeCloseTo(0.02, 2)
    expect(windowIds(seen)).toEqual([tumbling(60_000).id])
    expectClockAtFleetStart(seen)
  })

  it('streaming-150k-watermark-lag: one device 250 s behind holds the watermark; tumbling 10 s + sliding 60 s/10 s; the early trigger and the ordered stream beside', () => {
    const definition = streaming150k.define()
    const seen = seenBy(contender(definition))
    const events = all(seen)
    expect(readings(events)).toBe(150_000)
    const latest = (source: string) => maxOf(events.filter((e) => e.source === source).map((e) => e.ts))
    const others = maxOf(events.filter((e) => e.source !== 'd0').map((e) => e.ts))
    expect(others - latest('d0')).toBeGreaterThan(249_000)
    expect(others - latest('d0')).toBeLessThan(251_000)
    // The watermark follows the device behind: at the end it is 250 s short of the others' readings.
    expect(seen.outcome.watermark).toBeLessThanOrEqual(latest('d0'))
    expect(others - (seen.outcome.watermark as number)).toBeGreaterThan(250_000)
    expect(windowIds(seen)).toEqual([tumbling(10_000).id, sliding(60_000, 10_000).id])
    expect(names(definition)).toEqual(['tidemark', 'tidemark-early-1s', 'plain-loop', 'rxjs', 'ordered-stream', 'naive-sort'])
    const early = seenBy(contender(definition, 'tidemark-early-1s'), { batchesOnly: true })
    expect(early.options.trigger).toEqual({ early: afterProcessingTime(1_000) })
    expect(seen.options.trigger).toBeUndefined()
    expect(definition.ratios.find((r) => r.name === 'early-1s-vs-default')).toMatchObject({ subject: 'tidemark-early-1s', reference: 'tidemark' })
    expect(definition.ratios.find((r) => r.name === 'ordered-vs-naive')).toMatchObject({ subject: 'ordered-stream', reference: 'naive-sort' })
    expectClockAtFleetStart(seen, 250_000)
  })

  it('streaming-250k-watermark-lag: the same, larger', () => {
    const definition = streaming250k.define()
    const seen = seenBy(contender(definition), { batchesOnly: true })
    const events = all(seen)
    expect(readings(events)).toBe(250_000)
    expect(sources(events).size).toBe(25)
    expect(windowIds(seen)).toEqual([tumbling(10_000).id, sliding(60_000, 10_000).id])
    expect(names(definition)).toEqual(['tidemark', 'tidemark-early-1s', 'plain-loop', 'rxjs', 'ordered-stream'])
  })

  it('correction-churn: windows fire at once, then dozens of late readings correct each of them, in a few uploads', () => {
    const seen = seenBy(contender(correctionChurn.define()))
    expect(windowIds(seen)).toEqual([tumbling(5_000).id])
    const byWindow = new Map<string, Record<string, number>>()
    for (const change of seen.changes) {
      const id = `${change.result.key}\u0000${change.result.start}`
      const counts = byWindow.get(id) ?? {}
      counts[change.type] = (counts[change.type] ?? 0) + 1
      byWindow.set(id, counts)
    }
    const windows = [...byWindow.values()]
    expect(windows.filter((w) => w.on_time === 1).length / windows.length).toBeGreaterThan(0.99)
    // Late readings admitted into fired windows: dozens per window.
    expect(sum(seen, 'late') / windows.length).toBeGreaterThan(24)
    expect(median(windows.map((w) => w.correction ?? 0))).toBeGreaterThanOrEqual(2)
    expect(median(windows.map((w) => w.correction ?? 0))).toBeLessThan(12)
    expectClockAtFleetStart(seen)
  })

  it('reconnect-burst: 400 devices, 30% go offline and upload shuffled backlog fragments on reconnect; idle timeout', () => {
    const seen = seenBy(contender(reconnectBurst.define()))
    const events = all(seen)
    expect(sources(events).size).toBe(400)
    const late = deliveredLate(events)
    const offline = sources(late)
    expect(offline.size / 400).toBeGreaterThan(0.25)
    expect(offline.size / 400).toBeLessThan(0.35)
    // A backlog arrives in fragments over several uploads, not in the order it was read.
    let shuffled = 0
    for (const device of offline) {
      const backlog = late.filter((e) => e.source === device).map((e) => e.seq as number)
      if (backlog.some((seq, i) => i > 0 && seq < (backlog[i - 1] as number))) shuffled++
    }
    expect(shuffled / offline.size).toBeGreaterThan(0.5)
    expect(seen.options.idleTimeout).toBeGreaterThan(0)
    expect((seen.nows[1] as number) - PROCESSING_START).toBe(1_000)
    expectClockAtFleetStart(seen)
  })

  it('many-sources: 10,000 devices every 10 s, uploads of 100 readings every 100 ms (1% of the clocks per batch); 1% offline 40 s or more, cut short by the run\'s end; idle after 30 s', () => {
    const seen = seenBy(contender(manySources.define()))
    const events = all(seen)
    expect(sources(events).size).toBe(10_000)
    expect(seen.batches).toHaveLength(1_000)
    expect(seen.nows.map((now, i) => now - PROCESSING_START - i * 100).every((d) => d === 0)).toBe(true)
    expect(median(seen.batches.map((b) => b.length))).toBe(100)
    expect(median(seen.batches.map((b) => sources(b).size))).toBe(100)
    const byDevice = new Map<string, number[]>()
    for (const e of events) byDevice.set(e.source, [...(byDevice.get(e.source) ?? []), e.ts])
    expect(median([...byDevice.values()].flatMap((ts) => ts.sort((a, b) => a - b).slice(1).map((t, i) => t - (ts[i] as number))))).toBeCloseTo(10_000, -3)
    // Offline devices upload their backlog in one go when they return: several of their readings in one upload, the
    // first of them read 40 s or more before (less the 10 s between readings), at most 90 s (the run ends at 100 s).
    const backlogs = seen.batches.flatMap((batch, upload) => {
      const perDevice = new Map<string, number[]>()
      for (const e of batch) perDevice.set(e.source, [...(perDevice.get(e.source) ?? []), e.ts])
      return [...perDevice.values()].filter((ts) => ts.length > 1).map((ts) => (seen.nows[upload] as number) - minOf(ts))
    })
    expect(backlogs.length / 10_000).toBeGreaterThan(0.005)
    expect(backlogs.length / 10_000).toBeLessThan(0.015)
    expect(minOf(backlogs)).toBeGreaterThan(30_000)
    expect(maxOf(backlogs)).toBeLessThan(90_000)
    expect(seen.options.idleTimeout).toBe(30_000)
    expectClockAtFleetStart(seen)
  })

  it('anomaly-heavy: 30% of inputs invalid (9 kinds) or duplicate', () => {
    const seen = seenBy(contender(anomalyHeavy.define()))
    const inputs = all(seen).length
    expect(sum(seen, 'rejected') / inputs).toBeCloseTo(0.15, 1)
    expect(sum(seen, 'duplicates') / inputs).toBeCloseTo(0.15, 1)
    expect((sum(seen, 'rejected') + sum(seen, 'duplicates')) / inputs).toBeCloseTo(0.3, 1)
    const kind = (e: StreamEvent): string => {
      const raw = e as unknown as Record<string, unknown>
      if (e.id === '') return 'empty id'
      if (raw.source === undefined) return 'no source'
      if (Number.isNaN(e.ts)) return 'NaN ts'
      if (!Number.isFinite(e.ts)) return 'infinite ts'
      if (typeof raw.value !== 'number') return 'value not a number'
      if (!Number.isFinite(e.value)) return 'value not finite'
      if (e.seq === 0) return 'seq 0'
      if (!Number.isInteger(e.seq)) return 'fractional seq'
      if (typeof raw.key !== 'string') return 'key not a string'
      return 'valid'
    }
    const refused = anomalies(seen).filter(({ anomaly }) => anomaly.reason !== 'conflicting_duplicate')
    expect(refused).toHaveLength(sum(seen, 'rejected'))
    expect(new Set(refused.map(({ event }) => kind(event)))).toEqual(
      new Set(['empty id', 'no source', 'NaN ts', 'infinite ts', 'value not a number', 'value not finite', 'seq 0', 'fractional seq', 'key not a string']),
    )
    expectClockAtFleetStart(seen)
  })

  it('sliding-1h-1m: an hour sliding every minute, 50 devices × 4 metrics; the shared slices against the per-window placement, a plain-loop floor and a rules floor', () => {
    const definition = sliding1h1mDefinition()
    const seen = sliding1h1mSeen()
    const events = all(seen)
    expect(readings(events)).toBe(100_000)
    expect(sources(events).size).toBe(50)
    expect(new Set(events.map((e) => e.key)).size).toBe(4)
    expect(windowIds(seen)).toEqual([sliding(3_600_000, 60_000).id])
    expect(names(definition)).toEqual(['tidemark', 'per-window', 'plain-loop', 'rules-loop'])
    expectClockAtFleetStart(seen)
  })

  it('sessions-100k: sessions of a 30 s gap, 200 devices each its own key, 2% late one by one, a tenth of the bursts long enough split by a held-back block; every reading admitted; no target', () => {
    const definition = sessions100k.define()
    const seen = seenBy(contender(definition))
    const events = all(seen)
    expect(windowIds(seen)).toEqual([session(30_000).id])
    expect(sources(events).size).toBe(200)
    expect(events.every((e) => e.key === e.source)).toBe(true)
    // Every reading is admitted and none is re-sent.
    expect(readings(events)).toBe(events.length)
    expect({ accepted: sum(seen, 'accepted'), duplicates: sum(seen, 'duplicates'), beyondLateness: sum(seen, 'beyondLateness'), rejected: sum(seen, 'rejected') }).toEqual({
      accepted: events.length,
      duplicates: 0,
      beyondLateness: 0,
      rejected: 0,
    })
    // Bursts (readings 2 s apart, then silence beyond the gap), and those whose run after the first reading arrived after the rest.
    const position = new Map(events.map((e, i) => [`${e.source}\u0000${e.seq}`, i]))
    const at = (e: StreamEvent): number => position.get(`${e.source}\u0000${e.seq}`) as number
    let bursts = 0
    let long = 0
    let split = 0
    const held = new Set<string>()
    const byDevice = new Map<string, StreamEvent[]>()
    for (const e of events) byDevice.set(e.source, [...(byDevice.get(e.source) ?? []), e])
    for (const readingsOf of byDevice.values()) {
      readingsOf.sort((a, b) => (a.seq as number) - (b.seq as number))
      let start = 0
      for (let i = 1; i <= readingsOf.length; i++) {
        if (i < readingsOf.length && (readingsOf[i] as StreamEvent).ts - (readingsOf[i - 1] as StreamEvent).ts <= 30_000) continue
        const burst = readingsOf.slice(start, i)
        start = i
        bursts++
        if (burst.length < 18) continue
        long++
        if (at(burst[1] as StreamEvent) > at(burst[17] as StreamEvent)) {
          split++
          for (const e of burst.slice(1, 17)) held.add(`${e.source}\u0000${e.seq}`)
        }
      }
    }
    expect(split / long).toBeGreaterThan(0.07)
    expect(split / long).toBeLessThan(0.13)
    expect(split / bursts).toBeLessThan(0.08)
    // Readings delivered after the fleet passed their time (devices interleave in event time), held blocks aside: 2%, up to 5 min late.
    let newest = Number.NEGATIVE_INFINITY
    const behind: number[] = []
    for (const e of events) {
      if (e.ts < newest && !held.has(`${e.source}\u0000${e.seq}`)) behind.push(newest - e.ts)
      newest = Math.max(newest, e.ts)
    }
    expect(behind.length / events.length).toBeGreaterThan(0.015)
    expect(behind.length / events.length).toBeLessThan(0.025)
    expect(maxOf(behind)).toBeLessThan(5 * 60_000 + 30_000)
    expect(names(definition)).toEqual(['tidemark', 'plain-loop'])
    expect(definition.agree).toEqual([['tidemark', 'plain-loop']])
    expect(definition.ratios.map((r) => r.target)).toEqual([undefined])
    expectClockAtFleetStart(seen)
  })

  it('ordered-stream-flush: flushReady() after every push under a lagging watermark; flush work per emitted event', () => {
    const definition = orderedStreamFlush.define()
    const outcome = contender(definition, 'ordered-stream').run({ probe: NO_PROBE, record: false })
    expect(outcome.counts.flushes).toBe(definition.batches)
    // The device behind holds tens of thousands of events back.
    expect(outcome.end.peakPending).toBeGreaterThan(10_000)
    expect(outcome.counts.flushWorkPerEmitted).toBeGreaterThan(0)
  })

  it('aggregates-accuracy: quantiles (α = 1%) on 1M values of five distributions, p50…p99.9 and the worst of 0.001…0.999, 8 shards merged to the same bytes; distinct on 10^3 … 10^7 strings and integers (≤ 2%); encoded bytes; its own section of the report', () => {
    expect(aggregatesAccuracy.ACCURACY_SIZES).toEqual({ values: 1_000_000, distinct: [1e3, 1e4, 1e5, 1e6, 1e7] })
    // The same tables on fewer values.
    const { tables, headline, met } = aggregatesAccuracy.run(() => {}, { values: 20_000, distinct: [1_000, 10_000] })
    const rows = (header: string) => {
      const start = tables.findIndex((line) => line.startsWith(header))
      expect(start, header).toBeGreaterThanOrEqual(0)
      const end = tables.indexOf('', start)
      return tables.slice(start + 2, end === -1 ? undefined : end)
    }
    const quantileRows = rows('| distribution | p50 | p95 | p99 | p99.9 | worst of 0.001…0.999 | ≤ 1% | 8 shards merged |')
    expect(quantileRows.map((line) => line.split(' | ')[0])).toEqual(['| uniform [0, 1000)', '| lognormal (μ 3, σ 1.5)', '| bimodal (modes 20 and 300)', '| Pareto (shape 1.1, heavy tail)', '| constant 42'])
    for (const line of quantileRows) expect(line).toContain('| ✓ | same bytes |')
    const distinctRows = rows('| distinct values | estimate (strings) | error (strings) | error (integers) | ≤ 2% | encoded |')
    expect(distinctRows.map((line) => line.split(' | ')[0])).toEqual(['| 1,000', '| 10,000'])
    expect(rows('| state | 1 reading | 60 readings | 1,000 readings |')).toHaveLength(5)
    expect(tables.join('\n')).toContain('**distinct**: precision 14')
    expect({ met, headline: headline.split(';')[0] }).toEqual({ met: true, headline: expect.stringMatching(/^quantiles worst .* ✓ \(≤ 1%\), merged shards bit-identical ✓$/) })
    const figures: ProfileFigures = {
      profile: 'aggregates-accuracy',
      description: 'accuracy',
      events: 1,
      batches: 0,
      date: '2026-12-01T00:00:00.000Z',
      node: 'v20',
      rounds: 1,
      warmup: 0,
      contenders: [],
      ratios: [],
      agreement: [],
      headline,
      tables,
      process: { maxRssMB: 1, wallMs: 1, prepareMs: 0 },
    }
    const run: BenchRun = { date: '2026-12-01T00:00:00.000Z', node: 'v20', cpu: 'cpu', cores: 2, engine: 'abc', load: { start: 1, end: 1 }, wallMs: 1, results: [figures], failures: [], missing: [] }
    const markdown = reportMarkdown(run)
    expect(markdown).toContain(['## aggregates-accuracy', '', ...tables].join('\n'))
  })

  it("replication: not a ratio profile; a reconnect burst's sync bytes against its raw events, the doc size over a steady run, the bytes of one sparse write", () => {
    const burst = replication.reconnectBurst()
    expect(burst.events).toBe(12_000) // 10 minutes offline, 20 readings a second
    expect(burst.syncBytes).toBeLessThan(burst.rawEventBytes as number)
    expect(replication.steady(120, 60).map((sample) => sample.second)).toEqual([60, 120])
    const sparse = replication.sparseWrites()
    expect(sparse.updates).toBe(sparse.batches)
    expect(sparse.bytesPerBatch).toBeGreaterThan(0)
  })

  it('wal-append and wal-recovery-1m: browser, separate (pnpm bench:browser:wal)', () => {
    for (const name of ['wal-append', 'wal-recovery-1m']) expect(SEPARATE_PROFILES.find((p) => p.name === name)).toMatchObject({ where: 'browser', status: expect.stringContaining('`pnpm bench:browser:wal`') })
  })
})
