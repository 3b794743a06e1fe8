import { cellValuesProblem, isName, isStateList, isWindowStart } from '../lattice/cellGroupValidation.ts'
import { MAX_ABS_TS } from '../input/event.ts'
import { MAX_AGGREGATES } from '../aggregates/aggregateSet.ts'
import type { CellEntry } from '../lattice/cellEntry.ts'
import type { ClockEntry } from './replicaPort.ts'

/**
 * Why a peer's loose cell entry cannot be merged, or null. Every transport's cells pass here
 * (or, packed, through `cellGroupProblem` and `groupCellProblem`) before they touch window
 * state, so a hostile or buggy peer can never poison results. `keepsStates`: the engine keeps
 * aggregates, so each cell must carry its encoded states (decoded later, one by one).
 *
 * @example
 * cellEntryProblem({ address, cell: { ...cell, count: -1 } }, false) // 'count must be an integer in 0..2^40: -1'
 */
export function cellEntryProblem(entry: CellEntry, keepsStates: boolean): string | null {
  const address = entry?.address
  const cell = entry?.cell
  if (typeof address !== 'object' || address === null || typeof cell !== 'object' || cell === null) return 'not a cell entry'
  if (!isName(address.window, 1) || !isName(address.key, 0) || !isName(address.source, 1)) return 'bad window, key or source name'
  if (!isWindowStart(address.start)) return `start must be a time within ±${MAX_ABS_TS} or a safe integer: ${String(address.start)}`
  const values = cellValuesProblem(cell.count, cell.sum, cell.min, cell.max, cell.maxTs, cell.version)
  if (values !== null) return values
  const states: unknown = entry.aggregates
  if (states === undefined) return keepsStates ? 'carries no aggregate states; this engine keeps them' : null
  if (!keepsStates) return 'carries aggregate states; this engine has no aggregates'
  return isStateList(states) ? null : `aggregates must list at most ${MAX_AGGREGATES} encoded states`
}

/** Why a peer's source clock cannot be taken, or null. */
export function clockEntryProblem(entry: ClockEntry): string | null {
  if (typeof entry !== 'object' || entry === null) return 'not a clock entry'
  if (!isName(entry.source, 1) || !isName(entry.writer, 1)) return 'bad source or writer name'
  if (typeof entry.maxTs !== 'number' || Number.isNaN(entry.maxTs) || entry.maxTs > MAX_ABS_TS) return `maxTs must be a time: ${String(entry.maxTs)}`
  if (typeof entry.prefix !== 'number' || !Number.isSafeInteger(entry.prefix) || entry.prefix < 0) return `prefix must be a safe integer >= 0: ${String(entry.prefix)}`
  if (typeof entry.prefixTs !== 'number' || Number.isNaN(entry.prefixTs) || entry.prefixTs > MAX_ABS_TS) return `prefixTs must be a time: ${String(entry.prefixTs)}`
  if (typeof entry.provable !== 'boolean') return 'provable must be a boolean'
  if (entry.finished !== undefined && typeof entry.finished !== 'boolean') return 'finished must be a boolean when present'
  if (typeof entry.version !== 'number' || !Number.isSafeInteger(entry.version) || entry.version < 0) return `version must be a safe integer >= 0: ${String(entry.version)}`
  return null
}
