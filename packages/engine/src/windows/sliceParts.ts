/**
 * A sliced index's cells by part: each slice's main part is addressed by the spec's id, each
 * partial part by its part name (`Slice`). What the checkpoint stores and replication sends
 * are the cells of these parts, and peers' groups arrive addressed the same way.
 */
import type { AggregateSet } from '../aggregates/aggregateSet.ts'
import { type Cell, copyCell } from '../lattice/cell.ts'
import type { CellEntry } from '../lattice/cellEntry.ts'
import type { CellGroup } from '../lattice/cellGroup.ts'
import { withoutCells } from '../lattice/cellGroupValidation.ts'
import type { CellSet } from '../lattice/cellSet.ts'
import type { SliceIndexSnapshot } from './windowSnapshot.ts'
import { groupStates } from '../aggregates/aggregateSet.ts'
import { parsePartName, partName, type Slice } from './slice.ts'
import type { SliceGeometry } from './sliceGeometry.ts'
import type { SliceSeries } from './sliceSeries.ts'
import type { BatchFrontiers, MergeCounts, RemoteFrontiers, WindowTracker } from './windowIndex.ts'
import { alignedStart } from './windowSpec.ts'
import { restoredStates } from './windowState.ts'

/** What merging peers' groups reaches of a sliced index. */
export interface PartsHost {
  readonly id: string
  /** Slice length. */
  readonly unit: number
  readonly geometry: SliceGeometry
  /** The slice of `key` starting at `start`, made when missing. */
  sliceAt(key: string, start: number): Slice<SliceSeries>
  /** A part took a cell it did not hold before. */
  cellAdded(): void
  /** Touches windows `from..to` of `series` as replaced by a peer's cells, creating those that are missing. */
  touch(series: SliceSeries, from: number, to: number, frontiers: BatchFrontiers, tracker: WindowTracker): void
}

type PartEntries = [number, ([string, Cell] | [string, Cell, Uint8Array[]])[]]

/**
 * Puts a checkpoint's slice entries (`sliceEntries`) back into an index: each cell into its
 * part, as the replica's own or a peer's, with its states.
 *
 * @example
 * restoreSliceEntries(host, checkpoint.slices[0].slices)
 */
export function restoreSliceEntries(host: PartsHost, entries: SliceIndexSnapshot['slices']): void {
  const g = host.geometry
  for (const [key, start, parts] of entries) {
    // Without a cell (an older engine made one for each event no window admitted), a slice
    // counts nothing and nothing would ever release it.
    if (parts.every(([, cells]) => cells.length === 0)) continue
    const slice = host.sliceAt(key, start)
    const s = slice.ordinal
    for (const [end, cells] of parts) {
      const from = g.ordinal(end) - 1
      const part = slice.part(from)
      if (from !== s) slice.series.notePartial(s)
      for (const [source, cell, bytes] of cells) {
        part.addCell(source, copyCell(cell), restoredStates(g.aggregates, bytes, 1))
        host.cellAdded()
      }
    }
  }
}

/**
 * Every slice of `series` as the checkpoint keeps it: key, start, then each part's cells under
 * the end of the first window counting it.
 *
 * @example
 * const snapshot: SliceIndexSnapshot = { window: 'tumbling:60000', slices: sliceEntries(byKey.values(), aggregates) }
 */
export function sliceEntries(series: Iterable<SliceSeries>, aggregates: AggregateSet | null): SliceIndexSnapshot['slices'] {
  const slices: [string, number, PartEntries[]][] = []
  for (const one of series) {
    const g = one.geometry
    for (const slice of one.slices.values()) {
      const parts: PartEntries[] = [[g.endOf(slice.ordinal), slice.entries(aggregates)]]
      for (const [from, part] of slice.partials()) parts.push([g.endOf(from), part.entries(aggregates)])
      slices.push([one.key, slice.start, parts])
    }
  }
  return slices
}

/**
 * Appends every cell of `series` to `out`, addressed by part name (`id` for main parts).
 *
 * @example
 * const out: CellEntry[] = []
 * liveSliceCells('sliding:3600000:60000', series, null, null, out)
 */
