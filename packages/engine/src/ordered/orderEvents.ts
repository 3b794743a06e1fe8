import type { Anomaly } from '../input/anomaly.ts'
import { assertKnownOptions } from '../options/knownOptions.ts'
import { MAX_NAME_LENGTH, type StreamEvent } from '../input/event.ts'
import { invalidAnomaly } from '../input/eventValidation.ts'
import { readInputOnce, refusal, safeInvalidReason, UNREADABLE } from '../input/inputRejection.ts'
import { compareEventOrder, type OrderedEvent, type PendingEvent, toPendingEvent } from './eventOrder.ts'
import { OrderProof } from '../time/orderProof.ts'
import { SourceClock } from '../time/sourceClock.ts'

/**
 * Options of `orderEvents`.
 *
 * @example
 * orderEvents(batch, { maxEvents: 10_000 }) // a larger batch is refused whole with overflow
 */
export interface OrderEventsOptions {
  /** Largest batch; a larger one is refused whole with `overflow` anomalies. Default 1,000,000. */
  readonly maxEvents?: number
}

/** A batch in the stream's total order, with what was refused and why. */
export interface OrderedEvents {
  readonly ordered: OrderedEvent[]
  /**
   * One entry per refused input (invalid, duplicate, overflow), by input index. A copy whose
   * `ts` differs from the copy kept is a `conflicting_duplicate` rather than a `duplicate`.
   */
  readonly anomalies: Anomaly[]
}

/**
 * Orders one complete batch deterministically by `(ts, source, seq, id)`, validates and dedups
 * it (docs/semantics.md) and gives each event its `basis` (see `OrderedEvent`).
 *
 * The result depends on the batch as a multiset only: the same events in any order give the
 * same `ordered` array and the same anomalies (their `index` refers to the input). When copies
 * of one event differ, the copy that comes first in the order is kept, whatever the input order;
 * a copy with another `ts` is refused as `conflicting_duplicate` (one with only another `id`,
 * `key` or `value`, as `duplicate`).
 * Basis is judged on the whole batch: a seq is proven when 1..seq are all present and their
 * `ts` never decreases along seq (events without `seq` of a source that also has seqs are not
 * counted against that proof, unlike in the stream, where arrival order decides).
 *
 * @example
 * const { ordered, anomalies } = orderEvents([
 *   { id: 'b', source: 'd1', seq: 2, ts: 2_000, value: 1 },
 *   { id: 'a', source: 'd1', seq: 1, ts: 1_000, value: 1 },
 *   { id: 'a', source: 'd1', seq: 1, ts: 1_000, value: 1 },
 * ])
 * // ordered: a, b (both 'proven'); anomalies: [{ reason: 'duplicate', index: 2, ... }]
 */
export function orderEvents(events: readonly StreamEvent[], options?: OrderEventsOptions): OrderedEvents {
  if (!Array.isArray(events)) throw new TypeError('orderEvents expects an array of events')
  if (options !== undefined) {
    if (typeof options !== 'object' || options === null) throw new TypeError('orderEvents options must be an object')
    assertKnownOptions('orderEvents', options, ['maxEvents'])
  }
  const maxEvents = options?.maxEvents ?? 1_000_000
  if (!Number.isSafeInteger(maxEvents) || maxEvents < 1) {
    throw new RangeError(`maxEvents must be an integer >= 1 (with 0 every batch would be refused), got ${String(maxEvents)}`)
  }
  const n = events.length
  const anomalies: Anomaly[] = []
  if (n > maxEvents) {
    for (let i = 0; i < n; i++) anomalies.push(refusal('overflow', events[i], i, `batch of ${n} exceeds maxEvents`))
    return { ordered: [], anomalies }
  }
  // Class instances (and proxies over them) are read once, into the copies sorted and kept from here on.
  const inputs = events.map(readInputOnce) as StreamEvent[]
  const valid: number[] = []
  for (let i = 0; i < n; i++) {
    const unreadable = (inputs[i] as unknown) === UNREADABLE
    const reason = unreadable ? 'invalid_event' : safeInvalidReason(inputs[i])
    if (reason === null) valid.push(i)
    else anomalies.push(refusal(reason, unreadable ? events[i] : inputs[i], i))
  }
  // Per source, seqs in order then events without seq: each clock sees its seq prefix grow one
  // step at a time (so its proof breaks exactly where ts decreases), and the first copy of a
  // duplicate in this order is the one the total order ranks first.
  valid.sort((i, j) => compareForDedup(inputs[i] as StreamEvent, inputs[j] as StreamEvent))
  const proof = new OrderProof()
  const clocks = new Map<string, SourceClock>()
  const kept: PendingEvent[] = []
  let clock: SourceClock | undefined
  for (const i of valid) {
    const event = inputs[i] as StreamEvent
    if (clock === undefined || clock.name !== event.source) {
      clock = new SourceClock(event.source, 0)
      clocks.set(event.source, clock)
    }
    if (clock.seen(event.seq, event.id)) {
      const conflict = clock.conflict(event)
      anomalies.push(
        conflict === null
          ? { ...invalidAnomaly('duplicate', event, i), detail: duplicateDetail(event) }
          : { ...invalidAnomaly('conflicting_duplicate', event, i), detail: conflict },
      )
      continue
    }
    proof.record(clock, event)
    kept.push(toPendingEvent(event, 'unknown'))
  }
  kept.sort(compareEventOrder)
  const k = kept.length
  for (let i = 0; i < k; i++) {
    const event = kept[i] as PendingEvent
    const tie = kept[i - 1]?.ts === event.ts || kept[i + 1]?.ts === event.ts
    event.basis = proof.basis(clocks.get(event.source) as SourceClock, event.seq, tie)
  }
  // Invalid inputs were found in index order, duplicates in dedup order.
  if (anomalies.length > 1) anomalies.sort(byIndex)
  return { ordered: kept, anomalies }
}

function duplicateDetail(event: StreamEvent): string {
  return event.seq === undefined
    ? `id already seen from source ${event.source.slice(0, MAX_NAME_LENGTH)}`
    : `seq ${event.seq} already seen from source ${event.source.slice(0, MAX_NAME_LENGTH)}`
}

function byIndex(a: Anomaly, b: Anomaly): number {
  return (a.index ?? 0) - (b.index ?? 0)
}

/** Source; then seqs ascending, events without seq after them by id; then every field, so copies rank deterministically. */
function compareForDedup(a: StreamEvent, b: StreamEvent): number {
  if (a.source !== b.source) return a.source < b.source ? -1 : 1
  if (a.seq !== b.seq) {
    if (a.seq === undefined) return 1
    if (b.seq === undefined) return -1
    return a.seq - b.seq
  }
  if (a.seq === undefined && a.id !== b.id) return a.id < b.id ? -1 : 1
  if (a.ts !== b.ts) return a.ts < b.ts ? -1 : 1
  if (a.id !== b.id) return a.id < b.id ? -1 : 1
  if (a.key !== b.key) {
    if (a.key === undefined) return -1
    if (b.key === undefined) return 1
    return a.key < b.key ? -1 : 1
  }
  if (a.value !== b.value) return a.value < b.value ? -1 : 1
  // Only -0 and 0 remain: rank -0 first so that even they do not depend on input order.
  return signOf(a.ts) - signOf(b.ts) || signOf(a.value) - signOf(b.value)
}

function signOf(zero: number): number {
  return Object.is(zero, -0) ? -1 : 0
}
