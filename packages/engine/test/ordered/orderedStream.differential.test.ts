import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Anomaly, AnomalyReason } from '../../src/input/anomaly.ts'
import type { StreamEvent } from '../../src/input/event.ts'
import type { OrderedEvent } from '../../src/ordered/eventOrder.ts'
import { orderEvents } from '../../src/ordered/orderEvents.ts'
import { createOrderedStream } from '../../src/ordered/orderedStream.ts'
import type { OrderedBatch, OrderedStream } from '../../src/ordered/orderedStreamApi.ts'
import { boundedOutOfOrderness, manual } from '../../src/time/watermarkStrategy.ts'
import type { Basis } from '../../src/windows/windowResult.ts'
import { assertFreshSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'

/**
 * A differential test of the ordered stream against a small model written from
 * docs/semantics.md (the ordered event stream; events, duplicates, the watermark) and
 * docs/bounds.md (the ordered stream's bounds): plain arrays and maps, sort everything on each
 * flush, no heap. Every operation of a random run (push, advanceWatermark, flushReady, a step
 * of the processing-time clock) is applied to both, and receipts, anomalies, emitted batches
 * (kind, size, order, basis), the late lane and the stats are compared after each one.
 *
 * A failure prints the seed and a repro command (`TIDEMARK_SEED=… npx vitest run <file>`).
 */
const FILE = 'packages/engine/test/ordered/orderedStream.differential.test.ts'

const SOURCES = ['a', 'b', '__proto__', 'constructor'] as const
const MAX_NAME = 1024
const MAX_ABS_TS = 2 ** 53 / 1000

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

interface Setup {
  readonly lag: number | null
  readonly allowedLateness: number
  readonly onLate: 'emit_correction' | 'drop'
  readonly batchSize: number
  readonly maxPending: number
  readonly maxSources: number
  readonly maxDedupEntries: number
  readonly maxLateEvents: number
  readonly idleTimeout: number | undefined
}

/** The validation rules of docs/semantics.md (Events), checked in the documented order. */
function modelInvalid(input: unknown): AnomalyReason | null {
  try {
    if (typeof input !== 'object' || input === null) return 'invalid_event'
    const e = input as Record<string, unknown>
    if (typeof e.id !== 'string' || e.id === '') return 'missing_id'
    if (e.id.length > MAX_NAME) return 'invalid_id'
    if (typeof e.source !== 'string' || e.source === '') return 'missing_source'
    if (e.source.length > MAX_NAME) return 'invalid_source'
    if (typeof e.ts !== 'number' || !(Math.abs(e.ts) <= MAX_ABS_TS)) return 'invalid_ts'
    if (typeof e.value !== 'number' || !Number.isFinite(e.value)) return 'invalid_value'
    if (e.seq !== undefined && !(typeof e.seq === 'number' && Number.isSafeInteger(e.seq) && e.seq >= 1)) return 'invalid_seq'
    if (e.key !== undefined && !(typeof e.key === 'string' && e.key.length <= MAX_NAME)) return 'invalid_key'
    return null
  } catch {
    return 'invalid_event'
  }
}

/** `(ts, source, seq, id)`, strings by code units, absent seq first. */
function modelOrder(a: StreamEvent, b: StreamEvent): number {
  if (a.ts !== b.ts) return a.ts < b.ts ? -1 : 1
  if (a.source !== b.source) return a.source < b.source ? -1 : 1
  if ((a.seq ?? 0) !== (b.seq ?? 0)) return (a.seq ?? 0) < (b.seq ?? 0) ? -1 : 1
  if (a.id !== b.id) return a.id < b.id ? -1 : 1
  return 0
}

/** A source as the docs describe it: its max ts, gap-free seq prefix, dedup memory and proof. */
interface ModelSource {
  maxTs: number
  lastSeen: number
  prefix: number
  /** Largest ts along the prefix. */
  prefixTs: number
  /** ts of the seq at the prefix. */
  lastPrefixTs: number
  provable: boolean
  /** The prefix when the first event without seq arrived (Infinity: none did): seqs above it prove nothing. */
  seqlessFrom: number
  /** The first seq of the prefix whose ts is below its predecessor's (0: none). */
  regressedAt: number
  /** A seq above the gap came with a ts below the prefix's last: ts goes backwards above the prefix, whatever fills the gap. */
  regressedAbove: boolean
  /** Seqs above the gap, remembered one by one with their ts. */
  readonly ahead: Map<number, number>
  /** Ids of events without seq, with their ts. */
  readonly ids: Map<string, number>
}

interface Held {
  readonly event: StreamEvent
  readonly arrivedAt: number
}

interface ModelReceipt {
  accepted: number
  late: number
  duplicates: number
  beyondLateness: number
  rejected: number
  anomalies: { reason: AnomalyReason; index: number }[]
}

interface ModelBatch {
  readonly kind: 'ready' | 'correction'
  readonly events: { event: StreamEvent; basis: Basis }[]
}

class Model {
  readonly o: Setup
  now = 0
  W = Number.NEGATIVE_INFINITY
  maxTsSeen = Number.NEGATIVE_INFINITY
  proof = Number.NEGATIVE_INFINITY
  readonly sources = new Map<string, ModelSource>()
  held: Held[] = []
  corrections: Held[] = []
  lateLane: StreamEvent[] = []
  lateTrimmed = 0
  dedupAfterRelease = 0
  dedupReleased = 0
  peak = 0
  readonly counts = {
    pushed: 0,
    accepted: 0,
    lateAdmitted: 0,
    duplicates: 0,
    beyondLateness: 0,
    rejected: 0,
    flushes: 0,
    readyEmitted: 0,
    correctionsEmitted: 0,
    readyBatches: 0,
    correctionBatches: 0,
  }
  readonly anomalyCounts = new Map<AnomalyReason, number>()
  /** Every event accepted (held for emission), to check nothing accepted is lost. */
  readonly acceptedLog: StreamEvent[] = []

  constructor(o: Setup) {
    this.o = o
  }

  get finality(): number {
    return this.W - this.o.allowedLateness
  }

  dedupEntries(): number {
    let n = 0
    for (const s of this.sources.values()) n += s.ahead.size + s.ids.size
    return n
  }

  #count(reason: AnomalyReason, by = 1): void {
    this.anomalyCounts.set(reason, (this.anomalyCounts.get(reason) ?? 0) + by)
  }

  #seen(s: ModelSource, e: StreamEvent): boolean {
    return e.seq === undefined ? s.ids.has(e.id) : e.seq <= s.prefix || s.ahead.has(e.seq)
  }

  /** A copy provably unlike the first delivery: its ts differs from the one remembered (docs: conflicting_duplicate). */
  #conflicts(s: ModelSource, e: StreamEvent): boolean {
    let first: number | undefined
    if (e.seq === undefined) first = s.ids.get(e.id)
    else if (e.seq > s.prefix) first = s.ahead.get(e.seq)
    else if (e.seq === s.prefix) first = s.lastPrefixTs
    else return e.ts > s.prefixTs
    return first !== undefined && first !== e.ts
  }

  #record(s: ModelSource, e: StreamEvent): void {
    s.lastSeen = this.now
    if (e.ts > s.maxTs) s.maxTs = e.ts
    if (e.seq === undefined) {
      s.ids.set(e.id, e.ts)
      s.seqlessFrom = Math.min(s.seqlessFrom, s.prefix)
      s.provable = false
      return
    }
    if (e.seq !== s.prefix + 1) {
      // Above a gap, earlier than the prefix's end: ts went backwards along seq (docs, The proof frontier P).
      if (e.ts < s.lastPrefixTs) {
        s.provable = false
        s.regressedAbove = true
      }
      s.ahead.set(e.seq, e.ts)
      return
    }
    let seq = e.seq
    let ts = e.ts
    for (;;) {
      if (ts < s.lastPrefixTs) {
        s.provable = false
        if (s.regressedAt === 0) s.regressedAt = seq
      }
      s.lastPrefixTs = ts
      s.prefix = seq
      if (ts > s.prefixTs) s.prefixTs = ts
      const next = s.ahead.get(seq + 1)
      if (next === undefined) break
      s.ahead.delete(seq + 1)
      seq++
      ts = next
    }
  }

  /** Dedup memory of events below finality is released (docs: finality). */
  #release(): void {
    const f = this.finality
    for (const s of this.sources.values()) {
      for (const [id, ts] of s.ids) {
        if (ts < f) {
          s.ids.delete(id)
          this.dedupReleased++
        }
      }
      for (const [seq, ts] of s.ahead) {
        if (ts < f) {
          s.ahead.delete(seq)
          this.dedupReleased++
        }
      }
    }
    this.dedupAfterRelease = this.dedupEntries()
  }

  /**
   * W from the strategy, between batches: min over active sources of maxTs, minus the bound; never
   * back. When every source is idle: the lowest maxTs among the sources heard from last (where
   * they held W just before the last of them turned idle).
   */
  #advance(): void {
    let active = Number.POSITIVE_INFINITY
    let proof = Number.POSITIVE_INFINITY
    let heard = Number.NEGATIVE_INFINITY
    let heardFloor = Number.NEGATIVE_INFINITY
    for (const s of this.sources.values()) {
      if (s.maxTs > this.maxTsSeen) this.maxTsSeen = s.maxTs
      proof = Math.min(proof, s.provable ? s.prefixTs : Number.NEGATIVE_INFINITY)
      const idle = this.o.idleTimeout !== undefined && this.now - s.lastSeen > this.o.idleTimeout
      if (!idle) active = Math.min(active, s.maxTs)
      if (s.lastSeen > heard) [heard, heardFloor] = [s.lastSeen, s.maxTs]
      else if (s.lastSeen === heard) heardFloor = Math.min(heardFloor, s.maxTs)
    }
    if (active === Number.POSITIVE_INFINITY && this.sources.size > 0) active = heardFloor
    this.proof = this.sources.size === 0 ? Number.NEGATIVE_INFINITY : proof
    if (this.o.lag === null || active === Number.POSITIVE_INFINITY) return
    if (active - this.o.lag > this.W) this.W = active - this.o.lag
  }

  push(inputs: readonly unknown[]): ModelReceipt {
    const W = this.W
    const r: ModelReceipt = { accepted: 0, late: 0, duplicates: 0, beyondLateness: 0, rejected: 0, anomalies: [] }
    const refuse = (reason: AnomalyReason, index: number) => {
      r.anomalies.push({ reason, index })
      r.rejected++
      this.#count(reason)
    }
    for (let i = 0; i < inputs.length; i++) {
      const input = inputs[i]
      const reason = modelInvalid(input)
      if (reason !== null) {
        refuse(reason, i)
        continue
      }
      const e = input as StreamEvent
      let s = this.sources.get(e.source)
      if (s === undefined && this.sources.size >= this.o.maxSources) {
        refuse('overflow', i)
        continue
      }
      if (s !== undefined && this.#seen(s, e)) {
        r.duplicates++
        if (this.#conflicts(s, e)) {
          r.anomalies.push({ reason: 'conflicting_duplicate', index: i })
          this.#count('conflicting_duplicate')
        }
        continue
      }
      const addsEntry = e.seq === undefined || e.seq !== (s?.prefix ?? 0) + 1
      if (addsEntry && this.dedupEntries() >= this.o.maxDedupEntries) {
        this.#release()
        if (this.dedupEntries() >= this.o.maxDedupEntries) {
          refuse('overflow', i)
          continue
        }
      }
      const onTime = e.ts >= W
      if (onTime || (this.o.onLate === 'emit_correction' && e.ts >= W - this.o.allowedLateness)) {
        if (this.held.length + this.corrections.length >= this.o.maxPending) {
          refuse('overflow', i)
          continue
        }
        const copy: StreamEvent = { ...e }
        ;(onTime ? this.held : this.corrections).push({ event: copy, arrivedAt: this.now })
        this.acceptedLog.push(copy)
        r.accepted++
        if (!onTime) r.late++
      } else {
        this.lateLane.push({ ...e })
        if (this.lateLane.length > this.o.maxLateEvents) {
          this.lateLane.shift()
          this.lateTrimmed++
        }
        r.beyondLateness++
      }
      if (s === undefined) {
        s = {
          maxTs: Number.NEGATIVE_INFINITY,
          lastSeen: this.now,
          prefix: 0,
          prefixTs: Number.NEGATIVE_INFINITY,
          lastPrefixTs: Number.NEGATIVE_INFINITY,
          provable: true,
          seqlessFrom: Number.POSITIVE_INFINITY,
          regressedAt: 0,
          regressedAbove: false,
          ahead: new Map(),
          ids: new Map(),
        }
        this.sources.set(e.source, s)
      }
      this.#record(s, e)
    }
    const c = this.counts
    c.pushed += inputs.length
    c.accepted += r.accepted
    c.lateAdmitted += r.late
    c.duplicates += r.duplicates
    c.beyondLateness += r.beyondLateness
    c.rejected += r.rejected
    this.#count('duplicate', r.duplicates)
    this.#count('beyond_lateness', r.beyondLateness)
    this.peak = Math.max(this.peak, this.held.length + this.corrections.length)
    this.#advance()
    return r
  }

  advanceWatermark(t: number): void {
    if (t > this.W) this.W = t
  }

  /** The basis table of docs/semantics.md, read from the source as it stands now. */
  basis(e: StreamEvent, tie: boolean): Basis {
    if (e.seq === undefined) return tie ? 'fallback' : 'derived'
    const s = this.sources.get(e.source) as ModelSource
    if (s.provable) return e.seq <= s.prefix ? 'proven' : tie ? 'fallback' : 'unknown'
    // Proven: gap-free and monotone up to it, delivered before any event without seq.
    if (e.seq <= s.prefix && (s.regressedAt === 0 || e.seq < s.regressedAt) && e.seq <= s.seqlessFrom) return 'proven'
    // Fallback: a tie, or ts went backwards along seq at or before it (above the gap: anywhere there, as orderEvents judges it).
    if (tie || (s.regressedAt !== 0 && e.seq >= s.regressedAt) || (s.regressedAbove && e.seq > s.prefix)) return 'fallback'
    return e.seq <= s.prefix ? 'derived' : 'unknown'
  }

  #withBasis(events: StreamEvent[]): { event: StreamEvent; basis: Basis }[] {
    return events.map((event, i) => ({ event, basis: this.basis(event, events[i - 1]?.ts === event.ts || events[i + 1]?.ts === event.ts) }))
  }

  /** Sort everything, emit what is below W, then the corrections since the last flush; cut into batches. */
  flush(): ModelBatch[] {
    this.counts.flushes++
    this.#advance()
    const all = [...this.held].sort((x, y) => modelOrder(x.event, y.event))
    const ready = all.filter((h) => h.event.ts < this.W).map((h) => h.event)
    this.held = all.filter((h) => !(h.event.ts < this.W))
    const corrections = this.corrections.map((h) => h.event).sort(modelOrder)
    this.corrections = []
    const out: ModelBatch[] = []
    const cutInto = (kind: 'ready' | 'correction', events: { event: StreamEvent; basis: Basis }[]) => {
      for (let i = 0; i < events.length; i += this.o.batchSize) out.push({ kind, events: events.slice(i, i + this.o.batchSize) })
    }
    cutInto('ready', this.#withBasis(ready))
    cutInto('correction', this.#withBasis(corrections))
    this.counts.readyEmitted += ready.length
    this.counts.correctionsEmitted += corrections.length
    this.counts.readyBatches += Math.ceil(ready.length / this.o.batchSize)
    this.counts.correctionBatches += Math.ceil(corrections.length / this.o.batchSize)
    if (this.dedupEntries() > 2 * this.dedupAfterRelease + 4096) this.#release()
    return out
  }

  oldestPendingAge(): number {
    const waiting = [...this.held, ...this.corrections]
    if (waiting.length === 0) return 0
    return Math.max(0, this.now - Math.min(...waiting.map((h) => h.arrivedAt)))
  }
}

// ---------------------------------------------------------------------------------------------
// Random runs
// ---------------------------------------------------------------------------------------------

interface RawEvent {
  readonly kind: 'fresh' | 'copy' | 'conflict' | 'invalid'
  readonly source: number
  readonly seqMode: 'next' | 'skip' | 'none' | 'far' | 'old'
  readonly jitter: number
  readonly pick: number
  readonly odd: number
}

type RawOp =
  | { readonly kind: 'push'; readonly events: readonly RawEvent[]; readonly drift: number }
  | { readonly kind: 'advance'; readonly by: number }
  | { readonly kind: 'flush' }
  | { readonly kind: 'tick'; readonly ms: number }

type Op =
  | { readonly kind: 'push'; readonly events: readonly unknown[] }
  | { readonly kind: 'advance'; readonly by: number }
  | { readonly kind: 'flush' }
  | { readonly kind: 'tick'; readonly ms: number }

const rawEvent: fc.Arbitrary<RawEvent> = fc.record({
  kind: fc.oneof(
    { weight: 12, arbitrary: fc.constant('fresh' as const) },
    { weight: 2, arbitrary: fc.constant('copy' as const) },
    { weight: 2, arbitrary: fc.constant('conflict' as const) },
    { weight: 1, arbitrary: fc.constant('invalid' as const) },
  ),
  source: fc.nat(SOURCES.length - 1),
  seqMode: fc.oneof(
    { weight: 8, arbitrary: fc.constant('next' as const) },
    { weight: 2, arbitrary: fc.constant('skip' as const) },
    { weight: 2, arbitrary: fc.constant('none' as const) },
    { weight: 1, arbitrary: fc.constant('far' as const) },
    { weight: 1, arbitrary: fc.constant('old' as const) },
  ),
  jitter: fc.integer({ min: -70, max: 15 }),
  pick: fc.nat(1_000),
  odd: fc.nat(19),
})

const rawOp: fc.Arbitrary<RawOp> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant('push' as const), events: fc.array(rawEvent, { maxLength: 10 }), drift: fc.integer({ min: 0, max: 20 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      by: fc.oneof({ weight: 30, arbitrary: fc.integer({ min: 0, max: 40 }) }, { weight: 1, arbitrary: fc.constant(Number.POSITIVE_INFINITY) }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('flush' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 60 }) }) },
)

