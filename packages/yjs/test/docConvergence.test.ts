/**
 * Real engines, each bound to a Y.Doc of its own, exchanging Yjs updates the way providers
 * do: single updates delivered late, out of order and repeatedly (relayed by whoever has them),
 * merged updates, full-state updates and state-vector syncs, between random pairs at random
 * points (a partition is simply a pair that exchanges nothing for a while). Each replica
 * ingests its own sources and moves its own watermark. After a full state-vector sync every
 * replica shows exactly the values of a reference: the join of what each owner accepted
 * (docs/replication.md, What converges), which with a watermark that never moves is one
 * engine that ingested every event. Retention may legitimately drop state ("Expired before
 * seen"), so windows that left live state at any replica are not compared. With a finite
 * retention, ending event time everywhere must empty every log of group entries (Bounded
 * state). A correct peer is never flagged.
 *
 * Then hand-made hostile doc content: each entry must give the documented anomaly with a
 * reason, never a throw out of the binding, and the replica keeps converging on the rest.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import {
  boundedOutOfOrderness,
  createEngine,
  type Engine,
  MAX_ABS_TS,
  manual,
  packCellGroup,
  type StreamEvent,
  type TidemarkEngine,
  cumulating,
  session,
  sliding,
  tumbling,
  type WindowSpec,
} from '@tidemark/engine'
import { seededRandom } from '@tidemark/seeded-random'
import { assertFreshSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import { applyPeerUpdate } from '../src/binding/applyPeerUpdate.ts'
import { bindDoc } from '../src/binding/bindDoc.ts'
import { isConfigurationMismatchError } from '../src/schema/configurationMismatchError.ts'
import { DOC_SCHEMA, entryKind, META_NAME, REPLICA_PREFIX, replicaArrayName, writeClockEntry, writeGroupEntry } from '../src/schema/docEntry.ts'
import { rawGroup, withField } from './fakePort.ts'

const FILE = 'packages/yjs/test/docConvergence.test.ts'

const WINDOWS: readonly WindowSpec[] = [tumbling(10), tumbling(25), sliding(20, 5), cumulating(20, 5), session(6), session(15)]
const KEYS = ['a', 'b'] as const

type Op =
  | { kind: 'ingest'; replica: number; events: { source: number; dt: number; key: number; value: number }[] }
  /** One recorded update of `from` (its own or relayed), old or new: reordering and repeats. */
  | { kind: 'update'; from: number; to: number; pick: number }
  /** Every update `from` recorded, shuffled. */
  | { kind: 'burst'; from: number; to: number; seed: number }
  /** A run of `from`'s updates merged into one (`Y.mergeUpdates`). */
  | { kind: 'merged'; from: number; to: number; pick: number; length: number }
  /** What `to` misses by its state vector (a provider's sync step 2). */
  | { kind: 'sv'; from: number; to: number }
  /** `from`'s whole state, whatever `to` holds. */
  | { kind: 'full'; from: number; to: number }
  | { kind: 'advance'; replica: number; behind: number }

const pair = { from: fc.nat(3), to: fc.nat(3) }
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('ingest' as const),
      replica: fc.nat(3),
      events: fc.array(
        fc.record({
          source: fc.nat(7),
          dt: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 12 }) }, { weight: 1, arbitrary: fc.integer({ min: -20, max: -1 }) }),
          key: fc.nat(KEYS.length - 1),
          value: fc.integer({ min: -50, max: 50 }),
        }),
        { minLength: 1, maxLength: 6 },
      ),
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('update' as const), ...pair, pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('burst' as const), ...pair, seed: fc.integer() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('merged' as const), ...pair, pick: fc.nat(), length: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('sv' as const), ...pair }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('full' as const), ...pair }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), replica: fc.nat(3), behind: fc.nat(40) }) },
)

const caseArb = fc.record({
  replicas: fc.integer({ min: 2, max: 4 }),
  sources: fc.integer({ min: 1, max: 6 }),
  windows: fc.subarray([...WINDOWS], { minLength: 1, maxLength: 3 }),
  allowedLateness: fc.constantFrom(0, 10, 40),
  retention: fc.constantFrom(Number.POSITIVE_INFINITY, 0, 15, 100),
  /** null: a manual watermark (moved by `advance`); else bounded out-of-orderness, which peers' clocks hold too. */
  lag: fc.constantFrom(null, null, 0, 5, 20),
  finalSeed: fc.integer(),
  ops: fc.array(opArb, { minLength: 1, maxLength: 45 }),
})

type Case = typeof caseArb extends fc.Arbitrary<infer T> ? T : never

interface Replica {
  readonly engine: TidemarkEngine
  /** The same events and watermark moves, no peers: what this owner accepted of its sources. */
  readonly shadow: TidemarkEngine
  readonly doc: Y.Doc
  /** Every update this doc emitted, its own and those it applied (a relay forwards both). */
  readonly outbox: Uint8Array[]
  readonly errors: Error[]
}

interface Value {
  readonly count: number
  readonly sum: number
  readonly min: number
  readonly max: number
}

function valuesOf(engine: TidemarkEngine): Map<string, Value> {
  const out = new Map<string, Value>()
  for (const r of engine.results()) out.set(JSON.stringify([r.window, r.key, r.start, r.end]), { count: r.count, sum: r.sum, min: r.min, max: r.max })
  return out
}

function engineFor(testCase: Case, replicaId: string, retention = testCase.retention, lag = testCase.lag): TidemarkEngine {
  const watermark = lag === null ? manual() : boundedOutOfOrderness(lag)
  return createEngine({ windows: testCase.windows, watermark, allowedLateness: testCase.allowedLateness, retention, replicaId }) as TidemarkEngine
}

