/**
 * The incremental frontiers (heaps that follow the clocks that changed) against the pass over
 * every source they stand in for (`Frontiers` with an infinite follow cost, which passes at every
 * `advance`, as the frontiers did before they had heaps): the same random
 * operations on both, each on its own clocks, and after every operation the same W, strict W, P,
 * counts, largest event time, holders, next idle time and settledness, to the sign of a zero.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { assertSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import { boundedOutOfOrderness, manual } from '../src/index.ts'
import type { ClockEntry } from '../src/replica/replicaPort.ts'
import { mergeRemoteClocks } from '../src/replica/remoteMerge.ts'
import { Frontiers } from '../src/time/frontiers.ts'
import type { EventStamp, SourceClock } from '../src/time/sourceClock.ts'

const FILE = 'packages/engine/test/frontiersIncremental.property.test.ts'
const REPLICA = 'r1'

type Op =
  | { readonly kind: 'events'; readonly events: readonly Draft[]; readonly advance: boolean }
  | { readonly kind: 'finish'; readonly source: number }
  | { readonly kind: 'merge'; readonly entries: readonly EntryDraft[] }
  | { readonly kind: 'clock'; readonly to: Now }
  | { readonly kind: 'tick' }
  | { readonly kind: 'advanceTo'; readonly by: number }
  | { readonly kind: 'restore' }

/** Processing time moves: forward (a little, past the idle timeout), back, or to no time at all. */
type Now = { readonly move: 'forward' | 'back'; readonly by: number } | { readonly move: 'to'; readonly value: number }

interface Draft {
  readonly source: number
  /** Next seq, a gap ahead, a seq left behind earlier (filling a gap, or a copy), or no seq. */
  readonly seq: 'next' | 'gap' | 'fill' | 'none'
  /** Event time step from the source's last one: mostly forward, sometimes back (breaking its proof). */
  readonly step: number
  readonly negativeZero: boolean
}

interface EntryDraft {
  readonly source: number
  readonly writer: string
  readonly version: number
  readonly maxTs: number
  readonly prefix: number
  readonly prefixTs: number
  readonly provable: boolean
  readonly finished: boolean
}

interface Plan {
  readonly bounded: boolean
  readonly lag: number
  readonly idleTimeout: number
  readonly sources: number
  readonly maxSources: number
  /** 0 follows every change; 16 as the engine; 1 between: the heaps are left and built again. */
  readonly followCost: number
  readonly ops: readonly Op[]
}

const draft = (sources: number): fc.Arbitrary<Draft> =>
  fc.record({
    source: fc.nat(sources - 1),
    seq: fc.constantFrom<Draft['seq']>('next', 'next', 'next', 'gap', 'fill', 'none'),
    step: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 3 }) }, { weight: 1, arbitrary: fc.integer({ min: -4, max: -1 }) }),
    negativeZero: fc.boolean(),
  })

const entry = (sources: number): fc.Arbitrary<EntryDraft> =>
  fc.record({
    // Sources beyond the plan's: new ones, past `maxSources` sometimes (left out: untracked).
    source: fc.nat(sources + 2),
    writer: fc.constantFrom('r0', 'r1', 'r2'),
    version: fc.nat(40),
    maxTs: fc.integer({ min: -2, max: 30 }),
    prefix: fc.nat(20),
    prefixTs: fc.oneof(fc.integer({ min: -2, max: 30 }), fc.constant(Number.NEGATIVE_INFINITY)),
    provable: fc.boolean(),
    finished: fc.boolean(),
  })

const now: fc.Arbitrary<Now> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ move: fc.constant<'forward'>('forward'), by: fc.constantFrom(0, 1, 2, 5, 10, 11, 30, 0.5) }) },
  { weight: 2, arbitrary: fc.record({ move: fc.constant<'back'>('back'), by: fc.constantFrom(1, 7, 40) }) },
  { weight: 1, arbitrary: fc.record({ move: fc.constant<'to'>('to'), value: fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, 0) }) },
)

