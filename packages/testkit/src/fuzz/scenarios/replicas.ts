/**
 * Replica partitions with anti-entropy: 2-4 in-process replicas, each writing its own
 * sources, exchanging `LocalWrite`s through a network that reorders, repeats and (under
 * partition) drops them, with crashes, manual watermark moves and sources finished by their
 * writer (which keeps generating events for them: they must be refused); then heal and
 * `exportState()` anti-entropy. See checks/replicaRun.ts for the invariants.
 */
import fc from 'fast-check'
import type { AggregateDefinitions, StreamEvent } from '@tidemark/engine'
import { type ReplicaCase, type ReplicaOp, type ReplicaPanes, runReplicas } from '../checks/replicaRun.ts'
import { EARLY_TRIGGERS, LATE_TRIGGERS, PLAN_AGGREGATES } from '../../model/streamPlan.ts'
import type { Scenario } from '../scenario.ts'
import { opListReductions } from '../shrink.ts'
import { WINDOW_POOL } from '../traffic.ts'

const KEYS = ['a', 'b', '__proto__', undefined] as const

const DEFAULT_PANES: ReplicaPanes = { trigger: { early: { kind: 'every_element' }, late: { kind: 'every_element' } }, accumulation: 'accumulating' }

const rawEvent = fc.record({
  source: fc.nat(7),
  dt: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 12 }) }, { weight: 1, arbitrary: fc.integer({ min: -20, max: -1 }) }),
  key: fc.nat(KEYS.length - 1),
  value: fc.integer({ min: -50, max: 50 }),
  /** Re-send an earlier event of the source instead (a duplicate through the owner). */
  copy: fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
})

type RawEvent = typeof rawEvent extends fc.Arbitrary<infer T> ? T : never

const rawOp = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('ingest' as const), replica: fc.nat(3), events: fc.array(rawEvent, { minLength: 1, maxLength: 8 }) }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('deliver' as const), from: fc.nat(3), to: fc.nat(3), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('flood' as const), to: fc.nat(3), seed: fc.integer() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('partition' as const), groups: fc.array(fc.nat(2), { minLength: 4, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('heal' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('advance' as const), replica: fc.nat(3), behind: fc.nat(40) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const), replica: fc.nat(3), ms: fc.nat(100) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('checkpoint' as const), replica: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('crash' as const), replica: fc.nat(3) }) },
  /** The replica finishes one of the sources it writes (one that has not sent yet, too). */
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('finish' as const), replica: fc.nat(3), source: fc.nat(7) }) },
)

type RawOp = typeof rawOp extends fc.Arbitrary<infer T> ? T : never

/** Some replicas emit other panes than the defaults (replica 0, the reference, never does). */
const replicaPanes: fc.Arbitrary<ReplicaPanes | null> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(null) },
  {
    weight: 1,
    arbitrary: fc.record({
      trigger: fc.record({ early: EARLY_TRIGGERS, late: LATE_TRIGGERS }),
      accumulation: fc.constantFrom('accumulating' as const, 'discarding' as const),
    }),
  },
)