function deliver(to: Replica, update: Uint8Array | undefined): void {
  if (update === undefined) return
  expect(applyPeerUpdate(to.doc, update, 'peer')).toBe(true)
}

/** State-vector syncs between every ordered pair until no doc changes. */
function fullSync(replicas: readonly Replica[], random: () => number): void {
  for (let round = 0; round < replicas.length + 3; round++) {
    const before = replicas.map((r) => Y.encodeStateVector(r.doc).join())
    const order = replicas.flatMap((_, a) => replicas.map((_, b) => [a, b] as const)).filter(([a, b]) => a !== b)
    order.sort(() => random() - 0.5)
    for (const [a, b] of order) {
      const from = replicas[a] as Replica
      const to = replicas[b] as Replica
      deliver(to, Y.encodeStateAsUpdate(from.doc, Y.encodeStateVector(to.doc)))
    }
    if (replicas.every((r, i) => Y.encodeStateVector(r.doc).join() === before[i])) return
  }
  throw new Error('docs did not settle')
}

function groupEntries(doc: Y.Doc): number {
  let n = 0
  for (const id of doc.getMap(META_NAME).keys()) for (const entry of doc.getArray(replicaArrayName(id)).toArray()) if (entryKind(entry) === 'group') n++
  return n
}

function run(testCase: Case): void {
  const R = testCase.replicas
  const single = engineFor(testCase, 'single', Number.POSITIVE_INFINITY, null)
  const replicas: Replica[] = Array.from({ length: R }, (_, i) => {
    const doc = new Y.Doc()
    const engine = engineFor(testCase, `r${i}`)
    const errors: Error[] = []
    bindDoc(engine, doc, { onError: (error) => errors.push(error) })
    const outbox: Uint8Array[] = []
    doc.on('update', (update: Uint8Array) => outbox.push(update))
    return { engine, shadow: engineFor(testCase, `r${i}`), doc, outbox, errors }
  })
  const seqs = new Map<string, number>()
  const clocks = new Map<string, number>()
  let maxTs = 0
  // A bounded watermark moves with the events (and with peers' clocks, so what a replica refuses depends on what it merged).
  let advanced = testCase.lag !== null
  const sessions = testCase.windows.some((w) => w.kind === 'session')

  for (const op of testCase.ops) {
    switch (op.kind) {
      case 'ingest': {
        const i = op.replica % R
        const owned = Array.from({ length: testCase.sources }, (_, j) => j).filter((j) => j % R === i)
        if (owned.length === 0) break
        const events: StreamEvent[] = op.events.map((raw) => {
          const source = `s${owned[raw.source % owned.length]}`
          const seq = (seqs.get(source) ?? 0) + 1
          const ts = Math.max(0, (clocks.get(source) ?? 0) + raw.dt)
          seqs.set(source, seq)
          clocks.set(source, Math.max(ts, clocks.get(source) ?? 0))
          maxTs = Math.max(maxTs, ts)
          return { id: `${source}#${seq}`, source, seq, ts, key: KEYS[raw.key] as string, value: raw.value }
        })
        const r = replicas[i] as Replica
        const receipt = r.engine.ingest(events)
        const shadow = r.shadow.ingest(events)
        expect(receipt.rejected).toBe(0)
        if (testCase.lag === null && !sessions) {
          // Peers' state never changes what an owner accepts of its own sources (only whether it
          // comes late: peers' clocks move the proof frontier, which fires windows).
          expect([receipt.accepted, receipt.beyondLateness]).toEqual([shadow.accepted, shadow.beyondLateness])
        }
        single.ingest(events)
        break
      }
      case 'advance': {
        if (testCase.lag !== null) break
        const r = replicas[op.replica % R] as Replica
        const to = maxTs - op.behind
        r.engine.advanceWatermark(to)
        r.shadow.advanceWatermark(to)
        advanced = true
        break
      }
      default: {
        const from = replicas[op.from % R] as Replica
        const to = replicas[op.to % R] as Replica
        if (from === to) break
        const n = from.outbox.length
        if (op.kind === 'update') {
          if (n > 0) deliver(to, from.outbox[op.pick % n])
        } else if (op.kind === 'burst') {
          const random = seededRandom(op.seed)
          const shuffled = [...from.outbox].sort(() => random() - 0.5)
          for (const update of shuffled) deliver(to, update)
        } else if (op.kind === 'merged') {
          if (n > 0) {
            const at = op.pick % n
            deliver(to, Y.mergeUpdates(from.outbox.slice(at, at + op.length)))
          }
        } else if (op.kind === 'sv') {
          deliver(to, Y.encodeStateAsUpdate(from.doc, Y.encodeStateVector(to.doc)))
        } else {
          deliver(to, Y.encodeStateAsUpdate(from.doc))
        }
      }
    }
  }

  fullSync(replicas, seededRandom(testCase.finalSeed))

  // The reference: the join of every owner's own state (what it accepted of its sources), in an
  // engine that keeps everything. Without watermark moves it is one engine that saw every event.
  const ownersJoin = (engines: readonly TidemarkEngine[]): Map<string, Value> => {
    const reference = engineFor(testCase, 'reference', Number.POSITIVE_INFINITY, null)
    for (const engine of engines) {
      const state = structuredClone(engine.replica.exportState())
      const own = state.clocks.filter((c) => c.writer === engine.replicaId)
      const mine = new Set(own.map((c) => c.source))
      reference.replica.mergeRemote(
        state.cells.filter((c) => mine.has(c.address.source)),
        own,
      )
    }
    return valuesOf(reference)
  }
  const expected = ownersJoin(replicas.map((r) => r.engine))
  if (!advanced) expect(expected).toEqual(valuesOf(single))
  // Peers' state never changes an owner's own cells (sessions aside: a peer's fragment can keep
  // a session open here, so what a watermark move refuses depends on it).
  else if (testCase.lag === null && !sessions) expect(expected).toEqual(ownersJoin(replicas.map((r) => r.shadow)))

  // Windows that may have left live state at some replica (their writer's cells may be gone
  // from the doc before another replica saw them) are not compared.
  // With sessions, a whole key: a replica that dropped a session refuses the fragments that would
  // have bridged it to a live one (below its sealed end), so their live sessions differ too.
  const highest = Math.max(...replicas.map((r) => r.engine.stats().watermark))
  const horizon = testCase.allowedLateness + testCase.retention
  const gone = (start: number): boolean => !(start + horizon > highest)
  const sessionIds = new Set(testCase.windows.filter((w) => w.kind === 'session').map((w) => w.id))
  const touched = new Set<string>()
  for (const values of [expected, ...replicas.map((r) => valuesOf(r.engine))]) {
    for (const address of values.keys()) {
      const [window, key, start] = JSON.parse(address) as [string, string, number, number]
      if (sessionIds.has(window) && gone(start)) touched.add(JSON.stringify([window, key]))
    }
  }
  const safe = (values: Map<string, Value>): Map<string, Value> =>
    new Map(
      [...values].filter(([address]) => {
        const [window, key, start] = JSON.parse(address) as [string, string, number, number]
        return !gone(start) && !touched.has(JSON.stringify([window, key]))
      }),
    )
  for (const r of replicas) {
    expect({ replica: r.engine.replicaId, values: safe(valuesOf(r.engine)) }).toEqual({ replica: r.engine.replicaId, values: safe(expected) })
    const stats = r.engine.stats()
    expect({ invalid: stats.anomalies.invalid_remote_cell, conflicts: stats.anomalies.source_conflict, details: stats.remoteAnomalies }).toEqual({
      invalid: 0,
      conflicts: 0,
      details: [],
    })
    expect(r.errors).toEqual([])
  }

  // Bounded state: once event time ends everywhere, every cell leaves live state and the doc.
  if (Number.isFinite(testCase.retention)) {
    for (const r of replicas) r.engine.advanceWatermark(Number.POSITIVE_INFINITY)
    fullSync(replicas, seededRandom(testCase.finalSeed + 1))
    for (const r of replicas) {
      expect(r.engine.results()).toEqual([])
      expect({ replica: r.engine.replicaId, groups: groupEntries(r.doc) }).toEqual({ replica: r.engine.replicaId, groups: 0 })
      expect(r.errors).toEqual([])
    }
  }
  for (const r of replicas) r.engine.close()
}

