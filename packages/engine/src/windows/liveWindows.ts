import type { CellEntry } from '../lattice/cellEntry.ts'
import type { WindowIndex } from './windowIndex.ts'
import { compareResults, type ResultQuery, type WindowResult } from './windowResult.ts'

/**
 * Read-only views over the live windows of an engine's indexes: the results a query asks
 * for, a window's history, the gauges `stats()` shows, and the lattice cells a full-state
 * exchange carries.
 */

/** Emitted results matching `query`, in result order. */
export function queryResults(indexes: readonly WindowIndex[], query?: ResultQuery): WindowResult[] {
  const out: WindowResult[] = []
  const from = query?.from ?? Number.NEGATIVE_INFINITY
  const to = query?.to ?? Number.POSITIVE_INFINITY
  for (const index of indexes) {
    if (query?.window !== undefined && query.window !== index.id) continue
    // A query by key reads that key's windows only.
    for (const w of query?.key === undefined ? index.windows() : index.windowsOf(query.key)) {
      if (w.emitted === null) continue
      if (w.start < from || w.start >= to) continue
      out.push(w.emitted)
    }
  }
  return out.sort(compareResults)
}

/** The fired results of one live window, oldest first (empty when it is not live). */
export function windowHistory(indexes: readonly WindowIndex[], window: string, key: string, start: number, end?: number): readonly WindowResult[] {
  const w = indexes.find((i) => i.id === window)?.find(key, start, end)
  // As in results(): a window shows nothing before it shows a result. A session whose start moved
  // while its late pane waits carries its history, shown with that pane (the change that names it).
  return w === undefined || w.emitted === null ? [] : w.history()
}

/** Live windows, their cells (slice cells and session fragments) and the events of windows not yet fired. */
export function windowGauges(indexes: readonly WindowIndex[]): { openWindows: number; cells: number; pending: number } {
  let openWindows = 0
  let cells = 0
  let pending = 0
  for (const index of indexes) {
    openWindows += index.size
    const gauges = index.gauges()
    cells += gauges.cells
    pending += gauges.pending
  }
  return { openWindows, cells, pending }
}

/**
 * Every live cell, and the session tombstones, as a full-state exchange carries them; with
 * `sources`, only theirs. Cells may be live state: copy what you keep.
 *
 * @example
 * liveCells(indexes, null) // every cell
 * liveCells(indexes, new Set(['d1'])) // the cells of source d1
 */
export function liveCells(indexes: readonly WindowIndex[], sources: ReadonlySet<string> | null): CellEntry[] {
  const cells: CellEntry[] = []
  for (const index of indexes) index.liveCells(cells, sources)
  return cells
}