const setupArb: fc.Arbitrary<Setup> = fc.record({
  lag: fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 30 })),
  allowedLateness: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 90 })),
  onLate: fc.constantFrom('emit_correction' as const, 'drop' as const),
  batchSize: fc.integer({ min: 1, max: 6 }),
  maxPending: fc.oneof({ weight: 3, arbitrary: fc.constant(1_000_000) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 15 }) }),
  maxSources: fc.oneof({ weight: 3, arbitrary: fc.constant(100_000) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }) }),
  maxDedupEntries: fc.oneof({ weight: 3, arbitrary: fc.constant(1_000_000) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 6 }) }),
  maxLateEvents: fc.oneof({ weight: 3, arbitrary: fc.constant(10_000) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 4 }) }),
  idleTimeout: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 60 }) }),
})

/** An object whose `id` getter throws: unreadable input. */
function unreadable(): unknown {
  return Object.defineProperty({ source: 'a', ts: 1, value: 1 }, 'id', {
    enumerable: true,
    get() {
      throw new Error('unreadable')
    },
  })
}

function invalidInput(pick: number, i: number): unknown {
  const ok = { id: `bad-${i}`, source: 'a', ts: 10, value: 1 }
  const inputs: unknown[] = [
    null,
    7,
    'event',
    { ...ok, id: '' },
    { source: 'a', ts: 1, value: 1 },
    { ...ok, id: 'x'.repeat(MAX_NAME + 1) },
    { ...ok, source: '' },
    { ...ok, source: 's'.repeat(MAX_NAME + 1) },
    { ...ok, ts: Number.NaN },
    { ...ok, ts: Number.POSITIVE_INFINITY },
    { ...ok, ts: MAX_ABS_TS * 2 },
    { ...ok, ts: '10' },
    { ...ok, value: Number.NaN },
    { ...ok, value: undefined },
    { ...ok, seq: 0 },
    { ...ok, seq: 1.5 },
    { ...ok, seq: -3 },
    { ...ok, seq: 2 ** 53 },
    { ...ok, key: 5 },
    { ...ok, key: 'k'.repeat(MAX_NAME + 1) },
    unreadable(),
  ]
  return inputs[pick % inputs.length]
}