export function liveSliceCells(id: string, series: SliceSeries, aggregates: AggregateSet | null, only: ReadonlySet<string> | null, out: CellEntry[]): void {
  for (const slice of series.slices.values()) {
    for (const [window, part] of namedParts(id, slice)) {
      const sources = part.sources()
      for (let i = 0; i < sources.length; i++) {
        const source = sources[i] as string
        if (only !== null && !only.has(source)) continue
        const address = { window, key: series.key, start: slice.start, source }
        out.push(aggregates === null ? { address, cell: part.cellAt(i) } : { address, cell: part.cellAt(i), aggregates: aggregates.encode(part.statesAt(i)) })
      }
    }
  }
}

/**
 * Every part of `slice` with the name its cells are addressed by: `id` for the main part, the
 * part name (`id@end` of the first window counting it) for each partial part.
 *
 * @example
 * for (const [name, part] of namedParts('sliding:60000:10000', slice)) console.log(name, part.size)
 */
export function namedParts(id: string, slice: Slice<SliceSeries>): [string, CellSet][] {
  const g = slice.series.geometry
  const parts: [string, CellSet][] = [[id, slice]]
  for (const [from, part] of slice.partials()) parts.push([partName(id, g.endOf(from)), part])
  return parts
}

/**
 * Merges peers' groups into a sliced index, slice part by slice part: each changed cell touches the windows that count
 * it and are still live here (its newer version is a lattice join; a window already final counts
 * a finality violation), and makes their next discarding pane carry the whole window.
 *
 * @example
 * const counts = mergePeerGroups(host, groups, frontiers, tracker)
 * counts.applied // cells that changed something here
 */
export function mergePeerGroups(host: PartsHost, groups: readonly CellGroup[], frontiers: RemoteFrontiers, tracker: WindowTracker): MergeCounts {
  const counts: MergeCounts = { applied: 0, stale: 0, expired: 0, finalityViolations: 0, invalid: 0 }
  const g = host.geometry
  const { watermark, lateness, retention } = frontiers
  // With retention Infinity nothing leaves live state, a watermark at +Infinity included.
  const keeps = retention === Number.POSITIVE_INFINITY
  for (const list of groupsByPart(groups)) {
    const first = list[0] as CellGroup
    const start = first.start
    const named = parsePartName(first.window)
    if (alignedStart(start, host.unit) !== start || named.spec !== host.id) {
      for (const group of list) counts.invalid += group.keys.length
      continue
    }
    const s = g.ordinal(start)
    const last = g.lastOf(s)
    let from = s
    if (!Number.isNaN(named.end)) {
      from = Number.isSafeInteger(named.end) && alignedStart(named.end, host.unit) === named.end ? g.ordinal(named.end) - 1 : Number.NaN
      if (!(from > s && from <= last)) {
        for (const group of list) counts.invalid += group.keys.length
        continue
      }
    }
    // Windows past their lateness and retention left live state here: nothing they show can change.
    const alive = keeps ? from : Math.max(from, g.firstAbove(s, watermark, lateness, retention))
    if (alive > last) {
      for (const group of list) {
        counts.expired += group.keys.length
        // Published as expired, as every cell of a window that left live state here: the binding
        // retires it from the document if it is this replica's to retire (its own source).
        for (const key of group.keys) tracker.expired(group.window, key, group.start, group.source)
      }
      continue
    }
    // Windows alive here that are past their lateness: each changed cell is a finality violation in each.
    const late = Math.max(0, Math.min(last + 1, g.firstAbove(s, watermark, lateness)) - alive)
    const batch = frontiers.batch
    // The groups of one part and start (one per source) mostly list the same keys: their slices are looked up once.
    let keys: readonly string[] | null = null
    const slices: Slice<SliceSeries>[] = []
    const aggregates = g.aggregates
    for (const given of list) {
      const outside = cellsOutsideSlice(given, start, host.unit)
      if (outside !== null) counts.invalid += outside.size
      if (outside !== null && outside.size === given.keys.length) continue
      const group = outside === null ? given : withoutCells(given, outside)
      const source = group.source
      const decoded = outside === null ? groupStates.get(given) : groupStates.get(given)?.filter((_, i) => !outside.has(i))
      if (keys === null || !sameKeys(keys, group.keys)) {
        keys = group.keys
        slices.length = 0
        for (const key of keys) slices.push(host.sliceAt(key, start))
      }
      for (let i = 0; i < slices.length; i++) {
        const slice = slices[i] as Slice<SliceSeries>
        const series = slice.series
        const part = slice.part(from)
        const before = part.size
        if (before === 0 && list.length > 1) part.reserveRows(list.length)
        if (!part.mergePeerCell(source, group, i, aggregates, decoded?.[i] ?? aggregates?.init() ?? null)) {
          counts.stale++
          continue
        }
        if (part.size > before) {
          host.cellAdded()
          if (from !== s) series.notePartial(s)
        }
        counts.applied++
        counts.finalityViolations += late
        slice.version++
        series.version++
        if (slice.batch !== batch) {
          slice.batch = batch
          slice.from = last + 1
          slice.touchedFrom = last + 1
        }
        if (alive < slice.touchedFrom) {
          host.touch(series, alive, slice.touchedFrom - 1, frontiers, tracker)
          slice.touchedFrom = alive
        }
      }
    }
  }
  return counts
}