const plans: fc.Arbitrary<Plan> = fc
  .record({
    lag: fc.constantFrom(0, 3),
    idleTimeout: fc.constantFrom(Number.POSITIVE_INFINITY, 10, 10.5, 0),
    sources: fc.integer({ min: 1, max: 12 }),
    followCost: fc.constantFrom(0, 0, 1, 16),
  })
  .chain((base) =>
    fc.record({
      bounded: fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      lag: fc.constant(base.lag),
      idleTimeout: fc.constant(base.idleTimeout),
      sources: fc.constant(base.sources),
      maxSources: fc.constantFrom(base.sources + 3, base.sources),
      followCost: fc.constant(base.followCost),
      ops: fc.array(
        fc.oneof(
          { weight: 8, arbitrary: fc.record({ kind: fc.constant<'events'>('events'), events: fc.array(draft(base.sources), { minLength: 1, maxLength: 6 }), advance: fc.boolean() }) },
          { weight: 1, arbitrary: fc.record({ kind: fc.constant<'finish'>('finish'), source: fc.nat(base.sources - 1) }) },
          { weight: 2, arbitrary: fc.record({ kind: fc.constant<'merge'>('merge'), entries: fc.array(entry(base.sources), { minLength: 1, maxLength: 4 }) }) },
          { weight: 4, arbitrary: fc.record({ kind: fc.constant<'clock'>('clock'), to: now }) },
          { weight: 3, arbitrary: fc.constant<Op>({ kind: 'tick' }) },
          { weight: 1, arbitrary: fc.record({ kind: fc.constant<'advanceTo'>('advanceTo'), by: fc.integer({ min: -2, max: 6 }) }) },
          { weight: 1, arbitrary: fc.constant<Op>({ kind: 'restore' }) },
        ),
        { minLength: 30, maxLength: 90 },
      ),
    }),
  )

/** The reference: a pass over every source at every `advance`, never the heaps. */
const PASS_ONLY = Number.POSITIVE_INFINITY

/** An event as a clock records it, with its source. */
type Stamped = EventStamp & { readonly source: string }

/** What the engine reads of its frontiers, zeros signed. */
function observe(f: Frontiers, probe: number): string {
  const show = (x: unknown) => (Object.is(x, -0) ? '-0' : String(x))
  const holders = f.holders()
  return [
    `W ${show(f.watermark)}`,
    `strict ${show(f.strictWatermark)}`,
    `P ${show(f.proof)}`,
    `idle ${f.idleSources}`,
    `finished ${f.finishedSources}`,
    `maxTs ${show(f.maxTs)}`,
    `untracked ${show(f.untrackedProof)}`,
    `holders ${holders.proof}/${holders.watermark}`,
    `nextIdleAt ${show(f.nextIdleAt())}`,
    `settledAt(${show(probe)}) ${f.settledAt(probe)}`,
    `sources ${f.sources.size}`,
  ].join(', ')
}