/** Turns the raw plan into concrete events: sources count their seqs; times follow a drifting base clock. */
function materialize(raw: readonly RawOp[]): Op[] {
  const counters = new Map<string, number>()
  const valid: StreamEvent[] = []
  let base = 100
  let n = 0
  return raw.map((op): Op => {
    if (op.kind !== 'push') return op
    base += op.drift
    const events = op.events.map((r): unknown => {
      n++
      if (r.kind === 'invalid') return invalidInput(r.pick, n)
      if (r.kind !== 'fresh' && valid.length > 0) {
        const original = valid[r.pick % valid.length] as StreamEvent
        if (r.kind === 'copy') return { ...original }
        // Another delivery of the same (source, seq) or (source, id) with other content.
        if (r.odd % 2 === 0) return { ...original, ts: original.ts + (r.jitter === 0 ? 1 : r.jitter), value: original.value + 1 }
        return original.seq === undefined ? { ...original, value: original.value + 1, key: 'other' } : { ...original, id: `${original.id}~`, value: original.value + 1 }
      }
      const source = SOURCES[r.source] as string
      const count = counters.get(source) ?? 0
      let seq: number | undefined
      if (r.seqMode === 'next') seq = count + 1
      else if (r.seqMode === 'skip') seq = count + 2 + (r.pick % 3)
      else if (r.seqMode === 'far') seq = count + 70_000 + (r.pick % 3)
      else if (r.seqMode === 'old') seq = 1 + (r.pick % Math.max(1, count + 1))
      if (seq !== undefined && r.seqMode !== 'far' && seq > count) counters.set(source, seq)
      let ts = base + r.jitter
      if (r.odd === 0) ts += 0.5
      if (r.odd === 1) ts = -0
      if (r.odd === 2) ts = Math.floor(ts / 10) * 10
      const id = seq === undefined ? `${source}-n${r.pick % 7}` : `${source}-${seq}`
      const e: StreamEvent =
        r.odd === 3 ? { id, source, ts, value: r.pick, key: 'k' } : r.odd === 4 ? { id, source, ts, value: r.pick, key: '' } : { id, source, ts, value: r.pick }
      const event = seq === undefined ? e : { ...e, seq }
      valid.push(event)
      return event
    })
    return { kind: 'push', events }
  })
}

