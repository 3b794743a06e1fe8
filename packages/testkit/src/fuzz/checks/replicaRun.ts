/**
 * In-process replicas exchanging lattice state through the `ReplicaPort`: each source is
 * written by exactly one replica; every local write becomes a message that the network
 * delivers late, out of order, repeatedly or never (partitions drop it). At the end the
 * partition heals and anti-entropy runs (every replica merges every other's
 * `exportState()`, in a seeded order, for as many rounds as there are replicas). Then:
 *
 * - every replica shows the same window values;
 * - nothing an owner accepted was lost: each owner's own cells are what they were before
 *   anti-entropy, and the converged values are the join of all owners' own cells;
 * - a correct peer's state is never flagged (`invalid_remote_cell`, `source_conflict`);
 * - with a watermark that never moves, the values equal one engine that saw every event;
 * - sources finished by their writer (`finish`; one engine that saw everything finishes them
 *   too): every replica ends with the clocks and the proof frontier of that one engine, and the
 *   writers refused as `finished_source` what it refused;
 * - every receipt balances, and a crashed replica recovers exactly (merges are journaled
 *   through the WAL codec too).
 */
import {
  type Accumulation,
  type AggregateDefinitions,
  boundedOutOfOrderness,
  type CellEntry,
  cellKey,
  type ClockEntry,
  createEngine,
  type Engine,
  type LocalWrite,
  manual,
  type StreamEvent,
  type TidemarkEngine,
  type Trigger,
  type WindowSpec,
} from '@tidemark/engine'
import { seededRandom } from '@tidemark/seeded-random'
import { check, checkEqual } from '../invariant.ts'
import type { Meter } from '../scenario.ts'
import { checkAccounting } from './planRun.ts'
import { crashAndRecover, FuzzJournal, type StoredCheckpoint, takeCheckpoint } from './walWriter.ts'

export type ReplicaOp =
  | { readonly kind: 'ingest'; readonly replica: number; readonly events: readonly StreamEvent[] }
  /** Delivers one message of `from` (any, old or new: reordering and repeats) to `to`. */
  | { readonly kind: 'deliver'; readonly from: number; readonly to: number; readonly pick: number }
  /** Delivers every message `to` has not had yet from reachable peers, shuffled. */
  | { readonly kind: 'flood'; readonly to: number; readonly seed: number }
  /** Replica i joins group groups[i]; messages cross no group boundary. */
  | { readonly kind: 'partition'; readonly groups: readonly number[] }
  | { readonly kind: 'heal' }
  | { readonly kind: 'advance'; readonly replica: number; readonly to: number }
  | { readonly kind: 'clock'; readonly to: number }
  | { readonly kind: 'tick'; readonly replica: number }
  | { readonly kind: 'checkpoint'; readonly replica: number }
  | { readonly kind: 'crash'; readonly replica: number }
  /** The replica finishes `source`, which it writes. */
  | { readonly kind: 'finish'; readonly replica: number; readonly source: string }

/** A replica's local choices of what it emits: panes are local, the replicated state is the full lattice whatever they are. */
export interface ReplicaPanes {
  readonly trigger: { readonly early: Trigger; readonly late: Trigger }
  readonly accumulation: Accumulation
}

export interface ReplicaCase {
  readonly windows: readonly WindowSpec[]
  /** Aggregates every replica keeps (the same everywhere: part of the configuration); absent: none. */
  readonly aggregates?: AggregateDefinitions
  /** Per replica (replica 0 always the defaults, the reference); absent: defaults everywhere. */
  readonly panes?: readonly ReplicaPanes[]
  /** `null`: manual watermark. */
  readonly lag: number | null
  readonly allowedLateness: number
  readonly replicas: number
  readonly antiEntropySeed: number
  /**
   * How replicas catch up after the partition heals:
   * - `export-echo`: every replica merges every other's `exportState()`, its own sources'
   *   cells included, as peers hold them (a generic transport);
   * - `export`: the same without a replica's own sources (each reads only the others' state);
   * - `log`: every write a replica has not had yet is delivered, shuffled (what a Yjs
   *   state-vector exchange amounts to: the missing log entries).
   */
  readonly antiEntropy: 'export-echo' | 'export' | 'log'
  readonly ops: readonly ReplicaOp[]
}