/** Runs `plan` on the incremental frontiers and on the reference; throws at the first operation where they part. */
function check(plan: Plan): void {
  const strategy = plan.bounded ? boundedOutOfOrderness(plan.lag) : manual()
  let incremental: Frontiers = new Frontiers(strategy, plan.idleTimeout, plan.followCost)
  let reference: Frontiers = new Frontiers(strategy, plan.idleTimeout, PASS_ONLY)
  let at = 0
  /** Per source: the last event time sent, the next seq, a seq skipped (to fill later). */
  const sent = Array.from({ length: plan.sources }, () => ({ ts: 0, seq: 1, skipped: [] as number[] }))
  let ids = 0
  const name = (source: number) => `s${source}`
  const apply = (f: Frontiers, op: Op, events: readonly Stamped[], entries: readonly ClockEntry[]) => {
    switch (op.kind) {
      case 'events':
        for (const event of events) {
          // As placement does: a finished source, a clock of another writer, and a copy take nothing.
          let clock: SourceClock | undefined = f.sources.get(event.source)
          if (clock !== undefined && (clock.finished || clock.writer !== REPLICA || clock.seen(event.seq, event.id))) continue
          if (clock === undefined) {
            if (f.sources.size >= plan.maxSources) continue
            clock = f.source(event.source, at)
            clock.writer = REPLICA
          }
          clock.lastSeen = at
          clock.record(event)
          // As placement lists it for the frontiers (the reference's clocks list nowhere).
          clock.changed()
        }
        if (op.advance) f.advance(at)
        return
      case 'finish': {
        const clock = f.sources.get(name(op.source)) ?? (f.sources.size < plan.maxSources ? f.source(name(op.source), at) : undefined)
        if (clock === undefined || (clock.writer !== REPLICA && clock.writer !== '' && !clock.finished)) return
        clock.writer = REPLICA
        clock.finish()
        f.advance(at)
        return
      }
      case 'merge':
        mergeRemoteClocks(f as Frontiers, entries, REPLICA, plan.maxSources, at, () => {})
        f.advance(at)
        return
      case 'clock':
        return
      case 'tick':
        f.advance(at)
        return
      case 'advanceTo':
        f.advanceTo(f.watermark + op.by)
        return
      case 'restore':
        return
    }
  }
  for (let i = 0; i < plan.ops.length; i++) {
    const op = plan.ops[i] as Op
    const events: Stamped[] = []
    const entries: ClockEntry[] = []
    if (op.kind === 'clock') {
      const to = op.to
      at = to.move === 'to' ? to.value : Number.isFinite(at) ? (to.move === 'forward' ? at + to.by : at - to.by) : 100
    } else if (op.kind === 'events') {
      for (const d of op.events) {
        const s = sent[d.source] as { ts: number; seq: number; skipped: number[] }
        s.ts += d.step
        const ts = d.negativeZero && s.ts === 0 ? -0 : s.ts
        let seq: number | undefined
        if (d.seq === 'next') seq = s.seq++
        else if (d.seq === 'gap') {
          s.skipped.push(s.seq)
          seq = s.seq + 1
          s.seq += 2
        } else if (d.seq === 'fill') seq = s.skipped.pop() ?? Math.max(1, s.seq - 1)
        const id = `${name(d.source)}-${ids++}`
        events.push(seq === undefined ? { source: name(d.source), id, ts } : { source: name(d.source), seq, id, ts })
      }
    } else if (op.kind === 'merge') {
      for (const e of op.entries) {
        const { source, finished, ...rest } = e
        entries.push({ source: name(source), ...rest, ...(finished ? { finished: true } : {}) })
      }
    } else if (op.kind === 'restore') {
      const a = structuredClone(incremental.snapshot())
      const b = structuredClone(reference.snapshot())
      if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`op ${i} (restore): checkpoints differ\n  incremental ${JSON.stringify(a)}\n  reference   ${JSON.stringify(b)}`)
      incremental = new Frontiers(strategy, plan.idleTimeout, plan.followCost)
      incremental.restore(a)
      reference = new Frontiers(strategy, plan.idleTimeout, PASS_ONLY)
      reference.restore(b)
    }
    apply(incremental, op, events, entries)
    apply(reference, op, events, entries)
    for (const probe of [at, Number.isFinite(at) ? at + 11 : 0]) {
      const got = observe(incremental, probe)
      const want = observe(reference, probe)
      if (got !== want) throw new Error(`op ${i} (${JSON.stringify(op)}), now ${at}:\n  incremental ${got}\n  reference   ${want}`)
    }
  }
}

describe('Frontiers: the heaps that follow changed clocks answer as a pass over every source', () => {
  const name = 'W, strict W, P, counts and holders agree after every operation'
  it(name, () => assertSeeded(fc.property(plans, check), FILE, name, 400), PROPERTY_TIMEOUT)
})

