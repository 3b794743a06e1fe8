/**
 * Device-fleet traffic for the model-checked scenarios. A `TrafficDraft` is a handful of
 * numbers (fast-check shrinks those); `buildTraffic` turns it into an op list with a seeded
 * PRNG: sources emitting per processing-time round, one of them lagging in event time,
 * deliveries delayed by a few rounds or by many (correction bursts), offline episodes that
 * end in a fragmented backlog burst (with part of what was already delivered re-sent),
 * exact copies, clocks going backwards, hostile inputs, ticks, manual watermark moves, sources
 * finished by their writer (what they still send, delayed or new, must be refused), and
 * checkpoint / crash / quota ops. Values are small integers, so sums are exact whatever
 * order the engine combines cells in, and the model can be compared bit for bit.
 */
import fc from 'fast-check'
import {
  type AggregateDefinitions,
  type Accumulation,
  boundedOutOfOrderness,
  cumulating,
  type EngineLimits,
  manual,
  MAX_ABS_TS,
  session,
  sliding,
  type StreamEvent,
  type Trigger,
  tumbling,
  type WatermarkStrategy,
  type WindowSpec,
} from '@tidemark/engine'
import { seededRandom } from '@tidemark/seeded-random'
import type { FuzzOp, PlanCase } from './checks/planRun.ts'
import { EARLY_TRIGGERS, FUTURE_SKEWS, LATE_TRIGGERS, PLAN_AGGREGATES } from '../model/streamPlan.ts'
import { malformedInput } from './malformed.ts'

/** Source names; the hostile ones must be ordinary names everywhere (docs/semantics.md, Events). */
export const SOURCE_POOL = ['d0', 'd1', '__proto__', 'constructor', 'd4', 'hasOwnProperty', 'toString', 'd7'] as const
export const KEY_POOL = [undefined, 'temp', '__proto__', 'constructor', 'hum', 'valueOf'] as const

export const WINDOW_POOL: readonly WindowSpec[] = [
  tumbling(10),
  tumbling(25),
  sliding(20, 5),
  sliding(30, 10),
  cumulating(20, 5),
  cumulating(40, 10),
  session(6),
  session(15),
]

export interface TrafficDraft {
  readonly windows: readonly WindowSpec[]
  readonly watermark: WatermarkStrategy
  readonly allowedLateness: number
  readonly idleTimeout: number
  readonly retention: number
  readonly limits?: EngineLimits
  readonly early: Trigger
  readonly late: Trigger
  readonly accumulation: Accumulation
  /** Undefined: the default (a day, so none of these events). */
  readonly maxFutureSkew: number | undefined
  /** Undefined: none. */
  readonly aggregates: AggregateDefinitions | undefined
  readonly sources: number
  readonly keys: number
  readonly rounds: number
  readonly slotMs: number
  readonly stepMs: number
  readonly perRound: number
  readonly jitter: number
  /** Event-time offset of source 0 behind the others: it holds the watermark back. */
  readonly laggard: number
  readonly seqMode: 'seq' | 'none' | 'mixed' | 'any'
  readonly dupPercent: number
  readonly backPercent: number
  /** Events delivered many rounds late (they become corrections or go to the late lane). */
  readonly delayPercent: number
  readonly delayRounds: number
  readonly offlinePercent: number
  readonly offlineRounds: number
  /** On reconnect, share of the events delivered before going offline that are sent again. */
  readonly resendPercent: number
  /** Chance to cut the batch between two deliveries (fragmentation). */
  readonly fragment: number
  readonly invalidPercent: number
  readonly tickPercent: number
  /**
   * Chance per round to finish a source: one that delivered (maybe finished already) or, a fifth
   * of the time, one that has not (yet). Drawn from a stream of its own: at 0 the traffic is the
   * same without its finishes.
   */
  readonly finishPercent: number
  readonly checkpointPercent: number
  readonly crashPercent: number
  readonly quotaPercent: number
  /** End with a forced watermark past everything and a fresh event that must be accepted. */
  readonly probe: boolean
  readonly rngSeed: number
}

/** Ranges a scenario picks its drafts from; every field an arbitrary, so fast-check can shrink it. */
export type TrafficRanges = { readonly [K in keyof TrafficDraft]: fc.Arbitrary<TrafficDraft[K]> }

