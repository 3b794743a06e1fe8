/**
 * Recovery gives what the live engine gave (docs/durability.md): an engine restored from a
 * checkpoint taken at any point, then replaying the log records written after it, emits the same
 * changes in the same order as the engine that wrote them, and the same panes after both. Seeded:
 * random ingests, peers' cells, watermark moves, finished sources and ticks, on a clock that reads
 * finite times, `NaN` and both infinities (docs/bad-input.md, B17), under every kind of window and
 * trigger, accumulating and discarding. A failure prints the seed and a one-line repro command.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { assertSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import {
  afterProcessingTime,
  alignedProcessingTime,
  cumulating,
  type EngineOptions,
  everyElement,
  latest,
  manual,
  never,
  session,
  sliding,
  type StreamEvent,
  TidemarkEngine,
  type Trigger,
  tumbling,
  type WalOp,
  type WindowChange,
} from '../src/index.ts'

const FILE = 'packages/engine/test/checkpointReplay.property.test.ts'
const NAME = 'a checkpoint and the records after it replay to the changes the live engine emitted, in its order, on a clock that reads no finite time at times'

const SPECS = [tumbling(10), sliding(20, 5), cumulating(20, 5), session(5)]
const TRIGGERS: Record<string, () => Trigger> = { every: everyElement, timer: () => afterProcessingTime(7), aligned: () => alignedProcessingTime(10), never }

const draft = fc.record({ source: fc.nat(3), ts: fc.integer({ min: -5, max: 90 }), value: fc.integer({ min: -50, max: 50 }), key: fc.constantFrom('a', 'b', 'c') })
type Draft = typeof draft extends fc.Arbitrary<infer T> ? T : never

const op = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('ingest' as const), events: fc.array(draft, { maxLength: 6 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), by: fc.integer({ min: 1, max: 30 }) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('clock' as const),
      to: fc.oneof(fc.integer({ min: 0, max: 60 }), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY)),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('tick' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('finish' as const), source: fc.nat(3) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('peer' as const), events: fc.array(draft, { minLength: 1, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('checkpoint' as const) }) },
)

const setup = fc.record({
  specs: fc.uniqueArray(fc.nat(SPECS.length - 1), { minLength: 1, maxLength: SPECS.length }),
  discarding: fc.boolean(),
  early: fc.constantFrom('every', 'timer', 'aligned', 'never'),
  late: fc.constantFrom('every', 'timer', 'never'),
  idleTimeout: fc.constantFrom(Number.POSITIVE_INFINITY, 20),
  allowedLateness: fc.constantFrom(0, 5, 30),
  ops: fc.array(op, { minLength: 1, maxLength: 30 }),
})
type Setup = typeof setup extends fc.Arbitrary<infer T> ? T : never

function optionsOf(s: Setup, clock: { now: number }, replicaId: string): EngineOptions<Record<string, never>> {
  return {
    windows: s.specs.map((i) => SPECS[i] as (typeof SPECS)[number]),
    watermark: manual(),
    replicaId,
    now: () => clock.now,
    allowedLateness: s.allowedLateness,
    accumulation: s.discarding ? 'discarding' : 'accumulating',
    trigger: { early: (TRIGGERS[s.early] as () => Trigger)(), late: (TRIGGERS[s.late] as () => Trigger)() },
    idleTimeout: s.idleTimeout,
    retention: 20,
    aggregates: { last: latest() },
  } as unknown as EngineOptions<Record<string, never>>
}

/** Every non-empty notification of `engine` from now on, one line each. */
function notifications(engine: TidemarkEngine): string[] {
  const seen: string[] = []
  const line = ({ type, result: r }: WindowChange) => `${type} ${r.window} ${r.key} [${r.start}, ${r.end}) ${r.count} ${r.sum} ${r.status} ${JSON.stringify(r.pane)}`
  engine.subscribe((changes) => {
    if (changes.length > 0) seen.push(changes.map(line).join(' | '))
  })
  return seen
}

function recoversTheLiveRun(s: Setup): void {
  const clock = { now: 0 }
  const engine = new TidemarkEngine(optionsOf(s, clock, 'me'))
  const ops: WalOp[] = []
  engine.attachLog({
    record: (op) => {
      ops.push(op)
      return Promise.resolve()
    },
    blocked: null,
    stats: () => ({ walRecords: ops.length, walBytes: 0 }),
  })
  const peer = new TidemarkEngine(optionsOf(s, clock, 'peer'))
  const seqs = new Map<string, number>()
  const eventsOf = (drafts: readonly Draft[], prefix: string): StreamEvent[] =>
    drafts.map((d) => {
      const source = `${prefix}${d.source}`
      const seq = (seqs.get(source) ?? 0) + 1
      seqs.set(source, seq)
      return { id: `${source}#${seq}`, source, seq, ts: d.ts, value: d.value, key: d.key }
    })
  const live = notifications(engine)
  let checkpoint = engine.checkpoint()
  let logged = 0
  let shown = 0
  let watermark = 0
  for (const o of s.ops) {
    if (o.kind === 'ingest') engine.ingest(eventsOf(o.events, 's'))
    else if (o.kind === 'advance') {
      watermark += o.by
      engine.advanceWatermark(watermark)
    }
    else if (o.kind === 'clock') clock.now = o.to
    else if (o.kind === 'tick') engine.tick()
    // No log here: the finish is applied at once and its promise resolves; a rejection would surface as unhandled.
    else if (o.kind === 'finish') void engine.finishSource(`s${o.source}`)
    else if (o.kind === 'checkpoint') {
      checkpoint = engine.checkpoint()
      logged = ops.length
      shown = live.length
    } else {
      peer.ingest(eventsOf(o.events, 'p'))
      const state = peer.replica.exportState()
      engine.replica.mergeRemote(state.cells, state.clocks)
    }
  }
  const recovered = new TidemarkEngine(optionsOf(s, clock, 'me'))
  recovered.restore(structuredClone(checkpoint))
  const replayed = notifications(recovered)
  for (const record of ops.slice(logged)) recovered.replay(record)
  expect(replayed).toEqual(live.slice(shown))
  expect(recovered.results()).toEqual(engine.results())
  // What either still has due: the processing-time panes, once the clock reads a time again.
  const [liveBefore, replayedBefore] = [live.length, replayed.length]
  for (const now of [1_000, 1_100]) {
    clock.now = now
    engine.tick()
    recovered.tick()
  }
  expect(replayed.slice(replayedBefore)).toEqual(live.slice(liveBefore))
}

describe('recovery from a checkpoint and the log after it (seeded)', () => {
  it(NAME, () => assertSeeded(fc.property(setup, recoversTheLiveRun), FILE, NAME, 200), PROPERTY_TIMEOUT)
})