const plan = fc.tuple(setupArb, fc.array(rawOp, { minLength: 1, maxLength: 40 })).map(([setup, raw]) => ({ setup, ops: materialize(raw) }))

// ---------------------------------------------------------------------------------------------
// Comparing
// ---------------------------------------------------------------------------------------------

function sig(e: StreamEvent): string {
  const ts = Object.is(e.ts, -0) ? '-0' : String(e.ts)
  return `${ts}|${e.source}|${e.seq ?? '-'}|${e.id}|${e.value}|${e.key === undefined ? '-' : JSON.stringify(e.key)}`
}

function identity(e: StreamEvent): string {
  return e.seq === undefined ? `${e.source}\u0000id\u0000${e.id}` : `${e.source}\u0000seq\u0000${e.seq}`
}

function batchesOf(batches: readonly OrderedBatch[]) {
  return batches.map((b) => ({ kind: b.kind, events: b.events.map((e: OrderedEvent) => `${sig(e)} ${e.basis}`) }))
}

function modelBatches(batches: readonly ModelBatch[]) {
  return batches.map((b) => ({ kind: b.kind, events: b.events.map((x) => `${sig(x.event)} ${x.basis}`) }))
}

function anomaliesOf(anomalies: readonly Anomaly[]) {
  return anomalies.map((a) => ({ reason: a.reason, index: a.index }))
}

