import { seededRandom } from '@tidemark/seeded-random'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  ANOMALY_REASONS,
  createEngine,
  type Engine,
  type EngineOptions,
  type IngestReceipt,
  type StreamEvent,
  type WindowChange,
  type WindowResult,
} from '@tidemark/engine'
import { createPerWindowEngine } from '@tidemark/engine/testing'
import { ChangeFold, DiscardingFold, wholeValues } from '../src/model/changeFold.ts'
import { modelAcceptsInputs } from '../src/model/modelAggregates.ts'
import { modelValidation } from '../src/model/modelValidation.ts'
import { type ModelReceipt, ReferenceModel } from '../src/model/referenceModel.ts'
import { changeText, resultId } from '../src/model/resultIdentity.ts'
import { assertSeeded, numRuns } from '@tidemark/seeded-random/property'
import { type PlanOp, runPlanOp, type StreamPlan, streamPlan, type WindowKind } from '../src/model/streamPlan.ts'

const FILE = 'packages/testkit/test/properties.test.ts'

function property<T>(name: string, arbitrary: fc.Arbitrary<T>, check: (value: T) => void, runs = 100): void {
  it(name, () => assertSeeded(fc.property(arbitrary, check), FILE, name, runs), numRuns(60_000))
}

/** An engine on the plan's configuration with a fake processing-time clock. */
function engineFor(plan: StreamPlan, make: (options: EngineOptions) => Engine = createEngine): { engine: Engine; clock: { now: number } } {
  const clock = { now: 0 }
  const engine = make({ ...plan.config, now: () => clock.now })
  return { engine, clock }
}

/** The changes of one operation as a sorted multiset (the order within one notification is not part of the contract). */
function changeSet(changes: readonly WindowChange[]): string[] {
  return changes.map(changeText).sort()
}

function receiptCounts(r: IngestReceipt | ModelReceipt) {
  return { accepted: r.accepted, late: r.late, duplicates: r.duplicates, beyondLateness: r.beyondLateness, rejected: r.rejected }
}

function expectAccounting(receipt: IngestReceipt, events: readonly unknown[]): void {
  expect(receipt.accepted + receipt.duplicates + receipt.beyondLateness + receipt.rejected).toBe(events.length)
  expect(receipt.late).toBeLessThanOrEqual(receipt.accepted)
  expect(receipt.anomalies).toHaveLength(receipt.rejected)
}

/** Late-lane entries as a sorted multiset, for runs whose batch order differs. */
function lateMultiset(engine: Engine): string[] {
  return engine
    .lateEvents()
    .map((l) => JSON.stringify([l.window, l.reason, l.event.source, l.event.id, l.event.ts]))
    .sort()
}

function aggregates(results: readonly WindowResult[]) {
  return results.map(({ window, key, start, end, count, sum, min, max, final, status }) => ({
    window,
    key,
    start,
    end,
    count,
    sum,
    min,
    max,
    final,
    status,
  }))
}

function pick<T extends object, K extends keyof T>(from: T, keys: readonly K[]): Pick<T, K> {
  return Object.fromEntries(keys.map((k) => [k, from[k]])) as Pick<T, K>
}

/** A valid input one of the plan's aggregates cannot take (`invalid_aggregate_input`). */
function refusedByAggregates(plan: StreamPlan, input: unknown): boolean {
  const aggregates = plan.config.aggregates
  return aggregates !== undefined && modelValidation(input) === null && !modelAcceptsInputs(aggregates, input as StreamEvent)
}

const ALL: readonly WindowKind[] = ['tumbling', 'sliding', 'cumulating', 'session']
const FIXED: readonly WindowKind[] = ['tumbling', 'sliding', 'cumulating']