describe('engines replicating through Y.Docs', () => {
  it(
    'converge on the join of what every owner accepted, whatever order, repeats and merging the updates take',
    () => {
      assertFreshSeeded(fc.property(caseArb, run), FILE, 150)
    },
    PROPERTY_TIMEOUT,
  )
})

// ---------------------------------------------------------------------------------------------
// Hostile doc content

const W = 'tumbling:60000'
const T0 = 1_700_000_040_000 - (1_700_000_040_000 % 60_000)

interface Honest {
  readonly engine: TidemarkEngine
  readonly doc: Y.Doc
  readonly errors: Error[]
}

function honest(replicaId = 'honest'): Honest {
  const doc = new Y.Doc()
  const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId }) as TidemarkEngine
  const errors: Error[] = []
  bindDoc(engine, doc, { onError: (error) => errors.push(error) })
  return { engine, doc, errors }
}

function events(source: string, from: number, n: number): StreamEvent[] {
  return Array.from({ length: n }, (_, i) => ({ id: `${source}-${from + i}`, source, seq: from + i, ts: T0 + (from + i) * 1000, key: 'temp', value: from + i }))
}

/** An update in which replica `id` (configured like `configuration`) pushed `entries` raw into its log. */
function peerUpdate(id: string, configuration: string, entries: unknown[], meta: unknown = [DOC_SCHEMA, configuration]): Uint8Array {
  const doc = new Y.Doc()
  doc.transact(() => {
    doc.getMap(META_NAME).set(id, meta)
    doc.getArray(replicaArrayName(id)).push(entries)
  })
  return Y.encodeStateAsUpdate(doc)
}

/** A well-behaved writer of source `w1` (3 events), as one update: the valid rest every replica must keep converging on. */
function validWriter(): Uint8Array {
  const doc = new Y.Doc()
  const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'writer' }) as TidemarkEngine
  bindDoc(engine, doc)
  engine.ingest(events('w1', 1, 3))
  return Y.encodeStateAsUpdate(doc)
}

/** A replica's configuration before and after it comes back reconfigured: allowed lateness 0, then 10 min. */
const OLD = { windows: tumbling(60_000), watermark: manual(), allowedLateness: 0 }
const NEW = { windows: tumbling(60_000), watermark: manual(), allowedLateness: 600_000 }

/** A dashboard of the new configuration reading every update of `source`. */
function dashboardOf(source: Y.Doc, onError: (error: Error) => void = () => undefined): TidemarkEngine {
  const doc = new Y.Doc()
  source.on('update', (update: Uint8Array) => applyPeerUpdate(doc, update, 'room'))
  const dashboard = createEngine(NEW) as TidemarkEngine
  bindDoc(dashboard, doc, { onError })
  return dashboard
}

function temp(engine: TidemarkEngine): Value | undefined {
  const r = engine.results({ window: W, key: 'temp' })[0]
  return r === undefined ? undefined : { count: r.count, sum: r.sum, min: r.min, max: r.max }
}