function streamFor(setup: Setup, clock: () => number): OrderedStream {
  return createOrderedStream({
    watermark: setup.lag === null ? manual() : boundedOutOfOrderness(setup.lag),
    allowedLateness: setup.allowedLateness,
    onLate: setup.onLate,
    batchSize: setup.batchSize,
    maxPending: setup.maxPending,
    maxSources: setup.maxSources,
    maxDedupEntries: setup.maxDedupEntries,
    maxLateEvents: setup.maxLateEvents,
    ...(setup.idleTimeout === undefined ? {} : { idleTimeout: setup.idleTimeout }),
    now: clock,
  })
}

function compareState(stream: OrderedStream, model: Model, where: string): void {
  const st = stream.stats()
  const c = model.counts
  const got = {
    watermark: stream.watermark(),
    finality: stream.finality(),
    pending: stream.pending(),
    stats: {
      pushed: st.pushed,
      accepted: st.accepted,
      lateAdmitted: st.lateAdmitted,
      duplicates: st.duplicates,
      beyondLateness: st.beyondLateness,
      rejected: st.rejected,
      flushes: st.flushes,
      readyEmitted: st.readyEmitted,
      correctionsEmitted: st.correctionsEmitted,
      readyBatches: st.readyBatches,
      correctionBatches: st.correctionBatches,
      pending: st.pending,
      pendingCorrections: st.pendingCorrections,
      peakPending: st.peakPending,
      oldestPendingAge: st.oldestPendingAge,
      dedupEntries: st.dedupEntries,
      dedupReleased: st.dedupReleased,
      lateLane: st.lateLane,
      lateLaneTrimmed: st.lateLaneTrimmed,
      sources: st.sources,
      watermark: st.watermark,
      finality: st.finality,
      proofFrontier: st.proofFrontier,
      watermarkLag: st.watermarkLag,
    },
    anomalies: Object.fromEntries(Object.entries(st.anomalies).filter(([, v]) => v > 0)),
    lateLane: stream.lateEvents().map((l) => sig(l.event)),
  }
  const want = {
    watermark: model.W,
    finality: model.finality,
    pending: model.held.length + model.corrections.length,
    stats: {
      ...c,
      pending: model.held.length,
      pendingCorrections: model.corrections.length,
      peakPending: model.peak,
      oldestPendingAge: model.oldestPendingAge(),
      dedupEntries: model.dedupEntries(),
      dedupReleased: model.dedupReleased,
      lateLane: model.lateLane.length,
      lateLaneTrimmed: model.lateTrimmed,
      sources: model.sources.size,
      watermark: model.W,
      finality: model.finality,
      proofFrontier: model.proof,
      watermarkLag: model.maxTsSeen > model.W ? model.maxTsSeen - model.W : 0,
    },
    anomalies: Object.fromEntries([...model.anomalyCounts].filter(([, v]) => v > 0)),
    lateLane: model.lateLane.map(sig),
  }
  expect(got, where).toEqual(want)
}

