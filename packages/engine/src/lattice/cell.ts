import { plainConstructor } from '../input/plainConstructor.ts'

/**
 * Lattice cells (docs/replication.md).
 *
 * A cell is one source's partial aggregate for one `(window spec, key, window start)`;
 * for sessions, `start` is the start of the source's own session fragment and
 * `maxTs` its last event time. Cells are single-writer: only the replica that owns
 * the source writes them, bumping `version` on every write. Merge keeps the higher
 * version, with a total order on content as the tie-break, so merge is commutative,
 * associative and idempotent even when two writers collide. A cell with `count === 0`
 * is a tombstone (a session fragment absorbed into another).
 */
export interface Cell {
  count: number
  sum: number
  min: number
  max: number
  /** Largest event time in the cell (sessions derive their end from it). */
  maxTs: number
  version: number
}

/** Makes the engine's cells: `new CellRecord(count, sum, min, max, maxTs, version)`, a plain object (a cell lives as long as its window). */
export const CellRecord = /* @__PURE__ */ plainConstructor(function (this: Cell, count: number, sum: number, min: number, max: number, maxTs: number, version: number) {
  this.count = count
  this.sum = sum
  this.min = min
  this.max = max
  this.maxTs = maxTs
  this.version = version
})

/**
 * A new empty cell.
 *
 * @example
 * emptyCell() // { count: 0, sum: 0, min: Infinity, max: -Infinity, maxTs: -Infinity, version: 0 }
 */
export function emptyCell(): Cell {
  return new CellRecord(0, 0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY, 0)
}

/** A cell with the same content. */
export function copyCell(cell: Readonly<Cell>): Cell {
  return new CellRecord(cell.count, cell.sum, cell.min, cell.max, cell.maxTs, cell.version)
}

/**
 * Adds one event to a cell in place (the owner's write path). `version` is the source's
 * clock version for this event: monotone per source, so a rewrite of any cell key of that
 * source (even one that was a tombstone) wins over every earlier write.
 *
 * @example
 * const cell = emptyCell()
 * addToCell(cell, 1_000, 21.5, 1)
 */
export function addToCell(cell: Cell, ts: number, value: number, version: number): void {
  cell.count++
  cell.sum += value
  if (value < cell.min) cell.min = value
  if (value > cell.max) cell.max = value
  if (ts > cell.maxTs) cell.maxTs = ts
  cell.version = version
}

/** Folds `from`'s aggregate into `into` in place (the owner merging its own session fragments); the caller sets the version. */
export function absorbCell(into: Cell, from: Cell): void {
  into.count += from.count
  into.sum += from.sum
  if (from.min < into.min) into.min = from.min
  if (from.max > into.max) into.max = from.max
  if (from.maxTs > into.maxTs) into.maxTs = from.maxTs
}

/** The tombstone that replaces a cell absorbed into another, written at `version`. */
export function tombstone(of: Cell, version: number): Cell {
  return new CellRecord(0, 0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, of.maxTs, version)
}

/**
 * Total order used to resolve two writes of one version; any fixed order keeps merge a lattice join.
 *
 * @example
 * compareCells({ ...emptyCell(), version: 2 }, { ...emptyCell(), version: 1 }) // 1
 * compareCells(emptyCell(), emptyCell()) // 0
 */
export function compareCells(a: Cell, b: Cell): number {
  return (
    order(a.version, b.version) ||
    order(a.count, b.count) ||
    order(a.sum, b.sum) ||
    order(a.min, b.min) ||
    order(a.max, b.max) ||
    order(a.maxTs, b.maxTs)
  )
}

/** -1, 0 or 1; unlike subtraction, defined for equal infinities (empty cells). */
function order(x: number, y: number): number {
  return x < y ? -1 : x > y ? 1 : 0
}

/**
 * The lattice join of two versions of one cell.
 *
 * @example
 * const a = emptyCell()
 * mergeCell({ ...a, version: 3 }, { ...a, version: 5 }).version // 5
 */
export function mergeCell(a: Cell, b: Cell): Cell {
  return compareCells(a, b) >= 0 ? a : b
}

/**
 * A replica's cells by cell key, as plain data.
 *
 * @example
 * const cells: CellMap = new Map([[cellKey('tumbling:60000', 'temp', 0, 'd1'), emptyCell()]])
 */
export type CellMap = ReadonlyMap<string, Cell>

/**
 * The lattice join of two replicas' cell maps: the union of keys, each merged with `mergeCell`.
 *
 * @example
 * const joined = mergeCellMaps(replicaA, replicaB)
 */
export function mergeCellMaps(a: CellMap, b: CellMap): Map<string, Cell> {
  const out = new Map(a)
  for (const [key, cell] of b) {
    const mine = out.get(key)
    out.set(key, mine === undefined ? cell : mergeCell(mine, cell))
  }
  return out
}

/**
 * The key of a cell in replicated state. JSON keeps arbitrary key and source
 * strings (including `__proto__`) unambiguous.
 *
 * @example
 * cellKey('tumbling:60000', 'temp', 0, 'd1') // '["tumbling:60000","temp",0,"d1"]'
 */
export function cellKey(window: string, key: string, start: number, source: string): string {
  return JSON.stringify([window, key, start, source])
}

/**
 * Reads a cell key back; `null` when it is not one.
 *
 * @example
 * parseCellKey(cellKey('tumbling:60000', 'temp', 0, 'd1')) // { window: 'tumbling:60000', key: 'temp', start: 0, source: 'd1' }
 * parseCellKey('temp/0/d1') // null
 */
export function parseCellKey(text: string): { window: string; key: string; start: number; source: string } | null {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return null
  }
  if (!Array.isArray(parsed) || parsed.length !== 4) return null
  const [window, key, start, source] = parsed as unknown[]
  if (typeof window !== 'string' || typeof key !== 'string' || typeof source !== 'string') return null
  if (typeof start !== 'number' || !Number.isFinite(start)) return null
  return { window, key, start, source }
}
