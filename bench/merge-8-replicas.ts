/**
 * merge-8-replicas: a fresh replica joins 8 writer replicas holding 10k live cells each
 * (100 keys × 100 one-minute windows, one source per writer, 2 readings per cell), so every
 * window ends up with 8 cells. The target: the merge takes under 50 ms.
 *
 * Contenders, on the same prepared state:
 * - tidemark: the engine alone, one `mergeRemoteGroups` per writer (its cells packed as the doc
 *   carries them, one group per window start, and its clock), as
 *   the binding calls it for one Yjs update per writer. Every call settles the windows it
 *   touched: the first writer's clock already proves the windows complete, so they fire on the
 *   first call and the other 7 calls correct every window (results, history, notifications).
 * - tidemark-one-call: the engine alone, all 800 groups and 8 clocks in one `mergeRemoteGroups` (what
 *   one sync step carrying every writer, e.g. from a y-websocket server, becomes).
 * - through-yjs: the whole path, `createEngine({ doc })` and the 8 writers' Yjs updates applied
 *   to its doc (Yjs decoding and integrating, the binding's validation and index, the engine's
 *   merges). The doc-size measurement (every 5 s of processing time) is left out: `now` is fixed.
 * - through-yjs-one-update: the same, the 8 updates merged into one (a server's sync step 2).
 * - through-yjs-one-update-logged: the same join by an engine with a write-ahead log, as
 *   `openEngine({ doc })` runs it: the merge is encoded as a log record (cell groups, CRC-32)
 *   before it is applied. The IndexedDB write itself runs off the main thread and is left out.
 * - bind-loaded-doc: the same state the other way round: the one update applied to a fresh doc
 *   first (a persisted doc loaded, or the doc a tab taking over a worker's replica finds), then
 *   `createEngine` and `bindDoc`, whose first contact reads every log and merges it in one call.
 * - yjs-decode: the same 8 updates applied to a bare `Y.Doc`: what Yjs itself costs, the floor
 *   of through-yjs.
 * - plain-loop: the least work that gives the same window totals from the same groups: nested
 *   Maps keep the newest cell per (key, start, source), then one pass adds each window's cells.
 *   No validation, no lattice order on ties, no results, no notifications.
 *
 * Figures: time per merge (ms, CPU), cells per CPU-second, the engine's share of the floor, the
 * Yjs share of through-yjs, and the encoded doc's bytes per cell.
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/merge-8-replicas.ts
 */
import {
  type CellEntry,
  type CellGroup,
  type ClockEntry,
  createEngine,
  type Engine,
  type EngineOptions,
  groupCellEntries,
  manual,
  type ReplicaPort,
  type StreamEvent,
  TidemarkEngine,
  tumbling,
} from '@tidemark/engine'
import { encodeWalRecord } from '@tidemark/idb'
import { bindDoc } from '@tidemark/yjs'
import * as Y from 'yjs'
import type { Contender, Outcome } from './harness/contender.ts'
import { windowTotalId, type WindowTotals } from './harness/contender.ts'
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { isMain } from './measure.ts'

const MINUTE = 60_000
const T0 = 1_700_000_000_000 - (1_700_000_000_000 % MINUTE)
const WRITERS = 8
const OPTIONS: Omit<EngineOptions, 'replicaId'> = { windows: tumbling(MINUTE), watermark: manual(), retention: Number.POSITIVE_INFINITY }

/** The engine's replica port (not on the public Engine interface). */
export function portOf(engine: Engine): ReplicaPort {
  return (engine as unknown as { replica: ReplicaPort }).replica
}

/** 10k cells for one writer: 100 keys × 100 one-minute windows, one source, 2 readings per cell. */
export function writerEvents(source: string): StreamEvent[] {
  const events: StreamEvent[] = []
  let seq = 0
  for (let w = 0; w < 100; w++) {
    for (let k = 0; k < 100; k++) {
      for (let r = 0; r < 2; r++) {
        seq++
        events.push({ id: `${source}-${seq}`, source, seq, ts: T0 + w * MINUTE + k * 100 + r, key: `k${k}`, value: (seq % 97) / 4 })
      }
    }
  }
  return events
}

interface WriterState {
  readonly cells: readonly CellEntry[]
  /** The same cells packed as the doc carries them (one group per window start). */
  readonly groups: readonly CellGroup[]
  readonly clocks: readonly ClockEntry[]
  /** Everything this writer's doc holds, as one Yjs update (what a provider's sync step 2 carries). */
  readonly update: Uint8Array
  readonly docBytes: number
}

/** Builds the 8 writers once: each ingests its events with a doc bound, then its state is exported. */
export function writerStates(): WriterState[] {
  return Array.from({ length: WRITERS }, (_, i) => {
    const doc = new Y.Doc()
    const engine = createEngine({ ...OPTIONS, replicaId: `w${i}`, now: () => T0 })
    bindDoc(engine, doc)
    engine.ingest(writerEvents(`d${i}`))
    const state = portOf(engine).exportState()
    const update = Y.encodeStateAsUpdate(doc)
    // Copies: the engine hands out its live cells.
    const cells = state.cells.map((c) => ({ address: { ...c.address }, cell: { ...c.cell } }))
    void engine.close()
    return { cells, groups: groupCellEntries(cells), clocks: state.clocks.map((c) => ({ ...c })), update, docBytes: update.byteLength }
  })
}