describe('engine against the reference model', () => {
  const equalsModel = (plan: StreamPlan) => {
    const { engine, clock } = engineFor(plan)
    const model = new ReferenceModel(plan.config)
    let delivered: WindowChange[] = []
    engine.subscribe((changes) => delivered.push(...changes))
    plan.ops.forEach((op, step) => {
      const receipt = runPlanOp(engine, clock, op)
      if (op.kind === 'ingest') {
        const expected = model.ingest(op.events, clock.now)
        expectAccounting(receipt as IngestReceipt, op.events)
        expect(receiptCounts(receipt as IngestReceipt), `receipt of op ${step}`).toEqual(receiptCounts(expected))
        const anomalies = (receipt as IngestReceipt).anomalies.map(({ reason, index, id }) =>
          id === undefined ? { reason, index } : { reason, index, id },
        )
        expect(anomalies, `anomalies of op ${step}`).toEqual(expected.anomalies)
      } else if (op.kind === 'tick') {
        model.tick(clock.now)
      } else if (op.kind === 'advanceWatermark') {
        model.advanceWatermark(op.to)
      } else if (op.kind === 'finish') {
        model.finish(op.source, clock.now)
      }
      expect(engine.watermark(), `watermark after op ${step}`).toBe(model.watermark())
      expect(engine.stats().proofFrontier, `proof frontier after op ${step}`).toBe(model.proofFrontier())
      expect(engine.results(), `results after op ${step}`).toEqual(model.results())
      expect(changeSet(delivered), `changes of op ${step}`).toEqual(changeSet(model.changes()))
      delivered = []
    })
    expect(engine.lateEvents()).toEqual(model.lateEvents())
    const stats = engine.stats()
    const expected = model.stats()
    const { anomalies, ...counters } = expected
    expect(pick(stats, Object.keys(counters) as (keyof typeof counters)[])).toEqual(counters)
    expect({ ...stats.anomalies }).toEqual(Object.fromEntries(ANOMALY_REASONS.map((r) => [r, anomalies[r] ?? 0])))
  }

  property('engine equals the reference model: tumbling, sliding and cumulating', streamPlan({ kinds: FIXED }), equalsModel, 150)
  property('engine equals the reference model: sessions with fixed windows', streamPlan({ kinds: ALL }), equalsModel, 150)

  property('every receipt accounts for every event, and the watermark never goes backwards', streamPlan({ kinds: ALL }), (plan) => {
    const { engine, clock } = engineFor(plan)
    let watermark = engine.watermark()
    let events = 0
    let accepted = 0
    let duplicates = 0
    const finished = new Set<string>()
    for (const op of plan.ops) {
      const receipt = runPlanOp(engine, clock, op)
      if (op.kind === 'finish') finished.add(op.source)
      if (receipt !== null && op.kind === 'ingest') {
        expectAccounting(receipt, op.events)
        for (const a of receipt.anomalies) {
          const input = op.events[a.index as number]
          const invalid = modelValidation(input)
          const ahead = invalid === null && (input as StreamEvent).ts > clock.now + (plan.config.maxFutureSkew ?? 86_400_000)
          const byAggregates = invalid === null && !ahead && refusedByAggregates(plan, input)
          // A valid event is refused only when its source was finished before the batch (a copy of what it sent is a duplicate).
          const ofFinished = invalid === null && finished.has((input as StreamEvent).source)
          expect(a.reason).toBe(invalid ?? (ahead ? 'future_ts' : byAggregates ? 'invalid_aggregate_input' : ofFinished ? 'finished_source' : 'a valid event'))
        }
        events += op.events.length
        accepted += receipt.accepted
        duplicates += receipt.duplicates
      }
      expect(engine.watermark()).toBeGreaterThanOrEqual(watermark)
      watermark = engine.watermark()
    }
    const stats = engine.stats()
    expect([stats.ingested, stats.applied, stats.duplicates, stats.anomalies.duplicate]).toEqual([events, accepted, duplicates, duplicates])
  })

  const foldEqualsResults = (plan: StreamPlan) => {
    const { engine, clock } = engineFor(plan)
    const fold = new ChangeFold()
    // The engine reports a throwing listener instead of failing, so the fold runs outside it.
    let delivered: (readonly WindowChange[])[] = []
    engine.subscribe((changes) => delivered.push(changes))
    const { allowedLateness, retention } = plan.config
    for (const op of plan.ops) {
      runPlanOp(engine, clock, op)
      for (const changes of delivered) fold.apply(changes)
      delivered = []
      // Windows past end + allowedLateness + retention leave live state without a change (docs/semantics.md,
      // Retention); the last pane of a session may show an end it has grown past since.
      const shown = engine.results()
      const ids = new Set(shown.map(resultId))
      for (const r of fold.results()) if (!ids.has(resultId(r))) expect(r.end + allowedLateness + retention).toBeLessThanOrEqual(engine.watermark())
      expect(fold.results((r) => ids.has(resultId(r)))).toEqual(shown)
    }
  }

  const accumulating = (kinds: readonly WindowKind[]) =>
    streamPlan({ kinds }).map((plan) => ({ ...plan, config: { ...plan.config, accumulation: 'accumulating' as const } }))

  property('the change stream folded by accumulate/retract equals results(): fixed windows', accumulating(FIXED), foldEqualsResults)
  property('the change stream folded by accumulate/retract equals results(): sessions', accumulating(['session']), foldEqualsResults)

  /** Discarding panes merged per window add up to what the same input shows in accumulating mode. */
  const panesAddUp = (plan: StreamPlan) => {
    const discarding = engineFor({ ...plan, config: { ...plan.config, accumulation: 'discarding' } })
    const whole = engineFor({ ...plan, config: { ...plan.config, accumulation: 'accumulating' } })
    const fold = new DiscardingFold()
    let delivered: (readonly WindowChange[])[] = []
    discarding.engine.subscribe((changes) => delivered.push(changes))
    const { allowedLateness, retention } = plan.config
    for (const op of plan.ops) {
      runPlanOp(discarding.engine, discarding.clock, op)
      runPlanOp(whole.engine, whole.clock, op)
      for (const changes of delivered) fold.apply(changes)
      delivered = []
      const expected = wholeValues(whole.engine.results())
      for (const [id, last] of fold.lasts()) {
        if (!expected.has(id)) expect(last.end + allowedLateness + retention).toBeLessThanOrEqual(whole.engine.watermark())
      }
      expect(fold.totals((last) => expected.has(resultId(last)))).toEqual(expected)
      // Each pane is where the accumulating engine's is: same windows, statuses, revisions and pane infos.
      const shape = (r: WindowResult) => [r.window, r.key, r.start, r.end, r.status, r.revision, r.final, r.basis, r.pane]
      expect(discarding.engine.results().map(shape)).toEqual(whole.engine.results().map(shape))
    }
  }

  property('discarding panes add up to the accumulating results: fixed windows', streamPlan({ kinds: FIXED }), panesAddUp)
  property('discarding panes add up to the accumulating results: sessions', streamPlan({ kinds: ['session'] }), panesAddUp)
})