/**
 * Whether a cell of `count` events, the last at `maxTs`, can be the slice `[start, start + unit)`'s:
 * an event is placed in the slice its time falls in, so a cell whose last event lies outside is not
 * this slice's, and its `maxTs` (and a `latest` state agreeing with it) would reach past every
 * window counting it. `alignedStart` is asked too, as placement asks it, so no cell placement put
 * here is refused whatever the rounding of a fractional time. Peers' cells and a checkpoint's are
 * held to it.
 *
 * @example
 * cellInSlice(1, 1e12, 0, 100) // false
 */
export function cellInSlice(count: number, maxTs: number, start: number, unit: number): boolean {
  return count === 0 || (maxTs >= start && maxTs < start + unit) || alignedStart(maxTs, unit) === start
}

/**
 * The positions of a peer's cells not in their slice `[start, start + unit)` (`cellInSlice`), or
 * null for none (the common case, in one pass).
 *
 * @example
 * cellsOutsideSlice(group, 0, 100) // Set {2}: the third cell's last event is at 1e12
 */
function cellsOutsideSlice(group: CellGroup, start: number, unit: number): Set<number> | null {
  const n = group.keys.length
  const columns = group.columns
  let outside: Set<number> | null = null
  for (let i = 0; i < n; i++) {
    if (cellInSlice(columns[i] as number, columns[4 * n + i] as number, start, unit)) continue
    outside ??= new Set()
    outside.add(i)
  }
  return outside
}

/**
 * Peers' groups by part name and slice start, each list sorted by source: a part keeps its
 * cells in source order, so a fresh one then takes its sources by appending.
 *
 * @example
 * for (const list of groupsByPart(groups)) mergePart(list)
 */
function groupsByPart(groups: readonly CellGroup[]): Iterable<readonly CellGroup[]> {
  if (groups.length <= 1) return groups.length === 0 ? [] : [groups]
  const lists = new Map<string, Map<number, CellGroup[]>>()
  for (const group of groups) {
    let byStart = lists.get(group.window)
    if (byStart === undefined) {
      byStart = new Map()
      lists.set(group.window, byStart)
    }
    const list = byStart.get(group.start)
    if (list === undefined) byStart.set(group.start, [group])
    else list.push(group)
  }
  const out: CellGroup[][] = []
  for (const byStart of lists.values()) {
    for (const list of byStart.values()) {
      if (list.length > 1) list.sort(bySource)
      out.push(list)
    }
  }
  return out
}

/**
 * True when two key lists hold the same keys in the same order.
 *
 * @example
 * sameKeys(['a', 'b'], ['a', 'b']) // true
 */
function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

function bySource(a: CellGroup, b: CellGroup): number {
  return a.source < b.source ? -1 : a.source > b.source ? 1 : 0
}