/**
 * Plans where every source is idle much of the time: many sources, short idle timeouts, clocks
 * moving far ahead, and among them the operations that move clocks while every one is idle
 * (finishing them one by one, peers' copies adopted, joined or taking a finish back, a restore, a
 * source heard again).
 */
const quietPlans: fc.Arbitrary<Plan> = fc
  .record({
    lag: fc.constantFrom(0, 3),
    idleTimeout: fc.constantFrom(0, 1, 10),
    sources: fc.integer({ min: 2, max: 48 }),
    // 16 as the engine: the heaps follow only the batches that change few of many sources.
    followCost: fc.constantFrom(0, 0, 1, 16),
  })
  .chain((base) =>
    fc.record({
      bounded: fc.constant(true),
      lag: fc.constant(base.lag),
      idleTimeout: fc.constant(base.idleTimeout),
      sources: fc.constant(base.sources),
      maxSources: fc.constantFrom(base.sources + 3, base.sources),
      followCost: fc.constant(base.followCost),
      ops: fc.array(
        fc.oneof(
          { weight: 4, arbitrary: fc.record({ kind: fc.constant<'events'>('events'), events: fc.array(draft(base.sources), { minLength: 1, maxLength: 3 }), advance: fc.boolean() }) },
          { weight: 5, arbitrary: fc.record({ kind: fc.constant<'finish'>('finish'), source: fc.nat(base.sources - 1) }) },
          { weight: 3, arbitrary: fc.record({ kind: fc.constant<'merge'>('merge'), entries: fc.array(entry(base.sources), { minLength: 1, maxLength: 3 }) }) },
          { weight: 3, arbitrary: fc.record({ kind: fc.constant<'clock'>('clock'), to: now }) },
          { weight: 4, arbitrary: fc.constant<Op>({ kind: 'tick' }) },
          { weight: 1, arbitrary: fc.constant<Op>({ kind: 'restore' }) },
        ),
        { minLength: 40, maxLength: 120 },
      ),
    }),
  )

describe('Frontiers: the heaps answer as a pass while every source is idle', () => {
  const name = 'W, strict W, P, counts and holders agree among many idle sources finished, merged, restored and heard again'
  it(name, () => assertSeeded(fc.property(quietPlans, check), FILE, name, 400), PROPERTY_TIMEOUT)
})

describe('Frontiers: every source idle', () => {
  it("goes where the sources heard from last hold W, found again when a peer's copy moves one of them", () => {
    const entry = (source: string, maxTs: number, version: number): ClockEntry => ({ source, writer: 'r2', version, maxTs, prefix: 0, prefixTs: 0, provable: false })
    const watermarks = [0, PASS_ONLY].map((followCost) => {
      const f = new Frontiers(boundedOutOfOrderness(0), 100, followCost)
      const seen: number[] = []
      mergeRemoteClocks(f, [entry('d0', 10, 5)], REPLICA, 10, 0, () => {})
      f.advance(0)
      mergeRemoteClocks(f, [entry('d1', 3_000, 5)], REPLICA, 10, 50, () => {})
      // Calm advances: the heaps follow from here (with a finite follow cost).
      for (let at = 60; at < 70; at++) f.advance(at)
      f.advance(500)
      seen.push(f.watermark)
      f.advance(600)
      // An older copy of d1's clock (a lower version) still joins its largest event time, without d1 being heard.
      mergeRemoteClocks(f, [entry('d1', 4_000, 1)], REPLICA, 10, 700, () => {})
      f.advance(700)
      seen.push(f.watermark, f.idleSources)
      return seen
    })
    expect(watermarks).toEqual([
      [3_000, 4_000, 2],
      [3_000, 4_000, 2],
    ])
  })
})