const percent = (max: number) => fc.integer({ min: 0, max })

/** Defaults: a little of everything. Scenarios override what they stress. */
export const BASE_RANGES: TrafficRanges = {
  windows: fc.subarray([...WINDOW_POOL], { minLength: 1, maxLength: 3 }),
  watermark: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(0, 5, 20).map(boundedOutOfOrderness) },
    { weight: 1, arbitrary: fc.constant(manual()) },
  ),
  allowedLateness: fc.constantFrom(0, 10, 40),
  idleTimeout: fc.constantFrom(Number.POSITIVE_INFINITY, 40, 150),
  retention: fc.constantFrom(Number.POSITIVE_INFINITY, 0, 15, 100),
  limits: fc.constant(undefined),
  early: EARLY_TRIGGERS,
  late: LATE_TRIGGERS,
  accumulation: fc.constantFrom('accumulating', 'accumulating', 'discarding'),
  maxFutureSkew: FUTURE_SKEWS,
  aggregates: PLAN_AGGREGATES,
  sources: fc.integer({ min: 1, max: 5 }),
  keys: fc.integer({ min: 1, max: 3 }),
  rounds: fc.integer({ min: 3, max: 40 }),
  slotMs: fc.integer({ min: 1, max: 20 }),
  stepMs: fc.integer({ min: 1, max: 8 }),
  perRound: fc.integer({ min: 1, max: 3 }),
  jitter: fc.integer({ min: 0, max: 15 }),
  laggard: fc.integer({ min: 0, max: 30 }),
  seqMode: fc.constantFrom('seq', 'none', 'mixed', 'any'),
  dupPercent: percent(15),
  backPercent: percent(5),
  delayPercent: percent(10),
  delayRounds: fc.integer({ min: 2, max: 12 }),
  offlinePercent: percent(5),
  offlineRounds: fc.integer({ min: 1, max: 10 }),
  resendPercent: percent(30),
  fragment: fc.integer({ min: 5, max: 80 }),
  invalidPercent: percent(5),
  tickPercent: percent(30),
  finishPercent: fc.constantFrom(0, 0, 3, 10),
  checkpointPercent: percent(3),
  crashPercent: percent(3),
  quotaPercent: fc.constant(0),
  probe: fc.boolean(),
  rngSeed: fc.integer(),
}

export function trafficArbitrary(overrides: Partial<TrafficRanges>): fc.Arbitrary<PlanCase> {
  const ranges = { ...BASE_RANGES, ...overrides } as Record<string, fc.Arbitrary<unknown>>
  return fc.record(ranges).map((draft) => buildTraffic(draft as unknown as TrafficDraft))
}

interface SourceState {
  readonly name: string
  readonly seqMode: 'seq' | 'none' | 'mixed'
  seq: number
  offlineUntil: number
  readonly backlog: StreamEvent[]
  readonly sent: StreamEvent[]
}

