import { seededRandom } from '@tidemark/seeded-random'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  ANOMALY_REASONS,
  createEngine,
  type Engine,
  type IngestReceipt,
  type StreamEvent,
  type WindowChange,
  type WindowResult,
} from '@tidemark/engine'
import { ChangeFold } from '../src/model/changeFold.ts'
import { type ModelReceipt, modelValidation, ReferenceModel } from '../src/model/referenceModel.ts'
import { assertSeeded, numRuns } from '@tidemark/seeded-random/property'
import { type PlanOp, runPlanOp, type StreamPlan, streamPlan, type WindowKind } from '../src/model/streamPlan.ts'

const FILE = 'packages/testkit/test/properties.test.ts'

function property<T>(name: string, arbitrary: fc.Arbitrary<T>, check: (value: T) => void, runs = 100): void {
  it(name, () => assertSeeded(fc.property(arbitrary, check), FILE, name, runs), numRuns(60_000))
}

/** An engine on the plan's configuration with a fake processing-time clock. */
function engineFor(plan: StreamPlan): { engine: Engine; clock: { now: number } } {
  const clock = { now: 0 }
  const { windows, watermark, idleTimeout, allowedLateness, retention } = plan.config
  const engine = createEngine({ windows, watermark, idleTimeout, allowedLateness, retention, now: () => clock.now })
  return { engine, clock }
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

const ALL: readonly WindowKind[] = ['tumbling', 'sliding', 'session']
const FIXED: readonly WindowKind[] = ['tumbling', 'sliding']

describe('engine against the reference model', () => {
  const equalsModel = (plan: StreamPlan) => {
    const { engine, clock } = engineFor(plan)
    const model = new ReferenceModel(plan.config)
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
      }
      expect(engine.watermark(), `watermark after op ${step}`).toBe(model.watermark())
      expect(engine.results(), `results after op ${step}`).toEqual(model.results())
    })
    expect(engine.lateEvents()).toEqual(model.lateEvents())
    const stats = engine.stats()
    const expected = model.stats()
    const { anomalies, ...counters } = expected
    expect(pick(stats, Object.keys(counters) as (keyof typeof counters)[])).toEqual(counters)
    expect({ ...stats.anomalies }).toEqual(Object.fromEntries(ANOMALY_REASONS.map((r) => [r, anomalies[r] ?? 0])))
  }

  property('engine equals the reference model: tumbling and sliding', streamPlan({ kinds: FIXED }), equalsModel, 150)
  property('engine equals the reference model: sessions with tumbling and sliding', streamPlan({ kinds: ALL }), equalsModel, 150)

  property('every receipt accounts for every event, and the watermark never goes backwards', streamPlan({ kinds: ALL }), (plan) => {
    const { engine, clock } = engineFor(plan)
    let watermark = engine.watermark()
    let events = 0
    let accepted = 0
    let duplicates = 0
    for (const op of plan.ops) {
      const receipt = runPlanOp(engine, clock, op)
      if (receipt !== null && op.kind === 'ingest') {
        expectAccounting(receipt, op.events)
        for (const a of receipt.anomalies) expect(a.reason).toBe(modelValidation(op.events[a.index as number]))
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
      // Windows past end + allowedLateness + retention leave live state without a change (docs/semantics.md, Retention).
      const live = (r: WindowResult) => r.end + allowedLateness + retention > engine.watermark()
      expect(fold.results(live)).toEqual(engine.results())
    }
  }

  property('the change stream folded by accumulate/retract equals results(): tumbling and sliding', streamPlan({ kinds: FIXED }), foldEqualsResults)
  property('the change stream folded by accumulate/retract equals results(): sessions', streamPlan({ kinds: ['session'] }), foldEqualsResults)
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
  const pinned = (kinds: readonly WindowKind[]) =>
    fc.tuple(streamPlan({ kinds, watermark: 'manual', invalid: false }), fc.integer({ min: -10, max: 60 }), fc.integer())

  property('with frontiers pinned, any batching of the same events admits the same events: tumbling and sliding', pinned(FIXED), anyBatching)
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
    'order inside a batch never changes a result: tumbling and sliding',
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
  property('re-sending every event changes nothing and counts nothing twice', streamPlan({ kinds: ALL }), (plan) => {
    const { engine, clock } = engineFor(plan)
    for (const op of plan.ops) runPlanOp(engine, clock, op)
    const before = engine.results()
    const applied = engine.stats().applied
    const everything = plan.ops.flatMap((op) => (op.kind === 'ingest' ? op.events : []))
    const invalid = everything.filter((e) => modelValidation(e) !== null).length
    let emitted = 0
    engine.subscribe((changes) => {
      emitted += changes.length
    })
    const receipt = engine.ingest(everything)
    expect(receipt.accepted).toBe(0)
    expect(receipt.late).toBe(0)
    expect(receipt.rejected).toBe(invalid)
    expect(receipt.duplicates + receipt.beyondLateness).toBe(everything.length - invalid)
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

  property('a fired result’s basis is true of its end when emitted: tumbling and sliding', streamPlan({ kinds: FIXED }), basisIsTrue)
  property('a fired result’s basis is true of its end when emitted: sessions', streamPlan({ kinds: ['session'] }), basisIsTrue)
})
