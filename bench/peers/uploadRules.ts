/**
 * The rules every upload goes through in the rules and cells floors (rulesLoop.ts), before any
 * window: validation with an anomaly per refused input, future skew, dedup per source (a seq
 * prefix and the seqs seen ahead of it; ids without a seq), the per-source clocks, and the
 * watermark moved between uploads (max ts − out-of-orderness, min over sources not idle, never
 * backwards). Written as the engine's rules demand and no more (docs/semantics.md, Events).
 */
import type { Cell, StreamEvent } from '@tidemark/engine'

export interface UploadRulesOptions {
  readonly outOfOrderness: number
  /** Processing-time ms; default Infinity. */
  readonly idleTimeout?: number
  /** Default one day, as the engine's. */
  readonly maxFutureSkew?: number
}

/** What the rules keep per source: its clock, its dedup memory and, for the cells floor, where it wrote last. */
export interface Source {
  maxTs: number
  lastSeen: number
  seenInBatch: boolean
  /** Every seq up to here was seen. */
  prefix: number
  /** Seqs seen above `prefix + 1` and within `RING` of it, by `seq & RING_MASK` (made on first use). */
  ring: Uint8Array | null
  /** Seqs seen further ahead than the ring reaches. */
  far: Set<number> | null
  /** Ids of events without a seq. */
  ids: Set<string> | null
  /** The source's clock: one more per event accepted (the cells floor stamps its cells with it). */
  version: number
  /** The window the source wrote last and its cell there (the cells floor: most events need no lookup). */
  lastWindow: object | null
  lastCell: SourceCell | null
}

/** A source's lattice cell of one window (the cells floor): the engine's cell, as replication merges it. */
export type SourceCell = Cell

interface Anomaly {
  readonly reason: string
  readonly index: number
  readonly detail: string
}

const DAY = 86_400_000
/** How far ahead of a source's prefix its seqs are kept in a ring (a power of two). */
const RING = 4096
const RING_MASK = RING - 1

/**
 * The rules every upload goes through before any window: validation, future skew, dedup per
 * source and the per-source clocks, and the watermark moved between uploads.
 */
export class UploadRules {
  readonly #sources = new Map<string, Source>()
  readonly #outOfOrderness: number
  readonly #idleTimeout: number
  readonly #skew: number
  readonly anomalies: Anomaly[] = []
  /** Copies of the events no window admitted any more. */
  readonly late: StreamEvent[] = []
  watermark = Number.NEGATIVE_INFINITY
  accepted = 0
  duplicates = 0
  #now = 0
  #future = 0
  #last: Source | undefined
  #lastName = ''

  constructor(options: UploadRulesOptions) {
    this.#outOfOrderness = options.outOfOrderness
    this.#idleTimeout = options.idleTimeout ?? Number.POSITIVE_INFINITY
    this.#skew = options.maxFutureSkew ?? DAY
  }

  /** An upload starts at processing time `now`. */
  begin(now: number): void {
    this.#now = now
    this.#future = now + this.#skew
    this.#last = undefined
  }

  /** True when `event` (at `index` of its upload) is valid, not too far ahead and not a duplicate: it is then remembered. */
  admit(event: StreamEvent, index: number): boolean {
    const reason = invalid(event)
    if (reason !== null) {
      this.anomalies.push({ reason: 'invalid_event', index, detail: reason })
      return false
    }
    const { source: name, seq, ts } = event
    if (ts > this.#future) {
      this.anomalies.push({ reason: 'future_ts', index, detail: `ts ${ts} is ${ts - this.#now} ms ahead of now` })
      return false
    }
    let source = this.#last !== undefined && this.#lastName === name ? this.#last : this.#sources.get(name)
    if (source === undefined) {
      source = { maxTs: ts, lastSeen: Number.NaN, seenInBatch: true, prefix: 0, ring: null, far: null, ids: null, version: 0, lastWindow: null, lastCell: null }
      this.#sources.set(name, source)
    }
    this.#last = source
    this.#lastName = name
    if (seen(source, seq, event.id)) {
      this.duplicates++
      return false
    }
    remember(source, seq, event.id)
    if (ts > source.maxTs) source.maxTs = ts
    source.seenInBatch = true
    return true
  }

  /** The source of the event admitted last. */
  get source(): Source {
    return this.#last as Source
  }

  /** An admitted event that no window took: counted, and a copy kept. */
  refuse(event: StreamEvent): void {
    this.late.push({ ...event })
  }

  /** The upload ended: moves the watermark (per source max ts − out-of-orderness, min over sources not idle, never back); true when it moved. */
  end(): boolean {
    const now = this.#now
    let active = Number.POSITIVE_INFINITY
    for (const source of this.#sources.values()) {
      if (source.seenInBatch) {
        source.lastSeen = now
        source.seenInBatch = false
      }
      if (now - source.lastSeen <= this.#idleTimeout && source.maxTs < active) active = source.maxTs
    }
    const next = active === Number.POSITIVE_INFINITY ? this.watermark : Math.max(this.watermark, active - this.#outOfOrderness)
    if (next <= this.watermark) return false
    this.watermark = next
    return true
  }
}

/** Why the engine would refuse `event` as invalid_event, or null (the checks of docs/semantics.md, Events). */
function invalid(event: StreamEvent): string | null {
  if (typeof event !== 'object' || event === null) return 'not an object'
  const { id, source, ts, value, seq, key } = event
  if (typeof id !== 'string' || id === '' || id.length > 1024) return 'id'
  if (typeof source !== 'string' || source === '' || source.length > 1024) return 'source'
  if (typeof ts !== 'number' || !Number.isFinite(ts) || Math.abs(ts) > 2 ** 53 / 1000) return 'ts'
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'value'
  if (seq !== undefined && (!Number.isSafeInteger(seq) || seq < 1)) return 'seq'
  if (key !== undefined && (typeof key !== 'string' || key.length > 1024)) return 'key'
  return null
}

function seen(source: Source, seq: number | undefined, id: string): boolean {
  if (seq === undefined) return source.ids?.has(id) === true
  if (seq <= source.prefix) return true
  if (seq - source.prefix < RING && source.ring !== null && source.ring[seq & RING_MASK] === 1) return true
  return source.far?.has(seq) === true
}

function remember(source: Source, seq: number | undefined, id: string): void {
  if (seq === undefined) {
    source.ids ??= new Set()
    source.ids.add(id)
    return
  }
  if (seq !== source.prefix + 1) {
    if (seq - source.prefix < RING) {
      source.ring ??= new Uint8Array(RING)
      source.ring[seq & RING_MASK] = 1
    } else {
      source.far ??= new Set()
      source.far.add(seq)
    }
    return
  }
  source.prefix = seq
  const ring = source.ring
  if (ring === null) return
  // The seqs seen ahead that now join the prefix.
  for (;;) {
    const next = source.prefix + 1
    if (ring[next & RING_MASK] === 1) ring[next & RING_MASK] = 0
    else if (source.far === null || !source.far.delete(next)) return
    source.prefix = next
  }
}