export function buildTraffic(d: TrafficDraft): PlanCase {
  const random = seededRandom(d.rngSeed)
  const int = (n: number) => Math.floor(random() * n)
  const chance = (p: number) => random() * 100 < p
  const modes = ['seq', 'none', 'mixed'] as const
  const sources: SourceState[] = Array.from({ length: d.sources }, (_, i) => ({
    name: SOURCE_POOL[i % SOURCE_POOL.length] as string,
    seqMode: d.seqMode === 'any' ? (modes[int(3)] as SourceState['seqMode']) : d.seqMode,
    seq: 0,
    offlineUntil: -1,
    backlog: [],
    sent: [],
  }))
  const schedule = new Map<number, StreamEvent[]>()
  const deliver = (round: number, event: StreamEvent) => {
    const list = schedule.get(round)
    if (list === undefined) schedule.set(round, [event])
    else list.push(event)
  }
  const lastRound = d.rounds + d.delayRounds + d.offlineRounds + 8
  for (let r = 0; r < d.rounds; r++) {
    sources.forEach((s, index) => {
      const offline = r < s.offlineUntil
      if (!offline && chance(d.offlinePercent)) s.offlineUntil = r + 1 + int(d.offlineRounds)
      const count = int(d.perRound + 1)
      for (let j = 0; j < count; j++) {
        let ts = r * d.stepMs - (index === 0 ? d.laggard : 0) - int(d.jitter + 1)
        if (chance(d.backPercent)) ts -= 10 + int(60)
        const withSeq = s.seqMode === 'seq' || (s.seqMode === 'mixed' && random() < 0.7)
        s.seq++
        const key = KEY_POOL[int(d.keys)]
        const event: StreamEvent = {
          id: `${s.name}#${s.seq}`,
          source: s.name,
          ts,
          value: int(101) - 50,
          ...(withSeq ? { seq: s.seq } : {}),
          ...(key === undefined ? {} : { key }),
        }
        if (r < s.offlineUntil) s.backlog.push(event)
        else {
          const delay = chance(d.delayPercent) ? d.delayRounds + int(d.delayRounds) : random() < 0.3 ? int(3) : 0
          deliver(r + delay, event)
          s.sent.push(event)
        }
        if (chance(d.dupPercent)) deliver(r + int(6), { ...event })
      }
      if (r + 1 === s.offlineUntil || (r + 1 === d.rounds && s.backlog.length > 0)) {
        // Reconnect: the backlog in order, spread over a few rounds, plus a re-send of recent history.
        const spread = 1 + int(3)
        s.backlog.forEach((e, k) => {
          deliver(r + 1 + Math.floor((k * spread) / Math.max(1, s.backlog.length)), e)
        })
        for (const e of s.sent.slice(-8)) if (chance(d.resendPercent)) deliver(r + 1, { ...e })
        s.sent.push(...s.backlog.splice(0))
      }
    })
  }

  const ops: FuzzOp[] = []
  let maxTs = 0
  let bad = 0
  let quotaOn = false
  const finishing = seededRandom(d.rngSeed ^ 0x5f1a15)
  const delivered = new Set<string>()
  for (let r = 0; r <= lastRound; r++) {
    const due = schedule.get(r)
    if (due === undefined && r >= d.rounds) continue
    ops.push({ kind: 'clock', to: r * d.slotMs })
    if (due !== undefined) {
      // Interleave sources: a stable shuffle of what is due this round.
      const order = due.map((event) => ({ event, k: random() }))
      if (random() < 0.5) order.sort((a, b) => a.k - b.k)
      let batch: unknown[] = []
      const flush = () => {
        if (batch.length === 0) return
        ops.push({ kind: 'ingest', events: batch as StreamEvent[] })
        batch = []
      }
      for (const { event } of order) {
        if (batch.length > 0 && chance(d.fragment)) flush()
        if (chance(d.invalidPercent)) {
          const input = malformedInput(random, bad++, sources.map((s) => s.name))
          batch.push(input)
          const ts = (input as { ts?: unknown } | null)?.ts
          if (typeof ts === 'number' && Math.abs(ts) <= MAX_ABS_TS) maxTs = Math.max(maxTs, ts)
        }
        batch.push(event)
        delivered.add(event.source)
        maxTs = Math.max(maxTs, event.ts)
      }
      flush()
    }
    if (finishing() * 100 < d.finishPercent) {
      const known = [...delivered]
      const pool = known.length === 0 || finishing() < 0.2 ? SOURCE_POOL.filter((name) => !delivered.has(name)) : known
      const source = pool[Math.floor(finishing() * pool.length)]
      if (source !== undefined) ops.push({ kind: 'finish', source })
    }
    if (chance(d.tickPercent)) ops.push({ kind: 'tick' })
    if (d.watermark.kind === 'manual' && random() < 0.3) ops.push({ kind: 'advanceWatermark', to: maxTs - int(25) })
    if (chance(d.checkpointPercent)) ops.push({ kind: 'checkpoint' })
    if (chance(d.crashPercent)) ops.push({ kind: 'crash' })
    if (chance(d.quotaPercent) || (quotaOn && random() < 0.5)) {
      quotaOn = !quotaOn
      ops.push({ kind: 'quota', full: quotaOn })
    }
  }
  if (quotaOn) ops.push({ kind: 'quota', full: false })
  const last = (lastRound + 1) * d.slotMs
  ops.push({ kind: 'clock', to: last + 1000 }, { kind: 'tick' })
  if (d.watermark.kind === 'manual') ops.push({ kind: 'advanceWatermark', to: maxTs + 30 })
  if (d.probe) {
    const reach = Math.max(...d.windows.map((w) => (w.kind === 'session' ? w.gap : w.size)))
    const retention = Number.isFinite(d.retention) ? d.retention : 0
    const t = maxTs + reach + d.allowedLateness + retention + 100
    // The clock catches up with the probe's time, so that no maxFutureSkew refuses it.
    if (t < MAX_ABS_TS / 2) ops.push({ kind: 'clock', to: Math.max(last + 1000, t + 1) }, { kind: 'advanceWatermark', to: t }, { kind: 'tick' })
    ops.push({ kind: 'probe', events: [{ id: 'probe#1', source: 'probe', seq: 1, ts: t + 1, value: 1 }] })
  }
  return {
    config: {
      windows: d.windows,
      watermark: d.watermark,
      allowedLateness: d.allowedLateness,
      idleTimeout: d.idleTimeout,
      retention: d.retention,
      trigger: { early: d.early, late: d.late },
      accumulation: d.accumulation,
      ...(d.maxFutureSkew === undefined ? {} : { maxFutureSkew: d.maxFutureSkew }),
      ...(d.aggregates === undefined ? {} : { aggregates: d.aggregates }),
    },
    ...(d.limits === undefined ? {} : { limits: d.limits }),
    ops,
  }
}

