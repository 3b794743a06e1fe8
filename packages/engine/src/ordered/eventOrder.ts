import type { StreamEvent } from '../input/event.ts'
import { plainConstructor } from '../input/plainConstructor.ts'
import type { Basis } from '../windows/windowResult.ts'

/**
 * An event in the ordered stream, with how its place in the order is known (docs/semantics.md, the ordered event stream):
 * - `proven`: its source's `seq` is gap-free up to it and `ts` never decreased along that prefix;
 * - `derived`: placed by event time alone (its source gives no usable `seq`);
 * - `fallback`: placed by a tie-break (another event has the same `ts`), or its source's clock
 *   went backwards along `seq` at or before it;
 * - `unknown`: its source's `seq` shows a gap before it, so an event of its own source that
 *   belongs earlier may still be missing.
 *
 * `proven` wins over a tie: events of different sources with one `ts` are simultaneous, and the
 * tie-break only fixes a convention between them, not the evidence about each source.
 *
 * @example
 * const e: OrderedEvent = { id: 'd1-1', source: 'd1', seq: 1, ts: 1_000, value: 3, basis: 'proven' }
 */
export interface OrderedEvent extends StreamEvent {
  readonly basis: Basis
}

/** The stream's own, writable form of an ordered event: `basis` is settled when it leaves. */
export type PendingEvent = { -readonly [K in keyof OrderedEvent]: OrderedEvent[K] }

/**
 * The total order of the ordered stream: `(ts, source, seq, id)`, strings by UTF-16 code
 * units (locale-independent), an absent `seq` before every `seq` (which starts at 1).
 * Two different accepted events never compare equal: equal `(source, seq)`, or equal
 * `(source, id)` without `seq`, is a duplicate.
 *
 * @example
 * [b, a].sort(compareEventOrder) // a first when a.ts < b.ts
 */
export function compareEventOrder(a: StreamEvent, b: StreamEvent): number {
  if (a.ts !== b.ts) return a.ts < b.ts ? -1 : 1
  if (a.source !== b.source) return a.source < b.source ? -1 : 1
  const sa = a.seq ?? 0
  const sb = b.seq ?? 0
  if (sa !== sb) return sa - sb
  if (a.id !== b.id) return a.id < b.id ? -1 : 1
  return 0
}

/** Makes the ordered events, plain objects (in the ordered stream, an event waits until the watermark passes it). */
const PendingRecord = /* @__PURE__ */ plainConstructor(function (this: PendingEvent, id: string, source: string, ts: number, value: number, basis: Basis) {
  this.id = id
  this.source = source
  this.ts = ts
  this.value = value
  this.basis = basis
})

/**
 * A detached copy of a caller's event with a basis, so that later changes to the caller's
 * object cannot move an event that already waits in order. Absent optional fields stay absent.
 */
export function toPendingEvent(event: StreamEvent, basis: Basis): PendingEvent {
  const copy = new PendingRecord(event.id, event.source, event.ts, event.value, basis)
  if (event.seq !== undefined) copy.seq = event.seq
  if (event.key !== undefined) copy.key = event.key
  return copy
}

/**
 * Puts batches in the deterministic event order (ts, source, seq, id), invalid inputs first by
 * position, for placement with session specs, where which session an event joins depends on
 * the events placed before it. One per engine: it keeps its storage from batch to batch (an
 * array emptied by `length = 0` gives it back, and would grow again every batch), up to 64k
 * events.
 *
 * A batch is mostly in order, with a few late events: one pass keeps the events that extend the
 * order so far (a sorted run), only the others are sorted, and the two are merged. Equal events
 * (copies) keep their positions' order, as a stable sort would.
 *
 * @example
 * const order = new PlacementOrder()
 * order.of([{ id: 'b', source: 'd', ts: 2, value: 1 }, { id: 'a', source: 'd', ts: 1, value: 1 }], [null, null])?.subarray(0, 2) // Int32Array [1, 0]
 */
export class PlacementOrder {
  #order = new Int32Array(0)
  #run = new Int32Array(0)
  #rest = new Int32Array(0)

  /**
   * The positions of the `events.length` events in order (the first `events.length` entries of
   * the array returned), or null when the batch is already in order (no sort). `invalid[i]` is
   * the reason input `i` was refused, or null: the placement loop's validation pass, so no input
   * is read twice. The array returned is this object's: read it before the next call.
   */
  of(events: readonly StreamEvent[], invalid: readonly unknown[]): Int32Array | null {
    const n = events.length
    const kept = this.#order.length
    if (kept < n || (kept > 65_536 && n <= 65_536)) {
      // Doubling as batches grow, kept within 64k entries unless a batch is larger.
      const size = n > 65_536 ? Math.max(n, 2 * kept) : Math.max(n, Math.min(2 * kept, 65_536))
      this.#order = new Int32Array(size)
      this.#run = new Int32Array(size)
      this.#rest = new Int32Array(size)
    }
    const order = this.#order
    const run = this.#run
    const rest = this.#rest
    const before = (a: number, b: number) => compareEventOrder(events[a] as StreamEvent, events[b] as StreamEvent) || a - b
    let m = 0
    let runs = 0
    let rests = 0
    let mixed = false
    for (let i = 0; i < n; i++) {
      // The invalid inputs go first, into the order itself.
      if (invalid[i] != null) {
        order[m++] = i
        mixed ||= runs > 0
      } else if (runs === 0 || before(run[runs - 1] as number, i) < 0) run[runs++] = i
      else rest[rests++] = i
    }
    if (rests === 0 && !mixed) return null
    rest.subarray(0, rests).sort(before)
    for (let r = 0, l = 0; r < runs || l < rests; ) order[m++] = l === rests || (r < runs && before(run[r] as number, rest[l] as number) < 0) ? (run[r++] as number) : (rest[l++] as number)
    return order
  }
}