interface Replica {
  engine: TidemarkEngine
  readonly journal: FuzzJournal
  stored: StoredCheckpoint
  readonly outbox: LocalWrite[]
  /** `${from}:${index}` of messages already delivered here, for `flood`. */
  readonly received: Set<string>
}

export function replicaId(i: number): string {
  return `r${i}`
}

export function values(engine: TidemarkEngine) {
  return engine.results().map((r) => {
    const { window, key, start, end, count, sum, min, max } = r
    const aggregates = (r as { aggregates?: unknown }).aggregates
    return aggregates === undefined ? { window, key, start, end, count, sum, min, max } : { window, key, start, end, count, sum, min, max, aggregates }
  })
}

/** The aggregates option of a case, spread into engine options. */
function aggregatesOf(testCase: ReplicaCase): { aggregates?: AggregateDefinitions } {
  return testCase.aggregates === undefined ? {} : { aggregates: testCase.aggregates }
}

/**
 * What a replica's replicated state shows, whatever panes it emits: its whole state merged into
 * a fresh engine with the default panes (every window's whole value).
 */
function stateValues(engine: TidemarkEngine, testCase: ReplicaCase) {
  const view = createEngine({
    windows: testCase.windows,
    watermark: manual(),
    allowedLateness: testCase.allowedLateness,
    retention: Number.POSITIVE_INFINITY,
    replicaId: 'state-view',
    ...aggregatesOf(testCase),
  }) as TidemarkEngine<AggregateDefinitions>
  const state = structuredClone(engine.replica.exportState())
  view.replica.mergeRemote(state.cells, state.clocks)
  return values(view)
}

/** Cells of the sources this engine writes, in a canonical order. */
function ownCells(engine: TidemarkEngine): { cells: CellEntry[]; clocks: ClockEntry[] } {
  const state = structuredClone(engine.replica.exportState())
  const mine = new Set(state.clocks.filter((c) => c.writer === engine.replicaId).map((c) => c.source))
  const key = (e: CellEntry) => cellKey(e.address.window, e.address.key, e.address.start, e.address.source)
  const cells = state.cells.filter((c) => mine.has(c.address.source)).sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
  const clocks = state.clocks.filter((c) => c.writer === engine.replicaId).sort((a, b) => (a.source < b.source ? -1 : 1))
  return { cells, clocks }
}