/** A fresh replica that reads `doc` shows what `engine` shows. */
function expectReaderAgrees(h: Honest): void {
  const reader = honest('reader')
  expect(applyPeerUpdate(reader.doc, Y.encodeStateAsUpdate(h.doc), 'peer')).toBe(true)
  expect(temp(reader.engine)).toEqual(temp(h.engine))
}

const OK: RawCellTuple = ['temp', 2, 10, 4, 6, T0 + 10, 1]
type RawCellTuple = [string, number, number, number, number, number, number]

it('an event at -MAX_ABS_TS (its cells start below it) reaches a replica reading the doc', () => {
  const writer = honest('writer')
  expect(writer.engine.ingest([{ id: 'a', source: 'dev', ts: -MAX_ABS_TS, key: 'temp', value: 7 }]).accepted).toBe(1)
  const reader = honest('reader')
  expect(applyPeerUpdate(reader.doc, Y.encodeStateAsUpdate(writer.doc), 'peer')).toBe(true)
  expect(reader.engine.stats().anomalies.invalid_remote_cell).toBe(0)
  expect(reader.engine.results().map((r) => [r.start, r.count, r.sum])).toEqual([[Math.floor(-MAX_ABS_TS / 60_000) * 60_000, 1, 7]])
  expect([...writer.errors, ...reader.errors]).toEqual([])
})