/** Counts the changes `engine` hands its subscribers from now on, as an app's one subscriber would take them. */
function changesSeen(engine: Engine): () => number {
  let changes = 0
  engine.subscribe((batch) => {
    changes += batch.length
  })
  return () => changes
}

function engineOutcome(engine: Engine, record: boolean, extra: Record<string, number> = {}): Outcome {
  const stats = engine.stats()
  let totals: WindowTotals | undefined
  if (record) {
    totals = new Map()
    for (const r of engine.results()) totals.set(windowTotalId(r.window, r.key, r.start), { end: r.end, count: r.count, sum: r.sum })
  }
  const outcome: Outcome = {
    end: { liveWindows: stats.openWindows, cells: stats.cells, pending: stats.pending, ...extra },
    counts: { applied: stats.applied, invalidRemote: stats.anomalies.invalid_remote_cell },
    watermark: Number.POSITIVE_INFINITY,
    state: engine,
    close: () => void engine.close(),
  }
  return totals === undefined ? outcome : { ...outcome, totals }
}

function engineContender(writers: readonly WriterState[]): Contender {
  return {
    name: 'tidemark',
    label: 'Tidemark engine alone: one mergeRemoteGroups per writer replica into a fresh engine (validate, merge, settle, results and corrections)',
    run: ({ probe, record }) => {
      const engine = createEngine({ ...OPTIONS, replicaId: 'reader', now: () => T0 })
      const changes = changesSeen(engine)
      const port = portOf(engine)
      for (const w of writers) {
        port.mergeRemoteGroups(w.groups, w.clocks)
        probe.tick()
      }
      return engineOutcome(engine, record, { changes: changes() })
    },
  }
}

function oneCallContender(writers: readonly WriterState[]): Contender {
  const groups = writers.flatMap((w) => w.groups)
  const clocks = writers.flatMap((w) => w.clocks)
  return {
    name: 'tidemark-one-call',
    label: 'Tidemark engine alone: every writer\'s cell groups and clocks in one mergeRemoteGroups',
    run: ({ record }) => {
      const engine = createEngine({ ...OPTIONS, replicaId: 'reader', now: () => T0 })
      const changes = changesSeen(engine)
      portOf(engine).mergeRemoteGroups(groups, clocks)
      return engineOutcome(engine, record, { changes: changes() })
    },
  }
}

function throughYjsContender(writers: readonly WriterState[], merged: boolean): Contender {
  const cellsPerWriter = (writers[0] as WriterState).cells.length
  const updates = merged ? [Y.mergeUpdates(writers.map((w) => w.update))] : writers.map((w) => w.update)
  return {
    name: merged ? 'through-yjs-one-update' : 'through-yjs',
    label: merged
      ? 'Tidemark through Yjs: the writers\' updates merged into one (a server\'s sync step 2) applied to the doc of an engine bound with bindDoc'
      : 'Tidemark through Yjs: an engine bound with bindDoc and one Yjs update per writer applied to its doc (decode, binding validation and index, merge)',
    run: ({ probe, record }) => {
      const doc = new Y.Doc()
      const engine = createEngine({ ...OPTIONS, replicaId: 'reader', now: () => T0 })
      bindDoc(engine, doc)
      const changes = changesSeen(engine)
      for (const update of updates) {
        Y.applyUpdate(doc, update, 'peer')
        probe.tick()
      }
      const bytesPerCell = Math.round((writers[0] as WriterState).docBytes / cellsPerWriter)
      return engineOutcome(engine, record, { changes: changes(), bytesPerCell })
    },
  }
}

function loggedJoinContender(writers: readonly WriterState[]): Contender {
  const update = Y.mergeUpdates(writers.map((w) => w.update))
  return {
    name: 'through-yjs-one-update-logged',
    label: 'Tidemark through Yjs with a write-ahead log: the one-update join, the merge encoded as a log record before it is applied (openEngine\'s synchronous part)',
    run: ({ probe, record }) => {
      const doc = new Y.Doc()
      const engine = new TidemarkEngine({ ...OPTIONS, replicaId: 'reader', now: () => T0 })
      let lsn = 0
      let walBytes = 0
      engine.attachLog({
        record: (op) => {
          walBytes += encodeWalRecord(++lsn, op).byteLength
          return Promise.resolve()
        },
        blocked: null,
        stats: () => ({ walRecords: lsn, walBytes }),
      })
      bindDoc(engine, doc)
      const changes = changesSeen(engine)
      Y.applyUpdate(doc, update, 'peer')
      probe.tick()
      return engineOutcome(engine, record, { changes: changes(), walBytes })
    },
  }
}

