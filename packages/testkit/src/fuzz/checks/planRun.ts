/**
 * Runs an op list on one engine and on the reference model side by side, checking after
 * every op: receipts (and the accounting identity), anomalies, the watermark (equal to the
 * model's, never backwards), every window result, the changes (as the model emits them), the
 * change stream folded by a retracting consumer (or, for discarding panes, added up), and the
 * buffer bounds. `checkpoint` / `crash` ops recover the engine
 * from the stored checkpoint plus the journal tail and check it shows exactly what it
 * showed before; `quota` ops make the journal refuse writes (ingest must refuse whole
 * batches with `overflow` and a rejected `durable`, `finishSource` of a source not finished
 * yet must reject and change nothing). `finish` ops finish a source on the engine (its promise
 * durable; for a source finished already, as durable as that first finish) and on the model.
 *
 * The model knows no buffer limits. An event the engine refuses with `overflow` leaves no
 * trace (no clock, no dedup entry), so the model is fed each batch without those events.
 */
import {
  type AggregateDefinitions,
  ANOMALY_REASONS,
  createEngine,
  type EngineLimits,
  type IngestReceipt,
  type LateEvent,
  type StreamEvent,
  type TidemarkEngine,
  type WindowChange,
  type WindowResult,
} from '@tidemark/engine'
import { openEngine, QuotaError, recoveryReport } from '@tidemark/idb'
import { memoryPersistence } from '@tidemark/idb/memory'
import { ChangeFold, DiscardingFold } from '../../model/changeFold.ts'
import { type ModelConfig, ReferenceModel } from '../../model/referenceModel.ts'
import { changeText, resultId } from '../../model/resultIdentity.ts'
import type { PlanOp } from '../../model/streamPlan.ts'
import { check, checkEqual, InvariantViolation } from '../invariant.ts'
import type { Meter } from '../scenario.ts'
import { checkRecovered, crashAndRecover, FuzzJournal, type StoredCheckpoint, takeCheckpoint } from './walWriter.ts'

export type FuzzOp =
  | PlanOp
  | { readonly kind: 'probe'; readonly events: readonly StreamEvent[] }
  | { readonly kind: 'checkpoint' }
  | { readonly kind: 'crash' }
  | { readonly kind: 'quota'; readonly full: boolean }

export interface PlanCase {
  readonly config: ModelConfig
  readonly limits?: EngineLimits
  /**
   * Where the log lives. `journal` (default): an in-process journal through the record and
   * checkpoint codecs; `checkpoint` ops snapshot, `crash` restores and replays by hand,
   * `quota` blocks the journal. `openEngine`: the engine is made by `openEngine` over
   * `memoryPersistence` checkpointing every `checkpointEvery` events; `crash` drops the
   * engine at a quiescent point and reopens the persistence; `checkpoint` and `quota` are no-ops.
   */
  readonly store?: { readonly kind: 'journal' } | { readonly kind: 'openEngine'; readonly checkpointEvery: number }
  readonly ops: readonly FuzzOp[]
}

const DEFAULTS: Required<EngineLimits> = {
  maxWindows: 100_000,
  maxDedupEntries: 1_000_000,
  maxLateEvents: 10_000,
  maxSources: 100_000,
  maxBatch: 1_000_000,
}

/** What a user can compare on a late-lane entry (the engine keeps only the event's own fields). */
function lateView(late: readonly LateEvent[]): unknown[] {
  return late.map(({ event, window, reason }) => ({ event: eventView(event), window, reason }))
}

export function eventView(e: StreamEvent): StreamEvent {
  return {
    id: e.id,
    source: e.source,
    ts: e.ts,
    value: e.value,
    ...(e.seq === undefined ? {} : { seq: e.seq }),
    ...(e.key === undefined ? {} : { key: e.key }),
  }
}

