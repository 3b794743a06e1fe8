import type { StreamEvent } from '../../src/input/event.ts'
import { invalidReason } from '../../src/input/eventValidation.ts'

/**
 * The obviously-correct model of the ordered stream: keep every held event in a plain array,
 * and on each flush sort everything and filter by the watermark. No heap, no clocks, no
 * forgetting; O(n log n) per flush, which is the point.
 */
export function naiveOrder(a: StreamEvent, b: StreamEvent): number {
  const ka = [a.ts, a.source, a.seq ?? 0, a.id] as const
  const kb = [b.ts, b.source, b.seq ?? 0, b.id] as const
  for (let i = 0; i < ka.length; i++) {
    const x = ka[i] as number | string
    const y = kb[i] as number | string
    if (x < y) return -1
    if (x > y) return 1
  }
  return 0
}

export function dedupKey(e: StreamEvent): string {
  return e.seq === undefined ? `${e.source}\u0000id\u0000${e.id}` : `${e.source}\u0000seq\u0000${e.seq}`
}

export interface ModelOptions {
  /** `null` for the manual strategy. */
  readonly lag: number | null
  readonly allowedLateness: number
  readonly onLate: 'emit_correction' | 'drop'
}

export interface ModelReceipt {
  readonly accepted: number
  readonly late: number
  readonly rejected: number
  /** Duplicates plus late-lane events: a copy of an event below finality may be either, once dedup memory is released. */
  readonly duplicatesOrBeyond: number
}

export class ReferenceStream {
  readonly #o: ModelOptions
  readonly #seen = new Set<string>()
  readonly #maxTs = new Map<string, number>()
  watermark = Number.NEGATIVE_INFINITY
  #held: StreamEvent[] = []
  #late: StreamEvent[] = []
  lateLane: StreamEvent[] = []

  constructor(o: ModelOptions) {
    this.#o = o
  }

  push(events: readonly StreamEvent[]): ModelReceipt {
    const W = this.watermark
    let accepted = 0
    let late = 0
    let rejected = 0
    let other = 0
    for (const e of events) {
      if (invalidReason(e) !== null) {
        rejected++
        continue
      }
      const key = dedupKey(e)
      if (this.#seen.has(key)) {
        other++
        continue
      }
      this.#seen.add(key)
      this.#maxTs.set(e.source, Math.max(this.#maxTs.get(e.source) ?? Number.NEGATIVE_INFINITY, e.ts))
      if (e.ts >= W) {
        this.#held.push(e)
        accepted++
      } else if (this.#o.onLate === 'emit_correction' && e.ts >= W - this.#o.allowedLateness) {
        this.#late.push(e)
        accepted++
        late++
      } else {
        this.lateLane.push(e)
        other++
      }
    }
    if (this.#o.lag !== null && this.#maxTs.size > 0) {
      const w = Math.min(...this.#maxTs.values()) - this.#o.lag
      if (w > this.watermark) this.watermark = w
    }
    return { accepted, late, rejected, duplicatesOrBeyond: other }
  }

  advance(t: number): void {
    if (t > this.watermark) this.watermark = t
  }

  /** Everything held with `ts < W`, sorted; then every correction since the last flush, sorted. */
  flush(): { ready: StreamEvent[]; corrections: StreamEvent[] } {
    const all = [...this.#held].sort(naiveOrder)
    const ready = all.filter((e) => e.ts < this.watermark)
    this.#held = all.filter((e) => e.ts >= this.watermark)
    const corrections = [...this.#late].sort(naiveOrder)
    this.#late = []
    return { ready, corrections }
  }

  pending(): number {
    return this.#held.length + this.#late.length
  }
}