function boundAfterLoadContender(writers: readonly WriterState[]): Contender {
  const update = Y.mergeUpdates(writers.map((w) => w.update))
  return {
    name: 'bind-loaded-doc',
    label: "Tidemark bound to a doc that already holds the writers' state: the one update applied to a fresh doc, then createEngine and bindDoc (first contact merges every log in one call)",
    run: ({ probe, record }) => {
      const doc = new Y.Doc()
      Y.applyUpdate(doc, update, 'load')
      probe.tick()
      const engine = createEngine({ ...OPTIONS, replicaId: 'reader', now: () => T0 })
      const changes = changesSeen(engine)
      bindDoc(engine, doc)
      probe.tick()
      return engineOutcome(engine, record, { changes: changes() })
    },
  }
}

function yjsDecodeContender(writers: readonly WriterState[]): Contender {
  return {
    name: 'yjs-decode',
    label: 'Yjs alone: the same updates applied to a bare Y.Doc (the floor of through-yjs)',
    run: ({ probe }) => {
      const doc = new Y.Doc()
      for (const w of writers) {
        Y.applyUpdate(doc, w.update, 'peer')
        probe.tick()
      }
      return { end: {}, counts: {}, state: doc }
    },
  }
}

interface FloorCell {
  count: number
  sum: number
  version: number
}

function plainLoopContender(writers: readonly WriterState[]): Contender {
  return {
    name: 'plain-loop',
    label: 'plain loop floor: nested Maps keep the newest cell per (key, start, source), then one pass sums each window',
    run: ({ probe, record }) => {
      const byKey = new Map<string, Map<number, Map<string, FloorCell>>>()
      for (const w of writers) {
        for (const group of w.groups) {
          const { keys, columns, start, source } = group
          const n = keys.length
          for (let i = 0; i < n; i++) {
            const key = keys[i] as string
            let byStart = byKey.get(key)
            if (byStart === undefined) {
              byStart = new Map()
              byKey.set(key, byStart)
            }
            let bySource = byStart.get(start)
            if (bySource === undefined) {
              bySource = new Map()
              byStart.set(start, bySource)
            }
            const version = columns[5 * n + i] as number
            const mine = bySource.get(source)
            if (mine === undefined || version > mine.version) bySource.set(source, { count: columns[i] as number, sum: columns[n + i] as number, version })
          }
        }
        probe.tick()
      }
      const totals: WindowTotals = new Map()
      let windows = 0
      for (const [key, byStart] of byKey) {
        for (const [start, bySource] of byStart) {
          let count = 0
          let sum = 0
          for (const cell of bySource.values()) {
            count += cell.count
            sum += cell.sum
          }
          windows++
          if (record) totals.set(windowTotalId(`tumbling:${MINUTE}`, key, start), { end: start + MINUTE, count, sum })
        }
      }
      const outcome: Outcome = { end: { liveWindows: windows }, counts: {}, watermark: Number.POSITIVE_INFINITY, state: byKey }
      return record ? { ...outcome, totals } : outcome
    },
  }
}

export function define(): ProfileDefinition {
  const writers = writerStates()
  const cells = writers.reduce((n, w) => n + w.cells.length, 0)
  return {
    name: 'merge-8-replicas',
    description: `a fresh replica merges ${WRITERS} writer replicas × ${((writers[0] as WriterState).cells.length / 1000).toFixed(0)}k live cells (100 keys × 100 one-minute windows each, 8 cells per window); target < 50 ms`,
    events: cells,
    batches: WRITERS,
    contenders: [
      engineContender(writers),
      oneCallContender(writers),
      throughYjsContender(writers, false),
      throughYjsContender(writers, true),
      loggedJoinContender(writers),
      boundAfterLoadContender(writers),
      yjsDecodeContender(writers),
      plainLoopContender(writers),
    ],
    ratios: [
      { name: 'engine/floor', label: 'Tidemark merge throughput as a share of the plain-loop floor', subject: 'tidemark', reference: 'plain-loop', format: 'percent' },
      { name: 'yjs-share', label: 'Yjs alone as a share of the through-Yjs time', subject: 'through-yjs', reference: 'yjs-decode', format: 'percent' },
      {
        name: 'loaded/join',
        label: 'binding a doc that holds the state, as a share of the one-update join (the same decode and merge, in the other order)',
        subject: 'bind-loaded-doc',
        reference: 'through-yjs-one-update',
        format: 'percent',
      },
    ],
    agree: [
      ['tidemark', 'plain-loop'],
      ['tidemark-one-call', 'plain-loop'],
      ['through-yjs', 'plain-loop'],
      ['through-yjs-one-update', 'plain-loop'],
      ['through-yjs-one-update-logged', 'plain-loop'],
      ['bind-loaded-doc', 'plain-loop'],
    ],
    showTimes: true,
    showGauges: ['bytesPerCell'],
    // What a fresh replica receives when it joins: a server's sync step 2 (or a tab's) is one update.
    timeTarget: { contender: 'through-yjs-one-update', maxMs: 50 },
    rounds: 7,
  }
}

if (isMain(import.meta.url)) await runProfileCli(define)
