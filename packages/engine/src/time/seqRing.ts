/**
 * The seqs a source delivered above a gap in its sequence, with their event times.
 *
 * Reordered uploads keep this busy: every event behind a late one lands here until the
 * gap fills. A hash map costs a hash per lookup; this keeps seqs near the gap in a ring of
 * Float64 slots indexed by distance from `base` (NaN = absent), so has/get/set/delete are
 * an array access. Seqs farther than `MAX_RING` ahead go to an overflow Map. Both are made on
 * first use: a source whose seqs arrive in order (most of them) never holds one, and an engine
 * following thousands of sources would otherwise make a ring and a Map for each.
 */
const MAX_RING = 1 << 16
/** Slots of the ring when it is first made. */
const MIN_RING = 16
/** The ring of every `SeqRing` that has held no seq in slots yet: empty, never written. */
const NO_SLOTS = new Float64Array(0)

export class SeqRing {
  /** Smallest seq the ring can hold; moves up as the gap-free prefix grows. */
  #base = 1
  #head = 0
  #slots = NO_SLOTS
  #far: Map<number, number> | null = null
  size = 0

  /** The ts `holds` found last (NaN when none): read from a field, it costs a hot caller no heap number. */
  foundTs = Number.NaN

  has(seq: number): boolean {
    return !Number.isNaN(this.tsOf(seq))
  }

  /**
   * True when `seq` is held; its ts is then in `foundTs`. For callers the optimizer may not inline
   * `tsOf` into: a number returned from a call is boxed, a heap number per lookup.
   */
  holds(seq: number): boolean {
    const ts = this.tsOf(seq)
    this.foundTs = ts
    return !Number.isNaN(ts)
  }

  get(seq: number): number | undefined {
    const ts = this.tsOf(seq)
    return Number.isNaN(ts) ? undefined : ts
  }

  /**
   * The ts held for `seq`, NaN when none: a plain number either way, so a hot caller never
   * boxes it (a `number | undefined` result costs a heap number per hit).
   */
  tsOf(seq: number): number {
    const slots = this.#slots
    const offset = seq - this.#base
    if (offset >= 0 && offset < slots.length) {
      const ts = slots[(this.#head + offset) & (slots.length - 1)] as number
      if (!Number.isNaN(ts)) return ts
    }
    const far = this.#far
    if (far === null || far.size === 0) return Number.NaN
    return far.get(seq) ?? Number.NaN
  }

  /**
   * Holds `seq`, known not to be held (a source's clock adds only seqs it has not seen), with
   * `ts`: its slot is written without being read first.
   */
  add(seq: number, ts: number): void {
    const offset = seq - this.#base
    if (offset < 0 || offset >= MAX_RING) {
      this.set(seq, ts)
      return
    }
    // The slot first: reaching it may grow the ring into a new array.
    const i = this.#slot(offset)
    this.#slots[i] = ts
    this.size++
  }

  set(seq: number, ts: number): void {
    const offset = seq - this.#base
    if (offset < 0 || offset >= MAX_RING) {
      if (this.#far === null) this.#far = new Map()
      if (!this.#far.has(seq)) this.size++
      this.#far.set(seq, ts)
      return
    }
    const i = this.#slot(offset)
    if (Number.isNaN(this.#slots[i])) this.size++
    this.#slots[i] = ts
  }

  /** The slot of the seq `offset` above the base (within `MAX_RING`), the ring grown to reach it. */
  #slot(offset: number): number {
    if (offset >= this.#slots.length) this.#grow(offset + 1)
    return (this.#head + offset) & (this.#slots.length - 1)
  }

  delete(seq: number): void {
    const offset = seq - this.#base
    if (offset >= 0 && offset < this.#slots.length) {
      const i = (this.#head + offset) & (this.#slots.length - 1)
      if (!Number.isNaN(this.#slots[i])) {
        this.#slots[i] = Number.NaN
        this.size--
        return
      }
    }
    if (this.#far?.delete(seq) === true) this.size--
  }

  /** The gap-free prefix reached `prefix`: the ring now starts right above it. */
  advanceBase(prefix: number): void {
    const far = this.#far
    if (this.size > 0 && far !== null && far.size > 0) {
      for (const seq of far.keys()) {
        if (seq <= prefix) {
          far.delete(seq)
          this.size--
        }
      }
    }
    const mask = this.#slots.length - 1
    while (this.#base <= prefix) {
      // Nothing held in the ring (the in-order path, a long jump of the prefix, or no ring yet):
      // it just starts above the prefix.
      if (this.size === (far?.size ?? 0)) {
        this.#base = prefix + 1
        this.#head = 0
        break
      }
      const i = this.#head
      if (!Number.isNaN(this.#slots[i])) {
        this.#slots[i] = Number.NaN
        this.size--
      }
      this.#head = (i + 1) & mask
      this.#base++
    }
  }

  /**
   * Releases every seq held with a ts below `horizon`; returns how many. A pass over the slots,
   * not the iterator: that makes an entry array per seq held.
   */
  forgetBefore(horizon: number): number {
    let released = 0
    const slots = this.#slots
    for (let i = 0; i < slots.length; i++) {
      if ((slots[i] as number) < horizon) {
        slots[i] = Number.NaN
        released++
      }
    }
    const far = this.#far
    if (far !== null && far.size > 0) {
      far.forEach((ts, seq) => {
        if (ts < horizon) {
          far.delete(seq)
          released++
        }
      })
    }
    this.size -= released
    return released
  }

  *[Symbol.iterator](): IterableIterator<[number, number]> {
    const n = this.#slots.length
    for (let offset = 0; offset < n; offset++) {
      const ts = this.#slots[(this.#head + offset) & (n - 1)] as number
      if (!Number.isNaN(ts)) yield [this.#base + offset, ts]
    }
    if (this.#far !== null) yield* this.#far
  }

  #grow(needed: number): void {
    let n = Math.max(this.#slots.length, MIN_RING)
    while (n < needed) n *= 2
    const slots = new Float64Array(n).fill(Number.NaN)
    const old = this.#slots
    for (let offset = 0; offset < old.length; offset++) slots[offset] = old[(this.#head + offset) & (old.length - 1)] as number
    this.#slots = slots
    this.#head = 0
  }
}