describe('sliced placement against the per-window placement', () => {
  /**
   * Fixed windows share slices (one cell update per event); the reference placement keeps one
   * cell per source per window, as fixed windows were placed before. Everything a user sees must
   * be the same, change for change: results, the change stream in its order, receipts, the late
   * lane and stats (all but `cells`, which counts slice cells instead of window cells).
   */
  const sameAsPerWindow = (plan: StreamPlan) => {
    const sliced = engineFor(plan)
    const reference = engineFor(plan, createPerWindowEngine)
    const seen: { sliced: WindowChange[]; reference: WindowChange[] } = { sliced: [], reference: [] }
    sliced.engine.subscribe((changes) => seen.sliced.push(...changes))
    reference.engine.subscribe((changes) => seen.reference.push(...changes))
    plan.ops.forEach((op, step) => {
      const a = runPlanOp(sliced.engine, sliced.clock, op)
      const b = runPlanOp(reference.engine, reference.clock, op)
      if (a !== null && b !== null) {
        expect(receiptCounts(a), `receipt of op ${step}`).toEqual(receiptCounts(b))
        expect(a.anomalies, `anomalies of op ${step}`).toEqual(b.anomalies)
      }
      expect(sliced.engine.results(), `results after op ${step}`).toEqual(reference.engine.results())
      expect(seen.sliced, `changes of op ${step}`).toEqual(seen.reference)
      seen.sliced = []
      seen.reference = []
    })
    expect(sliced.engine.lateEvents()).toEqual(reference.engine.lateEvents())
    const { cells: _a, ...slicedStats } = sliced.engine.stats()
    const { cells: _b, ...referenceStats } = reference.engine.stats()
    // `cells` is not compared: a slice's cells serve every window that reads the slice, and the
    // last live window of a block can read more slices than it has cells of its own in the
    // reference (cumulating 30/10 at watermark 20: three slice cells for one window's one cell).
    expect(slicedStats).toEqual(referenceStats)
  }

  property('the same results, changes, late lane and stats: tumbling, sliding and cumulating', streamPlan({ kinds: FIXED }), sameAsPerWindow, 200)
  property('the same results, changes, late lane and stats: with sessions beside them', streamPlan({ kinds: ALL }), sameAsPerWindow, 100)
})

