import { CellSet } from '../lattice/cellSet.ts'
import type { SliceSeries } from './sliceSeries.ts'

/**
 * One key's slice of a tumbling, sliding or cumulating spec: `[start, start + unit)`, every
 * window holding it counts its events. Each source writes one cell per slice part: the `main`
 * part, counted by every window holding the slice, and, for events that came when the earlier of
 * those windows were already final, a part counted only by the windows ending at or after the
 * first that still admitted them (`partial`, by that window's ordinal). Which windows count an
 * event is then part of the lattice state, so every replica computes every window the same way.
 */
export class Slice {
  readonly ordinal: number
  readonly start: number
  readonly key: string
  readonly series: SliceSeries
  readonly main = new CellSet()
  /** Partial parts by the ordinal of the first window counting them (sorted when read). */
  partial: Map<number, CellSet> | null = null
  /** False once dropped (its last window left live state). */
  live = true
  /** Bumped on every change to one of its cells. */
  version = 0
  /** `main` folded, as of `foldedAt` (-1: never). */
  foldedAt = -1
  count = 0
  sum = 0
  min = Number.POSITIVE_INFINITY
  max = Number.NEGATIVE_INFINITY
  /** The first window admitting its events (later ones as well), as of batch `fromIn`. */
  fromIn = 0
  from = 0
  /** Batch that last touched its windows, and the first window ordinal touched then. */
  touchedIn = 0
  touchedFrom = 0
  /** Outcome bits of the windows from `bitsFrom` on, as of batch `bitsIn`. */
  bitsIn = 0
  bitsFrom = 0
  bits = 0

  constructor(ordinal: number, start: number, series: SliceSeries) {
    this.ordinal = ordinal
    this.start = start
    this.series = series
    this.key = series.key
  }

  /** The part counted from window `from` on: `main` when that is the first window holding the slice. */
  part(from: number): CellSet {
    if (from === this.ordinal) return this.main
    this.partial ??= new Map()
    let part = this.partial.get(from)
    if (part === undefined) {
      part = new CellSet()
      this.partial.set(from, part)
    }
    return part
  }

  /** Partial parts in ascending order of their first window. */
  partials(): [number, CellSet][] {
    return this.partial === null ? [] : [...this.partial].sort((a, b) => a[0] - b[0])
  }

  /** Cells in every part. */
  cellCount(): number {
    let n = this.main.size
    if (this.partial !== null) for (const part of this.partial.values()) n += part.size
    return n
  }

  /** Brings the `main` fold up to date. */
  refold(): void {
    if (this.foldedAt === this.version) return
    const a = { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY }
    this.main.fold(a)
    this.count = a.count
    this.sum = a.sum
    this.min = a.min
    this.max = a.max
    this.foldedAt = this.version
  }
}

/**
 * The replicated name of a slice part: the spec id for `main` parts, `<spec id>@<end>` for a part
 * counted only by windows ending at or after `end` (spec ids never hold `@`).
 *
 * @example
 * partName('sliding:60000:10000', 120_000) // 'sliding:60000:10000@120000'
 */
export function partName(spec: string, end: number): string {
  return `${spec}@${end}`
}

/** The spec id and first counting window end of a replicated part name; `end` NaN for a `main` part. */
export function parsePartName(window: string): { readonly spec: string; readonly end: number } {
  const at = window.indexOf('@')
  if (at < 0) return { spec: window, end: Number.NaN }
  const end = window.slice(at + 1)
  return { spec: window.slice(0, at), end: /^-?\d+$/.test(end) ? Number(end) : Number.POSITIVE_INFINITY }
}
