/**
 * Peers' cell groups checked before anything merges them: the group's address and shape, then
 * each cell's values (a lattice join with an absurd cell would poison every replica it reaches).
 * A group with some bad cells goes on without them; each refusal is reported with its reason.
 */
import { MAX_AGGREGATES } from '../aggregates/aggregateSet.ts'
import { MAX_ABS_TS, MAX_NAME_LENGTH } from '../input/event.ts'
import { type Cell, cellKey } from './cell.ts'
import { type CellGroup, GROUP_COLUMNS, groupCell, MAX_CELL_COUNT, MAX_GROUP_CELLS, packCellGroup } from './cellGroup.ts'

/**
 * Why a peer's group cannot be read at all (its address or shape), or null. Values are checked
 * cell by cell with `groupCellProblem`.
 *
 * @example
 * const problem = cellGroupProblem(group) // 'columns must hold 6 values per key'
 */
export function cellGroupProblem(group: CellGroup): string | null {
  if (typeof group !== 'object' || group === null) return 'not a cell group'
  if (!isName(group.window, 1)) return `window must be a string of 1..${MAX_NAME_LENGTH} characters`
  if (!isName(group.source, 1)) return `source must be a string of 1..${MAX_NAME_LENGTH} characters`
  if (!isWindowStart(group.start)) return `start must be a time within ±${MAX_ABS_TS} or a safe integer: ${String(group.start)}`
  const keys = group.keys
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_GROUP_CELLS) return `a group holds 1..${MAX_GROUP_CELLS} keys`
  for (const key of keys) if (!isName(key, 0)) return `keys must be strings of at most ${MAX_NAME_LENGTH} characters`
  if (!(group.columns instanceof Float64Array) || group.columns.length !== GROUP_COLUMNS * keys.length) {
    return `columns must hold ${GROUP_COLUMNS} numbers per key`
  }
  const states = group.aggregates
  if (states !== undefined) {
    let all = Array.isArray(states) && states.length === keys.length
    // Indexed, not `every`: a hole (a cell without states) must fail too.
    for (let i = 0; all && i < keys.length; i++) all = isStateList(states[i])
    if (!all) return `aggregates must list at most ${MAX_AGGREGATES} encoded states per key`
  }
  return null
}

/**
 * The earliest event time a cell holds: an event at `-MAX_ABS_TS`, floored to the whole ms as a
 * session places it.
 */
const MIN_CELL_TS = Math.floor(-MAX_ABS_TS)

/**
 * True for one cell's encoded aggregate states: a list of at most `MAX_AGGREGATES` byte arrays,
 * read index by index (a hole, which `every` skips, fails).
 *
 * @example
 * isStateList([new Uint8Array([1])]) // true
 * isStateList(['x']) // false
 */
export function isStateList(value: unknown): value is readonly Uint8Array[] {
  if (!Array.isArray(value) || value.length > MAX_AGGREGATES) return false
  for (let a = 0; a < value.length; a++) if (!(value[a] instanceof Uint8Array)) return false
  return true
}

/**
 * Why the `i`-th cell of a well-formed group cannot be merged, or null.
 *
 * @example
 * if (groupCellProblem(group, i) !== null) skip(i)
 */
export function groupCellProblem(group: CellGroup, i: number): string | null {
  const n = group.keys.length
  const c = group.columns
  // The common case in a few comparisons (every column value is a number already); anything
  // unusual (tombstones, huge sums, bad values) takes the full check for its reason.
  const count = c[i] as number
  const min = c[2 * n + i] as number
  const max = c[3 * n + i] as number
  const maxTs = c[4 * n + i] as number
  const version = c[5 * n + i] as number
  const sum = c[n + i] as number
  if (
    count > 0 &&
    count <= 2 ** 40 &&
    Number.isInteger(count) &&
    min <= max &&
    min > -1e300 &&
    max < 1e300 &&
    maxTs >= MIN_CELL_TS &&
    maxTs <= MAX_ABS_TS &&
    Number.isSafeInteger(version) &&
    version >= 0 &&
    Math.abs(sum) <= count * Math.max(-min, max)
  ) {
    return null
  }
  return cellValuesProblem(c[i] as number, c[n + i] as number, c[2 * n + i] as number, c[3 * n + i] as number, c[4 * n + i] as number, c[5 * n + i] as number)
}

/**
 * The groups with every invalid group and cell left out, each reported through `invalid`
 * (what was refused, why). Returns `groups` itself when everything is valid.
 *
 * @example
 * const valid = validCellGroups(groups, (what, why) => console.warn(`${what}: ${why}`))
 */