export async function runReplicas(testCase: ReplicaCase, meter: Meter): Promise<void> {
  const clock = { now: 0 }
  const make = (i: number) => (now: () => number) =>
    createEngine({
      windows: testCase.windows,
      watermark: testCase.lag === null ? manual() : boundedOutOfOrderness(testCase.lag),
      allowedLateness: testCase.allowedLateness,
      retention: Number.POSITIVE_INFINITY,
      replicaId: replicaId(i),
      now,
      ...aggregatesOf(testCase),
      ...(i === 0 ? {} : (testCase.panes?.[i] ?? {})),
    }) as TidemarkEngine<AggregateDefinitions>
  const replicas: Replica[] = []
  const wire = (r: Replica) => {
    r.engine.attachLog(r.journal)
    // A write is only valid during the call (its cells are live state): copy it, as a transport would.
    r.engine.replica.onLocalWrite((write) => r.outbox.push(structuredClone(write)))
  }
  for (let i = 0; i < testCase.replicas; i++) {
    const journal = new FuzzJournal()
    const engine = make(i)(() => clock.now)
    const r: Replica = { engine, journal, stored: takeCheckpoint(engine, journal), outbox: [], received: new Set() }
    wire(r)
    replicas.push(r)
  }
  const single = createEngine({ windows: testCase.windows, watermark: manual(), retention: Number.POSITIVE_INFINITY, replicaId: 'single', ...aggregatesOf(testCase) })
  let pure = testCase.lag === null
  let groups: readonly number[] = replicas.map(() => 0)
  const linked = (a: number, b: number) => (groups[a] ?? 0) === (groups[b] ?? 0)
  const deliver = (from: number, to: number, index: number) => {
    const write = replicas[from]?.outbox[index]
    const target = replicas[to]
    if (write === undefined || target === undefined || from === to || !linked(from, to)) return
    target.received.add(`${from}:${index}`)
    target.engine.replica.mergeRemote(structuredClone(write.cells), structuredClone(write.clocks))
    meter.checks++
  }

  testCase.ops.forEach((op, step) => {
    meter.ops++
    switch (op.kind) {
      case 'ingest': {
        const r = replicas[op.replica]
        if (r === undefined) return
        meter.events += op.events.length
        checkAccounting(r.engine.ingest(op.events), op.events, meter, step)
        single.ingest(op.events)
        return
      }
      case 'deliver': {
        const count = replicas[op.from]?.outbox.length ?? 0
        if (count > 0) deliver(op.from, op.to, op.pick % count)
        return
      }
      case 'flood': {
        const random = seededRandom(op.seed)
        const inbox: [number, number][] = []
        replicas.forEach((r, from) => {
          r.outbox.forEach((_, index) => {
            if (!replicas[op.to]?.received.has(`${from}:${index}`)) inbox.push([from, index])
          })
        })
        for (let i = inbox.length - 1; i > 0; i--) {
          const j = Math.floor(random() * (i + 1))
          ;[inbox[i], inbox[j]] = [inbox[j] as [number, number], inbox[i] as [number, number]]
        }
        for (const [from, index] of inbox) deliver(from, op.to, index)
        return
      }
      case 'partition':
        groups = op.groups
        return
      case 'heal':
        groups = replicas.map(() => 0)
        return
      case 'advance':
        pure = false
        replicas[op.replica]?.engine.advanceWatermark(op.to)
        return
      case 'clock':
        clock.now = op.to
        return
      case 'tick':
        replicas[op.replica]?.engine.tick()
        return
      case 'checkpoint': {
        const r = replicas[op.replica]
        if (r !== undefined) r.stored = takeCheckpoint(r.engine, r.journal)
        return
      }
      case 'crash': {
        const r = replicas[op.replica]
        if (r === undefined) return
        meter.checks++
        r.engine = crashAndRecover(r.engine, make(op.replica), r.journal, r.stored, () => clock.now, step)
        wire(r)
        return
      }
      case 'finish':
        // The journals never refuse writes here: both promises resolve.
        void replicas[op.replica]?.engine.finishSource(op.source)
        void single.finishSource(op.source)
        return
    }
  })

  // Anti-entropy after the partition heals.
  const before = replicas.map((r) => ownCells(r.engine))
  const random = seededRandom(testCase.antiEntropySeed)
  groups = replicas.map(() => 0)
  if (testCase.antiEntropy === 'log') {
    replicas.forEach((_, to) => {
      const inbox: [number, number][] = []
      replicas.forEach((r, from) => {
        for (let index = 0; index < r.outbox.length; index++) inbox.push([from, index])
      })
      inbox.sort(() => random() - 0.5)
      for (const [from, index] of inbox) if (!replicas[to]?.received.has(`${from}:${index}`)) deliver(from, to, index)
    })
  }
  for (let round = 0; testCase.antiEntropy !== 'log' && round < replicas.length; round++) {
    const pairs: [number, number][] = []
    for (let a = 0; a < replicas.length; a++) for (let b = 0; b < replicas.length; b++) if (a !== b) pairs.push([a, b])
    pairs.sort(() => random() - 0.5)
    for (const [a, b] of pairs) {
      const state = structuredClone((replicas[a] as Replica).engine.replica.exportState())
      const target = (replicas[b] as Replica).engine
      const own = new Set(before[b]?.clocks.map((c) => c.source))
      const cells = testCase.antiEntropy === 'export-echo' ? state.cells : state.cells.filter((c) => !own.has(c.address.source))
      target.replica.mergeRemote(cells, state.clocks)
    }
  }
  const end = testCase.ops.length
  const reference = values((replicas[0] as Replica).engine)
  replicas.forEach((r, i) => {
    meter.checks += 4
    // Replicas that emit other panes show other results; their state is what must converge.
    const own = i === 0 || testCase.panes?.[i] === undefined ? values(r.engine) : stateValues(r.engine, testCase)
    checkEqual(own, reference, `convergence.values(r${i} vs r0)`, end)
    checkEqual(ownCells(r.engine), before[i], 'convergence.owner-lost-data', end)
    const anomalies = r.engine.stats().anomalies
    check(anomalies.invalid_remote_cell === 0, 'convergence.flagged-valid-peer', () => `r${i} flagged ${anomalies.invalid_remote_cell} valid cells invalid`, end)
    check(anomalies.source_conflict === 0, 'convergence.spurious-conflict', () => `r${i} reports ${anomalies.source_conflict} source conflicts`, end)
  })
  const oracle = createEngine({ windows: testCase.windows, watermark: manual(), retention: Number.POSITIVE_INFINITY, replicaId: 'oracle', ...aggregatesOf(testCase) }) as TidemarkEngine<AggregateDefinitions>
  oracle.replica.mergeRemote(
    before.flatMap((b) => b.cells),
    before.flatMap((b) => b.clocks),
  )
  meter.checks++
  checkEqual(reference, values(oracle), 'convergence.join-of-owners', end)
  if (pure) {
    meter.checks++
    checkEqual(reference, values(single as TidemarkEngine<AggregateDefinitions>), 'convergence.single-engine', end)
  }
  // With every change shown at once (replica 0 always), a shown result is the window as it is now.
  const showsAll = (i: number) => i === 0 || (testCase.panes?.[i]?.trigger.early.kind ?? 'every_element') === 'every_element'
  checkClocks(replicas, single, showsAll, meter, end)
}