describe('hostile doc entries', () => {
  const cases: [string, () => unknown[], RegExp][] = [
    ['a window that is a number', () => withField(rawGroup('m1', T0, [OK], W), 1, 60_000), /window must be a string/],
    ['a start that is a string', () => withField(rawGroup('m1', T0, [OK], W), 2, String(T0)), /start must be a time within ±9007199254740.992 or a safe integer/],
    ['a NaN start', () => withField(rawGroup('m1', T0, [OK], W), 2, Number.NaN), /start must be a time within ±9007199254740.992 or a safe integer/],
    ['an empty source', () => withField(rawGroup('m1', T0, [OK], W), 3, ''), /source must be a string/],
    ['keys that are not JSON', () => withField(rawGroup('m1', T0, [OK], W), 4, '["temp"'), /keys must be a JSON array/],
    ['keys that are an object', () => withField(rawGroup('m1', T0, [OK], W), 4, '{"0":"temp"}'), /keys must be a JSON array/],
    ['keys that are numbers', () => withField(rawGroup('m1', T0, [OK], W), 4, '[1]'), /keys must be strings/],
    ['one key too many', () => withField(rawGroup('m1', T0, [OK], W), 4, '["temp","hum"]'), /keys must be a JSON array of 1 strings/],
    ['a key too long', () => withField(rawGroup('m1', T0, [OK], W), 4, JSON.stringify(['x'.repeat(1025)])), /keys must be strings of at most/],
    ['columns as a number array', () => withField(rawGroup('m1', T0, [OK], W), 5, [2, 10, 4, 6, T0, 1]), /columns must be bytes/],
    ['columns one byte short', () => withField(rawGroup('m1', T0, [OK], W), 5, new Uint8Array(47)), /columns must be bytes/],
    ['65,537 cells', () => withField(withField(rawGroup('m1', T0, [OK], W), 5, new Uint8Array(48 * 65_537)), 4, '[]'), /at most 65536 cells/],
    ['an aggregate column that is a string', () => withField(rawGroup('m1', T0, [OK], W), 6, 'x'), /aggregates must be bytes/],
    ['an aggregate column of garbage', () => withField(rawGroup('m1', T0, [OK], W), 6, new Uint8Array([200, 1, 2])), /./],
    ['an entry of 8 values tagged g', () => [...rawGroup('m1', T0, [OK], W), 0], /not a group entry/],
    ['a nested object', () => [{ g: 1 }] as unknown[], /not a group entry/],
    ['a clock with a NaN version', () => withField(writeClockEntry({ source: 'm1', writer: 'mallory', maxTs: T0, prefix: 1, prefixTs: T0, provable: true, version: 1 }) as unknown[], 7, Number.NaN), /clock version/],
    ['a clock with a negative prefix', () => withField(writeClockEntry({ source: 'm1', writer: 'mallory', maxTs: T0, prefix: 1, prefixTs: T0, provable: true, version: 1 }) as unknown[], 4, -1), /clock prefix/],
    ['a clock with flags 4', () => withField(writeClockEntry({ source: 'm1', writer: 'mallory', maxTs: T0, prefix: 1, prefixTs: T0, provable: true, version: 1 }) as unknown[], 6, 4), /clock flags/],
    ['a clock naming another writer', () => writeClockEntry({ source: 'w1', writer: 'writer', maxTs: T0 + 1e6, prefix: 99, prefixTs: T0, provable: true, version: 99 }) as unknown[], /names writer "writer"/],
  ]
  for (const [name, entry, reason] of cases) {
    it(`refuses ${name} with invalid_remote_cell and a reason, and keeps converging`, () => {
      const h = honest()
      h.engine.ingest(events('d1', 1, 2))
      const valid = rawGroup('m9', T0, [OK], W)
      // The hostile entry first, then a valid one of the same peer and a valid writer in one update each.
      expect(applyPeerUpdate(h.doc, peerUpdate('mallory', h.engine.replica.configuration, [entry(), valid]), 'peer')).toBe(true)
      expect(applyPeerUpdate(h.doc, validWriter(), 'peer')).toBe(true)
      const stats = h.engine.stats()
      expect(stats.anomalies.invalid_remote_cell).toBe(1)
      expect(stats.remoteAnomalies).toHaveLength(1)
      expect(stats.remoteAnomalies[0]).toMatch(reason)
      expect(h.errors).toEqual([])
      // d1: 1 + 2; m9: 2 cells' worth (count 2, sum 10, 4..6); w1: 1 + 2 + 3
      expect(temp(h.engine)).toEqual({ count: 2 + 2 + 3, sum: 3 + 10 + 6, min: 1, max: 6 })
      h.engine.ingest(events('d1', 3, 1))
      expect(temp(h.engine)?.count).toBe(8)
      expectReaderAgrees(h)
    })
  }

  const cellCases: [string, RawCellTuple, RegExp][] = [
    ['a NaN count', ['temp', Number.NaN, 10, 4, 6, T0, 2], /count/],
    ['a negative count', ['temp', -3, 10, 4, 6, T0, 2], /count/],
    ['a fractional count', ['temp', 1.5, 10, 4, 6, T0, 2], /count/],
    ['a count of 2^41', ['temp', 2 ** 41, 10, 4, 6, T0, 2], /count/],
    ['an impossible sum', ['temp', 2, 1e9, 4, 6, T0, 2], /sum/],
    ['min above max', ['temp', 2, 10, 6, 4, T0, 2], /min|max/],
    ['an infinite maxTs', ['temp', 2, 10, 4, 6, Number.POSITIVE_INFINITY, 2], /maxTs|time/],
    ['a fractional version', ['temp', 2, 10, 4, 6, T0, 1.5], /version/],
    ['a negative version', ['temp', 2, 10, 4, 6, T0, -1], /version/],
  ]
  for (const [name, cell, reason] of cellCases) {
    it(`refuses a cell with ${name} alone and merges the rest of its group`, () => {
      const h = honest()
      const group = rawGroup('m1', T0, [cell, ['hum', 2, 10, 4, 6, T0 + 10, 1]], W)
      expect(applyPeerUpdate(h.doc, peerUpdate('mallory', h.engine.replica.configuration, [group]), 'peer')).toBe(true)
      const stats = h.engine.stats()
      expect(stats.anomalies.invalid_remote_cell).toBe(1)
      expect(stats.remoteAnomalies[0]).toMatch(reason)
      expect(h.errors).toEqual([])
      expect(temp(h.engine)).toBeUndefined()
      expect(h.engine.results({ window: W, key: 'hum' })[0]).toMatchObject({ count: 2, sum: 10 })
      expect(applyPeerUpdate(h.doc, validWriter(), 'peer')).toBe(true)
      expect(temp(h.engine)?.count).toBe(3)
      expectReaderAgrees(h)
    })
  }

  it('refuses cells of unknown windows and misaligned starts (the engine counts them)', () => {
    const h = honest()
    const unknown = rawGroup('m1', T0, [OK], 'tumbling:99')
    const misaligned = rawGroup('m2', T0 + 7, [OK], W)
    const bySession = rawGroup('m3', T0, [OK], 'session:5000')
    expect(applyPeerUpdate(h.doc, peerUpdate('mallory', h.engine.replica.configuration, [unknown, misaligned, bySession, rawGroup('m9', T0, [OK], W)]), 'peer')).toBe(true)
    const stats = h.engine.stats()
    expect(stats.anomalies.invalid_remote_cell).toBe(3)
    expect(stats.remoteAnomalies.join('\n')).toMatch(/invalid_remote_cell: \d cell\(s\) fit no window here/)
    expect(h.errors).toEqual([])
    expect(temp(h.engine)?.count).toBe(2)
    expectReaderAgrees(h)
  })

  it('refuses a malformed or foreign meta entry as a configuration mismatch, and merges nothing of it', () => {
    for (const meta of [42, 'x', [DOC_SCHEMA], [DOC_SCHEMA, 7], [2, 'tumbling:60000'], [DOC_SCHEMA, 'x'.repeat(70_000)], [DOC_SCHEMA, 'tumbling:1000']]) {
      const h = honest()
      expect(applyPeerUpdate(h.doc, peerUpdate('mallory', h.engine.replica.configuration, [rawGroup('m9', T0, [OK], W)], meta), 'peer')).toBe(true)
      expect(h.errors).toHaveLength(1)
      expect(isConfigurationMismatchError(h.errors[0])).toBe(true)
      expect(temp(h.engine)).toBeUndefined()
      expect(applyPeerUpdate(h.doc, validWriter(), 'peer')).toBe(true)
      expect(temp(h.engine)?.count).toBe(3)
    }
  })

  it('writes its own meta entry back when a peer overwrites it', () => {
    const h = honest()
    h.engine.ingest(events('d1', 1, 2))
    const peer = new Y.Doc()
    Y.applyUpdate(peer, Y.encodeStateAsUpdate(h.doc))
    peer.getMap(META_NAME).set('honest', [DOC_SCHEMA, 'tumbling:1'])
    expect(applyPeerUpdate(h.doc, Y.encodeStateAsUpdate(peer, Y.encodeStateVector(h.doc)), 'peer')).toBe(true)
    expect(h.doc.getMap(META_NAME).get('honest')).toEqual([DOC_SCHEMA, h.engine.replica.configuration])
    expect(h.errors).toEqual([])
    expectReaderAgrees(h)
  })

  it('survives a log name taken by a Y.Map and nested Yjs types in a log', () => {
    const h = honest()
    // The app already took maple's log name for a map: the binding cannot open it as an array.
    h.doc.getMap(`${REPLICA_PREFIX}maple`)
    const peer = new Y.Doc()
    peer.transact(() => {
      peer.getMap(META_NAME).set('mallory', [DOC_SCHEMA, h.engine.replica.configuration])
      peer.getMap(META_NAME).set('maple', [DOC_SCHEMA, h.engine.replica.configuration])
      peer.getMap(`${REPLICA_PREFIX}maple`).set('g', rawGroup('m8', T0, [OK], W))
      const nested = new Y.Array()
      peer.getArray(replicaArrayName('mallory')).push([nested, new Y.Map(), rawGroup('m9', T0, [OK], W)])
      nested.push([rawGroup('m7', T0, [OK], W)])
    })
    expect(applyPeerUpdate(h.doc, Y.encodeStateAsUpdate(peer), 'peer')).toBe(true)
    expect(h.errors).toEqual([])
    const stats = h.engine.stats()
    expect(stats.anomalies.invalid_remote_cell).toBe(3)
    expect(stats.remoteAnomalies.join('\n')).toMatch(/log is not an array/)
    expect(temp(h.engine)?.count).toBe(2)
    expect(applyPeerUpdate(h.doc, validWriter(), 'peer')).toBe(true)
    expect(temp(h.engine)?.count).toBe(5)
  })

  it('a peer claiming a source this replica owns: the smaller id keeps it, conflicts are counted, replicas agree', () => {
    for (const [thief, keeps] of [
      ['mallory', 'honest'],
      ['aardvark', 'aardvark'],
    ] as const) {
      const h = honest()
      h.engine.ingest(events('d1', 1, 2))
      const stolen = packCellGroup(W, T0, 'd1', ['temp'], [{ count: 5, sum: 50, min: 10, max: 10, maxTs: T0 + 5, version: 40 }])
      const clock = { source: 'd1', writer: thief, maxTs: T0 + 5_000, prefix: 5, prefixTs: T0 + 5_000, provable: true, version: 40 }
      expect(applyPeerUpdate(h.doc, peerUpdate(thief, h.engine.replica.configuration, [writeGroupEntry(stolen), writeClockEntry(clock)]), 'peer')).toBe(true)
      expect(h.errors).toEqual([])
      expect(h.engine.stats().anomalies.source_conflict).toBeGreaterThanOrEqual(1)
      // the higher version wins the shared cell
      expect(temp(h.engine)?.count).toBe(5)
      const receipt = h.engine.ingest(events('d1', 3, 2))
      if (keeps === 'honest') {
        expect(receipt.accepted).toBe(2)
        expect(temp(h.engine)?.count).toBe(7)
      } else {
        expect(receipt.rejected).toBe(2)
        expect(receipt.anomalies.map((a) => a.reason)).toEqual(['source_conflict', 'source_conflict'])
        expect(temp(h.engine)?.count).toBe(5)
      }
      expectReaderAgrees(h)
    }
  })

  it('two engines writing one source: the smaller id keeps it, the other is refused per event, every replica agrees', () => {
    const [a, b, c] = [honest('a'), honest('b'), honest('c')]
    a.engine.ingest(events('s', 1, 2))
    b.engine.ingest(events('s', 1, 3).map((e) => ({ ...e, value: e.value * 10 })))
    const sync = (): void => {
      for (const from of [a, b, c]) for (const to of [a, b, c]) if (from !== to) applyPeerUpdate(to.doc, Y.encodeStateAsUpdate(from.doc, Y.encodeStateVector(to.doc)), 'peer')
    }
    sync()
    expect(a.engine.stats().anomalies.source_conflict).toBeGreaterThanOrEqual(1)
    expect(b.engine.stats().anomalies.source_conflict).toBeGreaterThanOrEqual(1)
    // one cell of one version: the same one wins everywhere
    expect(temp(b.engine)).toEqual(temp(a.engine))
    expect(temp(c.engine)).toEqual(temp(a.engine))
    const before = temp(a.engine)?.count ?? 0
    const refused = b.engine.ingest(events('s', 4, 2))
    expect(refused.anomalies.map((x) => x.reason)).toEqual(['source_conflict', 'source_conflict'])
    expect(a.engine.ingest(events('s', 4, 1)).accepted).toBe(1)
    sync()
    for (const h of [a, b, c]) {
      expect(temp(h.engine)?.count).toBe(before + 1)
      expect(h.errors).toEqual([])
      expect(h.engine.stats().anomalies.invalid_remote_cell).toBe(0)
    }
    expectReaderAgrees(a)
  })
})