export function checkAccounting(receipt: IngestReceipt, events: readonly unknown[], meter: Meter, step: number): void {
  meter.checks += 4
  const total = receipt.accepted + receipt.duplicates + receipt.beyondLateness + receipt.rejected
  check(total === events.length, 'receipt.accounting', () => `accepted+duplicates+beyond+rejected = ${total}, batch has ${events.length}`, step)
  check(receipt.late <= receipt.accepted && receipt.late >= 0, 'receipt.accounting', () => `late ${receipt.late} > accepted ${receipt.accepted}`, step)
  // Conflicting duplicates are counted in `duplicates`; every other anomaly is a rejected event.
  const conflicting = receipt.anomalies.filter((a) => a.reason === 'conflicting_duplicate').length
  check(conflicting <= receipt.duplicates, 'receipt.accounting', () => `${conflicting} conflicting duplicates, ${receipt.duplicates} duplicates`, step)
  check(
    receipt.anomalies.length - conflicting === receipt.rejected,
    'receipt.accounting',
    () => `${receipt.anomalies.length - conflicting} anomalies other than conflicting_duplicate for ${receipt.rejected} rejected`,
    step,
  )
  const seen = new Set<number>()
  for (const a of receipt.anomalies) {
    check(
      typeof a.index === 'number' && a.index >= 0 && a.index < events.length && !seen.has(a.index),
      'receipt.anomaly-index',
      () => `anomaly ${JSON.stringify(a)} has no distinct index in a batch of ${events.length}`,
      step,
    )
    seen.add(a.index as number)
  }
}

/** Extra checks a scenario runs on the live engine. */
export interface PlanHooks {
  /** After every op (and the model comparison). */
  afterOp?(engine: TidemarkEngine, step: number, meter: Meter): void
  /** Once, after the last op; `testCase` is the plan run. */
  end?(engine: TidemarkEngine, meter: Meter, testCase: PlanCase): void
}