/** A clock as every replica must end up holding it, whoever writes it. */
function clockView({ writer: _writer, ...clock }: ClockEntry) {
  return { ...clock, finished: clock.finished === true }
}

/**
 * After anti-entropy every replica holds every source's clock as its writer last wrote it: the
 * clocks (finished or not) and the proof frontier of the one engine that saw every event and
 * every finish, and (where `showsAll`) no window at or below its firing frontier is provisional.
 * The writers refused between them as many finished sources' events as it did.
 */
function checkClocks(replicas: readonly Replica[], single: Engine<AggregateDefinitions>, showsAll: (i: number) => boolean, meter: Meter, end: number): void {
  const clocks = (engine: Pick<Engine, 'replica'>) => structuredClone(engine.replica.exportState().clocks).map(clockView).sort((a, b) => (a.source < b.source ? -1 : 1))
  const expected = clocks(single)
  const proof = single.stats().proofFrontier
  let refused = 0
  replicas.forEach((r, i) => {
    meter.checks += 2
    checkEqual(clocks(r.engine), expected, `convergence.clocks(r${i} vs one engine)`, end)
    const p = r.engine.stats().proofFrontier
    check(Object.is(p, proof), 'convergence.proof-frontier', () => `r${i} proof frontier ${p}, one engine that saw everything ${proof}`, end)
    refused += r.engine.stats().anomalies.finished_source
    if (!showsAll(i)) return
    meter.checks++
    const firing = Math.max(r.engine.watermark(), p)
    const unfired = r.engine.results().filter((w) => w.end <= firing && w.status === 'provisional')
    check(unfired.length === 0, 'convergence.unfired', () => `r${i} fires at ${firing} but shows ${JSON.stringify(unfired.slice(0, 2))} provisional`, end)
  })
  meter.checks++
  const expectedRefused = single.stats().anomalies.finished_source
  check(refused === expectedRefused, 'convergence.finished-refusals', () => `the writers refused ${refused} events of finished sources, one engine ${expectedRefused}`, end)
}