describe('batch boundaries and order', () => {
  /**
   * Which events are admitted, and the window values, never depend on batching while the
   * frontiers are pinned. For fixed windows the status does not either. For sessions it can:
   * a session born past the firing frontier that a later batch extends stays `corrected`
   * (its on-time result was shown), while the same events in one batch form one provisional
   * session; so does the receipt's `late` count. Sessions compare admission and values only.
   */
  const anyBatching = ([plan, pinnedWatermark, cutSeed]: [StreamPlan, number, number], history = true) => {
    const events = plan.ops.flatMap((op) => (op.kind === 'ingest' ? op.events : []))
    const random = seededRandom(cutSeed)
    const rebatched: StreamEvent[][] = [[]]
    for (const e of events) {
      if (random() < 0.4) rebatched.push([])
      rebatched[rebatched.length - 1]?.push(e)
    }
    const original = plan.ops.flatMap((op) => (op.kind === 'ingest' ? [op.events] : []))
    const outcome = (batches: readonly (readonly StreamEvent[])[]) => {
      const { engine } = engineFor(plan)
      engine.advanceWatermark(pinnedWatermark)
      // A seq-less source holds P at -Infinity; manual() holds W: neither can move mid-way.
      engine.ingest([{ id: 'pin', source: 'pin', ts: pinnedWatermark, value: 0 }])
      const totals = { accepted: 0, late: 0, duplicates: 0, beyondLateness: 0, rejected: 0 }
      for (const batch of batches) {
        const r = engine.ingest(batch)
        for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r[k]
      }
      const results = aggregates(engine.results())
      if (history) return { totals, results, late: lateMultiset(engine), watermark: engine.watermark() }
      const { late: _late, ...admission } = totals
      const values = results.map(({ status: _status, ...value }) => value)
      return { admission, values, late: lateMultiset(engine), watermark: engine.watermark() }
    }
    expect(outcome(rebatched)).toEqual(outcome(original))
    expect(outcome([events])).toEqual(outcome(original))
  }
  // What a discarding pane or a processing-time trigger shows depends on the batches by design: default panes here.
  const pinned = (kinds: readonly WindowKind[]) =>
    fc.tuple(streamPlan({ kinds, watermark: 'manual', invalid: false, panes: 'default' }), fc.integer({ min: -10, max: 60 }), fc.integer())

  property('with frontiers pinned, any batching of the same events admits the same events: fixed windows', pinned(FIXED), anyBatching)
  property('with frontiers pinned, any batching of the same events admits the same events: sessions', pinned(['session']), (input) =>
    anyBatching(input, false),
  )

  const shuffled = (plan: StreamPlan, seed: number): StreamPlan => {
    const random = seededRandom(seed)
    const ops = plan.ops.map((op) => {
      if (op.kind !== 'ingest') return op
      const events = [...op.events]
      for (let i = events.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1))
        ;[events[i], events[j]] = [events[j] as StreamEvent, events[i] as StreamEvent]
      }
      return { kind: 'ingest' as const, events }
    })
    return { config: plan.config, ops }
  }

  const orderInsideABatch = (plan: StreamPlan, seed: number) => {
    const a = engineFor(plan)
    const other = shuffled(plan, seed)
    const b = engineFor(other)
    plan.ops.forEach((op, step) => {
      const ra = runPlanOp(a.engine, a.clock, op)
      const rb = runPlanOp(b.engine, b.clock, other.ops[step] as PlanOp)
      if (ra !== null && rb !== null) expect(receiptCounts(rb), `receipt of op ${step}`).toEqual(receiptCounts(ra))
      expect(b.engine.watermark()).toBe(a.engine.watermark())
      expect(b.engine.results(), `results after op ${step}`).toEqual(a.engine.results())
    })
    expect(lateMultiset(b.engine)).toEqual(lateMultiset(a.engine))
  }

  property(
    'order inside a batch never changes a result: fixed windows',
    fc.tuple(streamPlan({ kinds: FIXED, invalid: false }), fc.integer()),
    ([plan, seed]) => orderInsideABatch(plan, seed),
  )

  property(
    'order inside a batch never changes a result: sessions',
    fc.tuple(streamPlan({ kinds: ['session'], invalid: false }), fc.integer()),
    ([plan, seed]) => orderInsideABatch(plan, seed),
  )
})