export async function runPlan(testCase: PlanCase, meter: Meter, hooks: PlanHooks = {}): Promise<void> {
  const limits = { ...DEFAULTS, ...testCase.limits }
  const clock = { now: 0 }
  const make = (now: () => number) =>
    createEngine({ ...testCase.config, limits, now, replicaId: 'fuzz' }) as TidemarkEngine<AggregateDefinitions>
  const journal = new FuzzJournal()
  const store = testCase.store ?? { kind: 'journal' }
  const persistence = memoryPersistence()
  const open = async () => {
    const every = store.kind === 'openEngine' ? store.checkpointEvery : 1
    return (await openEngine({
      ...testCase.config,
      limits,
      now: () => clock.now,
      replicaId: 'fuzz',
      persistence,
      checkpointEvery: { events: every, ms: Number.POSITIVE_INFINITY },
      checkpointOnClose: false,
    })) as TidemarkEngine<AggregateDefinitions>
  }
  let engine: TidemarkEngine
  if (store.kind === 'openEngine') engine = await open()
  else {
    engine = make(() => clock.now)
    engine.attachLog(journal)
  }
  let stored: StoredCheckpoint = takeCheckpoint(engine, journal)
  const model = new ReferenceModel(testCase.config)
  const discarding = testCase.config.accumulation === 'discarding'
  const fold = new ChangeFold()
  const panes = new DiscardingFold()
  let delivered: (readonly WindowChange[])[] = []
  const listen = (e: TidemarkEngine) => e.subscribe((changes) => delivered.push(changes))
  listen(engine)
  let overflow = 0
  let watermark = Number.NEGATIVE_INFINITY
  /** Sources finished, each by a durable `finish`. */
  const finished = new Set<string>()
  const { allowedLateness, retention } = testCase.config

  for (let step = 0; step < testCase.ops.length; step++) {
    const op = testCase.ops[step] as FuzzOp
    meter.ops++
    switch (op.kind) {
      case 'ingest':
      case 'probe': {
        meter.events += op.events.length
        const blocked = journal.blocked
        const windowsBefore = engine.stats().openWindows
        const receipt = engine.ingest(op.events)
        checkAccounting(receipt, op.events, meter, step)
        if (blocked !== null || op.events.length > limits.maxBatch) {
          check(
            receipt.rejected === op.events.length && receipt.anomalies.every((a) => a.reason === 'overflow'),
            'quota.refusal',
            () => `a batch the log cannot take must be refused whole with overflow, got ${JSON.stringify(receipt.anomalies.slice(0, 3))}`,
            step,
          )
          if (blocked !== null) {
            const outcome = await receipt.durable.then(
              () => 'resolved',
              (error: unknown) => (error === blocked ? 'rejected' : `rejected with ${String(error)}`),
            )
            check(outcome === 'rejected', 'quota.durable', () => `durable of a refused batch ${outcome}`, step)
          }
          overflow += op.events.length
          break
        }
        const refused = new Set(receipt.anomalies.filter((a) => a.reason === 'overflow').map((a) => a.index as number))
        overflow += refused.size
        const kept: number[] = []
        op.events.forEach((_, i) => {
          if (!refused.has(i)) kept.push(i)
        })
        const expected = model.ingest(
          kept.map((i) => op.events[i]),
          clock.now,
        )
        meter.checks += 2
        const counts = (r: { accepted: number; late: number; duplicates: number; beyondLateness: number; rejected: number }) => ({
          accepted: r.accepted,
          late: r.late,
          duplicates: r.duplicates,
          beyondLateness: r.beyondLateness,
          rejected: r.rejected,
        })
        checkEqual(counts(receipt), { ...counts(expected), rejected: expected.rejected + refused.size }, 'model.receipt', step)
        const anomalies = receipt.anomalies
          .filter((a) => a.reason !== 'overflow')
          .map(({ reason, index, id }) => (id === undefined ? { reason, index } : { reason, index, id }))
        const expectedAnomalies = expected.anomalies.map((a) => ({ ...a, index: kept[a.index] }))
        checkEqual(anomalies, expectedAnomalies, 'model.anomalies', step)
        const outcome = await receipt.durable.then(
          () => 'resolved',
          (error: unknown) => `rejected with ${String(error)}`,
        )
        check(outcome === 'resolved', 'journal.durable', () => `durable of a logged batch ${outcome}`, step)
        if (op.kind === 'probe') {
          // Overflow is honest only when the probe's windows could not fit.
          const needed = testCase.config.windows.reduce(
            (n, w) => n + (w.kind === 'sliding' ? w.size / w.slide : w.kind === 'cumulating' ? w.size / w.step : 1),
            0,
          )
          const full = windowsBefore + needed * op.events.length > limits.maxWindows
          check(
            receipt.accepted === op.events.length || (full && receipt.anomalies.every((a) => a.reason === 'overflow')),
            'liveness.probe',
            () => `fresh events after the frontiers moved on were not all accepted: ${JSON.stringify(counts(receipt))} ${JSON.stringify(receipt.anomalies.slice(0, 2))}; stats ${JSON.stringify(engine.stats())}`,
            step,
          )
        }
        break
      }
      case 'clock':
        clock.now = op.to
        break
      case 'tick':
        engine.tick()
        model.tick(clock.now)
        break
      case 'advanceWatermark':
        engine.advanceWatermark(op.to)
        model.advanceWatermark(op.to)
        break
      case 'finish': {
        meter.checks++
        const blocked = journal.blocked
        const outcome = await engine.finishSource(op.source).then(
          () => 'resolved',
          (error: unknown) => (error === blocked ? 'rejected' : `rejected with ${String(error)}`),
        )
        // Refused by a full log, a new promise is not made (the model then shows the engine
        // unchanged); one made already needs no write, and is as durable as it was.
        if (blocked !== null && !finished.has(op.source)) {
          check(outcome === 'rejected', 'quota.finish', () => `finishSource while the log refuses writes ${outcome}`, step)
          break
        }
        check(outcome === 'resolved', 'journal.durable', () => `finishSource ${outcome}`, step)
        finished.add(op.source)
        model.finish(op.source, clock.now)
        break
      }
      case 'quota':
        if (store.kind === 'journal') journal.blocked = op.full ? new QuotaError('fuzz: storage quota exhausted') : null
        break
      case 'checkpoint':
        if (store.kind !== 'journal') break
        stored = takeCheckpoint(engine, journal)
        break
      case 'crash': {
        meter.checks++
        if (store.kind === 'openEngine') {
          // A crash between operations: whatever the log committed survives, nothing else runs.
          await new Promise((resolve) => setImmediate(resolve))
          const live = engine
          await persistence.close()
          engine = await open()
          const report = recoveryReport(engine)
          check(report !== undefined && report.corrupt.length === 0, 'recovery.corrupt', () => `reopen found ${JSON.stringify(report?.corrupt)}`, step)
          checkRecovered(engine, live, step)
          listen(engine)
          break
        }
        engine = crashAndRecover(engine, make, journal, stored, () => clock.now, step)
        engine.attachLog(journal)
        listen(engine)
        break
      }
    }

    meter.checks += 4
    const w = engine.watermark()
    check(w >= watermark, 'watermark.monotone', () => `watermark went back from ${watermark} to ${w}`, step)
    watermark = w
    check(Object.is(w, model.watermark()), 'model.watermark', () => `engine ${w}, model ${model.watermark()}`, step)
    const results = engine.results()
    checkEqual(results, model.results(), 'model.results', step)
    meter.checks += 2
    const emitted = delivered.flat().map(changeText).sort()
    checkEqual(emitted, model.changes().map(changeText).sort(), 'model.changes', step)
    try {
      for (const changes of delivered) (discarding ? panes : fold).apply(changes)
    } catch (error) {
      throw new InvariantViolation('changes.fold', (error as Error).message, step)
    }
    delivered = []
    // A window that left live state leaves no change; its last pane may show an end it has since
    // grown past (a session), so only what no longer shows is checked to have expired.
    const expired = (r: WindowResult) => r.end + allowedLateness + retention <= w
    const shown = discarding ? panes.totals() : fold.results()
    const expected = discarding ? model.shownWholes() : results
    if (discarding) checkEqual(keepShown(shown as Map<string, unknown>, expected as Map<string, unknown>, panes.lasts(), expired, step), expected, 'changes.fold', step)
    else checkEqual(keepShownResults(shown as WindowResult[], results, expired, step), results, 'changes.fold', step)
    checkBounds(engine, limits, meter, step)
    hooks.afterOp?.(engine, step, meter)
  }

  meter.checks += 2
  const trimmed = model.lateEvents()
  const keptLate = trimmed.slice(Math.max(0, trimmed.length - limits.maxLateEvents))
  checkEqual(lateView(engine.lateEvents()), lateView(keptLate), 'model.late-lane', testCase.ops.length)
  const stats = engine.stats()
  const expected = model.stats()
  const { anomalies, ...counters } = expected
  const kept = Math.min(counters.lateLane, limits.maxLateEvents)
  const want = { ...counters, ingested: counters.ingested + overflow, lateLane: kept, lateLaneTrimmed: counters.lateLane - kept }
  const got = Object.fromEntries(Object.keys(want).map((k) => [k, stats[k as keyof typeof stats]]))
  checkEqual(got, want, 'model.stats', testCase.ops.length)
  const reasons = Object.fromEntries(ANOMALY_REASONS.map((r) => [r, (anomalies[r] ?? 0) + (r === 'overflow' ? overflow : 0)]))
  checkEqual({ ...stats.anomalies }, reasons, 'model.anomaly-counts', testCase.ops.length)
  hooks.end?.(engine, meter, testCase)
}