export function validCellGroups(groups: readonly CellGroup[], invalid: (what: string, problem: string) => void): readonly CellGroup[] {
  let out: CellGroup[] | null = null
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g] as CellGroup
    let keep: CellGroup | null = group
    const problem = cellGroupProblem(group)
    if (problem !== null) {
      invalid('cell group', problem)
      keep = null
    } else {
      let bad: Set<number> | null = null
      for (let i = 0; i < group.keys.length; i++) {
        const cellProblem = groupCellProblem(group, i)
        if (cellProblem === null) continue
        invalid(`cell ${cellKey(group.window, group.keys[i] as string, group.start, group.source)}`, cellProblem)
        bad ??= new Set()
        bad.add(i)
      }
      if (bad !== null) keep = bad.size === group.keys.length ? null : withoutCells(group, bad)
    }
    // A null group is refused too, though it is its own `keep`.
    if ((keep === null || keep !== group) && out === null) out = groups.slice(0, g)
    if (out !== null && keep !== null) out.push(keep)
  }
  return out ?? groups
}

/**
 * A copy of `group` without the cells at the given positions.
 *
 * @example
 * const rest = withoutCells(group, new Set([0])) // every cell but the first
 */
export function withoutCells(group: CellGroup, drop: ReadonlySet<number>): CellGroup {
  const keys: string[] = []
  const cells: Cell[] = []
  const states: (readonly Uint8Array[])[] = []
  for (let i = 0; i < group.keys.length; i++) {
    if (drop.has(i)) continue
    keys.push(group.keys[i] as string)
    cells.push(groupCell(group, i))
    if (group.aggregates !== undefined) states.push(group.aggregates[i] as readonly Uint8Array[])
  }
  return packCellGroup(group.window, group.start, group.source, keys, cells, group.aggregates === undefined ? undefined : states)
}

/**
 * Why a cell's values are impossible, or null: the one check every transport's cells pass
 * before they touch window state, so a hostile or buggy peer can never poison results. A sum
 * may be ±Infinity (an honest overflow of huge values), never NaN.
 *
 * @example
 * cellValuesProblem(2, 10, 4, 6, 1_000, 1) // null
 * cellValuesProblem(2, 10, 40, 6, 1_000, 1) // 'min and max must be finite with min <= max: 40, 6'
 */
export function cellValuesProblem(count: unknown, sum: unknown, min: unknown, max: unknown, maxTs: unknown, version: unknown): string | null {
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > MAX_CELL_COUNT) return `count must be an integer in 0..2^40: ${String(count)}`
  if (typeof sum !== 'number' || Number.isNaN(sum)) return `sum must be a number: ${String(sum)}`
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) return `version must be a safe integer >= 0: ${String(version)}`
  if (typeof min !== 'number' || typeof max !== 'number' || typeof maxTs !== 'number') return 'min, max and maxTs must be numbers'
  if (count > 0) {
    if (!Number.isFinite(min) || !Number.isFinite(max) || min > max) return `min and max must be finite with min <= max: ${min}, ${max}`
    if (!(maxTs >= MIN_CELL_TS && maxTs <= MAX_ABS_TS)) return `maxTs must be a time in ${MIN_CELL_TS}..${MAX_ABS_TS}: ${maxTs}`
    if (!sumFits(count, sum, min, max)) return `sum ${sum} is impossible for ${count} values in [${min}, ${max}]`
  } else if (Number.isNaN(min) || Number.isNaN(max) || Number.isNaN(maxTs) || maxTs > MAX_ABS_TS) {
    // A tombstone keeps the empty cell's infinities, but never NaN.
    return 'a tombstone must not hold NaN'
  }
  return null
}

/**
 * True when `count` values within [min, max] can add up to `sum`: only values near the float
 * limit can overflow to ±Infinity honestly.
 */
export function sumFits(count: number, sum: number, min: number, max: number): boolean {
  const bound = count * Math.max(Math.abs(min), Math.abs(max))
  return Math.abs(sum) <= bound * (1 + 1e-9) || !Number.isFinite(bound)
}

/**
 * True for a string of `minLength` to `MAX_NAME_LENGTH` UTF-16 units: a valid window, source or
 * key name from a peer (keys may be empty, the others may not).
 *
 * @example
 * isName('temp', 0) // true
 * isName('', 1) // false
 */
export function isName(value: unknown, minLength: number): value is string {
  return typeof value === 'string' && value.length >= minLength && value.length <= MAX_NAME_LENGTH
}

/**
 * True for a finite time within `±MAX_ABS_TS`: a valid start or event time from a peer.
 *
 * @example
 * isTime(1_700_000_000_000) // true
 * isTime(Number.NaN) // false
 */
export function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value <= MAX_ABS_TS && value >= -MAX_ABS_TS
}

/**
 * True for where a peer's window, slice or session may start: a time (`isTime`), or any safe
 * integer. Starts are floored to their grid (or to the whole ms), so an event at `-MAX_ABS_TS`
 * writes a cell starting below it, up to a window's size; whether a window of the spec starts
 * there is the window index's to judge.
 *
 * @example
 * isWindowStart(-9_007_199_280_000) // true: the one-minute window holding ts -MAX_ABS_TS
 * isWindowStart(1.5e300) // false
 */
export function isWindowStart(value: unknown): value is number {
  return isTime(value) || Number.isSafeInteger(value)
}