describe('Frontiers: a clock heard while processing time was no time', () => {
  // The property above found it (TIDEMARK_EXTENSIVE=1, TIDEMARK_SEED=1 to 8): the heaps, built
  // again after calm passes, took such a clock as active for good, never to turn idle.
  it('counts as heard at the next finite time when the heaps are built again, as a pass counts it', () => {
    const seen = [0, PASS_ONLY].map((followCost) => {
      const f = new Frontiers(boundedOutOfOrderness(0), 10, followCost)
      const a = f.source('a', 0)
      a.lastSeen = 0
      a.record({ seq: 1, id: 'a1', ts: 5 })
      a.changed()
      // Four calm passes (CALM_ADVANCES): the heaps are built at the next advance, after b is heard.
      for (let at = 0; at < 4; at++) f.advance(at)
      const b = f.source('b', Number.NaN)
      b.lastSeen = Number.NaN
      b.record({ seq: 1, id: 'b1', ts: 50 })
      b.changed()
      f.advance(100)
      const at100 = [b.lastSeen, f.idleSources, f.nextIdleAt()]
      f.advance(111)
      return [...at100, f.idleSources, f.watermark]
    })
    expect(seen).toEqual([
      [100, 1, 111, 2, 50],
      [100, 1, 111, 2, 50],
    ])
  })
})

describe('Frontiers: nextIdleAt on fractional times', () => {
  /** The first whole millisecond at which the idleness rule (`now - lastSeen > idleTimeout`) holds, found by trying each. */
  const firstIdleMs = (lastSeen: number, idleTimeout: number) => {
    let at = Math.floor(lastSeen + idleTimeout) - 2
    while (!(at - lastSeen > idleTimeout)) at++
    return at
  }
  /** `nextIdleAt()` with one source heard at `lastSeen`, from the heaps (follow cost 0, after calm passes) and from a pass. */
  const nextIdleAt = (lastSeen: number, idleTimeout: number) =>
    [0, PASS_ONLY].map((followCost) => {
      const f = new Frontiers(boundedOutOfOrderness(0), idleTimeout, followCost)
      const a = f.source('a', lastSeen)
      a.lastSeen = lastSeen
      a.record({ seq: 1, id: 'a1', ts: 5 })
      a.changed()
      for (let i = 0; i < 6; i++) f.advance(lastSeen)
      return f.nextIdleAt()
    })

  it('is the first whole millisecond a clock read every millisecond finds the source idle at, also when lastSeen + idleTimeout rounds to a whole number', () => {
    // 327.7 + 0.3 is 328 in doubles, yet 328 - 327.7 > 0.3: idle at 328, not 329.
    expect(firstIdleMs(327.7, 0.3)).toBe(328)
    expect(nextIdleAt(327.7, 0.3)).toEqual([328, 328])
  })

  it('agrees with trying each millisecond on performance.now-like clocks and fractional timeouts', () => {
    const name = 'nextIdleAt on fractional times'
    const time = fc.tuple(fc.integer({ min: 0, max: 2 ** 40 }), fc.constantFrom(0, 0.1, 0.25, 0.5, 0.7, 0.9, 0.123456789))
    const timeout = fc.oneof(fc.constantFrom(0, 0.1, 0.2, 0.3, 0.25, 1_500.5, 30_000), fc.double({ min: 0, max: 1e6, noNaN: true }))
    assertSeeded(
      fc.property(time, timeout, ([whole, part], idleTimeout) => {
        const lastSeen = whole + part
        const want = firstIdleMs(lastSeen, idleTimeout)
        expect(nextIdleAt(lastSeen, idleTimeout), `lastSeen ${lastSeen}, idleTimeout ${idleTimeout}`).toEqual([want, want])
      }),
      FILE,
      name,
      300,
    )
  })
})