/** The fold's results that `engine.results()` still shows; each other one must have expired. */
function keepShownResults(shown: readonly WindowResult[], live: readonly WindowResult[], expired: (r: WindowResult) => boolean, step: number): WindowResult[] {
  const ids = new Set(live.map(resultId))
  for (const r of shown) {
    if (!ids.has(resultId(r))) check(expired(r), 'changes.fold', () => `the fold shows ${JSON.stringify(r)}, results() does not, and it has not expired`, step)
  }
  return shown.filter((r) => ids.has(resultId(r)))
}

/** The discarding fold's totals for the windows the model still shows; each other one must have expired. */
function keepShown<V>(
  shown: ReadonlyMap<string, V>,
  live: ReadonlyMap<string, unknown>,
  lasts: ReadonlyMap<string, WindowResult>,
  expired: (r: WindowResult) => boolean,
  step: number,
): Map<string, V> {
  const out = new Map<string, V>()
  for (const [id, value] of shown) {
    if (live.has(id)) out.set(id, value)
    else check(expired(lasts.get(id) as WindowResult), 'changes.fold', () => `the fold holds ${id}, the engine does not, and it has not expired`, step)
  }
  return out
}

/** Every buffer stays within its configured limit. */
export function checkBounds(engine: TidemarkEngine, limits: Required<EngineLimits>, meter: Meter, step: number): void {
  meter.checks += 4
  const s = engine.stats()
  check(s.openWindows <= limits.maxWindows, 'bounds.windows', () => `${s.openWindows} open windows > maxWindows ${limits.maxWindows}`, step)
  check(s.lateLane <= limits.maxLateEvents, 'bounds.late-lane', () => `late lane ${s.lateLane} > maxLateEvents ${limits.maxLateEvents}`, step)
  check(s.dedupEntries <= limits.maxDedupEntries, 'bounds.dedup', () => `${s.dedupEntries} dedup entries > ${limits.maxDedupEntries}`, step)
  check(s.sources <= limits.maxSources, 'bounds.sources', () => `${s.sources} sources > maxSources ${limits.maxSources}`, step)
}