describe('duplicates and basis', () => {
  property('re-sending every event changes nothing and counts nothing twice', streamPlan({ kinds: ALL, skew: false }), (plan) => {
    const { engine, clock } = engineFor(plan)
    // Events a finished source had not sent are refused when they come, and again when re-sent.
    let ofFinished = 0
    for (const op of plan.ops) {
      const receipt = runPlanOp(engine, clock, op)
      ofFinished += receipt?.anomalies.filter((a) => a.reason === 'finished_source').length ?? 0
    }
    const before = engine.results()
    const applied = engine.stats().applied
    const everything = plan.ops.flatMap((op) => (op.kind === 'ingest' ? op.events : []))
    const invalid = everything.filter((e) => modelValidation(e) !== null || refusedByAggregates(plan, e)).length
    let emitted = 0
    engine.subscribe((changes) => {
      emitted += changes.length
    })
    const receipt = engine.ingest(everything)
    expect(receipt.accepted).toBe(0)
    expect(receipt.late).toBe(0)
    expect(receipt.rejected).toBe(invalid + ofFinished)
    expect(receipt.anomalies.filter((a) => a.reason === 'finished_source')).toHaveLength(ofFinished)
    expect(receipt.duplicates + receipt.beyondLateness).toBe(everything.length - invalid - ofFinished)
    expect(emitted).toBe(0)
    expect(engine.results()).toEqual(before)
    expect(engine.stats().applied).toBe(applied)
  })

  /** A fired result's basis must be true of its own end when it is emitted (docs/semantics.md, Basis). */
  const basisIsTrue = (plan: StreamPlan) => {
    const { engine, clock } = engineFor(plan)
    let bestProof = Number.NEGATIVE_INFINITY
    // Frontiers as they stood when each batch of changes was published; checked outside the listener.
    let delivered: { changes: readonly WindowChange[]; watermark: number; bestProof: number }[] = []
    engine.subscribe((changes) => {
      bestProof = Math.max(bestProof, engine.stats().proofFrontier)
      delivered.push({ changes, watermark: engine.watermark(), bestProof })
    })
    const violations: string[] = []
    for (const op of plan.ops) {
      runPlanOp(engine, clock, op)
      for (const { changes, watermark, bestProof } of delivered) {
        for (const { type, result } of changes) {
          // Provisional results claim nothing; a final one has W >= end, so it knows at least that much.
          const holds =
            result.status === 'provisional'
              ? result.basis === 'unknown' && !result.final
              : result.basis === 'unknown'
                ? type !== 'on_time' && !result.final
                : result.basis === 'proven'
                  ? bestProof >= result.end
                  : watermark >= result.end
          if (!holds) violations.push(`${type} ${JSON.stringify(result)} at W=${watermark}, best P so far=${bestProof}`)
        }
      }
      delivered = []
    }
    expect(violations).toEqual([])
  }

  property('a fired result’s basis is true of its end when emitted: fixed windows', streamPlan({ kinds: FIXED }), basisIsTrue)
  property('a fired result’s basis is true of its end when emitted: sessions', streamPlan({ kinds: ['session'] }), basisIsTrue)
})
