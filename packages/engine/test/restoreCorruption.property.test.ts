/**
 * `restore` against real checkpoints (docs/bad-input.md B50, B53), seeded: an engine runs a random
 * workload (events in and out of order, with and without seq, duplicates, late and future ones,
 * watermark moves, ticks, processing time that jumps or reads NaN, finished sources, a peer's
 * cells and clocks), then its checkpoint
 * - restores whole, through `structuredClone` (the plain data IndexedDB and a worker's
 *   messages keep), into an engine whose own checkpoint is the same again and whose results match;
 * - with one field changed anywhere (a wrong type, a value out of range, a neighbouring value of
 *   the right type, the field removed) is either refused, an Error naming the checkpoint, with the
 *   engine as it was (it then restores the whole checkpoint and ingests), or restored into an engine
 *   that goes on serving. Never does the restore, or an operation after it, stop the engine.
 * A failure prints the seed and a one-line repro command.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { assertFreshSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import {
  afterProcessingTime,
  cumulating,
  distinct,
  type EngineCheckpoint,
  type EngineOptions,
  everyElement,
  manual,
  never,
  quantiles,
  session,
  sliding,
  type StreamEvent,
  TidemarkEngine,
  tumbling,
} from '../src/index.ts'

const FILE = 'packages/engine/test/restoreCorruption.property.test.ts'

const SPECS = [tumbling(10), sliding(20, 5), cumulating(20, 5), session(5)]

type Op =
  | { readonly kind: 'ingest'; readonly events: readonly Draft[] }
  | { readonly kind: 'advance'; readonly by: number }
  | { readonly kind: 'clock'; readonly to: number }
  | { readonly kind: 'tick' }
  | { readonly kind: 'finish'; readonly source: number }
  | { readonly kind: 'peer'; readonly events: readonly Draft[] }

interface Draft {
  readonly source: number
  /** Next seq, a gap ahead, a copy of the last one, or none (deduplicated by id). */
  readonly seq: 'next' | 'gap' | 'copy' | 'none'
  readonly ts: number
  readonly value: number
  readonly key: string
}

interface Setup {
  readonly specs: readonly number[]
  readonly aggregates: boolean
  readonly discarding: boolean
  readonly early: 'every' | 'timer' | 'never'
  readonly allowedLateness: number
  readonly ops: readonly Op[]
}

/** One field changed: which (an index into every path of the checkpoint, taken modulo their count), and to what. */
interface Corruption {
  readonly at: number
  readonly to: number
}

const draft: fc.Arbitrary<Draft> = fc.record({
  source: fc.nat(3),
  seq: fc.constantFrom<Draft['seq']>('next', 'next', 'next', 'gap', 'copy', 'none'),
  ts: fc.oneof({ weight: 12, arbitrary: fc.integer({ min: -5, max: 90 }) }, { weight: 1, arbitrary: fc.constant(1e7) }),
  value: fc.integer({ min: -50, max: 50 }),
  key: fc.constantFrom('a', 'b', ''),
})

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('ingest' as const), events: fc.array(draft, { minLength: 1, maxLength: 8 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), by: fc.integer({ min: 1, max: 30 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('clock' as const), to: fc.oneof(fc.integer({ min: 0, max: 500 }), fc.constant(Number.NaN)) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('finish' as const), source: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('peer' as const), events: fc.array(draft, { minLength: 1, maxLength: 4 }) }) },
)

const setup: fc.Arbitrary<Setup> = fc.record({
  specs: fc.uniqueArray(fc.nat(SPECS.length - 1), { minLength: 1, maxLength: SPECS.length }),
  aggregates: fc.boolean(),
  discarding: fc.boolean(),
  early: fc.constantFrom<Setup['early']>('every', 'timer', 'never'),
  allowedLateness: fc.constantFrom(0, 5),
  ops: fc.array(op, { minLength: 1, maxLength: 14 }),
})

const corruption: fc.Arbitrary<Corruption> = fc.record({ at: fc.nat(), to: fc.nat() })