/** Runs one plan on the stream and the model; returns what the stream emitted, in emission order. */
function run(setup: Setup, ops: readonly Op[]): { emitted: OrderedEvent[]; model: Model } {
  const model = new Model(setup)
  const stream = streamFor(setup, () => model.now)
  const emitted: OrderedEvent[] = []
  const flushBoth = (where: string) => {
    const got = stream.flushReady()
    const want = model.flush()
    expect(batchesOf(got), where).toEqual(modelBatches(want))
    for (const b of got) emitted.push(...b.events)
  }
  ops.forEach((op, step) => {
    const where = `step ${step}: ${op.kind}`
    if (op.kind === 'push') {
      const receipt = stream.push(op.events as StreamEvent[])
      const want = model.push(op.events)
      expect(
        {
          accepted: receipt.accepted,
          late: receipt.late,
          duplicates: receipt.duplicates,
          beyondLateness: receipt.beyondLateness,
          rejected: receipt.rejected,
          anomalies: anomaliesOf(receipt.anomalies),
        },
        where,
      ).toEqual(want)
      expect(receipt.accepted + receipt.duplicates + receipt.beyondLateness + receipt.rejected, where).toBe(op.events.length)
    } else if (op.kind === 'advance') {
      const t = model.W === Number.NEGATIVE_INFINITY ? 100 + op.by : model.W + op.by
      stream.advanceWatermark(t)
      model.advanceWatermark(t)
    } else if (op.kind === 'flush') {
      flushBoth(where)
    } else {
      model.now += op.ms
    }
    compareState(stream, model, where)
  })
  stream.advanceWatermark(Number.POSITIVE_INFINITY)
  model.advanceWatermark(Number.POSITIVE_INFINITY)
  flushBoth('final flush')
  compareState(stream, model, 'end')
  expect(stream.pending()).toBe(0)
  return { emitted, model }
}