function build(draft: {
  replicas: number
  sources: number
  panes: (ReplicaPanes | null)[]
  windows: ReplicaCase['windows']
  aggregates: AggregateDefinitions | undefined
  mode: 'pure' | 'manual' | 'bounded'
  lag: number
  allowedLateness: number
  antiEntropySeed: number
  antiEntropy: ReplicaCase['antiEntropy']
  ops: RawOp[]
}): ReplicaCase {
  const R = draft.replicas
  const seqs = new Map<string, number>()
  const clocks = new Map<string, number>()
  const history = new Map<string, StreamEvent[]>()
  let maxTs = 0
  let now = 0
  // Sources s0..s(S-1); s<j> is written by replica j % R.
  const ownedBy = (replica: number) => Array.from({ length: draft.sources }, (_, j) => j).filter((j) => j % R === replica)
  const event = (replica: number, raw: RawEvent): StreamEvent | null => {
    const owned = ownedBy(replica)
    if (owned.length === 0) return null
    const source = `s${owned[raw.source % owned.length]}`
    const past = history.get(source) ?? []
    if (raw.copy && past.length > 0) return { ...(past[Math.abs(raw.value) % past.length] as StreamEvent) }
    const seq = (seqs.get(source) ?? 0) + 1
    const ts = (clocks.get(source) ?? 0) + raw.dt
    seqs.set(source, seq)
    clocks.set(source, Math.max(ts, clocks.get(source) ?? 0))
    maxTs = Math.max(maxTs, ts)
    const key = KEYS[raw.key]
    const e: StreamEvent = { id: `${source}#${seq}`, source, seq, ts, value: raw.value, ...(key === undefined ? {} : { key }) }
    past.push(e)
    history.set(source, past)
    return e
  }
  const ops: ReplicaOp[] = []
  for (const op of draft.ops) {
    switch (op.kind) {
      case 'ingest': {
        const replica = op.replica % R
        const events = op.events.map((raw) => event(replica, raw)).filter((e): e is StreamEvent => e !== null)
        if (events.length > 0) ops.push({ kind: 'ingest', replica, events })
        break
      }
      case 'deliver':
        ops.push({ kind: 'deliver', from: op.from % R, to: op.to % R, pick: op.pick })
        break
      case 'flood':
        ops.push({ kind: 'flood', to: op.to % R, seed: op.seed })
        break
      case 'partition':
        ops.push({ kind: 'partition', groups: op.groups.slice(0, R) })
        break
      case 'heal':
        ops.push({ kind: 'heal' })
        break
      case 'advance':
        if (draft.mode !== 'pure') ops.push({ kind: 'advance', replica: op.replica % R, to: maxTs - op.behind })
        break
      case 'tick':
        now += op.ms
        ops.push({ kind: 'clock', to: now }, { kind: 'tick', replica: op.replica % R })
        break
      case 'checkpoint':
      case 'crash':
        ops.push({ kind: op.kind, replica: op.replica % R })
        break
      case 'finish': {
        const owned = ownedBy(op.replica % R)
        if (owned.length > 0) ops.push({ kind: 'finish', replica: op.replica % R, source: `s${owned[op.source % owned.length]}` })
        break
      }
    }
  }
  const panes = draft.panes.slice(0, R).map((p, i) => (i === 0 ? null : p))
  return {
    windows: draft.windows,
    ...(draft.aggregates === undefined ? {} : { aggregates: draft.aggregates }),
    ...(panes.some((p) => p !== null) ? { panes: panes.map((p) => p ?? DEFAULT_PANES) } : {}),
    lag: draft.mode === 'bounded' ? draft.lag : null,
    allowedLateness: draft.allowedLateness,
    replicas: R,
    antiEntropySeed: draft.antiEntropySeed,
    antiEntropy: draft.antiEntropy,
    ops,
  }
}

export const replicaPartitions: Scenario<ReplicaCase> = {
  name: 'replica-partitions',
  family: 'replicas',
  summary: '2-4 replicas via ReplicaPort: reordered, repeated, dropped writes under partitions, crashes; heal + exportState anti-entropy',
  arbitrary: fc
    .record({
      replicas: fc.integer({ min: 2, max: 4 }),
      sources: fc.integer({ min: 1, max: 8 }),
      panes: fc.array(replicaPanes, { minLength: 4, maxLength: 4 }),
      windows: fc.subarray([...WINDOW_POOL], { minLength: 1, maxLength: 3 }),
      aggregates: PLAN_AGGREGATES,
      mode: fc.constantFrom('pure', 'pure', 'manual', 'bounded'),
      lag: fc.constantFrom(0, 5, 20),
      allowedLateness: fc.constantFrom(0, 10, 40),
      antiEntropySeed: fc.integer(),
      antiEntropy: fc.constantFrom('export-echo', 'export', 'log'),
      ops: fc.array(rawOp, { minLength: 1, maxLength: 60 }),
    })
    .map(build),
  check: runReplicas,
  *reduce(testCase) {
    for (const ops of opListReductions(testCase.ops)) yield { ...testCase, ops }
    if (testCase.windows.length > 1) {
      for (let i = 0; i < testCase.windows.length; i++) yield { ...testCase, windows: testCase.windows.filter((_, k) => k !== i) }
    }
    if (testCase.allowedLateness !== 0) yield { ...testCase, allowedLateness: 0 }
    if (testCase.lag !== null) yield { ...testCase, lag: null }
    if (testCase.antiEntropy !== 'log') yield { ...testCase, antiEntropy: 'log' }
    if (testCase.aggregates !== undefined) {
      const { aggregates: _aggregates, ...without } = testCase
      yield without
    }
  },
  describe(testCase) {
    const events = testCase.ops.reduce((n, op) => n + (op.kind === 'ingest' ? op.events.length : 0), 0)
    const kinds = new Map<string, number>()
    for (const op of testCase.ops) kinds.set(op.kind, (kinds.get(op.kind) ?? 0) + 1)
    return `${testCase.replicas} replicas, anti-entropy ${testCase.antiEntropy}, ${testCase.ops.length} ops (${[...kinds].map(([k, n]) => `${k} ${n}`).join(', ')}), ${events} events; windows ${testCase.windows.map((w) => w.id).join(',')} ${testCase.lag === null ? 'manual' : `bounded(${testCase.lag})`} lateness ${testCase.allowedLateness}${testCase.aggregates === undefined ? '' : ` aggregates ${Object.keys(testCase.aggregates).join(',')}`}`
  },
}