/** Op-list reductions plus configuration simplifications, for the delta debugger. */
export function* planReductions(testCase: PlanCase, opLists: (ops: readonly FuzzOp[]) => Iterable<FuzzOp[]>): Generator<PlanCase> {
  for (const ops of opLists(testCase.ops)) yield { ...testCase, ops }
  const c = testCase.config
  if (c.windows.length > 1) {
    for (let i = 0; i < c.windows.length; i++) yield { ...testCase, config: { ...c, windows: c.windows.filter((_, k) => k !== i) } }
  }
  if (c.allowedLateness !== 0) yield { ...testCase, config: { ...c, allowedLateness: 0 } }
  if (c.retention !== Number.POSITIVE_INFINITY) yield { ...testCase, config: { ...c, retention: Number.POSITIVE_INFINITY } }
  if (c.idleTimeout !== Number.POSITIVE_INFINITY) yield { ...testCase, config: { ...c, idleTimeout: Number.POSITIVE_INFINITY } }
  if (c.trigger !== undefined) {
    const { trigger: _trigger, ...defaults } = c
    yield { ...testCase, config: defaults }
  }
  if (c.accumulation === 'discarding') yield { ...testCase, config: { ...c, accumulation: 'accumulating' } }
  if (c.maxFutureSkew !== undefined) {
    const { maxFutureSkew: _skew, ...defaults } = c
    yield { ...testCase, config: defaults }
  }
  if (c.aggregates !== undefined) {
    const { aggregates: _aggregates, ...none } = c
    yield { ...testCase, config: none }
  }
}

export function describePlan(testCase: PlanCase): string {
  const events = testCase.ops.reduce((n, op) => n + ('events' in op ? op.events.length : 0), 0)
  const finishes = testCase.ops.filter((op) => op.kind === 'finish').length
  const c = testCase.config
  const wm = c.watermark.kind === 'bounded' ? `bounded(${c.watermark.outOfOrderness})` : 'manual'
  const early = c.trigger?.early?.kind ?? 'every_element'
  const late = c.trigger?.late?.kind ?? 'every_element'
  const panes = `${c.accumulation ?? 'accumulating'} early ${early} late ${late}${c.maxFutureSkew === undefined ? '' : ` skew ${c.maxFutureSkew}`}${c.aggregates === undefined ? '' : ` aggregates ${Object.keys(c.aggregates).join(',')}`}`
  const limits = testCase.limits === undefined ? '' : ` limits ${JSON.stringify(testCase.limits)}`
  return `${testCase.ops.length} ops, ${events} events${finishes === 0 ? '' : `, ${finishes} finishes`}; windows ${c.windows.map((w) => w.id).join(',')} ${wm} lateness ${c.allowedLateness} idle ${c.idleTimeout} retention ${c.retention}; ${panes}${limits}`
}