describe('Frontiers: every source idle, then finished one at a time', () => {
  // Where W goes once every source is idle (the lowest maxTs of those heard from last) is followed
  // by heaps while they follow the clocks: finishing sources, in any order, among ties of
  // lastSeen and of maxTs (signed zeros too), with a source heard again now and then, and a
  // peer's older copy of a clock raising its maxTs without it being heard.
  type Step =
    | { readonly kind: 'finish'; readonly source: number }
    | { readonly kind: 'hear'; readonly source: number; readonly step: number }
    | { readonly kind: 'join'; readonly source: number; readonly by: number }
    | { readonly kind: 'wait' }
  const idlePlans = fc.integer({ min: 1, max: 40 }).chain((sources) =>
    fc.record({
      heard: fc.array(
        fc.record({ at: fc.constantFrom(0, 1, 2, 2.5), ts: fc.oneof(fc.integer({ min: -2, max: 5 }), fc.constant(-0)) }),
        { minLength: sources, maxLength: sources },
      ),
      steps: fc.array(
        fc.oneof(
          { weight: 6, arbitrary: fc.record({ kind: fc.constant<'finish'>('finish'), source: fc.nat(sources - 1) }) },
          { weight: 1, arbitrary: fc.record({ kind: fc.constant<'hear'>('hear'), source: fc.nat(sources - 1), step: fc.integer({ min: -3, max: 3 }) }) },
          { weight: 1, arbitrary: fc.record({ kind: fc.constant<'join'>('join'), source: fc.nat(sources - 1), by: fc.integer({ min: 1, max: 3 }) }) },
          { weight: 1, arbitrary: fc.constant<Step>({ kind: 'wait' }) },
        ),
        { minLength: sources, maxLength: sources * 3 },
      ),
    }),
  )

  function checkIdle(plan: { readonly heard: readonly { readonly at: number; readonly ts: number }[]; readonly steps: readonly Step[] }): void {
    const both = [new Frontiers(boundedOutOfOrderness(0), 10, 0), new Frontiers(boundedOutOfOrderness(0), 10, PASS_ONLY)]
    const seqs = plan.heard.map(() => 1)
    const lastTs = plan.heard.map((h) => h.ts)
    let at = 0
    const hear = (f: Frontiers, source: number, ts: number) => {
      const clock = f.source(`s${source}`, at)
      if (clock.finished) return
      clock.lastSeen = at
      clock.record({ seq: seqs[source] as number, id: `s${source}-${seqs[source]}`, ts })
      clock.changed()
    }
    for (let i = 0; i < plan.heard.length; i++) {
      const { at: heardAt, ts } = plan.heard[i] as { at: number; ts: number }
      at = heardAt
      for (const f of both) hear(f, i, ts)
    }
    seqs.fill(2)
    // Calm advances: the heaps follow from here; then every source is idle.
    for (const f of both) for (let t = 3; t < 9; t++) f.advance(t)
    at = 100
    for (const f of both) f.advance(at)
    for (let i = 0; i < plan.steps.length; i++) {
      const step = plan.steps[i] as Step
      if (step.kind === 'wait') at += 20
      else if (step.kind === 'hear') {
        at += 1
        lastTs[step.source] = (lastTs[step.source] as number) + step.step
        for (const f of both) hear(f, step.source, lastTs[step.source] as number)
        seqs[step.source] = (seqs[step.source] as number) + 1
      } else if (step.kind === 'join') {
        lastTs[step.source] = (lastTs[step.source] as number) + step.by
        const entry: ClockEntry = { source: `s${step.source}`, writer: 'r2', version: 0, maxTs: lastTs[step.source] as number, prefix: 0, prefixTs: 0, provable: false }
        for (const f of both) mergeRemoteClocks(f, [entry], REPLICA, plan.heard.length, at, () => {})
      } else for (const f of both) f.sources.get(`s${step.source}`)?.finish()
      for (const f of both) f.advance(at)
      const [got, want] = both.map((f) => observe(f, at)) as [string, string]
      if (got !== want) throw new Error(`step ${i} (${JSON.stringify(step)}), now ${at}:\n  incremental ${got}\n  reference   ${want}`)
    }
  }

  const name = 'W as a pass finds it after every finish, heard source and wait'
  it(name, () => assertSeeded(fc.property(idlePlans, checkIdle), FILE, name, 300), PROPERTY_TIMEOUT)
})