describe('ordered stream: differential test against a model written from the docs', () => {
  it('pushes with disorder, gaps, copies, conflicting copies and invalid input; watermark moves; flushes; tight bounds', () => {
    assertFreshSeeded(
      fc.property(plan, ({ setup, ops }) => {
        const { emitted, model } = run(setup, ops)
        // Nothing accepted is lost, nothing is emitted that was not accepted.
        expect(emitted.map(sig).sort()).toEqual(model.acceptedLog.map(sig).sort())
      }),
      FILE,
      400,
    )
  }, PROPERTY_TIMEOUT)

  it('never emits one event twice while copies keep the ts of the first delivery', () => {
    assertFreshSeeded(
      fc.property(plan, ({ setup, ops }) => {
        // Copies with another ts are left out: once the dedup memory below finality is released, a
        // copy of a released event with a later ts is taken as a new event (a known limitation of
        // releasing dedup memory, shared with the engine's source clocks).
        const sameTs = ops.map((op) => (op.kind === 'push' ? { ...op, events: op.events.filter((e) => !isRetimedCopy(e, ops)) } : op))
        const { emitted } = run(setup, sameTs)
        const ids = emitted.map(identity)
        expect(new Set(ids).size).toBe(ids.length)
      }),
      FILE,
      200,
    )
  }, PROPERTY_TIMEOUT)
})