function optionsOf(s: Setup, clock: { now: number }, replicaId: string): EngineOptions<Record<string, never>> {
  return {
    windows: s.specs.map((i) => SPECS[i] as (typeof SPECS)[number]),
    watermark: manual(),
    replicaId,
    now: () => clock.now,
    allowedLateness: s.allowedLateness,
    accumulation: s.discarding ? 'discarding' : 'accumulating',
    trigger: { early: s.early === 'every' ? everyElement() : s.early === 'timer' ? afterProcessingTime(50) : never() },
    maxFutureSkew: 1_000,
    retention: 40,
    ...(s.aggregates ? { aggregates: { median: quantiles({ at: [0.5] }), sources: distinct({ of: (e: StreamEvent) => e.source }) } } : {}),
  } as unknown as EngineOptions<Record<string, never>>
}

/** The events of `drafts` for `sources` (by index), with seqs as each draft asks. */
function eventsOf(drafts: readonly Draft[], prefix: string, seqs: Map<string, number>): StreamEvent[] {
  return drafts.map((d, i) => {
    const source = `${prefix}${d.source}`
    const last = seqs.get(source) ?? 0
    const seq = d.seq === 'next' ? last + 1 : d.seq === 'gap' ? last + 2 : d.seq === 'copy' ? Math.max(1, last) : undefined
    if (seq !== undefined && seq > last) seqs.set(source, seq)
    const id = seq === undefined ? `${source}@${d.ts}/${i}/${d.value}` : `${source}#${seq}`
    return { id, source, ts: d.ts, value: d.value, key: d.key, ...(seq === undefined ? {} : { seq }) }
  })
}

/** The engine after `s.ops`, and the processing time it ended at. */
function ran(s: Setup): { engine: TidemarkEngine; clock: { now: number } } {
  const clock = { now: 0 }
  const engine = new TidemarkEngine(optionsOf(s, clock, 'me'))
  const peer = new TidemarkEngine(optionsOf(s, clock, 'peer'))
  const seqs = new Map<string, number>()
  let watermark = 0
  for (const o of s.ops) {
    if (o.kind === 'ingest') engine.ingest(eventsOf(o.events, 's', seqs))
    else if (o.kind === 'advance') {
      watermark += o.by
      engine.advanceWatermark(watermark)
    }
    else if (o.kind === 'clock') clock.now = o.to
    else if (o.kind === 'tick') engine.tick()
    // No log here: the finish is applied at once and its promise resolves; a rejection would surface as unhandled.
    else if (o.kind === 'finish') void engine.finishSource(`s${o.source}`)
    else {
      peer.ingest(eventsOf(o.events, 'p', seqs))
      const state = peer.replica.exportState()
      engine.replica.mergeRemote(state.cells, state.clocks)
    }
  }
  return { engine, clock }
}

/** Every path in `value`, inner ones too (a Uint8Array is a leaf). */
function pathsOf(value: unknown, path: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  if (path.length > 0) out.push(path)
  if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return out
  for (const key of Object.keys(value)) pathsOf((value as Record<string, unknown>)[key], [...path, Array.isArray(value) ? Number(key) : key], out)
  return out
}

/**
 * Values of the wrong type or out of range; `NEIGHBOUR`, `REMOVED` and `TWICE` stand for the
 * field's own value moved a little, for no field, and (an item of a list) for the item listed
 * again at the list's end.
 */
const NEIGHBOUR = Symbol('neighbour')
const REMOVED = Symbol('removed')
const TWICE = Symbol('twice')
const REPLACEMENTS: readonly unknown[] = [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 2 ** 60, '7', '', null, {}, [], true, new Uint8Array([255, 0, 7]), [new Uint8Array([1, 2, 3])], NEIGHBOUR, NEIGHBOUR, REMOVED, REMOVED, TWICE, TWICE]

/** `value` moved a little, keeping its type. */
function neighbour(value: unknown): unknown {
  if (typeof value === 'number') return Number.isFinite(value) ? value + 1 : 0
  if (typeof value === 'string') return `${value}x`
  if (typeof value === 'boolean') return !value
  if (Array.isArray(value)) return value.slice(1)
  return value
}

