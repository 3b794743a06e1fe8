import type { StreamEvent } from './event.ts'

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