describe('orderEvents: differential test against the same model', () => {
  it('invalid input, gaps, far seqs, copies and conflicting copies, -0, maxEvents; any input order', () => {
    const batch = fc
      .array(rawOp, { maxLength: 12 })
      .map((raw) => materialize(raw).flatMap((op) => (op.kind === 'push' ? op.events : [])))
      .chain((events) =>
        fc.tuple(
          fc.constant(events),
          fc.shuffledSubarray(events, { minLength: events.length, maxLength: events.length }),
          fc.option(fc.integer({ min: 1, max: events.length + 2 }), { nil: undefined }),
        ),
      )
    assertFreshSeeded(
      fc.property(batch, ([events, shuffled, maxEvents]) => {
        const got = orderEvents(events as StreamEvent[], maxEvents === undefined ? undefined : { maxEvents })
        if (maxEvents !== undefined && events.length > maxEvents) {
          expect(got.ordered).toEqual([])
          expect(anomaliesOf(got.anomalies)).toEqual(events.map((_, index) => ({ reason: 'overflow', index })))
          return
        }
        // The model: refuse the invalid, keep per identity the copy first in the order, sort.
        const want: { reason: AnomalyReason; index: number }[] = []
        const kept = new Map<string, StreamEvent>()
        events.forEach((input, index) => {
          const reason = modelInvalid(input)
          if (reason !== null) want.push({ reason, index })
          else {
            const e = input as StreamEvent
            const k = kept.get(identity(e))
            if (k === undefined || modelOrder(e, k) < 0) kept.set(identity(e), e)
          }
        })
        events.forEach((input, index) => {
          if (modelInvalid(input) !== null) return
          const e = input as StreamEvent
          const k = kept.get(identity(e)) as StreamEvent
          if (k !== e) want.push({ reason: e.ts === k.ts ? 'duplicate' : 'conflicting_duplicate', index })
        })
        const place = (e: StreamEvent) => `${e.ts}|${e.source}|${e.seq ?? '-'}|${e.id}`
        expect(got.ordered.map(place)).toEqual([...kept.values()].sort(modelOrder).map(place))
        // Copies equal in the order (other key or value, -0 and 0) may be kept either way; which one is refused then differs.
        const refused = (list: readonly { reason: AnomalyReason; index?: number | undefined }[]) =>
          list.map((a) => `${a.reason} ${modelInvalid(events[a.index as number]) === null ? place(events[a.index as number] as StreamEvent) : a.index}`).sort()
        expect(refused(anomaliesOf(got.anomalies))).toEqual(refused(want))
        expect(got.anomalies.map((a) => a.index)).toEqual([...got.anomalies.map((a) => a.index as number)].sort((x, y) => x - y))
        // The batch as a multiset: the same output in any input order.
        const again = orderEvents(shuffled as StreamEvent[], maxEvents === undefined ? undefined : { maxEvents })
        expect(again.ordered).toEqual(got.ordered)
        const bySig = (input: readonly unknown[], anomalies: readonly Anomaly[]) =>
          anomalies.map((a) => `${a.reason} ${modelInvalid(input[a.index as number]) === null ? sig(input[a.index as number] as StreamEvent) : a.reason}`).sort()
        expect(bySig(shuffled, again.anomalies)).toEqual(bySig(events, got.anomalies))
      }),
      FILE,
      300,
    )
  }, PROPERTY_TIMEOUT)
})

/** True for a valid event whose (source, seq|id) appears elsewhere in the plan with another ts. */
function isRetimedCopy(input: unknown, ops: readonly Op[]): boolean {
  if (modelInvalid(input) !== null) return false
  const e = input as StreamEvent
  for (const op of ops) {
    if (op.kind !== 'push') continue
    for (const other of op.events) {
      if (other === input || modelInvalid(other) !== null) continue
      const o = other as StreamEvent
      if (identity(o) === identity(e) && !Object.is(o.ts, e.ts) && o.ts !== e.ts) return true
    }
  }
  return false
}