/** A copy of `checkpoint` with the field at `path` replaced, or removed. */
function corrupted(checkpoint: EngineCheckpoint, path: readonly (string | number)[], to: unknown): EngineCheckpoint {
  const copy = structuredClone(checkpoint) as unknown as Record<string | number, unknown>
  let parent = copy
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>
  const last = path[path.length - 1] as string | number
  if (to === REMOVED) delete parent[last]
  else if (to === TWICE) {
    if (Array.isArray(parent)) parent.push(structuredClone(parent[last]))
    else parent[last] = neighbour(parent[last])
  } else parent[last] = to === NEIGHBOUR ? neighbour(parent[last]) : to
  return copy as unknown as EngineCheckpoint
}

/** What an engine shows and keeps: equal before and after a refused restore. */
function observed(engine: TidemarkEngine) {
  return { stats: engine.stats(), results: engine.results(), late: engine.lateEvents(), checkpoint: engine.checkpoint(), nextTickAt: engine.nextTickAt() }
}

/** Operations after a restore: none of them may stop the engine. */
function serves(engine: TidemarkEngine, clock: { now: number }): void {
  const receipt = engine.ingest([
    { id: 'after#1', source: 'after', seq: 1, ts: 60, key: 'a', value: 1 },
    { id: 'after#2', source: 'after', seq: 2, ts: 3, key: 'b', value: 2 },
  ])
  expect(receipt.accepted + receipt.duplicates + receipt.beyondLateness + receipt.rejected).toBe(2)
  clock.now = 1_000
  engine.tick()
  engine.advanceWatermark(1_000)
  engine.tick()
  engine.results()
  engine.stats()
  engine.checkpoint()
}

function restoresOrRefuses(s: Setup, corruptions: readonly Corruption[]): void {
  const { engine, clock } = ran(s)
  const checkpoint = engine.checkpoint()
  /** A fresh engine on a clock of its own, reading what the checkpointed engine's read last. */
  const fresh = () => {
    const own = { now: clock.now }
    return { target: new TidemarkEngine(optionsOf(s, own, 'me')), own }
  }

  const whole = fresh()
  whole.target.restore(structuredClone(checkpoint))
  expect(whole.target.checkpoint()).toEqual(checkpoint)
  expect(whole.target.results()).toEqual(engine.results())
  serves(whole.target, whole.own)

  const paths = pathsOf(checkpoint)
  for (const c of corruptions) {
    const path = paths[c.at % paths.length] as (string | number)[]
    const to = REPLACEMENTS[c.to % REPLACEMENTS.length]
    const bad = corrupted(checkpoint, path, to)
    const at = `${path.join('.')} := ${to === NEIGHBOUR ? 'its neighbour' : to === REMOVED ? '(removed)' : to === TWICE ? 'listed twice' : String(to)}`
    const { target, own } = fresh()
    const before = observed(target)
    let refusal: unknown = null
    try {
      target.restore(bad)
    } catch (error) {
      refusal = error
    }
    if (refusal !== null) {
      expect(refusal, at).toBeInstanceOf(Error)
      expect((refusal as Error).message, at).toMatch(/^(checkpoint|unknown checkpoint format)/)
      expect(observed(target), at).toEqual(before)
      target.restore(checkpoint)
      expect(target.results(), at).toEqual(engine.results())
    }
    try {
      serves(target, own)
    } catch (error) {
      throw new Error(`${at}: restored, then: ${String(error)}`, { cause: error })
    }
  }
}

describe('restore of real checkpoints, whole and with one field changed (seeded)', () => {
  it(
    'a checkpoint restores as written; with one field changed it is refused with the engine as it was, or restored into an engine that serves: never stopped',
    () => assertFreshSeeded(fc.property(setup, fc.array(corruption, { minLength: 1, maxLength: 12 }), restoresOrRefuses), FILE, 200),
    PROPERTY_TIMEOUT,
  )
})