describe('the log a replica writes', () => {
  it('a replica coming back on schema 3 deletes its log of another schema whole, so no peer flags it', () => {
    const doc = new Y.Doc()
    doc.transact(() => {
      doc.getMap(META_NAME).set('honest', [2, 'tumbling:60000'])
      // schema 2: groups without the aggregate column
      doc.getArray(replicaArrayName('honest')).push([['g', W, T0, 'd1', '["temp"]', new Uint8Array(48)]])
    })
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'honest' }) as TidemarkEngine
    bindDoc(engine, doc)
    engine.ingest(events('d1', 1, 1))
    expect(doc.getArray<unknown[]>(replicaArrayName('honest')).toArray().filter((entry) => entryKind(entry) === null)).toEqual([])
    const reader = honest('reader')
    applyPeerUpdate(reader.doc, Y.encodeStateAsUpdate(doc), 'peer')
    expect(reader.engine.stats().remoteAnomalies).toEqual([])
    expect(temp(reader.engine)?.count).toBe(1)
  })

  it('a cell written and expired in one batch never reaches the doc', () => {
    const doc = new Y.Doc()
    const engine = createEngine({ windows: tumbling(10), watermark: boundedOutOfOrderness(0), retention: 0, replicaId: 'honest' }) as TidemarkEngine
    bindDoc(engine, doc)
    const starts = (): unknown[] => doc.getArray<unknown[]>(replicaArrayName('honest')).toArray().filter((e) => entryKind(e) === 'group').map((e) => e[2])
    // [0, 10) fires and leaves live state within this batch (its cell is written and expired in one write)
    engine.ingest([
      { id: 'e1', source: 'd1', seq: 1, ts: 5, key: 'temp', value: 1 },
      { id: 'e2', source: 'd1', seq: 2, ts: 100, key: 'temp', value: 1 },
    ])
    expect(starts()).toEqual([100])
    engine.ingest([{ id: 'e3', source: 'd1', seq: 3, ts: 200, key: 'temp', value: 1 }])
    expect(engine.results().map((r) => r.start)).toEqual([200])
    expect(starts()).toEqual([200])
  })

  it.each([
    ['its meta entry wins the conflict', 1, 2, 'whole'],
    ["the earlier session's meta entry wins the conflict", 2, 1, 'whole'],
    // Its meta entry first, its entries after it, each in an update of its own (a provider forwarding them as they come).
    ['its meta entry wins the conflict, one update at a time', 1, 2, 'one at a time'],
    ["the earlier session's meta entry wins the conflict, one update at a time", 2, 1, 'one at a time'],
  ])("an earlier session of this replica under another configuration, arriving after bind, is not merged (%s)", (_, earlierClient, laterClient, delivery) => {
    const readings = events('da', 1, 40)
    const earlier = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'a' }) as TidemarkEngine
    const earlierDoc = new Y.Doc()
    earlierDoc.clientID = earlierClient
    const earlierUpdates: Uint8Array[] = []
    earlierDoc.on('update', (update: Uint8Array) => earlierUpdates.push(update))
    bindDoc(earlier, earlierDoc)
    earlier.ingest(readings)
    expect(earlierUpdates.length).toBeGreaterThan(1)
    // The device comes back with 30 s windows and an empty doc, then joins its room: the room's state arrives after bind.
    const later = createEngine({ windows: tumbling(30_000), watermark: manual(), replicaId: 'a' }) as TidemarkEngine
    const laterDoc = new Y.Doc()
    laterDoc.clientID = laterClient
    const errors: Error[] = []
    bindDoc(later, laterDoc, { onError: (error) => errors.push(error) })
    if (delivery === 'whole') applyPeerUpdate(laterDoc, Y.encodeStateAsUpdate(earlierDoc), 'relay')
    else for (const update of earlierUpdates) applyPeerUpdate(laterDoc, update, 'relay')
    later.ingest(readings)
    const fresh = createEngine({ windows: tumbling(30_000), watermark: manual() })
    fresh.ingest(readings)
    const values = (engine: Engine) => engine.results().map((r) => [r.start, r.count, r.sum])
    expect(values(later)).toEqual(values(fresh))
    expect(later.stats().remoteAnomalies).toEqual([])
    // Its log starts afresh: nothing of the earlier windows stays under its name.
    const windowsLogged = laterDoc.getArray<unknown[]>(replicaArrayName('a')).toArray().filter((e) => entryKind(e) === 'group').map((e) => e[1])
    expect(new Set(windowsLogged)).toEqual(new Set(['tumbling:30000']))
    expect(errors).toEqual([])
  })

  it('an earlier session of this replica under the same configuration, arriving after bind, is merged back', () => {
    const earlier = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'a' }) as TidemarkEngine
    const earlierDoc = new Y.Doc()
    bindDoc(earlier, earlierDoc)
    earlier.ingest(events('da', 1, 40))
    const later = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'a' }) as TidemarkEngine
    const laterDoc = new Y.Doc()
    bindDoc(later, laterDoc)
    applyPeerUpdate(laterDoc, Y.encodeStateAsUpdate(earlierDoc), 'relay')
    expect(later.results().map((r) => r.count)).toEqual(earlier.results().map((r) => r.count))
    expect(later.ingest(events('da', 1, 40)).duplicates).toBe(40)
  })

  it.each([
    ["the reconfigured session's meta entry wins the conflict", 1, 2],
    ["the earlier session's meta entry wins the conflict", 2, 1],
  ])('a dashboard that saw an earlier session of a replica under another configuration never merges its entries, though the reconfigured replica deletes them only after its new meta entry went out (%s)', (_, earlierClient, laterClient) => {
    // Session 1 of replica a (allowed lateness 0) in its room; the room's doc forwards each update to a
    // dashboard of the new configuration, which refuses a. The device comes back with lateness 10 min
    // and an empty doc, and joins as through a relay: the room's state is read for it, then the room
    // applies the device's (new meta entry, new log), then the device gets the room's state and
    // deletes session 1's entries, which reach the room last.
    const readings = (value: number): StreamEvent[] => events('da', 1, 120).map((event, i) => ({ ...event, key: `zone-${i % 7}`, value }))
    const room = new Y.Doc()
    const refused: Error[] = []
    const dashboard = dashboardOf(room, (error) => refused.push(error))
    const earlier = createEngine({ ...OLD, replicaId: 'a' }) as TidemarkEngine
    const earlierDoc = new Y.Doc()
    earlierDoc.clientID = earlierClient
    bindDoc(earlier, earlierDoc)
    earlier.ingest(readings(100))
    applyPeerUpdate(room, Y.encodeStateAsUpdate(earlierDoc), 'device')
    expect(dashboard.results()).toEqual([])
    expect(refused.map((error) => isConfigurationMismatchError(error) && error.replicaId)).toEqual(['a'])

    const later = createEngine({ ...NEW, replicaId: 'a' }) as TidemarkEngine
    later.ingest(readings(1))
    const laterDoc = new Y.Doc()
    laterDoc.clientID = laterClient
    const errors: Error[] = []
    bindDoc(later, laterDoc, { onError: (error) => errors.push(error) })
    laterDoc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin !== 'room') applyPeerUpdate(room, update, 'device')
    })
    const roomState = Y.encodeStateAsUpdate(room, Y.encodeStateVector(laterDoc))
    applyPeerUpdate(room, Y.encodeStateAsUpdate(laterDoc, Y.encodeStateVector(room)), 'device')
    applyPeerUpdate(laterDoc, roomState, 'room')

    const fresh = createEngine(NEW)
    fresh.ingest(readings(1))
    const values = (engine: Engine) => engine.results().map((r) => [r.start, r.key, r.count, r.sum])
    expect(values(later)).toEqual(values(fresh))
    expect(values(dashboard)).toEqual(values(fresh))
    expect(dashboard.stats().remoteAnomalies).toEqual([])
    expect(errors).toEqual([])
    // Nothing of session 1 is left in the room for a dashboard joining later.
    const joining = createEngine(NEW) as TidemarkEngine
    const joiningDoc = new Y.Doc()
    bindDoc(joining, joiningDoc)
    applyPeerUpdate(joiningDoc, Y.encodeStateAsUpdate(room), 'room')
    expect(values(joining)).toEqual(values(fresh))
  })

  it.each([
    ["the reconfigured session's meta entry wins the conflict", 1, 2, 5],
    ["the earlier session's meta entry wins the conflict", 2, 1, undefined],
  ])('a dashboard never merges the entries a reload of that earlier session wrote either: a new Yjs client under the same meta entry, which writes none (%s)', (_, earlierClient, laterClient, between) => {
    const room = new Y.Doc()
    const dashboard = dashboardOf(room)
    const first = createEngine({ ...OLD, replicaId: 'a' }) as TidemarkEngine
    const firstDoc = new Y.Doc()
    firstDoc.clientID = earlierClient
    bindDoc(first, firstDoc)
    first.ingest(events('da', 1, 20))
    applyPeerUpdate(room, Y.encodeStateAsUpdate(firstDoc), 'device')
    // The device reloads under the old configuration: its persisted doc in a new Y.Doc (a new Yjs client).
    const reloaded = createEngine({ ...OLD, replicaId: 'a' }) as TidemarkEngine
    const reloadedDoc = new Y.Doc()
    reloadedDoc.clientID = 3
    Y.applyUpdate(reloadedDoc, Y.encodeStateAsUpdate(firstDoc), 'persistence')
    bindDoc(reloaded, reloadedDoc)
    reloaded.ingest(events('da', 21, 20))
    applyPeerUpdate(room, Y.encodeStateAsUpdate(reloadedDoc, Y.encodeStateVector(room)), 'device')
    expect(dashboard.results()).toEqual([])

    // Back under the new configuration with an empty doc, its answer reaching the room before the room's state reaches it.
    const later = createEngine({ ...NEW, replicaId: 'a' }) as TidemarkEngine
    later.ingest(events('da', 41, 5))
    const laterDoc = new Y.Doc()
    laterDoc.clientID = laterClient
    bindDoc(later, laterDoc, { onError: () => undefined })
    laterDoc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin !== 'room') applyPeerUpdate(room, update, 'device')
    })
    const roomState = Y.encodeStateAsUpdate(room, Y.encodeStateVector(laterDoc))
    applyPeerUpdate(room, Y.encodeStateAsUpdate(laterDoc, Y.encodeStateVector(room)), 'device')
    // Its new entries merged at once, or once its meta entry, written again, wins.
    expect(temp(dashboard)?.count).toBe(between)
    applyPeerUpdate(laterDoc, roomState, 'room')
    expect(temp(later)?.count).toBe(5)
    expect(temp(dashboard)?.count).toBe(5)
  })

  it('a session that comes back to its doc under the configuration of a dashboard is merged again there', () => {
    // One doc (one Yjs client) bound under the old configuration, then, its engine closed, under the new one.
    const doc = new Y.Doc()
    const dashboard = dashboardOf(doc)
    const first = createEngine({ ...OLD, replicaId: 'a' }) as TidemarkEngine
    bindDoc(first, doc)
    first.ingest(events('da', 1, 10))
    first.close()
    expect(dashboard.results()).toEqual([])
    const second = createEngine({ ...NEW, replicaId: 'a' }) as TidemarkEngine
    bindDoc(second, doc)
    second.ingest(events('da', 1, 10))
    expect(temp(dashboard)?.count).toBe(10)
    second.ingest(events('da', 11, 5))
    expect(temp(dashboard)?.count).toBe(15)
    expect(dashboard.results().map((r) => r.sum)).toEqual(second.results().map((r) => r.sum))
  })

  it('bound again, an engine retires the entries of windows that left live state while it was unbound', () => {
    const doc = new Y.Doc()
    const engine = createEngine({ windows: tumbling(10), watermark: boundedOutOfOrderness(0), retention: 0, replicaId: 'honest' }) as TidemarkEngine
    const starts = (): unknown[] => doc.getArray<unknown[]>(replicaArrayName('honest')).toArray().filter((e) => entryKind(e) === 'group').map((e) => e[2])
    const first = bindDoc(engine, doc)
    engine.ingest([{ id: 'e1', source: 'd1', seq: 1, ts: 5, key: 'temp', value: 1 }])
    expect(starts()).toEqual([0])
    first.destroy()
    // Unbound: [0, 10) fires and leaves live state, [100, 110) opens.
    engine.ingest([{ id: 'e2', source: 'd1', seq: 2, ts: 100, key: 'temp', value: 1 }])
    expect(engine.results().map((r) => r.start)).toEqual([100])
    bindDoc(engine, doc)
    expect(starts()).toEqual([100])
    // A replica joining later gets no cell of a window this one dropped.
    const reader = createEngine({ windows: tumbling(10), watermark: manual(), replicaId: 'reader' }) as TidemarkEngine
    const readerDoc = new Y.Doc()
    bindDoc(reader, readerDoc)
    applyPeerUpdate(readerDoc, Y.encodeStateAsUpdate(doc), 'peer')
    expect(reader.results().map((r) => [r.start, r.count])).toEqual([[100, 1]])
  })
})
